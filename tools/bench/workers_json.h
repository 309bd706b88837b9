// rogd's account of a run, read from `rogctl workers --json` at its end:
// late rows and the stall time by cause, summed over the workers.
#ifndef ROG_TOOLS_BENCH_WORKERS_JSON_H_
#define ROG_TOOLS_BENCH_WORKERS_JSON_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rog {

// The sum of "late_rows" over the workers of `rogctl workers --json`.
absl::StatusOr<int64_t> LateRowsFromWorkersJson(absl::string_view json);
// The sum of the number under `key` over the workers of `rogctl workers
// --json`; NotFound when no worker has the key (an older rogd).
absl::StatusOr<double> SumFromWorkersJson(absl::string_view json, absl::string_view key);
// PolicyFigures::stall_cause_s from `rogctl workers --json`: empty when the
// file predates the stall causes.
absl::StatusOr<std::vector<double>> StallCausesFromWorkersJson(absl::string_view json);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_WORKERS_JSON_H_
