// ATP's cutoff through a slow link: two robots, each behind its own 2 Mbit/s
// RateProxy, and the overshoot of the windows that end with only optional
// rows in them. A figure measured in real time, so the target runs alone
// (tags = ["exclusive"] in BUILD): other tests on the same 2 cores delay the
// workers' and the links' threads, and more windows then carry rows the
// staleness bound forced into them. Bounded: workers give up after 60 s.
#include <algorithm>
#include <vector>

#include "catch2/catch.hpp"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"
#include "test/testing/team_checks.h"
#include "test/util/rate_proxy.h"

namespace rog {
namespace {

TEST_CASE("on a slow link the window cuts sharply", "[protocol][slow]") {
  auto rogd =
      RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2", "--batch_bytes=4096"});
  REQUIRE(rogd.ok());
  RateProxy::Options link;
  link.rate_bytes_per_sec = 250e3;  // 2 Mbit/s
  link.delay_seconds = 0.005;
  // Each robot has a link of its own.
  auto link_a = RateProxy::Start((*rogd)->address(), link);
  auto link_b = RateProxy::Start((*rogd)->address(), link);
  REQUIRE(link_a.ok());
  REQUIRE(link_b.ok());
  const Layout big = BigLayout();
  Team team((*rogd)->address(), 2, &big);
  WorkerOptions options;
  options.batch_bytes = 4096;
  options.server = (*link_a)->address();
  Member& a = team.Add("a", 0, options);
  options.server = (*link_b)->address();
  Member& b = team.Add("b", 1, options);
  team.Train(a, 24, 20);
  team.Train(b, 24, 20);
  team.JoinAll();
  RequireClean(team);
  // ATP cuts the optional rows at the window's end; rows the staleness
  // bound made mandatory, or that the stalled peer asked for, go whatever
  // the window (late_bytes) and are not what this test measures.
  std::vector<double> overshoot;
  std::vector<double> goodputs;
  size_t late = 0;
  for (auto& m : team.members()) {
    for (const IterationStats& s : m->stats) {
      UNSCOPED_INFO(m->id << " iteration " << s.iteration << ": window " << s.window_seconds
                          << " s, transmit " << s.transmit_seconds << " s, up " << s.rows_up
                          << " rows " << s.bytes_up << " B, kept " << s.rows_kept << ", goodput "
                          << s.uplink_goodput);
      // Pushes are reported once acknowledged, usually with the next iteration.
      for (const PushStats& p : s.pushes) {
        UNSCOPED_INFO("  push of iteration " << p.iteration << ": overshoot " << p.overshoot_seconds
                                             << " s, late " << p.late_bytes << " B, busy "
                                             << p.busy_seconds << " s");
        if (p.window_seconds <= 0) continue;
        if (p.late_bytes > 0) {
          ++late;
        } else {
          overshoot.push_back(p.overshoot_seconds);
        }
      }
      if (s.uplink_goodput > 0) goodputs.push_back(s.uplink_goodput);
    }
  }
  REQUIRE(!goodputs.empty());
  std::sort(goodputs.begin(), goodputs.end());
  const double goodput = goodputs[goodputs.size() / 2];
  // Enough windows end with nothing forced past them for a p99. How many
  // carry late rows depends on the machine's load as well as on the engine
  // (a batch formed after its window closed is late, and a starved thread
  // forms it late): of about 40 windows, 7 or 8 were late alone; beside a
  // busy loop per core, up to 14; with a second copy of this test on top,
  // up to 19; in CI on 2026-12-04, 24 (16 clean). A form of push-ahead that
  // forced rows past windows made 38 of 59 late (docs/design.md): load
  // reaches that ratio too, so no ratio is checked here. Rows a peer asks
  // for ahead are checked never to go past the holder's window in
  // worker_protocol_test ("PushNow.ahead: ..."), with an injected clock.
  REQUIRE(overshoot.size() >= 8);
  std::sort(overshoot.begin(), overshoot.end());
  const double p99 = overshoot[static_cast<size_t>(0.99 * (overshoot.size() - 1))];
  // The in-flight window: 50 ms of measured goodput plus one batch.
  const double inflight = 0.05 + 4096 / goodput;
  // Printed on every run: the figures this test exists for.
  WARN("windows " << overshoot.size() << " clean (and " << late
                  << " with late rows), overshoot p50 " << overshoot[overshoot.size() / 2]
                  << " s, p99 " << p99 << " s, bound " << inflight + 0.02 << " s, goodput "
                  << goodput << " B/s");
  CHECK(p99 <= inflight + 0.02);
  // The windows cut: rows stayed in the accumulators rather than everything
  // going whatever the time.
  uint64_t kept = 0;
  for (auto& m : team.members()) {
    for (const IterationStats& s : m->stats) kept += s.rows_kept;
  }
  CHECK(kept > 0);
  RequireConserved(team, **rogd);
}
}  // namespace
}  // namespace rog
