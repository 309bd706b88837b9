// patience.md of the team patience study (tools/bench.sh --study=patience):
// every policy with and without team patience, on both timelines.
#ifndef ROG_TOOLS_BENCH_PATIENCE_STUDY_H_
#define ROG_TOOLS_BENCH_PATIENCE_STUDY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/figures.h"
#include "tools/bench/report_text.h"

namespace rog {

// One run of the patience study: a policy with or without team patience on
// one timeline of the traces.
struct StudyRun {
  std::string timeline;  // "fast", "replayed"
  std::string policy;    // "bsp", "ssp", "rog"
  double patience = 0;   // seconds; 0 = off
  uint32_t local_steps = 0;
  PolicyFigures figures;
};

// patience.md: per timeline, every run with its iterations/s (and the ratio
// to the same policy without patience), stall and detached shares, late
// rows, time to BSP-without-patience's final accuracy, final accuracy; then
// the goals checked against these figures for ROG with
// `main_patience` and no local steps (the first ROG run with patience when
// there is none such).
std::string PatienceMarkdown(const std::vector<StudyRun>& runs, const BenchSettings& settings,
                             double main_patience = 0);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_PATIENCE_STUDY_H_
