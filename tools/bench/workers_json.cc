#include "tools/bench/workers_json.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/staleness.h"

namespace rog {

absl::StatusOr<double> SumFromWorkersJson(absl::string_view json, absl::string_view key) {
  if (!absl::StrContains(json, "\"workers\"")) {
    return absl::InvalidArgumentError("not the output of `rogctl workers --json`");
  }
  const std::string quoted = absl::StrCat("\"", key, "\":");
  double sum = 0;
  bool found = false;
  for (size_t at = json.find(quoted); at != absl::string_view::npos;
       at = json.find(quoted, at + 1)) {
    absl::string_view rest = json.substr(at + quoted.size());
    rest = rest.substr(0, rest.find_first_of(",}"));
    double v;
    if (!absl::SimpleAtod(rest, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("bad ", key, " value '", rest, "'"));
    }
    sum += v;
    found = true;
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no worker has \"", key, "\""));
  return sum;
}

absl::StatusOr<int64_t> LateRowsFromWorkersJson(absl::string_view json) {
  absl::StatusOr<double> sum = SumFromWorkersJson(json, "late_rows");
  if (absl::IsNotFound(sum.status())) return 0;  // no workers
  if (!sum.ok()) return sum.status();
  return static_cast<int64_t>(*sum);
}

absl::StatusOr<std::vector<double>> StallCausesFromWorkersJson(absl::string_view json) {
  std::vector<double> causes(kStallCauses, 0);
  for (int c = 0; c < kStallCauses; ++c) {
    const std::string key =
        absl::StrCat("stall_", StallCauseName(static_cast<StallCause>(c)), "_seconds");
    absl::StatusOr<double> sum = SumFromWorkersJson(json, key);
    if (absl::IsNotFound(sum.status())) {
      // Files from before the causes have none; from before peer_asked,
      // its time is within peer_uplink (-1: not recorded).
      if (c != kStallPeerAsked) return std::vector<double>();
      sum = -1;
    }
    if (!sum.ok()) return sum.status();
    causes[c] = *sum;
  }
  return causes;
}

}  // namespace rog
