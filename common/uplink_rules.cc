#include "common/uplink_rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rog {

absl::Status CheckReportedClock(uint64_t clock, uint64_t reported) {
  if (reported > kMaxClock) {
    return absl::InvalidArgumentError(
        absl::StrCat("progress reports iteration ", reported, "; at most ", kMaxClock,
                     " are possible: report the worker's own iteration count"));
  }
  if (reported > clock && reported - clock > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "progress reports iteration ", reported, " but rogd holds this worker at iteration ", clock,
        ": a worker reports after each iteration it completes, so its clock rises by at most 1 "
        "per report"));
  }
  return absl::OkStatus();
}

absl::Status CheckHelloClock(uint64_t reported, uint64_t known) {
  known = std::min(known, kMaxClock);
  const uint64_t limit = std::min(kMaxClock, std::max(kMaxHelloClock, known + kHelloClockLead));
  if (reported > limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hello says the worker completed ", reported, " iterations; at most ", limit,
        " are possible",
        known > 0 ? absl::StrCat(" (rogd holds this worker id at iteration ", known, ")") : "",
        ": send the worker's own iteration count"));
  }
  return absl::OkStatus();
}

absl::Status CheckUpdateCounts(const VersionStore& versions, size_t w, const Layout& layout,
                               const std::vector<RowId>& rows, const std::vector<uint32_t>& counts,
                               uint64_t iteration) {
  for (size_t k = 0; k < rows.size(); ++k) {
    if (counts[k] == 0) continue;
    const uint64_t have = versions.Get(rows[k], w);
    if (have >= iteration || counts[k] > iteration - have) {
      return absl::InvalidArgumentError(absl::StrCat(
          "row ", rows[k], " (", layout.RowName(rows[k]), ") carries count ", counts[k],
          ", but rogd holds this worker's updates of it up to iteration ", have,
          " and the batch was formed at iteration ", iteration, ", so at most ",
          have >= iteration ? 0 : iteration - have,
          " iterations can be new: a count is the number of the worker's iterations in the row "
          "not pushed before (0 for a residual or updates kept across a rejoin)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace rog
