// The figures of tools/bench.sh, from what the robots and links recorded:
// each robot's per-iteration and per-evaluation CSV files
// (client/examples/fmnist_worker.cc --csv_dir) and its link's trace with the
// wall-clock time the relay started replaying it. Pure logic, no I/O:
// bench_report.cc reads the files and writes summary.md and the plots.
#ifndef ROG_TOOLS_BENCH_BENCH_REPORT_LIB_H_
#define ROG_TOOLS_BENCH_BENCH_REPORT_LIB_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/staleness.h"
#include "common/trace.h"

namespace rog {

// One row of ID.iters.csv: an iteration, stamped when EndStep returned.
struct IterRecord {
  double unix_s = 0;
  uint64_t iteration = 0;
  double stall_s = 0;
  bool stalled = false;
  double compute_s = 0, transmit_s = 0, window_s = 0;
  uint64_t rows_up = 0, bytes_up = 0, payload_up = 0;
  uint64_t rows_down = 0, bytes_down = 0, payload_down = 0;
  bool disconnected = false;
  // Files written while EndStep waited for its push's acknowledgements
  // carry the push's figures here (see PushRecord); newer ones write
  // ID.pushes.csv instead and these stay 0.
  double overshoot_s = 0;
  double busy_s = 0;
  // Team patience: BeginStep's wait while rogd had the robot detached, and
  // the record's kind: an iteration, a local step taken detached, or no
  // iteration (the adaptation time ran out during BeginStep's wait; the
  // record carries that wait). Files written before patience lack both
  // columns (read as 0, an iteration).
  double detached_s = 0;
  bool local_step = false;
  bool no_iteration = false;
  // The part of compute_s spent computing, before fmnist_worker's
  // --compute_time padding (files before it: compute_s).
  double real_compute_s = 0;
};

// One row of ID.pushes.csv: an EndStep's push, written once rogd had
// acknowledged its last batch (rog::PushStats).
struct PushRecord {
  double start_unix = 0;  // EndStep's call
  uint64_t iteration = 0;
  double window_s = 0;  // 0: none
  uint64_t bytes = 0, payload = 0;
  double busy_s = 0;       // start to last ack less the minimum round trip
  double overshoot_s = 0;  // window end to the estimated arrival of its last byte
  bool disconnected = false;
  uint64_t late_bytes = 0;  // formed after the window closed (mandatory, asked for)
  // Start to last ack, and the bytes acknowledged (PushStats); ack_s < 0 in
  // files before these columns.
  double ack_s = -1;
  uint64_t acked_bytes = 0;
};

// One row of ID.acc.csv: an evaluation on degraded test images; the last
// row is the one after the robot's final sync.
struct AccRecord {
  double unix_s = 0, elapsed_s = 0;
  uint64_t iteration = 0;
  double accuracy = 0;
};

// Parse the CSV files, header line first. Errors name `name`, the line and
// what is wrong.
absl::StatusOr<std::vector<IterRecord>> ParseIterCsv(absl::string_view text,
                                                     absl::string_view name);
absl::StatusOr<std::vector<AccRecord>> ParseAccCsv(absl::string_view text, absl::string_view name);
absl::StatusOr<std::vector<PushRecord>> ParsePushCsv(absl::string_view text,
                                                     absl::string_view name);
// The pushes of files written before ID.pushes.csv existed, when EndStep
// returned only once its push was acknowledged: one per iteration that
// transmitted, starting transmit_s before it returned.
std::vector<PushRecord> PushesFromIters(const std::vector<IterRecord>& iters);

// The unix time at which a trace_relay started replaying its trace, from
// the first line of its log ("trace time 0 at unix T").
absl::StatusOr<double> RelayStartUnix(absl::string_view relay_log);
// The one-way delay the link added, from the same line (", delay 5ms,"; a
// tc_link's "no added delay" is 0).
absl::StatusOr<double> RelayDelaySeconds(absl::string_view relay_log);

// What one robot did in one run.
struct RobotRun {
  std::string id;
  std::vector<IterRecord> iters;
  std::vector<AccRecord> acc;
  // Its pushes; empty for files before ID.pushes.csv (PushesFromIters).
  std::vector<PushRecord> pushes;
  std::optional<Trace> trace;  // its link, replayed from trace_start_unix
  double trace_start_unix = 0;
  double trace_scale = 1;
  double link_delay_s = 0;  // the link's one-way propagation delay
};

struct RobotFigures {
  std::string id;
  uint64_t iterations = 0;
  double span_s = 0;  // from the first iteration's start to the last one's end
  double iterations_per_s = 0;
  double compute_s = 0, transmit_s = 0, stall_s = 0;
  double real_compute_s = 0;  // of compute_s, before --compute_time padding
  uint64_t stalls = 0;
  double final_accuracy = -1;  // -1: none recorded
  uint64_t bytes_up = 0, bytes_down = 0, payload_up = 0, payload_down = 0;
  // Uplink bytes rogd acknowledged, and what the link could carry while
  // some push was under way: from a push's start to its last ack less the
  // link's round-trip propagation delay, overlapping pushes counted once.
  // Every acknowledged byte crossed within that interval, so their ratio is
  // at most 1 (up to the relay's timing). Files without ack_s: 0 (unknown).
  double transmit_bytes_up = 0, transmit_capacity_up = 0;
  std::vector<double> overshoots_s;  // pushes with a window only
  std::vector<double> windows_s;     // their windows, in the same order
  // Of those, the pushes that sent nothing after their window closed (no
  // late_bytes): how sharply the window cut its optional rows.
  std::vector<double> on_time_overshoots_s;
  uint64_t disconnects = 0;
  double detached_s = 0;
  uint64_t local_steps = 0;
};

RobotFigures Summarise(const RobotRun& run);

// The team's accuracy curve: the k-th evaluation of every robot averaged
// (time: the mean of their elapsed_s), for k while every robot has one,
// excluding the final (post-sync) evaluation.
std::vector<std::pair<double, double>> TeamAccuracy(const std::vector<RobotRun>& runs);

// When the curve first reaches `target` (linear in time between points),
// or nullopt if it never does.
std::optional<double> TimeToAccuracy(const std::vector<std::pair<double, double>>& curve,
                                     double target);

// The q-quantile (0..1, nearest rank) of `v`; nullopt when empty.
std::optional<double> Quantile(std::vector<double> v, double q);

struct PolicyFigures {
  std::string policy;  // "bsp", "ssp", "rog"
  std::vector<RobotFigures> robots;
  std::vector<std::pair<double, double>> team_accuracy;
  // Team means (per robot) and totals.
  double iterations_per_s = 0;  // mean over robots
  double stall_share = 0;       // stall time / span, over all robots
  double compute_share = 0, transmit_share = 0;
  // Means over the team's iterations: compute as the robots' clock saw it,
  // and before fmnist_worker's --compute_time padding.
  double compute_per_iteration_s = 0, real_compute_per_iteration_s = 0;
  uint64_t stalls = 0;         // over all robots
  double final_accuracy = -1;  // mean over robots, -1 if none
  double final_accuracy_min = -1, final_accuracy_max = -1;
  double mb_up = 0, mb_down = 0;                       // mean per robot, 1e6 bytes
  double index_overhead = 0;                           // (bytes - payload) / payload, both ways
  double link_utilisation = 0;                         // uplink bytes / capacity while transmitting
  std::optional<double> overshoot_p50, overshoot_p99;  // seconds
  // p99 over the pushes without late bytes, and the share of windowed
  // pushes with some (rows the staleness bound or a stalled peer forced past
  // the window).
  std::optional<double> on_time_overshoot_p99;
  // Overshoot by window length: for each of kWindowBuckets (upper bounds,
  // seconds; the last open-ended), the windowed pushes in it and their
  // overshoot p50 and p99. A window's overshoot is read against its length.
  struct WindowBucket {
    double from = 0, up_to = 0;  // seconds, (from, up_to]; infinity for the last
    size_t pushes = 0;
    std::optional<double> p50, p99;
  };
  std::vector<WindowBucket> overshoot_by_window;
  double late_push_share = 0;
  double detached_share = 0;  // detached wait / span, over all robots
  uint64_t local_steps = 0;
  // Rows rogd folded from robots while detached (from `rogctl workers`);
  // -1 when not recorded.
  int64_t late_rows = -1;
  // rogd's view of the stall seconds, summed over robots, by what the robot
  // waited for (indexed by StallCause), from `rogctl workers`; empty when
  // not recorded (older rogd or no file); kStallPeerAsked is -1 when the
  // file predates it (its time is then within kStallPeerUplink).
  std::vector<double> stall_cause_s;
};

PolicyFigures CombinePolicy(const std::string& policy, const std::vector<RobotRun>& runs);

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
};

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

