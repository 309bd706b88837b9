// sim (//tools/sim): the deterministic simulator on the command line, with
// integer updates whose markers check the protocol's invariants (sim_cli.h).
#include "absl/flags/usage.h"
#include "tools/sim/sim_cli.h"

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Simulates one ROG server and N workers on replayed bandwidth traces and compares "
      "BSP, SSP(S) and ROG(S) on the same workload, optionally with team patience.\n"
      "Example: bazel run //tools/sim -- --seconds=300 --staleness=4\n"
      "         bazel run //tools/sim -- --trace_filter=outdoors-replayed --patience=1\n");
  return rog::SimMain(argc, argv, "sim", nullptr);
}
