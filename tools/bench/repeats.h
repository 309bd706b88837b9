// summary.md of a profile with repeats: every figure as mean (min–max) over
// the repeats, ratios taken within each repeat, goals checked.
#ifndef ROG_TOOLS_BENCH_REPEATS_H_
#define ROG_TOOLS_BENCH_REPEATS_H_

#include <string>
#include <vector>

#include "tools/bench/figures.h"
#include "tools/bench/report_text.h"

namespace rog {

// A figure over repeats: the mean and the range; n = 0 when no repeat had it.
struct Spread {
  double mean = 0, min = 0, max = 0;
  int n = 0;
};
Spread SpreadOf(const std::vector<double>& v);

// summary.md of a profile with repeats (tools/bench.sh --profile=paper):
// `repeats[r]` holds the policies of repeat r, run back to back on the same
// settings. Per policy: iterations/s, ROG's ratio to it (taken within each
// repeat), stall share, time to that repeat's BSP final accuracy and its
// share of BSP's time, final accuracy; each as mean (min–max) over the
// repeats. Then `goals` (e.g. the paper's ratios), checked, and the
// settings. `simulator` is quoted as in SummaryMarkdown.
struct RepeatGoals {
  double rog_over_bsp = 0, rog_over_ssp = 0;  // 0: no goal
  double time_share_of_bsp = 0;               // ROG's time to BSP's accuracy / BSP's
  double accuracy_points = 0;                 // within this many points of the best baseline
  std::string source;                         // where the goals come from
};
std::string RepeatsMarkdown(const std::vector<std::vector<PolicyFigures>>& repeats,
                            const BenchSettings& settings, const RepeatGoals& goals,
                            const std::string& title, const std::string& simulator);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_REPEATS_H_
