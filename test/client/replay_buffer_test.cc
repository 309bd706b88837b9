// The replay buffer (client/replay_buffer.h) alone.
#include "client/replay_buffer.h"

#include <deque>
#include <vector>

#include "catch2/catch.hpp"

namespace rog {
namespace {

// An update batch of one row of `numel` values: 4 * numel + 8 bytes kept.
SentBatch Update(uint64_t seq, RowId row, size_t numel) {
  SentBatch b;
  b.seq = seq;
  b.rows = {row};
  b.counts = {1};
  b.decoded.assign(numel, 1.0f);
  return b;
}

TEST_CASE("ReplayBuffer keeps batches until rogd's checkpoint holds them", "[replay_buffer]") {
  ReplayBuffer r(1 << 20, "w1");
  r.Keep(Update(1, 0, 4), 0);
  r.Keep(Update(2, 1, 4), 0);
  r.Keep(Update(3, 2, 4), 0);
  CHECK(r.bytes() == 3 * 24);
  r.Forget(1);
  CHECK(r.bytes() == 2 * 24);
  std::vector<bool> rows(4, false);
  r.MarkRows(&rows);
  CHECK(rows == std::vector<bool>{false, true, true, false});
  // rogd restarted from a checkpoint at seq 2: batch 3 goes again.
  std::deque<SentBatch> lost = r.TakeLost(2);
  REQUIRE(lost.size() == 1);
  CHECK(lost.front().seq == 3);
  CHECK(r.replayed() == 1);
  CHECK(r.bytes() == 24);
  CHECK(r.TakeLost(2).empty());
}

TEST_CASE("ReplayBuffer drops the oldest batches past its capacity; 0 keeps none",
          "[replay_buffer]") {
  ReplayBuffer r(2 * 24, "w1");
  for (uint64_t seq = 1; seq <= 3; ++seq) r.Keep(Update(seq, 0, 4), 0);
  CHECK(r.bytes() == 2 * 24);
  CHECK(r.dropped() == 1);
  std::deque<SentBatch> lost = r.TakeLost(0);
  REQUIRE(lost.size() == 2);
  CHECK(lost.front().seq == 2);
  ReplayBuffer none(0, "w1");
  none.Keep(Update(1, 0, 4), 0);
  CHECK(none.bytes() == 0);
  CHECK(none.TakeLost(0).empty());
}

}  // namespace
}  // namespace rog
