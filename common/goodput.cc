#include "common/goodput.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rog {

void GoodputEstimator::OnSend(double now, uint64_t bytes) {
  if (in_flight_ == 0) busy_since_ = now;
  in_flight_ += bytes;
}

void GoodputEstimator::OnAck(double now, uint64_t bytes) {
  bytes = std::min(bytes, in_flight_);
  if (bytes == 0) return;
  const double start = std::max(busy_since_, last_ack_);
  const double interval = now - start;
  in_flight_ -= bytes;
  last_ack_ = now;
  if (in_flight_ == 0) busy_since_ = now;
  if (interval <= 0) return;  // same-instant acks carry no rate information
  const double sample = static_cast<double>(bytes) / interval;
  const bool app_limited = app_limited_at_ >= start;
  if (!has_estimate_) {
    rate_ = sample;
    has_estimate_ = true;
    return;
  }
  if (app_limited && sample < rate_) return;  // the sender's demand, not the link
  // Weight by the time the sample covers: a long transfer says more about
  // the link than a short one.
  const double w = 1.0 - std::exp(-interval / tau_);
  rate_ += w * (sample - rate_);
}

void GoodputEstimator::MarkAppLimited(double now) { app_limited_at_ = now; }

double TransmissionWindow(absl::Span<const double> goodputs, double mta_bytes, double min_window,
                          double max_window) {
  double window = 0;
  for (double g : goodputs) {
    if (!(g > 0)) return max_window;  // unknown link: no limit but the cap
    window = std::max(window, mta_bytes / g);
  }
  window = std::max(window, min_window);
  if (max_window > 0) window = std::min(window, max_window);
  return window;
}

uint64_t InFlightLimit(double goodput, double lead, uint64_t message_bytes) {
  const double bytes = std::max(0.0, goodput) * lead;
  return static_cast<uint64_t>(bytes) + message_bytes;
}

bool ArrivesBeforeDeadline(double now, double deadline, uint64_t inflight_bytes,
                           uint64_t message_bytes, double goodput) {
  if (!(now < deadline)) return false;
  if (deadline == std::numeric_limits<double>::infinity() || !(goodput > 0)) return true;
  return now + static_cast<double>(inflight_bytes + message_bytes) / goodput <= deadline;
}

}  // namespace rog
