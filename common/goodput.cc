#include "common/goodput.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

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

uint64_t BatchBudget(double goodput, double seconds, uint64_t max_bytes) {
  if (!(goodput > 0) || !(seconds > 0)) return max_bytes;
  const double bytes = goodput * seconds;
  const uint64_t floor = std::min(kMinBatchBytes, max_bytes);
  if (!(bytes < static_cast<double>(max_bytes))) return max_bytes;
  return std::max(floor, static_cast<uint64_t>(bytes));
}

absl::Status CheckBatchSeconds(double seconds, absl::string_view setting, absl::string_view fixed) {
  if (seconds >= 0 && seconds <= kMaxBatchSeconds) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(setting, " is ", seconds, ": give 0 (a fixed ",
                                                 fixed, ") to ", kMaxBatchSeconds, " second (",
                                                 kDefaultBatchSeconds, " by default)"));
}

void RoundTripFilter::OnSample(double now, double rtt) {
  if (!(rtt >= 0) || !std::isfinite(rtt)) return;
  if (now - bucket_start_ > 5) {
    min_[0] = min_[1];
    min_[1] = kNone;
    bucket_start_ = now;
  }
  min_[1] = std::min(min_[1], rtt);
}

double RoundTripFilter::min() const {
  const double m = std::min(min_[0], min_[1]);
  return m < kNone ? m : 0;
}

bool ArrivesBeforeDeadline(double now, double deadline, uint64_t inflight_bytes,
                           uint64_t message_bytes, double goodput) {
  if (!(now < deadline)) return false;
  if (deadline == std::numeric_limits<double>::infinity() || !(goodput > 0)) return true;
  return now + static_cast<double>(inflight_bytes + message_bytes) / goodput <= deadline;
}

void ArrivalWindow::Add(double now, uint64_t bytes, double horizon) {
  if (!(horizon > 0)) horizon = 0;
  const double width = horizon / kBuckets;
  if (buckets_.empty() || !(now < buckets_.back().start + width)) {
    buckets_.push_back(Bucket{now, bytes});
  } else {
    buckets_.back().bytes += bytes;
  }
  while (buckets_.size() > 1 && buckets_.front().start < now - horizon - width) {
    buckets_.pop_front();
  }
}

uint64_t ArrivalWindow::Since(double since) const {
  uint64_t total = 0;
  for (auto it = buckets_.rbegin(); it != buckets_.rend() && it->start >= since; ++it) {
    total += it->bytes;
  }
  return total;
}

}  // namespace rog
