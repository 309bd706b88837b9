// Team patience with real processes: rogd and three fault_worker processes
// on loopback, one behind its own link (a RateProxy in this process) that
// drops to near zero for a while, as a robot behind an obstacle. The others
// keep training, the robot is detached, reattaches once its link is back,
// and the model rogd ends with holds every update of every process exactly
// once (test/fault/fault_model.h).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "test/fault/child_process.h"
#include "test/fault/fault_model.h"
#include "test/fault/fault_testing.h"
#include "test/testing/rogd_harness.h"
#include "tools/links/rate_proxy.h"

namespace rog {
namespace {

TEST_CASE("a worker process behind a link near zero is detached and reattaches; nothing lost",
          "[fault][patience]") {
  auto rogd = RogdProcess::Start(
      {"--sync=rog", "--staleness=2", "--workers=3", "--lease=60s", "--patience=0.5s"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  RateProxy::Options up;
  up.rate_bytes_per_sec = 1e6;  // its 17 KB share in 17 ms
  auto link = RateProxy::Start(address, up);
  REQUIRE(link.ok());
  const std::string dir = MakeTempDir("patience");
  const auto start = [&](const std::string& id, int marker, const std::string& server) {
    auto p = ChildProcess::Start(
        {FaultWorkerBinary(), "--server=" + server, "--id=" + id, absl::StrCat("--marker=", marker),
         "--iterations=400", "--compute_ms=5"},
        absl::StrCat(dir, "/", id, ".log"));
    REQUIRE(p.ok());
    return *std::move(p);
  };
  std::unique_ptr<ChildProcess> a = start("a", 0, address);
  std::unique_ptr<ChildProcess> b = start("b", 1, address);
  std::unique_ptr<ChildProcess> v = start("v", 2, (*link)->address());
  REQUIRE(WaitFor(60, [&] { return LastCount(v->log(), "iteration") >= 10; }));

  // The obstacle: 5 KB/s, its share takes 3 s, six times the patience.
  (*link)->SetRate(5e3);
  INFO((*rogd)->log());
  REQUIRE(WaitFor(30, [&] { return absl::StrContains((*rogd)->log(), "detached worker v"); }));
  const uint64_t a_at_detach = ClockOf(address, "a");
  REQUIRE(WaitFor(30, [&] { return ClockOf(address, "a") >= a_at_detach + 30; }));
  const pb::WorkerInfo during = InfoOf(address, "v");
  CHECK(during.detached());
  CHECK(during.state() == "connected");  // detached, not disconnected

  (*link)->SetRate(1e6);
  REQUIRE(WaitFor(30, [&] { return absl::StrContains((*rogd)->log(), "reattached worker v"); }));
  for (ChildProcess* p : {a.get(), b.get(), v.get()}) {
    INFO(p->log());
    REQUIRE(p->Wait(120) == 0);
  }
  const pb::WorkerInfo after = InfoOf(address, "v");
  CHECK(after.detaches() >= 1);
  CHECK(after.reattaches() >= 1);
  std::vector<Incarnation> incs = {
      {"a", 0, LastCount(a->log(), "finished"), true},
      {"b", 1, LastCount(b->log(), "finished"), true},
      {"v", 2, LastCount(v->log(), "finished"), true},
  };
  absl::StatusOr<std::vector<float>> global = AdminExport(address);
  REQUIRE(global.ok());
  const Layout layout = FaultLayout();
  const ConservationReport report = CheckFaultConservation(layout, *global, incs);
  WARN("v detached " << after.detaches() << " time(s), " << after.detached_seconds()
                     << " s in all, " << after.late_rows() << " late rows; a went from "
                     << a_at_detach << " on while v was detached; v computed " << incs[2].computed
                     << " iterations (its clock rejoined the team's)\n"
                     << report.summary);
  INFO(report.problems);
  CHECK(report.ok);
  CHECK(report.row_updates_lost == 0);  // nobody was killed: nothing may be lost
}

}  // namespace
}  // namespace rog
