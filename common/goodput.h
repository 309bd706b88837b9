// Goodput estimation from acknowledged bytes, and ATP's transmission window.
//
// Goodput is measured at the sender from the receiver's acks, never from
// write completions (a finished write may still sit in a kernel buffer).
// Only time when data was outstanding counts, so idle gaps between
// iterations do not dilute the estimate.
#ifndef ROG_COMMON_GOODPUT_H_
#define ROG_COMMON_GOODPUT_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rog {

// Not thread-safe; times are seconds on any monotonic clock.
class GoodputEstimator {
 public:
  // `time_constant` (seconds): how fast old samples fade. WiFi bandwidth
  // swings 40% every ~1.2 s, so a fraction of a second follows it.
  explicit GoodputEstimator(double time_constant = 0.5) : tau_(time_constant) {}

  // `bytes` left the sender at `now`.
  void OnSend(double now, uint64_t bytes);
  // The receiver acknowledged `bytes` at `now`. Acks for bytes never sent are
  // clamped to what is in flight.
  void OnAck(double now, uint64_t bytes);

  bool has_estimate() const { return has_estimate_; }
  // Bytes per second; 0 before the first ack.
  double rate() const { return rate_; }
  uint64_t in_flight() const { return in_flight_; }

 private:
  double tau_;
  double rate_ = 0;
  bool has_estimate_ = false;
  uint64_t in_flight_ = 0;
  double busy_since_ = 0;  // when the current run of outstanding data began
  double last_ack_ = 0;
};

// A path's round trip as a sender sees it, from a batch's send to its ack:
// the minimum over the last 5 to 10 s (two 5 s buckets), so that the
// sender's own queueing inflates it less while a path that got slower is
// taken as it is now. Not thread-safe; times are seconds on any monotonic
// clock.
class RoundTripFilter {
 public:
  void OnSample(double now, double rtt);
  // Seconds; 0 before the first sample.
  double min() const;

 private:
  static constexpr double kNone = 1e300;
  double min_[2] = {kNone, kNone};
  double bucket_start_ = -kNone;
};

// What a link carried recently, at the receiver: bytes that arrived in the
// last few seconds, for questions like "did this link move N bytes in the
// last T seconds". Arrivals are summed in buckets of horizon/kBuckets
// seconds, so memory stays bounded however long the horizon; a question
// about the last T seconds counts only whole buckets that began within them
// (it may miss up to one bucket's bytes, never adds any). Not thread-safe;
// times are seconds on any monotonic clock.
class ArrivalWindow {
 public:
  static constexpr int kBuckets = 256;

  // `bytes` arrived at `now`; history older than `horizon` seconds (> 0)
  // before `now` may be dropped. A horizon longer than before keeps what
  // is still there, in the buckets it was summed in.
  void Add(double now, uint64_t bytes, double horizon);
  // Bytes that arrived in buckets that began at or after `since`.
  uint64_t Since(double since) const;
  // Buckets held now: at most about kBuckets per horizon.
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    double start;
    uint64_t bytes;
  };
  std::deque<Bucket> buckets_;  // oldest first
};

// ATP's window: the slowest attached worker sends its MTA share; its expected
// time becomes everyone's window. `goodputs` are the attached workers' rates
// in bytes/s; a worker without an estimate yet (<= 0) makes the window
// unlimited (returned as 0) so the first iteration measures the links.
// The result is clamped to [min_window, max_window] (max_window 0: no cap).
double TransmissionWindow(absl::Span<const double> goodputs, double mta_bytes, double min_window,
                          double max_window);

// Bytes a sender may keep unacknowledged so that the link stays full yet the
// cutoff stays sharp: `lead` seconds of measured goodput plus one message
// (without it throughput stalls at a fraction of the link).
uint64_t InFlightLimit(double goodput, double lead, uint64_t message_bytes);

// The smallest batch budget BatchBudget gives (unless `max_bytes` is
// smaller): below it the bytes and work per message outweigh what a
// shorter batch gains.
inline constexpr uint64_t kMinBatchBytes = 2048;

// The payload budget of one row batch on a link: `seconds` of its measured
// `goodput` (bytes/s), between kMinBatchBytes (or `max_bytes` if smaller)
// and `max_bytes`. ATP cuts a window only at a batch's edge, and what a
// stalled peer waits for queues behind the batches in flight, so on a slow
// link a batch should be short in time; on a fast one a 16 KiB batch is
// already about a millisecond. Without an estimate (goodput <= 0) or with
// `seconds` <= 0 (a fixed budget): `max_bytes`. Not for InFlightLimit's
// message term: a cap that shrank with the goodput measured through it
// could spiral down on a long round trip.
uint64_t BatchBudget(double goodput, double seconds, uint64_t max_bytes);

// batch_seconds: rogd's and the SDK's default, and the largest accepted
// (a batch longer than a second would hold a stalled peer's rows behind it
// for longer than a window is worth).
inline constexpr double kDefaultBatchSeconds = 0.005;
inline constexpr double kMaxBatchSeconds = 1;
// OK if `seconds` is 0 to kMaxBatchSeconds; otherwise an InvalidArgument
// naming the setting as the user gave it (`setting`, e.g. "--batch_seconds")
// and the one that sets the fixed budget (`fixed`, e.g. "--batch_bytes").
absl::Status CheckBatchSeconds(double seconds, absl::string_view setting, absl::string_view fixed);

// The deadline taper: whether a message of `message_bytes` that need not go
// (a row past the mandatory ones) may start at `now`, with `inflight_bytes`
// unacknowledged ahead of it: before `deadline`, and, with a measured
// `goodput` (bytes/s, > 0), only if all of it can arrive by then. Without
// it the last messages of a window overshoot by the whole in-flight
// allowance. An open deadline (infinity) never closes.
bool ArrivesBeforeDeadline(double now, double deadline, uint64_t inflight_bytes,
                           uint64_t message_bytes, double goodput);

}  // namespace rog

#endif  // ROG_COMMON_GOODPUT_H_
