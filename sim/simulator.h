// A deterministic simulator of one ROG server and N workers, built from the
// same pieces rogd and the SDK use (row layout, version storage, staleness
// rules, MTA, importance and row selection, codecs, goodput estimation and
// the transmission window), on a simulated clock.
//
// Each worker loops: wait until the policy lets it start (stall), compute
// for its compute time (with jitter), then transmit: push rows up and pull
// rows down over its own link, whose rate replays a bandwidth trace (both
// directions at the trace's rate; one scale factor for all). BSP and SSP
// move every row every iteration; ROG moves rows in importance order until
// the iteration's transmission window closes (mandatory rows always). A
// stalled worker makes the server ask the workers holding the rows it
// misses to push them at once, and receives them as soon as they arrive.
//
// Updates are integer-valued so float sums are exact. Element j of every row
// with at least N elements is a counter: worker j adds 1 to it every
// iteration and nobody else touches it. A replica's counters therefore say,
// independently of any version bookkeeping, how many iterations of each
// worker it holds; the simulator checks the staleness bound against them at
// every compute start.
//
// Team patience (docs/design.md, "Team patience"), off when `patience` is 0:
// ROG's window counts only attached workers whose expected MTA time fits in the
// patience and never exceeds it; a worker stalled at the bound for `patience`
// seconds detaches the attached workers at the ends of its chain of waits, as
// rogd does (BlameForStall in common/staleness.h; any policy). A detached
// worker leaves the bound and the window, pushes all it has and receives every
// pending row in the background (what it pushes is folded in and counted as
// late rows), and pauses training or runs up to `detached_local_steps` local
// iterations. It reattaches when its uplink is drained and its measured goodput
// (never more than what its oldest unacknowledged batch shows) has moved its
// share (MTA share under ROG, the whole model under BSP and SSP) within
// patience/2 for 1 s: its clock becomes max(own, slowest attached other), its
// versions are raised to it, and it catches up through the normal stall
// handling. The counters of the bound check count those raised iterations as
// held by a replica that holds every real iteration before them.
#ifndef ROG_SIM_SIMULATOR_H_
#define ROG_SIM_SIMULATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/codec.h"
#include "common/layout.h"
#include "common/protocol_rules.h"
#include "common/staleness.h"
#include "common/trace.h"

