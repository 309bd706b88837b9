// The statistics of every iteration and push (client/worker_stats.h:
// IterationStats, PushStats) and the running totals the worker's progress
// reports carry (pb::Progress). Part of WorkerProtocol, which alone uses it
// and tells it what happened; it decides nothing.
//
// A push opens at its EndIteration's call (OpenPush) and completes once
// that EndIteration has returned (FinishPush) and each of its batches is
// acknowledged or lost with its stream; a completed push is reported by
// the next IterationStats that FinishPush returns.
//
// Invariants: open pushes in the order they opened (increasing phase),
// completed in that order; a push's unacked counts its batches in flight
// (SentBatch::in_push, of its phase); the totals are sums over every
// iteration and every timed-out wait so far; the iteration under way's
// stats (current) count the downlink since the last stats returned and
// the uplink a push still streaming sent meanwhile. Not thread-safe.
#ifndef ROG_CLIENT_PUSH_STATISTICS_H_
#define ROG_CLIENT_PUSH_STATISTICS_H_

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "client/sent_batch.h"
#include "client/worker_stats.h"
#include "proto/convert.h"

namespace rog {

class PushStatistics {
 public:
  // --- BeginIteration -------------------------------------------------------------
  // A wait that timed out: counted in the totals now, and in the stats of
  // the iteration that starts eventually.
  void CountTimedOutWait(double stalled_seconds, double detached_seconds);
  // An iteration starts at `now` after a wait that began at `t0` (see
  // WorkerProtocol::Begin); `detached`: a local step, outside the bound.
  void Begin(double t0, double now, bool waited, double detached_wait, bool detached);

  // --- EndIteration -----------------------------------------------------------------
  // The iteration's compute ended at `t0`, EndIteration's call.
  void EndCompute(double t0);
  // The push of `phase` opened at `t0`, for the clock `iteration`, with a
  // window of `window_seconds` (0: none) ending at `deadline`.
  void OpenPush(uint64_t phase, double t0, double deadline, uint64_t iteration,
                double window_seconds);
  // The stream broke during the push.
  void NoteDisconnected() { current_.disconnected = true; }
  // EndIteration returns at `now`: the push of `phase` has ended; with
  // `goodput` (bytes/s) and `rows_kept` (rows left with unpushed updates),
  // the iteration's stats, with the pushes completed since the last ones.
  IterationStats FinishPush(double now, uint64_t phase, double goodput, uint64_t rows_kept,
                            double min_rtt);

  // --- the links --------------------------------------------------------------------
  // A downlink batch of `rows` rows, `bytes` bytes (no probe padding) and
  // `payload` bytes of encoded values arrived.
  void OnReceived(uint64_t rows, uint64_t bytes, uint64_t payload);
  // Inside a push: `batch` (in_push set, its bytes counted) went with
  // `payload` bytes of encoded values.
  void OnSent(const SentBatch& batch, uint64_t payload);
  // `batch` was acknowledged at `now`.
  void OnAcked(const SentBatch& batch, double now);
  // The stream ended: the open pushes' batches in flight are lost.
  void OnStreamLost(double min_rtt);
  // Completes the pushes that are done, in order (`min_rtt`: the uplink's
  // minimum round trip, for their busy time and overshoot).
  void Complete(double min_rtt);

  // --- what the worker reports ---------------------------------------------------------
  // Progress's totals: compute, transmit, stall and detached seconds, the
  // stalls, the last compute and the last window's overshoot.
  void FillProgress(pb::Progress* p) const;
  double total_stall() const { return total_stall_; }
  double total_detached() const { return total_detached_; }

 private:
  // A push whose statistics are not complete yet: its EndIteration has not
  // returned, or some of its batches are unacknowledged.
  struct Open {
    uint64_t phase = 0;
    PushStats stats;
    double t0 = 0;  // EndIteration's call
    double deadline = 0;
    double last_ack = 0;
    uint64_t unacked = 0;  // its batches in flight
    bool ended = false;    // its EndIteration returned
  };
  Open* PushOf(const SentBatch& b);

  std::deque<Open> open_;
  std::vector<std::pair<double, PushStats>> done_;  // (its t0, stats)
  IterationStats current_;                          // the iteration under way
  double begin_returned_ = 0;
  double push_started_ = 0;
  double total_compute_ = 0, total_transmit_ = 0, total_stall_ = 0, total_detached_ = 0;
  double last_compute_ = 0;  // the last finished iteration's (Progress.last_compute_seconds)
  // Waits of BeginIteration calls that timed out, for the next stats.
  double carry_stall_ = 0, carry_detached_ = 0;
  uint64_t total_stalls_ = 0;
  double last_overshoot_ = 0;
};

}  // namespace rog

#endif  // ROG_CLIENT_PUSH_STATISTICS_H_
