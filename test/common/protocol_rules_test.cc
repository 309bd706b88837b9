// The composed protocol rules that rogd, the SDK and the simulator share:
// the team window, speculation, the team's pace and the row candidates
// each side offers, driven by hand without a network or a clock.
#include "common/protocol_rules.h"

#include <limits>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/mta.h"

namespace rog {
namespace {

TEST_CASE("the team window: the slowest link's share time, capped by the patience",
          "[protocol_rules]") {
  const std::vector<double> links = {1000, 250, 500};  // bytes/s
  // 500 bytes of share: 0.5 s, 2 s and 1 s; the slowest sets the window.
  CHECK(TeamWindow(SyncPolicy::kRog, links, 500, 0) == Approx(2.0));
  // Only ROG has a window.
  CHECK(TeamWindow(SyncPolicy::kSsp, links, 500, 0) == 0);
  CHECK(TeamWindow(SyncPolicy::kBsp, links, 500, 0) == 0);
  // Nobody attached: no window.
  CHECK(TeamWindow(SyncPolicy::kRog, {}, 500, 1.5) == 0);
  // A link without an estimate: no window, so this iteration measures it,
  // with or without patience.
  CHECK(TeamWindow(SyncPolicy::kRog, {1000, 0, 500}, 500, 0) == 0);
  CHECK(TeamWindow(SyncPolicy::kRog, {1000, -1, 500}, 500, 1.5) == 0);
}

TEST_CASE("with patience a link too slow for it does not set the window", "[protocol_rules]") {
  const std::vector<double> links = {1000, 250, 500};
  // Patience 1.5 s: the 250 B/s link (2 s) is left out; 500 B/s (1 s) sets it.
  CHECK(TeamWindow(SyncPolicy::kRog, links, 500, 1.5) == Approx(1.0));
  // A link exactly at the patience still sets it.
  CHECK(TeamWindow(SyncPolicy::kRog, links, 500, 2.0) == Approx(2.0));
  // Every link too slow: the window is the patience itself.
  CHECK(TeamWindow(SyncPolicy::kRog, links, 500, 0.25) == Approx(0.25));
}

TEST_CASE("only a worker ahead of the slowest may speculate under ROG", "[protocol_rules]") {
  CHECK(MaySpeculate(SyncPolicy::kRog, 5, 4));
  CHECK_FALSE(MaySpeculate(SyncPolicy::kRog, 4, 4));
  CHECK(MaySpeculate(SyncPolicy::kSsp, 4, 4));
  CHECK(MaySpeculate(SyncPolicy::kBsp, 4, 4));
}

TEST_CASE("the whole plan goes when it fits the in-flight limit or the window",
          "[protocol_rules]") {
  // It all fits in flight: whatever the link and the window.
  CHECK(SendsWhole(1000, 1000, 0, 0));
  CHECK(SendsWhole(1000, 64 * 1024, 10, 0.1));
  // Past the in-flight limit: it must cross within the window at the goodput.
  CHECK(SendsWhole(1000, 999, 1e4, 0.1));
  CHECK_FALSE(SendsWhole(1001, 999, 1e4, 0.1));
  // No estimate, or no window (none yet): only the in-flight limit counts.
  CHECK_FALSE(SendsWhole(1000, 999, 0, 10));
  CHECK_FALSE(SendsWhole(1000, 999, 1e4, 0));
  CHECK_FALSE(SendsWhole(1000, 999, 1e4, std::numeric_limits<double>::infinity()));
  CHECK_FALSE(SendsWhole(1000, 999, std::numeric_limits<double>::quiet_NaN(), 10));
}

TEST_CASE("the team's pace: members over compute plus the slowest share", "[protocol_rules]") {
  CHECK(TeamRate(4, 1.0, 1.0) == Approx(2.0));
  CHECK(TeamRate(3, 0.5, 0.0) == Approx(6.0));
  CHECK(TeamRate(0, 1.0, 1.0) == 0);
}

TEST_CASE("the patience: the floor, or that many compute times per iteration if longer",
          "[protocol_rules]") {
  CHECK(TeamPatience(0.5, 4, 0.005) == 0.5);        // 5 ms iterations: the floor
  CHECK(TeamPatience(0.5, 4, 1.0) == Approx(4.0));  // 1 s iterations: four of them
  CHECK(TeamPatience(0.5, 4, 5.0) == Approx(20.0));
  CHECK(TeamPatience(0.5, 4, 0) == 0.5);    // compute not measured yet
  CHECK(TeamPatience(0.5, 0, 1.0) == 0.5);  // --patience_iterations=0: the floor alone
  CHECK(TeamPatience(0, 4, 1.0) == 0);      // patience off
  CHECK(TeamPatience(0.5, 4, 1e300) == kMaxPatience);
  CHECK(TeamPatience(0.5, 4, std::numeric_limits<double>::infinity()) == kMaxPatience);
}

TEST_CASE("the team's compute time is the lower median of the measured ones", "[protocol_rules]") {
  CHECK(TeamComputeSeconds({}) == 0);
  CHECK(TeamComputeSeconds({0, -1}) == 0);            // nobody measured yet
  CHECK(TeamComputeSeconds({1.0, 0, 2.0}) == 1.0);    // the unmeasured one does not count
  CHECK(TeamComputeSeconds({1.0, 8e8, 1.0}) == 1.0);  // one absurd report moves nothing
  CHECK(TeamComputeSeconds({1.0, 8e8}) == 1.0);       // lower median of two
  CHECK(TeamComputeSeconds({3.0, 1.0, 2.0, 4.0}) == 2.0);
}

TEST_CASE("patience judges every policy's links by the MTA share of --staleness",
          "[protocol_rules]") {
  CHECK(MembershipShareBytes(2, 1000) == Approx(500));  // MTA(2) = 0.5
  CHECK(MembershipShareBytes(4, 1000) == Approx(1000 * MinimumTransmissionAmount(4)));
  CHECK(MembershipShareBytes(0, 1000) == Approx(1000));
}

TEST_CASE("a detached worker's link qualifies once it moves its share in half the patience",
          "[protocol_rules]") {
  // 500 bytes at 1000 B/s: 0.5 s; half of a 1 s patience.
  CHECK(ReattachLinkFits(500, 1.0, 1000));
  CHECK_FALSE(ReattachLinkFits(500, 0.9, 1000));
  CHECK_FALSE(ReattachLinkFits(500, 1.0, 0));   // unknown
  CHECK_FALSE(ReattachLinkFits(500, 1.0, -1));  // unknown
}

TEST_CASE("a holder goes at the patience, or at twice it while its link brings its share",
          "[protocol_rules]") {
  // Patience 2 s, share 1000 bytes.
  CHECK_FALSE(DetachHolder(1.9, 2, 0, 1000));     // not waited long enough
  CHECK(DetachHolder(2.0, 2, 0, 1000));           // a dead link, or computing
  CHECK(DetachHolder(2.0, 2, 999, 1000));         // less than its share
  CHECK_FALSE(DetachHolder(2.0, 2, 1000, 1000));  // a live link
  CHECK_FALSE(DetachHolder(3.9, 2, 5000, 1000));
  CHECK(DetachHolder(4.0, 2, 5000, 1000));      // kLiveLinkPatience = 2
  CHECK_FALSE(DetachHolder(100, 0, 0, 1000));   // patience off
  CHECK_FALSE(DetachHolder(100, -1, 0, 1000));  // patience off
}

TEST_CASE("a condition counts once it has held without a break", "[protocol_rules]") {
  double since = -1;
  CHECK_FALSE(HeldFor(true, 10.0, &since));
  CHECK(since == 10.0);
  CHECK_FALSE(HeldFor(true, 10.5, &since));
  CHECK(HeldFor(true, 11.0, &since));  // kReattachHold = 1 s
  CHECK_FALSE(HeldFor(false, 11.2, &since));
  CHECK(since < 0);
  CHECK_FALSE(HeldFor(true, 11.3, &since));  // starts again
  CHECK(HeldFor(true, 11.8, &since, 0.5));
}

Layout ThreeRows() {
  auto l = Layout::Create({{"w", {3, 2}}}, 1);  // three rows of 2 elements
  REQUIRE(l.ok());
  return *l;
}

TEST_CASE("rogd offers down every row with pending updates; BSP none", "[protocol_rules]") {
  const Layout layout = ThreeRows();
  ServerState s(layout, std::vector<float>(6, 0.0f), 2);
  s.Fold(0, 0, std::vector<float>{1, 1}, 1);
  s.Fold(0, 2, std::vector<float>{4, 4}, 1);
  const AttachedSet both = {true, true};
  CHECK(DownlinkCandidates(SyncPolicy::kBsp, 0, s, 1, 1, both, Codec::kFp32, layout).empty());
  const auto ssp = DownlinkCandidates(SyncPolicy::kSsp, 2, s, 1, 1, both, Codec::kFp32, layout);
  REQUIRE(ssp.size() == 2);
  CHECK(ssp[0].row == 0);
  CHECK(ssp[1].row == 2);
  CHECK(ssp[0].mandatory);
  CHECK(ssp[0].wire_bytes == 2 * 4 + kRowIndexBytes);
  // Worker 0 folded them: nothing is pending for it.
  CHECK(DownlinkCandidates(SyncPolicy::kRog, 2, s, 0, 1, both, Codec::kFp32, layout).empty());
  const auto rog = DownlinkCandidates(SyncPolicy::kRog, 2, s, 1, 1, both, Codec::kFp32, layout);
  REQUIRE(rog.size() == 2);
  // Larger pending updates rank higher.
  CHECK(rog[1].importance > rog[0].importance);
}

TEST_CASE("a worker offers up its unpushed rows and its residual rows", "[protocol_rules]") {
  const Layout layout = ThreeRows();
  WorkerState w(layout, std::vector<float>(6, 0.0f));
  w.ApplyLocalUpdate(std::vector<float>{0.3f, -0.7f, 0, 0, 2, 2});
  auto all = UplinkCandidates(SyncPolicy::kSsp, 2, w, Codec::kSign, layout);
  REQUIRE(all.size() == 3);  // every row gained an iteration, even row 1's zeros
  CHECK(all[0].mandatory);
  // Push row 0 with a lossy codec: it keeps a residual, no unpushed iteration.
  std::string payload;
  std::vector<float> decoded(2);
  w.TakeUplink(0, Codec::kSign, &payload, absl::MakeSpan(decoded));
  REQUIRE(w.unpushed(0) == 0);
  REQUIRE(w.HasResidual(0));
  const auto with = UplinkCandidates(SyncPolicy::kRog, 2, w, Codec::kSign, layout);
  REQUIRE(with.size() == 3);
  CHECK(with[0].row == 0);
  CHECK_FALSE(with[0].mandatory);
  CHECK(with[0].importance > 0);  // ranked as one iteration old
  CHECK(with[0].wire_bytes == RowWireBytes(Codec::kSign, 2));
}

TEST_CASE("the drain rule: 1/N under ROG with kAverage and a known team, else everything",
          "[protocol_rules]") {
  CHECK(DrainKeep(SyncPolicy::kRog, DrainRule::kAverage, 4) == 0.25);
  CHECK(DrainKeep(SyncPolicy::kRog, DrainRule::kAverage, 1) == 1.0);
  CHECK(DrainKeep(SyncPolicy::kRog, DrainRule::kAverage, 0) == 1.0);  // an older rogd
  CHECK(DrainKeep(SyncPolicy::kRog, DrainRule::kSum, 4) == 1.0);
  CHECK(DrainKeep(SyncPolicy::kSsp, DrainRule::kAverage, 4) == 1.0);
  CHECK(DrainKeep(SyncPolicy::kBsp, DrainRule::kAverage, 4) == 1.0);
}

TEST_CASE("the stale weight: 1 / (1 + the iterations of the team's updates a row lacked)",
          "[protocol_rules]") {
  CHECK(StaleWeight(5, 5) == 1.0);
  CHECK(StaleWeight(5, 7) == 1.0);  // ahead of the clock: lacks nothing
  CHECK(StaleWeight(5, 4) == 0.5);
  CHECK(StaleWeight(5, 1) == 0.2);
  CHECK(StaleWeight(0, 0) == 1.0);
}

}  // namespace
}  // namespace rog