namespace rog {

struct SimConfig {
  SyncPolicy policy = SyncPolicy::kRog;
  uint32_t staleness = 4;
  Codec codec = Codec::kFp32;
  size_t workers = 4;
  // Training time; then the workers stop and every accumulator and pending
  // update is drained.
  double seconds = 300;
  uint64_t seed = 1;
  // Mean compute time per iteration and its jitter (uniform, ± fraction).
  double compute_seconds = 1.0;
  double compute_jitter = 0.1;
  // Per-worker compute speed factors (1 = compute_seconds); cycled.
  std::vector<double> compute_factors = {1.0};
  // One trace per worker, cycled when fewer; empty: a constant 100 Mbit/s.
  std::vector<Trace> traces;
  double trace_scale = 1.0;
  // ROG: a worker that has sent what it had holds, until its window ends,
  // while its clock is more than this many iterations ahead of the slowest
  // attached worker's.
  uint32_t pace_lead = kPaceLead;
  // ROG: the worker at the slowest clock stops after its MTA share instead
  // of filling its window with speculative rows.
  bool laggard_mta_only = true;
  // Payload budget of one row batch.
  size_t batch_bytes = 16 * 1024;
  // Largest |value| of an update element (rows get amplitudes 1..this,
  // heavy-tailed, so rows differ in magnitude).
  uint32_t max_update = 8;
  // Lossy codecs: drain rounds after training (each sends every residual).
  int drain_rounds = 1;
  // Stop with an error instead of simulating past this many events.
  uint64_t max_events = 200'000'000;
  // Team patience in seconds; 0: off (the paper's behaviour, today's results).
  double patience = 0;
  // With patience: local iterations a detached worker may run per detachment
  // before it pauses (0: it pauses at once). Not subject to the bound.
  uint32_t detached_local_steps = 0;
  // With patience: the slowest attached worker is detached as soon as the
  // team without it would run at least `detach_speedup` times the iterations
  // per second (all attached workers together) it runs with it, by the
  // estimate |attached| / (compute + slowest share time); a detached worker
  // reattaches only if the team with it would run at least as fast. 0: off.
  double detach_speedup = 0;
};

// One attach-state change of a worker, with the reason (rogd logs one line
// for each).
struct SimTransition {
  double time = 0;
  size_t worker = 0;
  bool attached = false;  // true: reattached; false: detached
  std::string reason;
};

struct SimWorkerReport {
  uint64_t iterations = 0;
  double compute_seconds = 0;
  double transmit_seconds = 0;
  double stall_seconds = 0;
  uint64_t stalls = 0;
  uint64_t bytes_up = 0;  // wire bytes: payload + index + batch headers
  uint64_t bytes_down = 0;
  uint64_t payload_up = 0;
  uint64_t payload_down = 0;
  uint64_t rows_up = 0;
  uint64_t rows_down = 0;
  // Staleness at compute start, per row: the worker's clock minus the lowest
  // count of another worker's iterations its replica holds (from counters).
  double mean_staleness = 0;
  uint64_t max_staleness = 0;
  // Time past the window end until the last byte of the iteration arrived.
  std::vector<double> overshoots;
  // Team patience: time spent detached (within the training time), how often
  // the worker was detached and reattached, iterations it ran while detached,
  // and rows of it folded while it was detached.
  double detached_seconds = 0;
  uint64_t detaches = 0;
  uint64_t reattaches = 0;
  uint64_t local_steps = 0;
  uint64_t late_rows = 0;
  // Stall time by what the stalled worker was waiting for, judged after
  // every event (StallCause in common/staleness.h).
  double stall_cause_seconds[kStallCauses] = {0, 0, 0};
};

struct SimReport {
  SimConfig config;
  double seconds = 0;  // training time simulated
  std::vector<SimWorkerReport> workers;
  // Compute starts where a replica held fewer iterations of some other
  // attached worker than the bound requires (must be 0). Detached workers
  // are not checked, nor is anyone checked against them.
  uint64_t bound_violations = 0;
  uint64_t bound_checks = 0;
  // After draining: largest |replica - global| over workers and elements,
  // and largest |(global - initial) - sum of all updates|.
  double max_replica_error = 0;
  double max_sum_error = 0;
  // Largest |residual| an accumulator or pending copy held at any compute
  // end (lossy codecs), and the largest |update element| for scale.
  double max_residual = 0;
  double max_update_element = 0;
  uint64_t events = 0;
  // Detaches and reattaches in time order (empty without patience).
  std::vector<SimTransition> transitions;

  double iterations_per_second() const;  // mean per worker
  double stall_share() const;            // stall time / (workers × seconds)
  uint64_t stalls() const;
  uint64_t bytes_up() const;
  uint64_t bytes_down() const;
  // Team patience: detached time / (workers × seconds), and totals.
  double detached_share() const;
  uint64_t detaches() const;
  uint64_t reattaches() const;
  uint64_t late_rows() const;
};

// Runs one simulation. Errors: invalid config (InvalidArgument saying which
// field), or a deadlock / runaway (Internal, with what each worker was
// doing) — the latter would be a bug in the protocol logic.
absl::StatusOr<SimReport> RunSimulation(const SimConfig& config, const Layout& layout);

// A model layout like a small CNN for 28×28 images (about 1.7 MB in fp32,
// 207 rows of uneven size): "cnn". The main job's CNN
// (client/examples/fmnist_worker.cc, 82 KB): "fmnist". "tiny": 6 tensors, a
// few KB, for tests.
absl::StatusOr<Layout> SyntheticLayout(const std::string& name);

}  // namespace rog

#endif  // ROG_SIM_SIMULATOR_H_
