#include "common/link_use.h"

#include <algorithm>

namespace rog {

void UplinkUse::AddPush(double start, double ack_seconds, uint64_t acked_bytes, double link_delay) {
  if (!(ack_seconds > 0) || acked_bytes == 0) return;
  const double crossed = ack_seconds - 2 * link_delay;
  if (!(crossed > 0)) return;
  const double t0 = std::max(0.0, start);
  bytes_ += acked_bytes;
  spans_.emplace_back(t0, t0 + crossed);
}

double UplinkUse::Capacity(const Trace& trace, double scale) const {
  std::vector<std::pair<double, double>> spans = spans_;
  std::sort(spans.begin(), spans.end());
  double capacity = 0, from = 0, to = -1;
  for (const auto& [a, b] : spans) {
    if (a > to) {
      if (to > from) capacity += trace.BytesBetween(from, to, scale);
      from = a;
      to = b;
    } else {
      to = std::max(to, b);
    }
  }
  if (to > from) capacity += trace.BytesBetween(from, to, scale);
  return capacity;
}

}  // namespace rog
