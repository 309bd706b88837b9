#include "common/selection.h"

#include <algorithm>
#include <cmath>

namespace rog {

double MeanAbs(absl::Span<const float> values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (float v : values) sum += std::fabs(v);
  return sum / static_cast<double>(values.size());
}

Selection SelectRows(std::vector<RowCandidate> candidates, double mta_fraction,
                     uint64_t model_wire_bytes) {
  std::sort(candidates.begin(), candidates.end(), [](const RowCandidate& a, const RowCandidate& b) {
    if (a.mandatory != b.mandatory) return a.mandatory;
    if (!a.mandatory && a.importance != b.importance) {
      return a.importance > b.importance;
    }
    return a.row < b.row;
  });
  Selection s;
  s.order = std::move(candidates);
  while (s.mandatory < s.order.size() && s.order[s.mandatory].mandatory) ++s.mandatory;
  const double share = mta_fraction * static_cast<double>(model_wire_bytes);
  uint64_t bytes = 0;
  size_t end = 0;
  for (; end < s.order.size(); ++end) {
    if (end >= s.mandatory && static_cast<double>(bytes) >= share) break;
    bytes += s.order[end].wire_bytes;
  }
  s.mta_end = end;
  s.mta_bytes = bytes;
  return s;
}

}  // namespace rog