// The simulator's uplink utilisation per policy ("bsp", "ssp", "rog"), as a
// share, from //tools/sim's "... the benchmark's link utilisation): bsp X%,
// ssp Y%, rog Z%" line; empty if `simulator` has none.
std::map<std::string, double> SimulatedUtilisation(const std::string& simulator);

// The simulator's iterations/s per policy, from the first row of its table
// that starts with the policy's name and a plain number ("bsp 0.110 6.1%
// ..."); empty if `simulator` has none.
std::map<std::string, double> SimulatedThroughput(const std::string& simulator);

// A measured link utilisation below this share of the simulator's on the
// same settings, with fewer iterations/s than the simulator's: the machine
// (rogd, the robots and their links sharing its cores), not the links'
// rates, bounded that policy (results/2026-11-29-transport-constant-links-
// 5977068: 99% of the simulator's at 16-19 Mbit/s, 38-63% at 160-190
// Mbit/s). The throughput has to agree: at the fp32 replayed paper point
// (results/2026-11-29-paper-fp32-replayed-relay-queue-f474d8d) BSP and SSP
// measured 53-59% against 97% yet ran 7-8% faster than simulated.
constexpr double kRigShortfall = 0.8;

// summary.md: the table of every figure, the ROG/BSP and ROG/SSP ratios as
// N.NN×, the settings. `simulator` is the simulator's output for the same
// settings, quoted as is (empty: left out).
std::string SummaryMarkdown(const std::vector<PolicyFigures>& policies,
                            const BenchSettings& settings, const std::string& simulator);

