// ROG's protocol rules as rogd, the SDK and the simulator compose them from
// the pieces in selection.h, staleness.h and goodput.h: which rows a worker
// offers up and rogd offers down in an iteration, the team's transmission
// window, and when a worker may send speculative rows. Each rule and each
// constant is here once; the three callers pass the facts of their world
// (who is attached, what the links measured) and where they must differ it
// is a parameter, named as such. Pure: no clock (time comes in as `now`),
// no I/O. See docs/design.md, "ATP" and "Team patience".
#ifndef ROG_COMMON_PROTOCOL_RULES_H_
#define ROG_COMMON_PROTOCOL_RULES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/codec.h"
#include "common/drain_rule.h"
#include "common/layout.h"
#include "common/selection.h"
#include "common/server_state.h"
#include "common/staleness.h"
#include "common/worker_state.h"

namespace rog {

// Bytes a row adds to a batch besides its encoded values: the varints of
// its id delta, count and version lag (an estimate that plans use; the
// batches themselves are sized by protobuf).
constexpr uint64_t kRowIndexBytes = 4;
// Unacknowledged bytes a sender keeps in flight before its link has a
// goodput estimate (rogd's downlink, the SDK's uplink).
constexpr uint64_t kInitialInFlight = 64 * 1024;
// Team patience in the team's own units: by default the patience is this
// many of the team's compute times per iteration, never less than the
// floor in seconds the operator sets (rogd --patience_iterations and
// --patience), so that one default serves 5 ms and 5 s iterations.
constexpr double kPatienceIterations = 4;
// The longest patience compute times can make (rogd's --patience allows no
// more either).
constexpr double kMaxPatience = 3600;
// Team patience: a detached worker reattaches once its link moves its share
// within this fraction of the patience, continuously for kReattachHold
// seconds (hysteresis against links that flicker around the threshold).
// In seconds, not the team's units: the flicker is on the link's time
// scale. A hold of two patiences (the same 1 s at 0.5 s and short
// iterations) raised BSP's detached share at the paper profile from 11% to
// 27% and at 5 s iterations from 29% to 55% in the simulator
// (results/2026-11-27-sim-reattach-350d5dc).
constexpr double kReattachFraction = 0.5;
constexpr double kReattachHold = 1.0;
// Team pace: a worker is not detached for its pace within PaceGrace of the
// team's start, of its joining or of its reattaching, before attached
// traffic has measured its links (the first estimates, taken while every
// worker's full resync shares the links, read healthy links as slow). The
// links are measured by the rows iterations move, so the grace is in the
// team's units too: kPatienceIterations of its compute time, at least
// kPaceGrace seconds (the grace that served short iterations).
constexpr double kPaceGrace = 2.0;

// What a row costs on the link in a plan: its encoded values and index.
inline uint64_t RowWireBytes(Codec codec, uint32_t numel) {
  return EncodedSize(codec, numel) + kRowIndexBytes;
}

// Team patience in seconds: the larger of `floor_seconds` and `iterations`
// times `team_compute_seconds` (the attached workers' median compute time per
// iteration; <= 0 while unmeasured, when the floor alone counts), at most
// kMaxPatience unless the floor is more. 0 (off) when `floor_seconds` <= 0:
// the floor switches patience on and off.
double TeamPatience(double floor_seconds, double iterations, double team_compute_seconds);

// Team pace's grace in seconds, given the team's compute time per iteration
// (TeamComputeSeconds; <= 0 while unmeasured): the larger of kPaceGrace and
// kPatienceIterations times it, at most kMaxPatience.
inline double PaceGrace(double team_compute_seconds) {
  return TeamPatience(kPaceGrace, kPatienceIterations, team_compute_seconds);
}

// The team's compute time per iteration as TeamPatience takes it: the lower
// median of the members' measured times (entries <= 0, unmeasured, do not
// count; 0 when none is measured). Not the mean: a member reporting absurd
// compute times cannot stretch everyone's patience unless half the team
// does.
double TeamComputeSeconds(std::vector<double> compute_per_iteration);

// Team patience judges every policy's links by the same quantity: the bytes
// of ATP's minimum transmission amount for staleness bound `staleness`
// (MinimumTransmissionAmount(staleness) x `model_bytes`), so that BSP, SSP
// and ROG keep and drop the same links and a comparison measures the
// synchronisation, not the membership. (ROG's window uses the same share.)
double MembershipShareBytes(uint32_t staleness, uint64_t model_bytes);

// ATP's window with team patience, in seconds; 0 means none (every policy
// but ROG; and while a link has no estimate yet, so that the iteration
// measures it). `goodputs` holds, per attached team member, its link's
// bytes/s (the slower direction); <= 0 is a link without an estimate.
// `share_bytes` is what each member moves per iteration (its MTA share).
// With `patience` > 0 a link too slow to move the share within it does
// not set the window, and the window never exceeds the patience (it is the
// patience when every link is too slow).
double TeamWindow(SyncPolicy policy, absl::Span<const double> goodputs, double share_bytes,
                  double patience);

// Whether a worker at `clock` may fill its window with speculative rows
// beyond the mandatory ones and its MTA share: under ROG only when it is
// ahead of the slowest attached clock, `min_attached_clock` (the others
// wait for the slowest, so it sends no more than it must).
bool MaySpeculate(SyncPolicy policy, uint64_t clock, uint64_t min_attached_clock);

// ATP's degenerate case: whether a sender that may not speculate
// (MaySpeculate) still sends every row of its plan, because all of them,
// `plan_bytes` on the wire, fit what costs its own push nothing: the bytes
// it may keep in flight anyway (`inflight_limit`: they leave at once, so
// the push ends as soon as without them, as SSP's does), or what its link
// carries within its window (`window_seconds`, finite and > 0) at its
// measured `goodput` (bytes/s, <= 0: unknown). For the SDK's and rogd's
// send_whole_when_it_fits, which is off: the extra rows still take the
// link's time and every other worker's downlink, and cost ROG up to 7% in
// the simulator (results/2026-12-01-sim-send-whole-when-it-fits-6ca2199).
bool SendsWhole(uint64_t plan_bytes, uint64_t inflight_limit, double goodput,
                double window_seconds);

// The drain: what a worker still holds when its training ends (the
// accumulators of rows it has not pushed, and a lossy codec's residuals),
// pushed by its final flush (Worker::Finish). kSum pushes it whole, as
// every iteration's push is. kAverage pushes 1/N of it, N the team's
// size: under ROG every worker ends holding updates computed from nearly
// the same model, and their sum overshoots what any one of them found
// (the accuracy study, results/2026-12-04-accuracy-coverage-eee789b: the
// drain averaged instead of summed left a model at least as good at all
// 12 points measured). The part not pushed is taken out of the worker's
// replica too (WorkerState::KeepHeld), so what rogd folds is still
// exactly what was pushed, and after the final Sync the replica equals
// rogd's model. DrainRule is in common/drain_rule.h (a public header).
// The fraction of what it holds a worker pushes in its final flush: 1/N
// under ROG with kAverage and a known team of N >= 1, else 1 (BSP and
// SSP push everything every iteration and hold at most a lossy residual,
// which they push whole; team_size 0: unknown, e.g. an older rogd).
double DrainKeep(SyncPolicy policy, DrainRule rule, uint64_t team_size);

// Staleness-aware weighting of a worker's own update (issue 58;
// ProtocolOptions::stale_weight, the simulator's --stale_weight): the part
// of an iteration's update in a row whose replica, when the iteration
// began at `clock` (iterations the worker had completed), held the team's
// updates only up to version `known` is weighted 1 / (1 + s), s being
// clock minus known, the iterations of the team's updates it lacked (0
// when it lacked none). After the learning rate divided by the staleness
// of Zhang et al., "Staleness-aware async-SGD for distributed deep
// learning" (IJCAI 2016). The weighted update is what the replica and the
// accumulator both receive, so what is pushed is still exactly what rogd
// folds. Off and not in the SDK: at eight of the nine regime points it
// lowered the final model by 1.4-2.2 points; kept for A/Bs. See
// results/2026-12-04-stale-weight-55016c8/README.md.
double StaleWeight(uint64_t clock, uint64_t known);

// Team pace: the iterations per second a team of `members` is expected to
// run, each computing for `compute_seconds` (the members' mean) and then
// waiting for the slowest share, `slowest_share_seconds`. 0 for no members.
// rogd passes the compute time its workers report, the simulator the one
// it is configured with.
double TeamRate(size_t members, double compute_seconds, double slowest_share_seconds);

// Team patience: whether a detached worker's link now qualifies it to
// reattach: at `link_rate` bytes/s (<= 0: unknown) it moves its share
// within kReattachFraction of the patience.
bool ReattachLinkFits(double share_bytes, double patience, double link_rate);

// Team patience: a holder whose link carried its share in the last
// patience (below) is detached for a worker's wait at the bound only once
// the wait reaches this many patiences.
constexpr double kLiveLinkPatience = 2;

// Team patience: whether a worker that has waited at the staleness bound
// for `waited` seconds detaches a worker it waits for (the holder), whose
// uplink brought rogd `arrived_bytes` in the last `patience` seconds. Once
// the wait reaches the patience, unless the holder's link is live, moving
// at least its share (`share_bytes`, MembershipShareBytes) within the
// patience: then the wait is the policy's volume (BSP's whole model, say)
// on a link that carries what every policy is judged by, and the holder
// goes only at kLiveLinkPatience patiences. Detach and reattach so judge a
// link by the same quantity (ReattachLinkFits: the share within half the
// patience); judged by the wait alone, a link that reattaches on the share
// is detached again by the next whole-model push, and flaps. A holder that
// computes, or whose link is dead, brings nothing and goes at the patience.
// Never with `patience` <= 0 (off).
bool DetachHolder(double waited, double patience, double arrived_bytes, double share_bytes);

// Hysteresis for a condition that must hold without a break: `*since` is
// when it last became true (negative: it is false now). Updates *since
// and says whether it has held for `hold` seconds at `now`.
bool HeldFor(bool holds, double now, double* since, double hold = kReattachHold);

// The rows rogd may send worker `worker` (at `clock`) in an iteration:
// every row holding updates it has not received, mandatory when the bound
// needs it (every row under SSP), ranked by importance under ROG. BSP
// offers none: it pulls at the barrier only.
std::vector<RowCandidate> DownlinkCandidates(SyncPolicy policy, uint32_t bound,
                                             const ServerState& state, size_t worker,
                                             uint64_t clock, const AttachedSet& attached,
                                             Codec codec, const Layout& layout);

// The rows a worker offers up after an iteration: every row with unpushed
// iterations, mandatory when the bound needs it (every row under BSP and
// SSP), ranked by importance under ROG; and rows whose only content is a
// lossy codec's residual, ranked as one iteration old and never mandatory.
std::vector<RowCandidate> UplinkCandidates(SyncPolicy policy, uint32_t bound,
                                           const WorkerState& state, Codec codec,
                                           const Layout& layout);

}  // namespace rog

#endif  // ROG_COMMON_PROTOCOL_RULES_H_
