#include "common/staleness.h"

#include <algorithm>
#include <vector>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("policies parse by name and BSP's bound is 0", "[staleness]") {
  CHECK(*ParseSyncPolicy("bsp") == SyncPolicy::kBsp);
  CHECK(*ParseSyncPolicy("ssp") == SyncPolicy::kSsp);
  CHECK(*ParseSyncPolicy("rog") == SyncPolicy::kRog);
  auto bad = ParseSyncPolicy("asp");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("bsp, ssp, rog") != std::string::npos);
  CHECK(SyncPolicyName(SyncPolicy::kRog) == "rog");
  CHECK(EffectiveBound(SyncPolicy::kBsp, 4) == 0);
  CHECK(EffectiveBound(SyncPolicy::kSsp, 4) == 4);
  CHECK(EffectiveBound(SyncPolicy::kRog, 4) == 4);
  CHECK(NeededVersion(10, 4) == 6);
  CHECK(NeededVersion(3, 4) == 0);
  CHECK(NeededVersion(5, 0) == 5);
}

// Three workers, four rows; worker 0's copy.
struct Fixture {
  VersionStore global{4, 3};
  VersionStore copy{4, 3};
  AttachedSet attached{true, true, true};
};

TEST_CASE("a worker may start only when every row holds every other worker up to c - B",
          "[staleness]") {
  Fixture f;
  for (RowId r = 0; r < 4; ++r) {
    f.copy.Set(r, 1, 6);
    f.copy.Set(r, 2, 6);
  }
  CHECK(MayStart(f.copy, 0, f.attached, 10, 4));        // needs 6
  CHECK_FALSE(MayStart(f.copy, 0, f.attached, 11, 4));  // needs 7
  f.copy.Set(2, 2, 5);
  CHECK_FALSE(MayStart(f.copy, 0, f.attached, 10, 4));
  auto missing = FindMissing(f.copy, 0, f.attached, 6);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].row == 2);
  CHECK(missing[0].worker == 2);
  CHECK(missing[0].have == 5);
  SECTION("its own column never counts") {
    f.copy.Set(2, 2, 6);
    f.copy.Set(0, 0, 0);
    CHECK(MayStart(f.copy, 0, f.attached, 10, 4));
  }
  SECTION("a detached worker does not hold others back") {
    f.attached[2] = false;
    CHECK(MayStart(f.copy, 0, f.attached, 10, 4));
  }
  SECTION("BSP needs the previous iteration of everyone") {
    CHECK_FALSE(MayStart(f.copy, 0, f.attached, 7, 0));
  }
}

TEST_CASE("a stall plan names the rows to push now and the rows to deliver now", "[staleness]") {
  Fixture f;
  // Global: worker 1 pushed rows 0..3 up to 5; worker 2 pushed rows 0,1 up
  // to 5 and rows 2,3 only up to 3.
  for (RowId r = 0; r < 4; ++r) f.global.Set(r, 1, 5);
  f.global.Set(0, 2, 5);
  f.global.Set(1, 2, 5);
  f.global.Set(2, 2, 3);
  f.global.Set(3, 2, 3);
  // Worker 0's copy has row 0 complete, nothing else.
  f.copy.Set(0, 1, 5);
  f.copy.Set(0, 2, 5);
  StallPlan plan = PlanStall(f.global, f.copy, 0, f.attached, 5);
  CHECK(plan.missing_rows == 3);
  CHECK(plan.deliverable == std::vector<RowId>{1});
  CHECK(plan.pushes[2] == std::vector<RowId>{2, 3});
  CHECK(plan.pushes[1].empty());
  CHECK(plan.pushes[0].empty());
  CHECK(plan.waiting_for == std::vector<size_t>{2});
}

TEST_CASE("copy staleness is the largest gap to the freshest contribution", "[staleness]") {
  Fixture f;
  f.global.Set(1, 1, 9);
  f.global.Set(1, 2, 4);
  f.copy.Set(1, 1, 6);
  f.copy.Set(1, 2, 4);
  f.global.Set(1, 0, 100);  // own column ignored
  CHECK(CopyStaleness(f.global, f.copy, 1, 0, f.attached) == 3);
  CHECK(CopyStaleness(f.global, f.copy, 0, 0, f.attached) == 0);
  CHECK(MinOtherVersion(f.copy, 1, 0, f.attached) == 4);
  AttachedSet alone{true, false, false};
  CHECK(MinOtherVersion(f.copy, 1, 0, alone) == std::numeric_limits<uint64_t>::max());
}

