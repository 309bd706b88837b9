// The uplink's batches in flight: sent to rogd, not yet acknowledged, and
// what the sender measures from their acknowledgements (goodput, round
// trip), which sets how much may be in flight. The SDK's mirror of rogd's
// per-worker downlink (server/engine_impl.h: WorkerRec's in-flight
// batches, down_goodput and down_rtt). Part of WorkerProtocol, which alone
// uses it; it decides nothing about which rows go.
//
// Invariants:
//  - in flight: batches in increasing seq order, all above last_acked();
//    bytes() is the sum of their `bytes` (0 after Restart);
//  - seqs: TakeSeq hands each out once, increasing; after Restart(applied)
//    the next is applied + 1;
//  - acked in resync: batches acknowledged while a resync was under way,
//    kept until ResyncDone or Restart (their rows' values may still arrive
//    without them);
//  - goodput() and bytes() count the same sends; Restart forgets both; the
//    round trip filter survives streams (the path is the same).
// Not thread-safe.
#ifndef ROG_CLIENT_UPLINK_IN_FLIGHT_H_
#define ROG_CLIENT_UPLINK_IN_FLIGHT_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "client/sent_batch.h"
#include "common/goodput.h"

namespace rog {

class UplinkInFlight {
 public:
  // Nothing in flight.
  bool empty() const { return batches_.empty(); }
  // Bytes unacknowledged.
  uint64_t bytes() const { return bytes_; }
  // The highest seq rogd acknowledged (or, after Restart, applied).
  uint64_t last_acked() const { return last_acked_; }
  const GoodputEstimator& goodput() const { return goodput_; }
  // The minimum round trip lately (RoundTripFilter); 0 before a sample.
  double min_rtt() const { return rtt_.min(); }

  // Unacknowledged bytes allowed: `lead` seconds of goodput, or the
  // path's round trip if longer (acks share the link with downlink rows and
  // come back late; a cap below rate × round trip would throttle the link
  // and, measured through itself, never recover), plus one batch of
  // `batch_bytes`. The round trip is the minimum seen, so our own queueing
  // does not inflate it. The batch is the largest one a sender forms, not
  // its goodput's budget: a term that shrank with the goodput it limits
  // could spiral down on a long round trip. kInitialInFlight before an
  // estimate.
  uint64_t Cap(double lead, uint64_t batch_bytes) const;

  // The seq of the next batch sent.
  uint64_t TakeSeq() { return next_seq_++; }
  // `batch` (numbered by TakeSeq, `bytes` set) left at `now`.
  void Send(SentBatch batch, double now);
  // rogd acknowledged every batch up to `seq` and `bytes` bytes at `now`:
  // those batches, oldest first, are no longer in flight.
  std::vector<SentBatch> Acknowledge(uint64_t seq, uint64_t bytes, double now);
  // Keeps an acknowledged `batch` until the resync under way is done.
  void KeepAckedInResync(SentBatch batch) { acked_in_resync_.push_back(std::move(batch)); }
  void ResyncDone() { acked_in_resync_.clear(); }
  // A new stream, on which rogd applied up to `applied`: `lost` (oldest
  // first, acknowledged batches rogd lost in a crash) goes in front of
  // what is in flight, what rogd applied leaves, and the rest, oldest
  // first, is returned: nothing is in flight after it.
  std::deque<SentBatch> Restart(uint64_t applied, std::deque<SentBatch> lost);

  // Calls f(const SentBatch&) for the batches acknowledged in a resync,
  // then for those in flight, each oldest first.
  template <typename F>
  void ForEach(F f) const {
    for (const SentBatch& b : acked_in_resync_) f(b);
    for (const SentBatch& b : batches_) f(b);
  }

 private:
  std::deque<SentBatch> batches_;  // in flight
  std::deque<SentBatch> acked_in_resync_;
  uint64_t bytes_ = 0;
  uint64_t last_acked_ = 0;
  uint64_t next_seq_ = 1;
  GoodputEstimator goodput_;
  RoundTripFilter rtt_;  // the uplink's round trip
};

}  // namespace rog

#endif  // ROG_CLIENT_UPLINK_IN_FLIGHT_H_