// One run of the patience study: a policy with or without team patience on
// one timeline of the traces.
struct StudyRun {
  std::string timeline;  // "fast", "replayed"
  std::string policy;    // "bsp", "ssp", "rog"
  double patience = 0;   // seconds; 0 = off
  uint32_t local_steps = 0;
  PolicyFigures figures;
};

// The sum of "late_rows" over the workers of `rogctl workers --json`.
absl::StatusOr<int64_t> LateRowsFromWorkersJson(absl::string_view json);
// The sum of the number under `key` over the workers of `rogctl workers
// --json`; NotFound when no worker has the key (an older rogd).
absl::StatusOr<double> SumFromWorkersJson(absl::string_view json, absl::string_view key);
// PolicyFigures::stall_cause_s from `rogctl workers --json`: empty when the
// file predates the stall causes.
absl::StatusOr<std::vector<double>> StallCausesFromWorkersJson(absl::string_view json);

// patience.md: per timeline, every run with its iterations/s (and the ratio
// to the same policy without patience), stall and detached shares, late
// rows, time to BSP-without-patience's final accuracy, final accuracy; then
// the goals checked against these figures for ROG with
// `main_patience` and no local steps (the first ROG run with patience when
// there is none such).
std::string PatienceMarkdown(const std::vector<StudyRun>& runs, const BenchSettings& settings,
                             double main_patience = 0);

// "2.60×", or "n/a" when the denominator is not positive.
std::string Ratio(double num, double den);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_BENCH_REPORT_LIB_H_
