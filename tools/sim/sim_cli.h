// The simulator's command line (sim_cli.cc): its flags, the table of
// policies and the summary under it. Two binaries run it: //tools/sim
// (integer updates, the protocol's invariants checked) and
// //tools/sim:fmnist_sim (the main job's model really trained, its accuracy
// reported).
#ifndef ROG_TOOLS_SIM_SIM_CLI_H_
#define ROG_TOOLS_SIM_SIM_CLI_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/layout.h"
#include "sim/simulator.h"

namespace rog {

// Makes the learning task once the flags are parsed, from --model's name
// and layout and the simulation's settings (workers, seed).
using SimLearningMaker = std::function<absl::StatusOr<std::unique_ptr<SimLearning>>(
    const std::string& model, const Layout& layout, const SimConfig& config)>;

// Parses the flags, runs every policy of --sync and prints the results;
// returns the exit status (0; 1 if an invariant broke; 2 on a bad flag or
// a failed run, after a line "PROGRAM: what was wrong"). With `learning`,
// each policy trains its task.
int SimMain(int argc, char** argv, const std::string& program, const SimLearningMaker& learning);

}  // namespace rog

#endif  // ROG_TOOLS_SIM_SIM_CLI_H_
