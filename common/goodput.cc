#include "common/goodput.h"

#include <algorithm>
#include <cmath>

namespace rog {

void GoodputEstimator::OnSend(double now, uint64_t bytes, bool app_limited) {
  if (bytes == 0) return;
  if (in_flight_ == 0) busy_since_ = now;
  in_flight_ += bytes;
  if (!sent_.empty() && sent_.back().second == app_limited) {
    sent_.back().first += bytes;
  } else {
    sent_.emplace_back(bytes, app_limited);
  }
}

void GoodputEstimator::OnAck(double now, uint64_t bytes) {
  bytes = std::min(bytes, in_flight_);
  if (bytes == 0) return;
  const double start = std::max(busy_since_, last_ack_);
  const double interval = now - start;
  in_flight_ -= bytes;
  bool app_limited = false;
  for (uint64_t left = bytes; left > 0 && !sent_.empty();) {
    auto& [run, limited] = sent_.front();
    app_limited = app_limited || limited;
    const uint64_t take = std::min(left, run);
    run -= take;
    left -= take;
    if (run == 0) sent_.pop_front();
  }
  last_ack_ = now;
  if (in_flight_ == 0) busy_since_ = now;
  if (interval <= 0) return;  // same-instant acks carry no rate information
  const double sample = static_cast<double>(bytes) / interval;
  if (app_limited && has_estimate_ && sample <= rate_) return;
  if (!has_estimate_) {
    rate_ = sample;
    has_estimate_ = true;
    return;
  }
  // Weight by the time the sample covers: a long transfer says more about
  // the link than a short one.
  const double w = 1.0 - std::exp(-interval / tau_);
  rate_ += w * (sample - rate_);
}

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

}  // namespace rog
