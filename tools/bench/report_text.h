// What every report of the benchmark (summary.md, over repeats, patience.md)
// writes alike: the settings it lists, a policy's name, its cells
// (percentages, milliseconds, ratios, time to the target accuracy, final
// accuracy).
#ifndef ROG_TOOLS_BENCH_REPORT_TEXT_H_
#define ROG_TOOLS_BENCH_REPORT_TEXT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "tools/bench/figures.h"
#include "tools/bench/power_model.h"

namespace rog {

// The settings a report lists under its figures.
struct BenchSettings {
  int staleness = 4;
  std::string codec = "fp32";
  double trace_scale = 1;
  std::string traces;        // folder and files
  double adapt_seconds = 0;  // per policy
  int robots = 4;
  std::string cpu;            // e.g. "2 cores, 1 torch thread per robot"
  std::string delay = "5ms";  // one-way delay of every link, each direction
  // How the links were emulated ("" = user-space relays with `delay`), and
  // rogd's team settings (e.g. "patience 500ms, detach speedup 1.25").
  std::string links;
  std::string team;
  std::string profile;
  std::string command;
  std::optional<double> target;  // accuracy target; default BSP's final
  // More settings lines for the list, as they are (e.g. a profile's fixed
  // settings and how the trace scale was derived).
  std::vector<std::string> more;
  // The power model of the energy estimate (power_model.txt); none: no
  // energy figures.
  std::optional<PowerModel> power;
};

// "2.60×", or "n/a" when the denominator is not positive.
std::string Ratio(double num, double den);

// "12.3%" of a share.
std::string Pct(double share);
// "123 ms" of seconds, "–" for none.
std::string Ms(std::optional<double> s);

// The policy named `name` ("bsp", "ssp", "rog") among `ps`; nullptr if none.
const PolicyFigures* FindPolicy(const std::vector<PolicyFigures>& ps, absl::string_view name);
// "BSP", "SSP(4)", "ROG(4)".
std::string PolicyLabel(const PolicyFigures& p, int staleness);

// The accuracy times to target are measured to: --target, else BSP's final
// accuracy (none without either).
std::optional<double> TargetAccuracy(const BenchSettings& settings, const PolicyFigures* bsp);

// A "time to target" cell: "–" without a target.
std::string TimeToTargetCell(const std::vector<std::pair<double, double>>& curve,
                             std::optional<double> target);

// An "energy to target" cell, joules per robot, modelled (EnergyToTarget):
// the team's figure, then the range over robots when they differ; "not
// reached"; "–" without a target or a power model.
std::string EnergyCell(const PolicyFigures& p, const BenchSettings& settings,
                       std::optional<double> target);

// "**ROG/best baseline 0.62×** (against SSP(4); BSP not reached, SSP(4)
// 660 J, ROG(4) 410 J per robot)": ROG's energy to target over the best
// baseline's, and each policy's; empty without a power model or a target.
std::string EnergyComparison(const std::vector<PolicyFigures>& policies,
                             const BenchSettings& settings, std::optional<double> target);

// A "final accuracy" cell: mean (min–max) over robots, "–" if none.
std::string FinalAccuracyCell(const PolicyFigures& p);

// The team's accuracy at `t` seconds: its last evaluation at or before `t`;
// nullopt before the first.
std::optional<double> AccuracyAt(const std::vector<std::pair<double, double>>& curve, double t);

// Of BSP and SSP, the one with the higher final accuracy (the first on a
// tie); nullptr when neither has one.
const PolicyFigures* BestBaseline(const std::vector<PolicyFigures>& policies);

// The summary's first paragraph: the model each policy ends with, ROG's
// final accuracy (after the final sync) less the best baseline's in
// points, the accuracy half way through the run, and each policy's time to
// `target`; empty without ROG.
std::string AccuracyHeadline(const std::vector<PolicyFigures>& policies,
                             const BenchSettings& settings, std::optional<double> target);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_REPORT_TEXT_H_
