// The staleness rules of BSP, SSP(S) and RSP(S) on one engine.
//
// A worker that has completed c iterations may start the next one only if,
// for every row, its copy holds every other attached worker's updates up to
// iteration c - B, where B is the policy's bound: 0 for BSP, S for SSP and
// ROG. SSP moves whole models, so the rule is the same per row; ROG moves rows
// and applies the rule per row (RSP). When the rule fails the worker stalls;
// PlanStall says which rows other workers must push now and which rows the
// server can deliver now.
#ifndef ROG_COMMON_STALENESS_H_
#define ROG_COMMON_STALENESS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/layout.h"
#include "common/version_store.h"

namespace rog {

enum class SyncPolicy { kBsp, kSsp, kRog };

// "bsp", "ssp", "rog"; anything else is InvalidArgument listing them.
absl::StatusOr<SyncPolicy> ParseSyncPolicy(absl::string_view name);
absl::string_view SyncPolicyName(SyncPolicy policy);

// The bound B a policy enforces for staleness S: BSP 0, SSP and ROG S.
uint32_t EffectiveBound(SyncPolicy policy, uint32_t staleness);

// The version every other worker's updates must reach before a worker that
// has completed `iteration` iterations starts the next: max(0, iteration - bound).
inline uint64_t NeededVersion(uint64_t iteration, uint32_t bound) {
  return iteration > bound ? iteration - bound : 0;
}

// Which workers count for the bound: attached[w] is false for a worker that
// left, was evicted or is detached. Worker indices are VersionStore columns.
using AttachedSet = std::vector<bool>;

// The lowest version of `row` in `copy` over attached workers other than
// `self`; UINT64_MAX when there is no such worker.
uint64_t MinOtherVersion(const VersionStore& copy, RowId row, size_t self,
                         const AttachedSet& attached);

struct MissingUpdate {
  RowId row;
  size_t worker;  // whose updates are missing
  uint64_t have;  // the version the copy holds
};

// Entries of `copy` (a worker's copy, rows × workers) below `needed` for
// attached workers other than `self`, in row order; at most `limit` (0: all).
std::vector<MissingUpdate> FindMissing(const VersionStore& copy, size_t self,
                                       const AttachedSet& attached, uint64_t needed,
                                       size_t limit = 0);

// Whether worker `self`, having completed `iteration` iterations, may start
// the next under bound `bound` given what its copy holds.
bool MayStart(const VersionStore& copy, size_t self, const AttachedSet& attached,
              uint64_t iteration, uint32_t bound);

// What the server does for a worker stalled at `needed`.
struct StallPlan {
  // pushes[w]: rows worker w must push at once (the global rows lack its
  // updates up to `needed`). Empty for workers with nothing to push.
  std::vector<std::vector<RowId>> pushes;
  // Rows the server can deliver now: the copy lacks something below `needed`
  // and the global row holds every attached other worker up to `needed`.
  std::vector<RowId> deliverable;
  // Workers whose updates are missing from the global rows (they must push,
  // or first compute the iterations).
  std::vector<size_t> waiting_for;
  // Rows still missing from the copy.
  size_t missing_rows = 0;
};
StallPlan PlanStall(const VersionStore& global, const VersionStore& copy, size_t self,
                    const AttachedSet& attached, uint64_t needed);

// Team patience: whom to detach when worker `self` has waited at the bound
// too long for the workers in `waiting_for` (its StallPlan's). `waits_for[q]`
// lists the workers q itself waits for while stalled at the bound (empty
// when q is not stalled), `needed[q]` the version q needs to start
// (NeededVersion of its clock), `clocks[q]` the iterations q has completed.
// A holder that has not completed the iteration the worker before it needs
// and is itself stalled is held by its own wait, so the blame passes on to
// those it waits for, and so on: the robot on the slow link is blamed, not a
// healthy one stuck behind it. A holder is blamed itself when it has
// completed what is needed (only its push is missing), or when none of its
// waits leads to a blamed worker: it waits for nobody, only for `self` or
// detached workers, or only back into the chain that led to it (a cycle).
// Workers that are not attached, and `self`, are never blamed. Each blamed
// worker appears once, in the order of a depth-first walk from `waiting_for`.
std::vector<size_t> BlameForStall(size_t self, const std::vector<size_t>& waiting_for,
                                  const std::vector<std::vector<size_t>>& waits_for,
                                  const std::vector<uint64_t>& clocks,
                                  const std::vector<uint64_t>& needed, const AttachedSet& attached);

// What a stalled worker waits for: a peer that has not yet finished the
// iteration the bound needs (inherent in S); a peer that has it, was asked
// to push the rows (PushNow) and has not yet answered with any row asked
// (the ask's trip to the peer, the peer's queue, the first row's trip
// back); a peer whose rows are on their way (its uplink); or rows the
// server holds but has not yet delivered (the stalled worker's downlink).
// The values are stable (arrays and the wire are indexed by them); the
// order of the stall path is compute, asked, uplink, downlink.
enum StallCause {
  kStallPeerCompute = 0,
  kStallPeerUplink = 1,
  kStallDownlink = 2,
  kStallPeerAsked = 3
};
constexpr int kStallCauses = 4;
// The causes in the order of the stall path, for tables.
constexpr StallCause kStallPath[kStallCauses] = {kStallPeerCompute, kStallPeerAsked,
                                                 kStallPeerUplink, kStallDownlink};
// "peer_compute", "peer_uplink", "downlink", "peer_asked" (metric labels,
// JSON keys).
absl::string_view StallCauseName(StallCause cause);

// The cause of a stall planned as `plan` for version `needed`, given every
// worker's clock and whether rogd's last PushNow to it is still unanswered
// (both indexed like the VersionStore columns; `unanswered` may be empty:
// none): peer compute when some worker it waits for has not completed
// `needed` iterations, else peer asked when some worker it waits for has
// an unanswered ask, else peer uplink when it waits for anyone, else
// downlink.
StallCause ClassifyStall(const StallPlan& plan, const std::vector<uint64_t>& clocks,
                         const std::vector<bool>& unanswered, uint64_t needed);

// How many iterations a worker's copy of `row` is behind the freshest
// contribution: the largest global − copy over attached other workers.
uint64_t CopyStaleness(const VersionStore& global, const VersionStore& copy, RowId row, size_t self,
                       const AttachedSet& attached);

}  // namespace rog

#endif  // ROG_COMMON_STALENESS_H_
