// The invariant checks the simulator and the integration tests share
// (sim/invariants.h), on values written by the test.
#include "sim/invariants.h"

#include <vector>

#include "catch2/catch.hpp"
#include "common/layout.h"

namespace rog {
namespace {

// Two rows of four: markers 0..3 in each.
Layout TwoRows() { return *Layout::Create({{"w", {2, 4}}}, 4); }

// Values holding `held` iterations of marker 1 in every row (initial 0).
std::vector<float> Holding(int64_t held) {
  std::vector<float> v(8, 0.0f);
  v[1] = v[5] = static_cast<float>(held);
  return v;
}

TEST_CASE("a start short of a peer's iterations is caught, row and count", "[invariants]") {
  const Layout layout = TwoRows();
  const std::vector<float> initial(8, 0.0f);
  IterationLog peer;
  for (uint64_t k = 1; k <= 5; ++k) peer.Add(k);
  // Starting the iteration after clock 5 under bound 2 needs the peer's
  // iterations up to 3.
  std::vector<float> values = Holding(2);
  values[5] = 3;  // the second row holds enough
  PeerAtStart p = CheckPeerAtStart(layout, values, initial, 1, peer, 0, 5, 2);
  CHECK_FALSE(p.ok);
  CHECK(p.short_row == 0);
  CHECK(p.held == 2);
  CHECK(p.needed == 3);
  CHECK(p.max_lag == 3);  // 5 iterations up to the clock, 2 held
  p = CheckPeerAtStart(layout, Holding(3), initial, 1, peer, 0, 5, 2);
  CHECK(p.ok);
  CHECK(p.max_lag == 2);
}

TEST_CASE("versions a reattach claimed are not iterations a replica must hold", "[invariants]") {
  const Layout layout = TwoRows();
  const std::vector<float> initial(8, 0.0f);
  IterationLog peer;
  // Two iterations, then rogd moved the peer's clock from 2 to 9: its next
  // iterations end at 10 and 11.
  for (uint64_t k : {1, 2, 10, 11}) peer.Add(k);
  CHECK(peer.Count(0, 9) == 2);
  CHECK(CheckPeerAtStart(layout, Holding(2), initial, 1, peer, 0, 10, 1).ok);
  CHECK_FALSE(CheckPeerAtStart(layout, Holding(2), initial, 1, peer, 0, 11, 1).ok);
  // Counted from a join clock: nothing before it is needed.
  CHECK(CheckPeerAtStart(layout, Holding(0), initial, 1, peer, 10, 11, 1).ok);
  // A new incarnation numbering from a lower clock starts the log anew.
  peer.Add(3);
  CHECK(peer.Count(0, 100) == 1);
}

TEST_CASE("conservation: the first element that is not initial plus every update", "[invariants]") {
  const std::vector<float> initial = {1, 2};
  CHECK(ConservationProblem(std::vector<float>{3, 2}, initial, std::vector<double>{2, 0}) == "");
  CHECK(ConservationProblem(std::vector<float>{3, 3}, initial, std::vector<double>{2, 0}) ==
        "global[1] = 3 but initial + all updates = 2");
  CHECK(ConservationError(std::vector<float>{3, 3}, initial, std::vector<double>{2, 0}) == 1);
  CHECK(MaxDifference(std::vector<float>{1, 5}, std::vector<float>{1, 2}) == 3);
}

}  // namespace
}  // namespace rog
