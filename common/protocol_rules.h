// ROG's protocol rules as rogd, the SDK and the simulator compose them from
// the pieces in selection.h, staleness.h and goodput.h: which rows a worker
// offers up and rogd offers down in an iteration, the team's transmission
// window, and when a worker may send speculative rows or must hold its link
// for the team's pace. Each rule and each constant is here once; the three
// callers pass the facts of their world (who is attached, what the links
// measured) and where they must differ it is a parameter, named as such.
// Pure: no clock (time comes in as `now`), no I/O. See docs/design.md,
// "ATP" and "Team patience".
#ifndef ROG_COMMON_PROTOCOL_RULES_H_
#define ROG_COMMON_PROTOCOL_RULES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/codec.h"
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
// The smallest payload budget a row batch gets on a slow link (a row larger
// than the budget still travels alone).
constexpr uint64_t kMinBatchBytes = 1024;
// ATP pacing: a worker more than this many iterations ahead of the slowest
// attached clock keeps its link for the whole window instead of starting
// its next iteration early.
constexpr uint64_t kPaceLead = 1;
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
constexpr double kReattachFraction = 0.5;
constexpr double kReattachHold = 1.0;
// Team pace: a worker is not detached for its pace within this long of the
// team's start, of its joining or of its reattaching, before attached
// traffic has measured its links (the first estimates, taken while every
// worker's full resync shares the links, read healthy links as slow).
constexpr double kPaceGrace = 2.0;

// What a row costs on the link in a plan: its encoded values and index.
inline uint64_t RowWireBytes(Codec codec, uint32_t numel) {
  return EncodedSize(codec, numel) + kRowIndexBytes;
}

// Team patience in seconds: the larger of `floor_seconds` and `iterations`
// times `team_compute_seconds` (the attached workers' mean compute time per
// iteration; <= 0 while unmeasured, when the floor alone counts), at most
// kMaxPatience unless the floor is more. 0 (off) when `floor_seconds` <= 0:
// the floor switches patience on and off.
double TeamPatience(double floor_seconds, double iterations, double team_compute_seconds);

// Team patience judges every policy's links by the same quantity: the bytes
// of ATP's minimum transmission amount for staleness bound `staleness`
// (MinimumTransmissionAmount(staleness) x `model_bytes`), so that BSP, SSP
// and ROG keep and drop the same links and a comparison measures the
// synchronisation, not the membership. (ROG's window uses the same share.)
double MembershipShareBytes(uint32_t staleness, uint64_t model_bytes);

// The payload budget of a sender's next row batch: what its link moves in
// `lead` seconds at `goodput` bytes/s (<= 0: no estimate yet), within
// [kMinBatchBytes, `max_batch`]. On a slow link a batch of the full
// `max_batch` occupies the link for seconds: the window's cutoff can fall
// only between batches, and a directive or a stalled peer's rows queue
// behind it. Both directions size their batches (and the one batch their
// in-flight allowance adds) by it.
uint64_t BatchBudget(double goodput, double lead, uint64_t max_batch);

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

// ATP pacing: whether a worker whose sends are done keeps its link until
// the window's end (`deadline`, infinity for none) rather than starting
// its next iteration: when it is more than `lead` iterations ahead of the
// slowest attached clock.
bool HoldForPace(double now, double deadline, uint64_t clock, uint64_t min_attached_clock,
                 uint64_t lead = kPaceLead);

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
