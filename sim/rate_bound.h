// How fast a team could iterate on the simulator's links under the staleness
// rule (common/staleness.h), whatever protocol moves the rows: a yardstick
// for the simulator and the benchmark, so that a policy's iterations per
// second can be read against what the links allow, not only against the
// other policies.
//
// The model is fluid: rows are arbitrarily small, a message costs only its
// bytes, and nothing waits for an acknowledgement. Each worker has one link
// per direction replaying its trace at trace_scale, with the one-way delay
// (as the simulator's links, sim/simulator.h), computes compute_seconds ×
// its compute factor per iteration (no jitter) and starts the next
// iteration as soon as the rule lets it: having completed k iterations,
// once its replica holds every other worker's updates up to
// NeededVersion(k, B) in every row. Every row changes every iteration, so
// "holds v's updates up to j in every row" needs the whole model, encoded,
// to cross v's uplink after v finished j and the worker's downlink after
// that. Time runs on the traces from `start` (the simulated team's start).
//
// The schedules, each a rule for when that holds:
//   kAnyProtocol: only what every protocol must do: v's uplink carries the
//     whole model after v finished j (then the delay), and the worker's
//     downlink carries the whole model after the first of those bytes can
//     have reached rogd (then the delay). An upper bound on the rate of any
//     protocol under the rule on these links.
//   kRowsInTurn: every link sends every row in turn, oldest first, without
//     pause: rogd holds v's j in every row once v's uplink has carried the
//     whole model since j, the worker once its downlink has carried the
//     whole model since then. A rate a protocol reaches.
//   kWholeModelPushes: SSP as the paper ran it: after each compute the
//     worker pushes the whole model and computes the next iteration once the
//     push has crossed its uplink (the simulator's push_waits_for_acks);
//     rogd forwards rows as they arrive (the downlink as kAnyProtocol). An
//     upper bound for that way of pushing. The SDK's SSP returns once all
//     but its in-flight cap's bytes are sent, so where the model fits the
//     cap its push overlaps the next compute and it can run faster.
#ifndef ROG_SIM_RATE_BOUND_H_
#define ROG_SIM_RATE_BOUND_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/layout.h"
#include "sim/simulator.h"

namespace rog {

enum class RateSchedule { kAnyProtocol, kRowsInTurn, kWholeModelPushes };

struct RateBound {
  double iterations_per_second = 0;  // mean per worker over config.seconds
  double compute_share = 0;          // compute time / (workers × seconds)
  std::vector<uint64_t> iterations;  // per worker, completed within config.seconds
};

// The rate under `schedule` for the settings of `config` that concern links
// and compute (workers; engine.staleness and engine.policy: the bound B;
// compute_seconds and compute_factors, seconds, traces, trace_scale,
// link_delay, engine.codec),
// the model's size from `layout`, the traces' time from `start` seconds.
// Patience and the protocol's options play no part. InvalidArgument for
// settings the simulator refuses too (which, in the message).
absl::StatusOr<RateBound> ComputeRateBound(const SimConfig& config, const Layout& layout,
                                           RateSchedule schedule, double start = 0);

}  // namespace rog

#endif  // ROG_SIM_RATE_BOUND_H_