TEST_CASE("a stall is classified by what the stalled worker waits for", "[staleness]") {
  StallPlan plan;
  // Waiting for nobody: the rows are at the server, not yet delivered.
  CHECK(ClassifyStall(plan, {5, 5, 5}, {}, 3) == kStallDownlink);
  CHECK(ClassifyStall(plan, {5, 5, 5}, {true, true, true}, 3) == kStallDownlink);
  plan.waiting_for = {1, 2};
  // Both have completed iteration 3 but not pushed the rows.
  CHECK(ClassifyStall(plan, {5, 3, 4}, {}, 3) == kStallPeerUplink);
  CHECK(ClassifyStall(plan, {5, 3, 4}, {false, false, false}, 3) == kStallPeerUplink);
  // Worker 2 was asked and has not answered yet; worker 0 (not waited
  // for) does not count.
  CHECK(ClassifyStall(plan, {5, 3, 4}, {false, false, true}, 3) == kStallPeerAsked);
  CHECK(ClassifyStall(plan, {5, 3, 4}, {true, false, false}, 3) == kStallPeerUplink);
  // Worker 2 has not completed iteration 3 yet: that comes first.
  CHECK(ClassifyStall(plan, {5, 4, 2}, {false, true, false}, 3) == kStallPeerCompute);
  CHECK(StallCauseName(kStallPeerCompute) == "peer_compute");
  CHECK(StallCauseName(kStallPeerUplink) == "peer_uplink");
  CHECK(StallCauseName(kStallDownlink) == "downlink");
  CHECK(StallCauseName(kStallPeerAsked) == "peer_asked");
  // The stall path lists every cause once.
  std::vector<int> path;
  for (StallCause c : kStallPath) path.push_back(c);
  std::sort(path.begin(), path.end());
  CHECK(path == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("patience blames the end of the chain of waiting workers", "[staleness]") {
  using Waits = std::vector<std::vector<size_t>>;
  const AttachedSet all(5, true);
  // Bound 2, each worker further behind: 0 has completed 10 iterations and
  // needs version 8 of the others; 1 (clock 7) needs 5, 2 (clock 4) needs
  // 2; 3 and 4 are at 1 and 0. None has completed what the one before it
  // in these chains needs, so a stalled holder is held by its own wait.
  std::vector<uint64_t> clocks = {10, 7, 4, 1, 0};
  std::vector<uint64_t> needed = {8, 5, 2, 0, 0};
  const auto blame = [&](std::vector<size_t> waiting_for, const Waits& waits,
                         const AttachedSet& attached) {
    return BlameForStall(0, waiting_for, waits, clocks, needed, attached);
  };
  SECTION("a holder that is not stalled is blamed itself") {
    CHECK(blame({1}, Waits(5), all) == std::vector<size_t>{1});
  }
  SECTION("a stalled holder passes the blame to the worker it waits for") {
    // 0 waits for 1, 1 waits for 2, 2 waits for 3 on a slow link.
    const Waits waits = {{1}, {2}, {3}, {}, {}};
    CHECK(blame({1}, waits, all) == std::vector<size_t>{3});
  }
  SECTION("a stalled holder that has computed what is needed is blamed: its push is late") {
    clocks[1] = 9;  // 1 completed iteration 8 and 9 but has not pushed 8
    needed[1] = 7;
    const Waits waits = {{1}, {2}, {3}, {}, {}};
    CHECK(blame({1}, waits, all) == std::vector<size_t>{1});
    // Further down the chain the same: 2 completed what 1 needs (version 5).
    clocks[1] = 7;
    needed[1] = 5;
    clocks[2] = 6;
    CHECK(blame({1}, waits, all) == std::vector<size_t>{2});
  }
  SECTION("a wait that leads back into the chain blames the holder") {
    // 1 waits only for 0, who waits for 1: 1 has not pushed what 0 needs.
    const Waits waits = {{1}, {0}, {}, {}, {}};
    CHECK(blame({1}, waits, all) == std::vector<size_t>{1});
    // 1 waits for 2, 2 waits for 1: 2 is blamed (1 is on the path).
    const Waits loop = {{1}, {2}, {1}, {}, {}};
    CHECK(blame({1}, loop, all) == std::vector<size_t>{2});
  }
  SECTION("two chains ending at the same worker blame it once") {
    // 0 waits for 1 and 2; both wait for 4: 2 is stuck behind 4 too.
    const Waits waits = {{1, 2}, {4}, {4}, {}, {}};
    CHECK(blame({1, 2}, waits, all) == std::vector<size_t>{4});
    // 2 waits for 1, who waits for 3: 3 alone.
    const Waits behind = {{1, 2}, {3}, {1}, {}, {}};
    CHECK(blame({1, 2}, behind, all) == std::vector<size_t>{3});
  }
  SECTION("several slow links are all blamed, in walk order") {
    const Waits waits = {{1, 2}, {3}, {}, {}, {}};
    CHECK(blame({1, 2}, waits, all) == std::vector<size_t>({3, 2}));
  }
  SECTION("detached workers are never blamed and do not take the blame") {
    AttachedSet attached = all;
    attached[3] = false;
    // 1 waits for 3 only, who is detached: 1 is blamed.
    const Waits waits = {{1}, {3}, {}, {}, {}};
    CHECK(blame({1}, waits, attached) == std::vector<size_t>{1});
    // A detached worker among those waited for directly: nobody for it.
    CHECK(blame({3}, waits, attached).empty());
  }
  SECTION("the waiting worker itself is never blamed") {
    CHECK(blame({0}, Waits(5), all).empty());
    CHECK(BlameForStall(2, {}, Waits(5), clocks, needed, all).empty());
  }
}

TEST_CASE("version stores grow by a worker column keeping existing versions", "[version_store]") {
  VersionStore v(3, 2);
  v.Set(0, 0, 1);
  v.Set(2, 1, 7);
  v.Add(2, 1, 2);
  const size_t w = v.AddWorker(5);
  CHECK(w == 2);
  CHECK(v.num_workers() == 3);
  CHECK(v.Get(0, 0) == 1);
  CHECK(v.Get(2, 1) == 9);
  CHECK(v.Get(1, 2) == 5);
  VersionStore other(3, 3);
  other.Set(1, 1, 42);
  v.CopyRow(other, 1);
  CHECK(v.Get(1, 1) == 42);
  CHECK(v.Get(1, 2) == 0);
  CHECK(v.Get(2, 1) == 9);
}

}  // namespace
}  // namespace rog
