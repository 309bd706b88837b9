// A deterministic simulator of a ROG team: rogd's engine core
// (server/engine_core.h) and N workers running the SDK's protocol state
// machine (client/worker_protocol.h), the same code rogd and rog::Worker
// run, on a simulated clock, joined by simulated links that replay
// bandwidth traces. Only what the transport and the robots do is the
// simulator's own: links, the robots' compute, and the event loop.
//
// Links: each worker has one link per direction. Messages cross one after
// another (first in, first out) at the trace's rate × trace_scale, with
// gRPC's framing, then arrive after the one-way delay; acks and directives
// share the links with row batches, as on the relays tools/bench.sh uses.
// No TCP effects beyond that (no slow start, no kernel buffers: the
// in-flight caps of rogd and the SDK keep those small).
//
// Robots: each worker loops as the example robots do: BeginIteration
// (waits while the protocol says so), compute for its compute time (with
// jitter), EndIteration (the push, until the SDK lets it return). The
// worker on the fastest link at t = 0 brings the model; the others join
// with row digests of the same initial values (no resync), retrying while
// the model arrives, as tools/run.sh starts its robots. Training time is
// counted from the team's start (rogd's first Release) for `seconds`; then
// every worker flushes and syncs (Worker::Flush, Worker::Sync) and the
// checks below run.
//
// Updates are integer-valued so float sums are exact. Element j of every row
// with more than j elements is worker j's marker: it adds 1 there every
// iteration and nobody else touches it. A replica's markers therefore say,
// independently of any version bookkeeping, how many iterations of each
// worker it holds; the simulator checks the staleness bound against them at
// every compute start among the workers rogd holds attached, and after the
// drain every replica must equal rogd's model and rogd's model minus the
// initial values the sum of every update (lossless codecs). The checks are
// sim/invariants.h's, the ones the integration tests make on real teams.
//
// With a learning task (SimConfig::learning), the updates are a real
// model's training steps instead, and its score is recorded over the
// training time and after the drain; see SimLearning.
#ifndef ROG_SIM_SIMULATOR_H_
#define ROG_SIM_SIMULATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/worker_protocol.h"
#include "common/layout.h"
#include "common/staleness.h"
#include "common/trace.h"
#include "server/engine_core.h"

