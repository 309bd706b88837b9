// summary.md of one benchmark run: BSP, SSP and ROG on the same settings.
#ifndef ROG_TOOLS_BENCH_SUMMARY_H_
#define ROG_TOOLS_BENCH_SUMMARY_H_

#include <string>
#include <vector>

#include "tools/bench/figures.h"
#include "tools/bench/report_text.h"

namespace rog {

// summary.md: the table of every figure, the ROG/BSP and ROG/SSP ratios as
// N.NN×, the settings. `simulator` is the simulator's output for the same
// settings, quoted as is (empty: left out).
std::string SummaryMarkdown(const std::vector<PolicyFigures>& policies,
                            const BenchSettings& settings, const std::string& simulator);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_SUMMARY_H_
