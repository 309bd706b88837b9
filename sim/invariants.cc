#include "sim/invariants.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace rog {

void IterationLog::Add(uint64_t number) {
  if (!numbers_.empty() && numbers_.back() >= number) numbers_.clear();
  numbers_.push_back(number);
}

uint64_t IterationLog::Count(uint64_t from, uint64_t to) const {
  const auto begin = std::upper_bound(numbers_.begin(), numbers_.end(), from);
  const auto end = std::upper_bound(numbers_.begin(), numbers_.end(), to);
  return begin < end ? static_cast<uint64_t>(end - begin) : 0;
}

int64_t MarkerCount(absl::Span<const float> values, absl::Span<const float> initial,
                    const RowInfo& row, size_t marker) {
  const size_t at = row.offset + marker;
  return std::llround(static_cast<double>(values[at]) - static_cast<double>(initial[at]));
}

PeerAtStart CheckPeerAtStart(const Layout& layout, absl::Span<const float> values,
                             absl::Span<const float> initial, size_t marker,
                             const IterationLog& peer, uint64_t join, uint64_t clock,
                             uint32_t bound) {
  PeerAtStart out;
  if (clock <= bound || clock - bound <= join) return out;
  out.needed = peer.Count(join, clock - bound);
  const uint64_t up_to_clock = peer.Count(join, clock);
  for (RowId r = 0; r < layout.num_rows(); ++r) {
    const RowInfo& row = layout.row(r);
    if (row.numel <= marker) continue;
    const int64_t held = MarkerCount(values, initial, row, marker);
    if (held < static_cast<int64_t>(out.needed) && out.ok) {
      out.ok = false;
      out.short_row = r;
      out.held = held;
    }
    const int64_t lag = std::max<int64_t>(0, static_cast<int64_t>(up_to_clock) - held);
    if (lag > static_cast<int64_t>(out.max_lag)) out.max_lag = static_cast<uint64_t>(lag);
    out.lag_sum += static_cast<double>(lag);
    ++out.rows;
  }
  return out;
}

std::string ConservationProblem(absl::Span<const float> global, absl::Span<const float> initial,
                                absl::Span<const double> sum) {
  if (global.size() != initial.size() || sum.size() != initial.size()) {
    return absl::StrCat("the model has ", global.size(), " values, expected ", initial.size());
  }
  for (size_t j = 0; j < global.size(); ++j) {
    const double want = static_cast<double>(initial[j]) + sum[j];
    if (static_cast<double>(global[j]) != want) {
      return absl::StrCat("global[", j, "] = ", global[j], " but initial + all updates = ", want);
    }
  }
  return "";
}

double ConservationError(absl::Span<const float> global, absl::Span<const float> initial,
                         absl::Span<const double> sum) {
  double worst = 0;
  for (size_t j = 0; j < global.size() && j < initial.size() && j < sum.size(); ++j) {
    const double want = static_cast<double>(initial[j]) + sum[j];
    worst = std::max(worst, std::fabs(static_cast<double>(global[j]) - want));
  }
  return worst;
}

double MaxDifference(absl::Span<const float> a, absl::Span<const float> b) {
  double worst = 0;
  for (size_t j = 0; j < a.size() && j < b.size(); ++j) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[j]) - static_cast<double>(b[j])));
  }
  return worst;
}

}  // namespace rog
