// The uplink's batches in flight (client/uplink_in_flight.h) alone.
#include "client/uplink_in_flight.h"

#include <deque>
#include <vector>

#include "catch2/catch.hpp"
#include "common/protocol_rules.h"

namespace rog {
namespace {

SentBatch Batch(UplinkInFlight* u, uint64_t bytes, double now) {
  SentBatch b;
  b.seq = u->TakeSeq();
  b.bytes = bytes;
  b.sent_at = now;
  return b;
}

TEST_CASE("UplinkInFlight numbers batches, counts their bytes and lets acks take them",
          "[uplink_in_flight]") {
  UplinkInFlight u;
  CHECK(u.Cap(0.05, 1000) == kInitialInFlight);  // no estimate yet
  u.Send(Batch(&u, 100, 0), 0);
  u.Send(Batch(&u, 200, 0), 0);
  u.Send(Batch(&u, 300, 0.01), 0.01);
  CHECK(u.bytes() == 600);
  std::vector<SentBatch> acked = u.Acknowledge(2, 300, 0.1);
  REQUIRE(acked.size() == 2);
  CHECK(acked[0].seq == 1);
  CHECK(acked[1].seq == 2);
  CHECK(u.bytes() == 300);
  CHECK(u.last_acked() == 2);
  CHECK(u.min_rtt() == Approx(0.1));  // from batch 2, the one the ack names
  CHECK(u.goodput().has_estimate());
  CHECK_FALSE(u.empty());
}

TEST_CASE("UplinkInFlight::Restart puts lost batches first and keeps what rogd lacks",
          "[uplink_in_flight]") {
  UplinkInFlight u;
  for (int k = 0; k < 4; ++k) u.Send(Batch(&u, 10, 0), 0);  // seqs 1-4
  u.Acknowledge(1, 10, 0.05);
  u.KeepAckedInResync(SentBatch());
  int visited = 0;
  u.ForEach([&](const SentBatch&) { ++visited; });
  CHECK(visited == 4);  // the one kept in the resync and three in flight
  std::deque<SentBatch> lost(1);
  lost[0].seq = 1;  // acknowledged, then lost in a rogd crash
  std::deque<SentBatch> back = u.Restart(0, std::move(lost));
  REQUIRE(back.size() == 4);
  CHECK(back.front().seq == 1);
  CHECK(back.back().seq == 4);
  CHECK(u.empty());
  CHECK(u.bytes() == 0);
  CHECK(u.last_acked() == 0);
  CHECK(u.TakeSeq() == 1);
  visited = 0;
  u.ForEach([&](const SentBatch&) { ++visited; });
  CHECK(visited == 0);
}

}  // namespace
}  // namespace rog
