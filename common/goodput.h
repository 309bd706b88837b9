// Goodput estimation from acknowledged bytes, and ATP's transmission window.
//
// Goodput is measured at the sender from the receiver's acks, never from
// write completions (a finished write may still sit in a kernel buffer).
// Only time when data was outstanding counts, so idle gaps between
// iterations do not dilute the estimate. A sender that runs out of data
// measures its own demand, not the link: a lone batch acknowledged after a
// round trip reads as batch / round trip, however fast the link. Samples
// taken while the sender had room and nothing to send (MarkAppLimited) may
// raise the estimate but never lower it, as BBR treats app-limited samples;
// otherwise a trickle of rows (rows a peer pushes across a long window)
// pulls the estimate down, the window the estimate sets grows, the trickle
// thins further, and the team stays at a small fraction of its links.
#ifndef ROG_COMMON_GOODPUT_H_
#define ROG_COMMON_GOODPUT_H_

#include <cstdint>

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
  // At `now` the sender had room under its in-flight cap and nothing to
  // send: the samples of acks whose interval includes `now` are app-limited.
  void MarkAppLimited(double now);

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
  double app_limited_at_ = -1;  // the last MarkAppLimited; -1: never
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
