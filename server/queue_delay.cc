#include "server/queue_delay.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rog {

double QueueDelay::Bound(int k) {
  if (k >= kBuckets - 1) return std::numeric_limits<double>::infinity();
  return 1e-6 * std::exp2(static_cast<double>(k) / kBucketsPerDoubling);
}

int QueueDelay::BucketOf(double seconds) {
  if (!(seconds > 1e-6)) return 0;  // also a NaN
  // The smallest k with Bound(k) >= seconds; the rounding of log2 is
  // corrected by comparing with the bounds themselves.
  int k = static_cast<int>(std::ceil(std::log2(seconds / 1e-6) * kBucketsPerDoubling));
  k = std::clamp(k, 0, kBuckets - 1);
  while (k > 0 && Bound(k - 1) >= seconds) --k;
  while (k < kBuckets - 1 && Bound(k) < seconds) ++k;
  return k;
}

void QueueDelay::Record(double seconds) {
  ++counts_[BucketOf(seconds)];
  ++events_;
  max_ = std::max(max_, seconds);
}

double QueueDelay::Quantile(const std::vector<uint64_t>& counts, double q) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  // The rank of the q-quantile among `total` events, 1-based.
  const auto rank = static_cast<uint64_t>(std::max(1.0, std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    seen += counts[k];
    if (seen >= rank) return Bound(std::min<int>(static_cast<int>(k), kBuckets - 2));
  }
  return Bound(kBuckets - 2);
}

}  // namespace rog
