// rogd's metric families on hand-made snapshots: names, values, which
// workers get series, the staleness histogram and --metrics_listen's
// checks. The endpoint itself is tested against a real rogd in
// //test/integration:metrics_test.
#include "server/metrics.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "prometheus/text_serializer.h"
#include "server/rejection.h"
#include "server/service.h"
#include "test/util/prometheus_text.h"

namespace rog {
namespace {

pb::WorkerInfo Info(const std::string& id, const std::string& state, uint64_t iteration) {
  pb::WorkerInfo w;
  w.set_worker_id(id);
  w.set_state(state);
  w.set_iteration(iteration);
  w.set_rows_pushed(10 * iteration);
  w.set_rows_pulled(20 * iteration);
  w.set_bytes_pushed(1000 * iteration);
  w.set_bytes_pulled(2000 * iteration);
  w.set_stall_seconds(0.25);
  w.set_stalls(3);
  w.set_uplink_goodput(1e6);
  w.set_downlink_goodput(2e6);
  return w;
}

MetricsSnapshot Snapshot() {
  MetricsSnapshot s;
  s.status.set_sync(pb::SYNC_ROG);
  s.status.set_codec(pb::CODEC_INT8);
  s.status.set_staleness(4);
  s.status.set_mta(0.317672);
  s.status.set_has_model(true);
  s.status.set_tensors(2);
  s.status.set_rows(17);
  s.status.set_model_bytes(8256);
  s.status.set_version("0.1.0");
  s.status.set_team_ready(true);
  (*s.status.mutable_rejected())["bad_seq"] = 2;
  (*s.status.mutable_rejected())["from_the_future"] = 1;
  *s.workers.add_workers() = Info("b", "disconnected", 5);
  *s.workers.add_workers() = Info("a", "connected", 7);
  // a was detached twice by --patience and is detached now.
  pb::WorkerInfo* a = s.workers.mutable_workers(1);
  a->set_detached(true);
  a->set_detaches(2);
  a->set_reattaches(1);
  a->set_detached_seconds(12.5);
  a->set_late_rows(40);
  a->set_stall_peer_compute_seconds(1.5);
  a->set_stall_peer_uplink_seconds(7.25);
  a->set_stall_downlink_seconds(0.5);
  a->set_stall_peer_asked_seconds(2.25);
  *s.workers.add_workers() = Info("gone", "evicted", 3);
  s.staleness_bound = 4;
  s.staleness = {{0, 20}, {1, 6}, {4, 3}, {9, 5}};
  return s;
}

// Sample lines of the text format: series -> value.
std::map<std::string, double> Samples(const std::vector<prometheus::MetricFamily>& families,
                                      std::string* text = nullptr) {
  const std::string t = prometheus::TextSerializer().Serialize(families);
  if (text != nullptr) *text = t;
  return PrometheusSamples(t);
}

TEST_CASE("metric families follow the snapshot", "[metrics]") {
  std::string text;
  const auto m = Samples(MetricFamilies(Snapshot(), 1000, {"bad_seq", "not_hello"}), &text);
  INFO(text);
  CHECK(m.at("rog_info{codec=\"int8\",sync=\"rog\",version=\"0.1.0\"}") == 1);
  CHECK(m.at("rog_model_rows") == 17);
  CHECK(m.at("rog_staleness_bound_iterations") == 4);
  CHECK(m.at("rog_workers{state=\"connected\"}") == 1);
  CHECK(m.at("rog_workers{state=\"disconnected\"}") == 1);
  CHECK(m.at("rog_workers{state=\"evicted\"}") == 1);
  // Known reasons from zero, reasons only the engine knows as well.
  CHECK(m.at("rog_rejected_messages_total{reason=\"not_hello\"}") == 0);
  CHECK(m.at("rog_rejected_messages_total{reason=\"bad_seq\"}") == 2);
  CHECK(m.at("rog_rejected_messages_total{reason=\"from_the_future\"}") == 1);
  // Team members (connected or within their lease) have series; the
  // evicted worker has none, but the team totals keep what it moved.
  CHECK(m.at("rog_worker_iteration{worker=\"a\"}") == 7);
  CHECK(m.at("rog_worker_iteration{worker=\"b\"}") == 5);
  CHECK(m.at("rog_worker_connected{worker=\"a\"}") == 1);
  CHECK(m.at("rog_worker_connected{worker=\"b\"}") == 0);
  CHECK(m.at("rog_worker_rows_total{direction=\"uplink\",worker=\"a\"}") == 70);
  CHECK(m.at("rog_worker_bytes_total{direction=\"downlink\",worker=\"b\"}") == 10000);
  CHECK(m.at("rog_worker_goodput_bytes_per_second{direction=\"downlink\",worker=\"a\"}") == 2e6);
  CHECK(m.at("rog_worker_stall_seconds_total{worker=\"a\"}") == 0.25);
  CHECK(m.at("rog_worker_stalls_total{worker=\"b\"}") == 3);
  CHECK(m.at("rog_worker_detached{worker=\"a\"}") == 1);
  CHECK(m.at("rog_worker_detached{worker=\"b\"}") == 0);
  CHECK(m.at("rog_worker_detaches_total{worker=\"a\"}") == 2);
  CHECK(m.at("rog_worker_reattaches_total{worker=\"a\"}") == 1);
  CHECK(m.at("rog_worker_detached_seconds_total{worker=\"a\"}") == 12.5);
  CHECK(m.at("rog_worker_late_rows_total{worker=\"a\"}") == 40);
  CHECK(m.at("rog_worker_stall_cause_seconds_total{cause=\"peer_compute\",worker=\"a\"}") == 1.5);
  CHECK(m.at("rog_worker_stall_cause_seconds_total{cause=\"peer_uplink\",worker=\"a\"}") == 7.25);
  CHECK(m.at("rog_worker_stall_cause_seconds_total{cause=\"downlink\",worker=\"a\"}") == 0.5);
  CHECK(m.at("rog_worker_stall_cause_seconds_total{cause=\"peer_asked\",worker=\"a\"}") == 2.25);
  CHECK(!absl::StrContains(text, "worker=\"gone\""));
  CHECK(text.find("rog_worker_iteration{worker=\"a\"}") <
        text.find("rog_worker_iteration{worker=\"b\"}"));
  CHECK(m.at("rog_rows_total{direction=\"uplink\"}") == 10 * (7 + 5 + 3));
  CHECK(m.at("rog_bytes_total{direction=\"downlink\"}") == 2000 * (7 + 5 + 3));
  // No checkpoint yet: no age.
  CHECK(!absl::StrContains(text, "rog_checkpoint"));
  // The histogram: cumulative, +Inf holds every (row, worker) pair.
  CHECK(m.at("rog_row_staleness_iterations_bucket{le=\"0\"}") == 20);
  CHECK(m.at("rog_row_staleness_iterations_bucket{le=\"1\"}") == 26);
  CHECK(m.at("rog_row_staleness_iterations_bucket{le=\"3\"}") == 26);
  CHECK(m.at("rog_row_staleness_iterations_bucket{le=\"4\"}") == 29);
  CHECK(m.at("rog_row_staleness_iterations_bucket{le=\"8\"}") == 29);
  CHECK(m.at("rog_row_staleness_iterations_bucket{le=\"+Inf\"}") == 34);
  CHECK(m.at("rog_row_staleness_iterations_count") == 34);
  CHECK(m.at("rog_row_staleness_iterations_sum") == 6 + 12 + 45);
  // Every counter ends in _total; nothing else does.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "# TYPE ")) continue;
    INFO(line);
    CHECK(absl::StartsWith(line, "# TYPE rog_"));
    CHECK(absl::EndsWith(line, " counter") == absl::StrContains(line, "_total "));
  }
}

TEST_CASE("checkpoint age, and no model yet", "[metrics]") {
  MetricsSnapshot s = Snapshot();
  s.status.set_last_checkpoint_unix(990);
  auto m = Samples(MetricFamilies(s, 1000.5, {}));
  CHECK(m.at("rog_checkpoint_age_seconds") == 10.5);
  CHECK(m.at("rog_checkpoint_last_timestamp_seconds") == 990);

  MetricsSnapshot empty;
  empty.status.set_version("0.1.0");
  std::string text;
  m = Samples(MetricFamilies(empty, 1000, RejectionReasons()), &text);
  INFO(text);
  CHECK(m.at("rog_model_loaded") == 0);
  CHECK(m.at("rog_workers{state=\"connected\"}") == 0);
  CHECK(m.at("rog_rejected_messages_total{reason=\"bad_values\"}") == 0);
  // Families without samples are left out rather than printed empty.
  CHECK(!absl::StrContains(text, "rog_worker_iteration"));
  CHECK(!absl::StrContains(text, "rog_row_staleness_iterations"));
}

TEST_CASE("staleness buckets: each iteration up to the bound, then coarser", "[metrics]") {
  using V = std::vector<double>;
  CHECK(StalenessBuckets(0) == V{0, 1});  // bsp
  CHECK(StalenessBuckets(1) == V{0, 1, 2});
  CHECK(StalenessBuckets(4) == V{0, 1, 2, 3, 4, 8});
  const V big = StalenessBuckets(100);
  CHECK(big.size() == 17 + 4);
  CHECK(big[16] == 16);
  CHECK(V(big.begin() + 17, big.end()) == V{32, 64, 100, 200});
  const V odd = StalenessBuckets(20);
  CHECK(V(odd.begin() + 17, odd.end()) == V{20, 40});
}

TEST_CASE("--metrics_listen takes HOST:PORT and says what to write instead", "[metrics]") {
  for (const char* good : {"127.0.0.1:9470", "0.0.0.0:0", "localhost:9470", "10.0.0.7:65535"}) {
    INFO(good);
    CHECK(CheckMetricsAddress(good).ok());
  }
  const std::map<std::string, std::string> bad = {
      {"9470", "no host"},
      {"127.0.0.1", "no port"},
      {"127.0.0.1:", "not a port"},
      {"127.0.0.1:http", "not a port"},
      {"127.0.0.1:65536", "not a port"},
      {"127.0.0.1:9470s", "not a port"},
      {":9470", "no host"},
      {"robot7:9470", "not an IPv4 address"},
      {"127.0.0.1:1,0.0.0.0:2", "not an IPv4 address"},
      {"256.0.0.1:9470", "not an IPv4 address"},
      {"[::1]:9470", "IPv6 is not available"},
  };
  for (const auto& [address, why] : bad) {
    const absl::Status s = CheckMetricsAddress(address);
    INFO(address << ": " << s.message());
    CHECK(!s.ok());
    CHECK(absl::StrContains(s.message(), why));
    CHECK(absl::StrContains(s.message(), "127.0.0.1:9470"));
  }
}

// Every reason has its own snake_case label, and the list the metrics
// start from zero holds them all (a reason exists only as a Rejection, so
// nothing can be counted under a label the list lacks).
TEST_CASE("every rejection reason has one label, and the list holds them all", "[metrics]") {
  const std::regex snake("[a-z0-9]+(_[a-z0-9]+)*");
  std::set<std::string> labels;
  for (int r = static_cast<int>(Rejection::kNone) + 1; r < static_cast<int>(Rejection::kEnd); ++r) {
    const std::string label = RejectionLabel(static_cast<Rejection>(r));
    INFO(r << ": " << label);
    CHECK(std::regex_match(label, snake));
    CHECK(labels.insert(label).second);
  }
  CHECK(std::string(RejectionLabel(Rejection::kNone)).empty());
  const std::set<std::string> listed(RejectionReasons().begin(), RejectionReasons().end());
  CHECK(listed == labels);
  CHECK(RejectionReasons().size() == labels.size());
}

// docs/operations.md "What is refused, and how": its table's reason column
// lists exactly the labels rogd counts, in both directions, so that neither
// a new reason nor a row for a reason that no longer exists goes unnoticed.
TEST_CASE("the operations guide's table of refusals lists exactly the rejection reasons",
          "[metrics][docs]") {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  REQUIRE(srcdir != nullptr);
  std::ifstream in(absl::StrCat(srcdir, "/", workspace, "/docs/operations.md"));
  REQUIRE(in.good());
  // The table's rows: from its header to the first line that is not a row.
  std::set<std::string> documented;
  bool in_table = false;
  int rows = 0;
  const std::regex label("`([a-z_]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line == "| the client sends | code | reason | the message starts |") {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (!absl::StartsWith(line, "| ")) break;
    const std::vector<std::string> cells = absl::StrSplit(line, " | ");
    if (absl::StartsWith(cells[0], "| ---")) continue;
    REQUIRE(cells.size() == 4);
    ++rows;
    INFO(line);
    std::smatch m;
    REQUIRE(std::regex_search(cells[2], m, label));  // every row names its reason
    documented.insert(m[1]);
  }
  CHECK(rows >= static_cast<int>(RejectionReasons().size()));
  const std::set<std::string> counted(RejectionReasons().begin(), RejectionReasons().end());
  for (const std::string& reason : counted) {
    INFO("rogd counts '" << reason << "', which the table does not list");
    CHECK(documented.count(reason) == 1);
  }
  for (const std::string& reason : documented) {
    INFO("the table lists '" << reason << "', which rogd never counts");
    CHECK(counted.count(reason) == 1);
  }
}

}  // namespace
}  // namespace rog
