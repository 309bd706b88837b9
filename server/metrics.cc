#include "server/metrics.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/staleness.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "server/rejection.h"
#include "server/service.h"

namespace rog {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

// Collects families in a fixed order; empty ones are left out.
class Families {
 public:
  MetricFamily& Add(std::string name, std::string help, MetricType type) {
    families_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return families_.back();
  }
  std::vector<MetricFamily> Take() {
    std::vector<MetricFamily> out;
    for (MetricFamily& f : families_) {
      if (!f.metric.empty()) out.push_back(std::move(f));
    }
    return out;
  }

 private:
  // A deque: Add's references stay valid as families are added (a vector
  // would move them when it grows).
  std::deque<MetricFamily> families_;
};

void Gauge(MetricFamily& f, double value, Labels labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

void Counter(MetricFamily& f, double value, Labels labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  f.metric.push_back(std::move(m));
}

Labels WorkerLabel(const pb::WorkerInfo& w) { return {{"worker", w.worker_id()}}; }

Labels WorkerDirection(const pb::WorkerInfo& w, const char* direction) {
  return {{"direction", direction}, {"worker", w.worker_id()}};
}

Labels WorkerCause(const pb::WorkerInfo& w, StallCause cause) {
  return {{"cause", std::string(StallCauseName(cause))}, {"worker", w.worker_id()}};
}

bool TeamMember(const pb::WorkerInfo& w) { return w.state() != "evicted"; }

class EngineCollectable final : public prometheus::Collectable {
 public:
  explicit EngineCollectable(Engine* engine) : engine_(engine) {}
  std::vector<MetricFamily> Collect() const override {
    return MetricFamilies(engine_->Metrics(), UnixSeconds(), RejectionReasons());
  }

 private:
  Engine* engine_;
};

}  // namespace

std::vector<double> StalenessBuckets(uint32_t bound) {
  std::vector<double> le;
  const uint32_t dense = std::min<uint32_t>(std::max<uint32_t>(bound, 1), 16);
  for (uint32_t s = 0; s <= dense; ++s) le.push_back(s);
  for (uint64_t s = 32; s < bound; s *= 2) le.push_back(static_cast<double>(s));
  if (bound > dense) le.push_back(bound);
  if (2.0 * bound > le.back()) le.push_back(2.0 * bound);
  return le;
}

namespace {

// rogd and the model.
void AddModelFamilies(const MetricsSnapshot& snapshot, Families& fam) {
  const pb::StatusReply& s = snapshot.status;
  Gauge(fam.Add("rog_info", "rogd's version and the run's settings; always 1", MetricType::Gauge),
        1,
        {{"codec", std::string(CodecName(static_cast<Codec>(s.codec())))},
         {"sync", std::string(SyncPolicyName(static_cast<SyncPolicy>(s.sync())))},
         {"version", s.version()}});
  Gauge(fam.Add("rog_uptime_seconds", "Seconds since rogd started", MetricType::Gauge),
        s.uptime_seconds());
  Gauge(fam.Add("rog_staleness_bound_iterations",
                "Staleness bound the policy enforces (S for ssp and rog, 0 for bsp)",
                MetricType::Gauge),
        snapshot.staleness_bound);
  Gauge(fam.Add("rog_mta_ratio",
                "Minimum transmission amount: the share of the model the slowest worker sends "
                "per iteration (1 outside rog)",
                MetricType::Gauge),
        s.mta());
  Gauge(fam.Add("rog_model_loaded", "1 once the model has arrived (first worker or --init)",
                MetricType::Gauge),
        s.has_model() ? 1 : 0);
  Gauge(
      fam.Add("rog_model_tensors", "Tensors in the model (0 before it arrives)", MetricType::Gauge),
      static_cast<double>(s.tensors()));
  Gauge(fam.Add("rog_model_rows", "Rows in the model (0 before it arrives)", MetricType::Gauge),
        static_cast<double>(s.rows()));
  Gauge(fam.Add("rog_model_bytes", "Size of the global model in fp32 bytes", MetricType::Gauge),
        static_cast<double>(s.model_bytes()));
  Gauge(
      fam.Add("rog_worker_copies_bytes",
              "Memory held for the per-worker copies (pending updates), bytes", MetricType::Gauge),
      static_cast<double>(s.worker_copy_bytes()));
  Gauge(fam.Add("rog_state_bytes",
                "The model state's memory by the design's formula (what --max_state_bytes "
                "bounds): global rows, a pending copy per worker, versions",
                MetricType::Gauge),
        static_cast<double>(s.state_bytes()));
  Gauge(fam.Add("rog_state_max_bytes", "--max_state_bytes", MetricType::Gauge),
        static_cast<double>(s.max_state_bytes()));
  Gauge(fam.Add("rog_state_workers_within_limit",
                "The most worker records the model's state may have within --max_state_bytes "
                "(0 before the model arrives)",
                MetricType::Gauge),
        static_cast<double>(s.workers_within_limit()));
  Gauge(fam.Add("rog_team_ready", "1 once --workers workers have joined and training started",
                MetricType::Gauge),
        s.team_ready() ? 1 : 0);
  Counter(fam.Add("rog_engine_events_total",
                  "Events the engine thread has handled (workers' messages, admin calls)",
                  MetricType::Counter),
          static_cast<double>(s.engine_events()));
  Gauge(fam.Add("rog_engine_queue_delay_p50_seconds",
                "Median seconds events waited for the engine thread since rogd started (the upper "
                "bound of its histogram bucket)",
                MetricType::Gauge),
        s.engine_queue_delay_p50());
  Gauge(fam.Add("rog_engine_queue_delay_p99_seconds",
                "99th percentile of the seconds events waited for the engine thread since rogd "
                "started (the upper bound of its histogram bucket)",
                MetricType::Gauge),
        s.engine_queue_delay_p99());
  Gauge(fam.Add("rog_engine_queue_delay_max_seconds",
                "Longest an event waited for the engine thread since rogd started",
                MetricType::Gauge),
        s.engine_queue_delay_max());
}

// The team: workers by state, refusals, checkpoints, rows and bytes moved.
void AddTeamFamilies(const MetricsSnapshot& snapshot, double now_unix,
                     const std::vector<std::string>& reasons, Families& fam) {
  const pb::StatusReply& s = snapshot.status;
  uint64_t connected = 0, disconnected = 0, evicted = 0;
  double rows_up = 0, rows_down = 0, bytes_up = 0, bytes_down = 0;
  for (const pb::WorkerInfo& w : snapshot.workers.workers()) {
    if (w.state() == "connected") ++connected;
    if (w.state() == "disconnected") ++disconnected;
    if (w.state() == "evicted") ++evicted;
    rows_up += static_cast<double>(w.rows_pushed());
    rows_down += static_cast<double>(w.rows_pulled());
    bytes_up += static_cast<double>(w.bytes_pushed());
    bytes_down += static_cast<double>(w.bytes_pulled());
  }
  MetricFamily& workers = fam.Add(
      "rog_workers",
      "Workers by state: connected, disconnected (state kept for --lease), evicted (or left)",
      MetricType::Gauge);
  Gauge(workers, static_cast<double>(connected), {{"state", "connected"}});
  Gauge(workers, static_cast<double>(disconnected), {{"state", "disconnected"}});
  Gauge(workers, static_cast<double>(evicted), {{"state", "evicted"}});
  Gauge(fam.Add("rog_workers_lagging", "Attached workers at least S iterations behind the fastest",
                MetricType::Gauge),
        s.workers_lagging());

  MetricFamily& rejected =
      fam.Add("rog_rejected_messages_total",
              "Messages from workers refused (the stream ends, no state changes), by reason",
              MetricType::Counter);
  std::map<std::string, uint64_t> by_reason;
  for (const std::string& r : reasons) by_reason[r] = 0;
  for (const auto& [reason, count] : s.rejected()) by_reason[reason] = count;
  for (const auto& [reason, count] : by_reason) {
    Counter(rejected, static_cast<double>(count), {{"reason", reason}});
  }

  if (s.last_checkpoint_unix() > 0) {
    Gauge(fam.Add("rog_checkpoint_last_timestamp_seconds",
                  "Unix time of the last checkpoint written or restored", MetricType::Gauge),
          s.last_checkpoint_unix());
    Gauge(fam.Add("rog_checkpoint_age_seconds",
                  "Seconds since the last checkpoint written or restored (absent before the "
                  "first)",
                  MetricType::Gauge),
          std::max(0.0, now_unix - s.last_checkpoint_unix()));
  }

  MetricFamily& rows_total = fam.Add(
      "rog_rows_total",
      "Rows moved in row batches by every worker ever (uplink: pushed to rogd, downlink: pulled)",
      MetricType::Counter);
  Counter(rows_total, rows_up, {{"direction", "uplink"}});
  Counter(rows_total, rows_down, {{"direction", "downlink"}});
  MetricFamily& bytes_total = fam.Add(
      "rog_bytes_total", "Serialized row-batch bytes moved by every worker ever, by direction",
      MetricType::Counter);
  Counter(bytes_total, bytes_up, {{"direction", "uplink"}});
  Counter(bytes_total, bytes_down, {{"direction", "downlink"}});
}

// The staleness of every attached worker's copy of every row, as a
// histogram (rogctl staleness's counts).
void AddStalenessHistogram(const MetricsSnapshot& snapshot, Families& fam) {
  MetricFamily& hist =
      fam.Add("rog_row_staleness_iterations",
              "Iterations each attached worker's copy of each row is behind the freshest "
              "contribution, over all rows and attached workers, at scrape time (a snapshot, as "
              "rogctl staleness shows; use without rate())",
              MetricType::Histogram);
  ClientMetric m;
  uint64_t count = 0;
  double sum = 0;
  for (const auto& [value, n] : snapshot.staleness) {
    count += n;
    sum += static_cast<double>(value) * static_cast<double>(n);
  }
  std::vector<double> bounds = StalenessBuckets(snapshot.staleness_bound);
  bounds.push_back(std::numeric_limits<double>::infinity());
  for (double le : bounds) {
    uint64_t below = 0;
    for (const auto& [value, n] : snapshot.staleness) {
      if (static_cast<double>(value) <= le) below += n;
    }
    m.histogram.bucket.push_back(ClientMetric::Bucket{below, le});
  }
  m.histogram.sample_count = count;
  m.histogram.sample_sum = sum;
  hist.metric.push_back(std::move(m));
}

// One family per per-worker figure, filled worker by worker (FillWorker).
struct WorkerFamilies {
  explicit WorkerFamilies(Families& fam);
  void FillWorker(const pb::WorkerInfo& w);