namespace rog {

// A model the simulated workers really train (optional): each update is
// Step() on the parameters the worker's compute started from, as a robot
// computes on what BeginIteration gave it, and Score() rates parameters
// (e.g. test accuracy). The integer updates' markers are then gone, so the
// staleness bound is not checked, and float sums make conservation
// approximate (SimReport::max_sum_error says by how much).
class SimLearning {
 public:
  virtual ~SimLearning() = default;
  // The model's initial values, the layout's size.
  virtual std::vector<float> Initial() = 0;
  // Worker `worker`'s update (a parameter delta, the layout's size) for
  // its `step`-th compute (0-based), from `params`. The same (worker, step,
  // params) must give the same update, so that policies compare on equal
  // terms.
  virtual void Step(size_t worker, uint64_t step, absl::Span<const float> params,
                    absl::Span<float> update) = 0;
  virtual double Score(absl::Span<const float> params) = 0;
};

// A learning task's score of one worker's replica at `time` seconds of
// training time.
struct SimScore {
  double time = 0;
  size_t worker = 0;
  double score = 0;
};

// A simulation's settings. rogd's options and the SDK's are the product's
// own structs, taken as they are, so that an option is declared once, where
// rogd or the SDK declares it: `engine` is rogd's EngineOptions
// (server/engine_core.h), and SimConfig is the SDK's ProtocolOptions
// (client/worker_protocol.h: batch_bytes, batch_seconds, return_after_share,
// share_in_background, send_whole_when_it_fits, as every simulated worker's
// protocol takes them). The rest is the simulation's own.
//
// Set by the simulator, whatever is given: rogd's team_size (`workers`),
// lease_seconds (nobody disconnects) and clock (the simulated one); each
// worker's worker_id and clock, the default in-flight lead (0.05 s) and no
// replay buffer (rogd never restarts). rogd keeps no checkpoints here:
// engine.checkpoint_path and engine.init_path must be empty.
//
// rogd's and the SDK's batch_bytes, batch_seconds and
// send_whole_when_it_fits are two settings each, as in the product
// (rogd --batch_bytes, WorkerOptions::batch_bytes); //tools/sim's flags set
// both.
//
// The drain: once every worker stopped, each applies its `drain` rule
// (WorkerProtocol::StartDrain, as Worker::Finish does), flushes and
// syncs. Its default here is kSum, not the SDK's kAverage: the integer
// updates' checks (conservation, replicas) are exact only while 1/N is a
// power of two; the learning simulator (tools/sim/fmnist_sim) sets the
// SDK's default.
struct SimConfig : ProtocolOptions {
  SimConfig() { drain = DrainRule::kSum; }
  EngineOptions engine;
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
  // One-way delay of every link, each direction, seconds (tools/bench.sh's
  // relays: 5 ms).
  double link_delay = 0.005;
  // Largest |value| of an update element (rows get amplitudes 1..this,
  // heavy-tailed, so rows differ in magnitude).
  uint32_t max_update = 8;
  // Stop with an error instead of simulating past this many events.
  uint64_t max_events = 200'000'000;
  // Experiment: a worker's push ends only once every batch it sent is
  // acknowledged, so that its transfers do not overlap its next compute (a
  // baseline as the paper ran it; the SDK returns once the push is handed
  // off).
  bool push_waits_for_acks = false;
  // Real training (not owned; nullptr: integer updates), and how often
  // every replica is scored during the training time (also at its end).
  SimLearning* learning = nullptr;
  double score_every = 10;
};

// One attach-state change of a worker, with rogd's reason (the Detached or
// Reattached directive it sent).
struct SimTransition {
  double time = 0;  // seconds since the team started
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
  // Per push with a window: the SDK's account of how far past the window's
  // end its last byte arrived (PushStats::overshoot_seconds).
  std::vector<double> overshoots;
  // Of its pushes in the training time: the bytes rogd acknowledged and what
  // the link could have carried while they were on it (UplinkUse, as the
  // benchmark's link utilisation).
  uint64_t uplink_acked_bytes = 0;
  double uplink_capacity_bytes = 0;
  // Team patience, as rogd counted it over the training time: time spent
  // detached, detaches and reattaches, rows folded while detached; and the
  // iterations the worker ran while detached.
  double detached_seconds = 0;
  uint64_t detaches = 0;
  uint64_t reattaches = 0;
  uint64_t local_steps = 0;
  uint64_t late_rows = 0;
  // Stall time by what the stalled worker was waiting for, as rogd judged
  // it (StallCause in common/staleness.h; rogd's view starts when the
  // worker's stall report arrives).
  double stall_cause_seconds[kStallCauses] = {0, 0, 0, 0};
  // Of the stall time rogd did not see, the part its stall reports spent on
  // the way (from the SDK's send to rogd's receipt, queued behind row
  // batches on the uplink); the rest is the last rows' way after rogd sent
  // them, and rogd's reaction time.
  double stall_report_seconds = 0;
};

struct SimReport {
  SimConfig config;
  double seconds = 0;  // training time simulated
  // When the team started (rogd's first Release), after the model's upload
  // and the joins, and how long the drain took after the training time.
  double start = 0;
  double drain_seconds = 0;
  std::vector<SimWorkerReport> workers;
  // Compute starts where a replica held fewer iterations of some other
  // attached worker than the bound requires (must be 0). Detached workers
  // are not checked, nor is anyone checked against them.
  uint64_t bound_violations = 0;
  uint64_t bound_checks = 0;
  // After the drain: largest |replica - rogd's model| over workers and
  // elements, and largest |(rogd's model - initial) - sum of all updates|.
  double max_replica_error = 0;
  double max_sum_error = 0;
  // Largest |residual| an accumulator held after the drain (lossy codecs:
  // what the codec has not sent yet), and the largest |update element| for
  // scale.
  double max_residual = 0;
  double max_update_element = 0;
  uint64_t events = 0;
  // Detaches and reattaches in time order (empty without patience).
  std::vector<SimTransition> transitions;
  // With a learning task: every replica's score every score_every seconds
  // of training time and at its end (time == seconds), in time order; and
  // the score of rogd's model after the drain (every replica then equals
  // it with a lossless codec), -1 without a task.
  std::vector<SimScore> scores;
  double final_score = -1;
  // rogd's model when every worker had stopped, before the drain; and that
  // model plus the drain's updates averaged over the workers instead of
  // summed (a diagnostic: what the final sync would leave if it averaged
  // the updates held at the end). -1 without a task.
  double stopped_score = -1;
  double averaged_drain_score = -1;
  // The drain rule (SimConfig::drain): the sum over workers and elements of
  // |what their final flush did not push| (0 when the drain is summed).
  double drain_withheld = 0;

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
  // Mean score over the workers at `time` (-1 if none was taken then).
  double team_score(double time) const;
};

// Runs one simulation. Errors: invalid config (InvalidArgument saying which
// field); rogd refusing what a worker sent, a team that never starts or
// never drains, or a runaway (Internal, with what each worker was doing):
// the latter would be a bug in rogd's or the SDK's rules.
absl::StatusOr<SimReport> RunSimulation(const SimConfig& config, const Layout& layout);

// The layout named `name` (common/model_layouts.h: cnn, fmnist, convmlp,
// tiny).
absl::StatusOr<Layout> SyntheticLayout(const std::string& name);

}  // namespace rog

#endif  // ROG_SIM_SIMULATOR_H_
