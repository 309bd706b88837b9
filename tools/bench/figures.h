// The benchmark's figures of one run: per robot (shares, bytes, link
// utilisation, overshoots) and per policy over its robots, from what the
// robots recorded (records.h) and their links' traces.
#ifndef ROG_TOOLS_BENCH_FIGURES_H_
#define ROG_TOOLS_BENCH_FIGURES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/trace.h"
#include "tools/bench/records.h"

namespace rog {

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
  // rogd's model once every robot had finished (tools/run.sh's team.acc:
  // rogctl export, scored on the same test images); -1 if not recorded.
  // Robots score their own model after their own final sync, which can come
  // before the others' last updates.
  double rogd_final_accuracy = -1;
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

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_FIGURES_H_
