// rogd's Prometheus metrics (`rogd --metrics_listen=HOST:PORT`).
//
// Nothing is counted twice: every scrape asks the engine for one
// MetricsSnapshot (the same data `rogctl status`, `workers` and `staleness`
// show, taken in one visit to the engine thread) and turns it into metric
// families. The engine's hot path does no metrics work at all; a scrape
// costs the engine thread about what those three rogctl calls cost.
//
// Labels stay bounded: per-worker series carry a `worker` label only for
// the workers the team counts (connected, or disconnected within their
// lease). A worker that leaves or is evicted drops out of the next scrape,
// so its series go stale in Prometheus instead of piling up; the
// team-wide totals (rog_rows_total, rog_bytes_total) keep what it moved.
// Worker ids are at most 64 characters of [A-Za-z0-9._-] (checked at hello).
#ifndef ROG_SERVER_METRICS_H_
#define ROG_SERVER_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/metric_family.h"
#include "server/engine.h"

namespace prometheus {
class Exposer;
class Collectable;
}  // namespace prometheus

namespace rog {

// Upper bounds of rog_row_staleness_iterations' buckets for staleness
// bound `bound`: every iteration up to the bound (or up to 16), doublings
// from 32 up to the bound, the bound itself and twice the bound; +Inf is
// implied.
std::vector<double> StalenessBuckets(uint32_t bound);

// The metric families of one snapshot, taken at Unix time `now_unix`.
// Rejection reasons in `reasons` appear with 0 before the first one.
std::vector<prometheus::MetricFamily> MetricFamilies(const MetricsSnapshot& snapshot,
                                                     double now_unix,
                                                     const std::vector<std::string>& reasons);

// Checks a --metrics_listen value: HOST:PORT with HOST an IPv4 address or
// `localhost`, PORT 0-65535 (0 picks a free port). No IPv6: Debian's
// civetweb, prometheus-cpp's HTTP server, is built without it. The error
// says what to write instead.
absl::Status CheckMetricsAddress(const std::string& address);

// Serves GET /metrics over HTTP (prometheus-cpp's Exposer), asking `engine`
// for a snapshot on every scrape. `engine` must outlive the server.
class MetricsServer {
 public:
  // Binds `address` (see CheckMetricsAddress); an error names the address
  // and why it could not be used.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              Engine* engine);
  // Stops serving; waits for a scrape in progress.
  ~MetricsServer();

  // The port actually bound.
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::shared_ptr<prometheus::Collectable> collectable_;
  // Declared last: destroyed first, while the collectable still exists.
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace rog

#endif  // ROG_SERVER_METRICS_H_
