// The benchmark's energy estimate: a robot's power in each state of its time
// (tools/bench/power_model.txt, one "STATE WATTS" line per state) and its
// energy to a target accuracy from the measured time shares. MODELLED, NOT
// MEASURED: the robots have no power meter.
#ifndef ROG_TOOLS_BENCH_POWER_MODEL_H_
#define ROG_TOOLS_BENCH_POWER_MODEL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/bench/figures.h"

namespace rog {

// Watts in each state of a robot's span, as the summary splits it: compute,
// transmit (inside EndStep), stall, detached, and the rest (other).
struct PowerModel {
  double compute_w = 0, transmit_w = 0, stall_w = 0, detached_w = 0, other_w = 0;
};

// Parses the model's text: every state once, "STATE WATTS" per line, '#'
// comments and blank lines ignored. Errors name `name`, the line and what
// is wrong.
absl::StatusOr<PowerModel> ParsePowerModel(absl::string_view text, absl::string_view name);

// "compute 10.8 W, transmit 4.1 W, ...": the model in one line.
std::string PowerModelLine(const PowerModel& m);

// Mean watts over a span split into these shares; the rest (1 less the four
// shares, at least 0) is charged as other.
double MeanWatts(const PowerModel& m, double compute, double transmit, double stall,
                 double detached);

// A policy's modelled energy per robot, joules, to the time its team first
// reached `target` (TimeToAccuracy): that time × the mean watts of its
// shares over the whole run (a robot's; the team's, span-weighted, for
// `team`). Empty without a target or when the team never reached it.
struct PolicyEnergy {
  double team = 0;          // per robot, from the team's shares
  double min = 0, max = 0;  // over its robots (team when it has none)
};
std::optional<PolicyEnergy> EnergyToTarget(const PolicyFigures& p, const PowerModel& m,
                                           std::optional<double> target);

// ROG's energy over the lowest of the baselines' (BSP, SSP) that reached
// the target; nullopt when ROG or every baseline did not.
struct EnergyRatio {
  double ratio = 0;
  std::string best;  // the baseline's policy name
};
std::optional<EnergyRatio> RogEnergyRatio(const std::vector<PolicyFigures>& policies,
                                          const PowerModel& m, std::optional<double> target);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_POWER_MODEL_H_