  MetricFamily *connected, *iteration, *lag, *goodput, *rows, *bytes, *compute, *transmit, *stall,
      *stalls, *overshoot, *seen, *detached, *detaches, *reattaches, *detached_seconds,
      *stall_cause, *late;
};

WorkerFamilies::WorkerFamilies(Families& fam) {
  connected =
      &fam.Add("rog_worker_connected",
               "1 while the worker's stream is up, 0 while rogd keeps its state for --lease",
               MetricType::Gauge);
  iteration = &fam.Add("rog_worker_iteration", "Iterations the worker has completed (its clock)",
                       MetricType::Gauge);
  lag = &fam.Add("rog_worker_lag_iterations",
                 "Iterations the worker is behind the fastest attached worker", MetricType::Gauge);
  goodput = &fam.Add(
      "rog_worker_goodput_bytes_per_second",
      "Goodput measured from acknowledged bytes (uplink: by the worker, downlink: by rogd)",
      MetricType::Gauge);
  rows = &fam.Add("rog_worker_rows_total",
                  "Rows the worker pushed (uplink) and pulled (downlink) in row "
                  "batches since it first joined this rogd",
                  MetricType::Counter);
  bytes = &fam.Add("rog_worker_bytes_total",
                   "Serialized row-batch bytes the worker pushed (uplink) and "
                   "pulled (downlink) since it first joined this rogd",
                   MetricType::Counter);
  compute =
      &fam.Add("rog_worker_compute_seconds_total",
               "Seconds the worker spent computing, as it last reported", MetricType::Counter);
  transmit =
      &fam.Add("rog_worker_transmit_seconds_total",
               "Seconds the worker spent transmitting, as it last reported", MetricType::Counter);
  stall = &fam.Add("rog_worker_stall_seconds_total",
                   "Seconds the worker spent stalled at the staleness bound, as it last reported",
                   MetricType::Counter);
  stalls = &fam.Add("rog_worker_stalls_total", "Times the worker stalled at the staleness bound",
                    MetricType::Counter);
  overshoot = &fam.Add("rog_worker_window_overshoot_seconds",
                       "Last reported time from the end of the transmission window to the last "
                       "acknowledged byte of that iteration",
                       MetricType::Gauge);
  seen = &fam.Add("rog_worker_last_seen_seconds", "Seconds since the last message from the worker",
                  MetricType::Gauge);
  detached = &fam.Add(
      "rog_worker_detached",
      "1 while rogd has the worker detached by --patience (outside the bound and the window)",
      MetricType::Gauge);
  detaches = &fam.Add("rog_worker_detaches_total", "Times --patience detached the worker",
                      MetricType::Counter);
  reattaches =
      &fam.Add("rog_worker_reattaches_total",
               "Times the worker was reattached after its link recovered", MetricType::Counter);
  detached_seconds = &fam.Add("rog_worker_detached_seconds_total",
                              "Seconds the worker spent detached", MetricType::Counter);
  stall_cause = &fam.Add(
      "rog_worker_stall_cause_seconds_total",
      "Seconds rogd saw the worker stalled at the bound, by what it waited for: peer_compute (a "
      "peer had not completed the iteration the bound needs), peer_asked (a peer had, rogd had "
      "asked it to push the rows and no row asked had arrived yet), peer_uplink (the peer's rows "
      "were on their way), downlink (rogd held the rows and had not delivered them yet)",
      MetricType::Counter);
  late = &fam.Add("rog_worker_late_rows_total",
                  "Rows the worker pushed while detached (folded as usual; nobody waited for them)",
                  MetricType::Counter);
}

void WorkerFamilies::FillWorker(const pb::WorkerInfo& w) {
  Gauge(*connected, w.state() == "connected" ? 1 : 0, WorkerLabel(w));
  Gauge(*iteration, static_cast<double>(w.iteration()), WorkerLabel(w));
  Gauge(*lag, static_cast<double>(w.lag()), WorkerLabel(w));
  Gauge(*goodput, w.uplink_goodput(), WorkerDirection(w, "uplink"));
  Gauge(*goodput, w.downlink_goodput(), WorkerDirection(w, "downlink"));
  Counter(*rows, static_cast<double>(w.rows_pushed()), WorkerDirection(w, "uplink"));
  Counter(*rows, static_cast<double>(w.rows_pulled()), WorkerDirection(w, "downlink"));
  Counter(*bytes, static_cast<double>(w.bytes_pushed()), WorkerDirection(w, "uplink"));
  Counter(*bytes, static_cast<double>(w.bytes_pulled()), WorkerDirection(w, "downlink"));
  Counter(*compute, w.compute_seconds(), WorkerLabel(w));
  Counter(*transmit, w.transmit_seconds(), WorkerLabel(w));
  Counter(*stall, w.stall_seconds(), WorkerLabel(w));
  Counter(*stalls, static_cast<double>(w.stalls()), WorkerLabel(w));
  Gauge(*overshoot, w.window_overshoot(), WorkerLabel(w));
  Gauge(*seen, w.last_seen_seconds(), WorkerLabel(w));
  Gauge(*detached, w.detached() ? 1 : 0, WorkerLabel(w));
  Counter(*detaches, static_cast<double>(w.detaches()), WorkerLabel(w));
  Counter(*reattaches, static_cast<double>(w.reattaches()), WorkerLabel(w));
  Counter(*detached_seconds, w.detached_seconds(), WorkerLabel(w));
  Counter(*late, static_cast<double>(w.late_rows()), WorkerLabel(w));
  Counter(*stall_cause, w.stall_peer_compute_seconds(), WorkerCause(w, kStallPeerCompute));
  Counter(*stall_cause, w.stall_peer_uplink_seconds(), WorkerCause(w, kStallPeerUplink));
  Counter(*stall_cause, w.stall_downlink_seconds(), WorkerCause(w, kStallDownlink));
  Counter(*stall_cause, w.stall_peer_asked_seconds(), WorkerCause(w, kStallPeerAsked));
}

}  // namespace

std::vector<MetricFamily> MetricFamilies(const MetricsSnapshot& snapshot, double now_unix,
                                         const std::vector<std::string>& reasons) {
  Families fam;
  AddModelFamilies(snapshot, fam);
  AddTeamFamilies(snapshot, now_unix, reasons, fam);
  if (snapshot.status.has_model()) AddStalenessHistogram(snapshot, fam);
  // Per worker (team members only), by id, as rogctl workers lists them
  // (the engine keeps them by join order).
  WorkerFamilies per_worker(fam);
  std::vector<const pb::WorkerInfo*> members;
  for (const pb::WorkerInfo& w : snapshot.workers.workers()) {
    if (TeamMember(w)) members.push_back(&w);
  }
  std::sort(members.begin(), members.end(),
            [](const auto* a, const auto* b) { return a->worker_id() < b->worker_id(); });
  for (const pb::WorkerInfo* member : members) per_worker.FillWorker(*member);
  return fam.Take();
}

absl::Status CheckMetricsAddress(const std::string& address) {
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics_listen=", address, ": ", why,
        "; give HOST:PORT, e.g. 127.0.0.1:9470 (this machine only) or 0.0.0.0:9470 (every "
        "interface)"));
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return bad(!address.empty() && absl::c_all_of(address, absl::ascii_isdigit)
                   ? "no host (a port alone would listen on every interface)"
                   : "no port");
  }
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  uint32_t port_number = 0;
  if (port.empty() || !absl::c_all_of(port, absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &port_number) || port_number > 65535) {
    return bad(absl::StrCat("'", port, "' is not a port (0-65535)"));
  }
  if (host.empty()) return bad("no host");
  if (host == "localhost") return absl::OkStatus();
  if (host.front() == '[') {
    return bad(
        "IPv6 is not available: the HTTP server under prometheus-cpp (Debian's civetweb) "
        "is built without it");
  }
  const std::vector<std::string> parts = absl::StrSplit(host, '.');
  bool ipv4 = parts.size() == 4;
  for (const std::string& p : parts) {
    uint32_t v = 0;
    ipv4 = ipv4 && !p.empty() && p.size() <= 3 && absl::c_all_of(p, absl::ascii_isdigit) &&
           absl::SimpleAtoi(p, &v) && v <= 255;
  }
  if (!ipv4) {
    return bad(absl::StrCat("'", host, "' is not an IPv4 address or localhost"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address,
                                                                    Engine* engine) {
  absl::Status valid = CheckMetricsAddress(address);
  if (!valid.ok()) return valid;
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->collectable_ = std::make_shared<EngineCollectable>(engine);
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address,
                     " (address in use, or not an address of this machine?): ", e.what()));
  }
  server->exposer_->RegisterCollectable(server->collectable_);
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? 0 : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

}  // namespace rog
