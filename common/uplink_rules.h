// What rogd accepts from a worker, where the answer depends on what rogd
// knows of that worker: its clock and the versions it has pushed. The
// stateless checks of a message (sizes, row ids, codecs, finite values) are
// in server/service.cc's ValidateUplinkBatch; these are the rest, pure so
// that they are tested without a server. Each error is InvalidArgument and
// says what was wrong and what a well-behaved worker sends instead.
#ifndef ROG_COMMON_UPLINK_RULES_H_
#define ROG_COMMON_UPLINK_RULES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/layout.h"
#include "common/staleness.h"
#include "common/version_store.h"

namespace rog {

// The highest clock any worker may report: 2^48 iterations is a million a
// second for eight years, and it keeps clocks far from UINT64_MAX, which
// rogd uses for "no worker".
constexpr uint64_t kMaxClock = uint64_t{1} << 48;

// Progress.iteration from a worker rogd holds at clock `clock`: a worker
// reports after every iteration, so a report is at most one ahead (a lower
// one is a report sent before rogd moved the worker's clock, and ignored).
absl::Status CheckReportedClock(uint64_t clock, uint64_t reported);

// The highest clock a worker at `clock` can have reached on its own under
// bound `bound`, given what its copy holds of the attached other workers
// (rogd's view, which is never behind the worker's own): it may complete
// iteration c + 1 only while every row holds them up to c - bound. With no
// attached other worker, kMaxClock.
uint64_t ReachableClock(const VersionStore& copy, size_t self, const AttachedSet& attached,
                        uint64_t clock, uint32_t bound);

// Hello.iteration of a worker that rogd already knows and that cannot have
// gone past `reachable` (ReachableClock, or its local steps while detached)
// since; of a worker rogd does not know, pass kMaxClock.
absl::Status CheckHelloClock(uint64_t reported, uint64_t reachable);

// The counts of an uplink BATCH_KIND_UPDATE from worker `w`, formed when
// the worker had completed `iteration` iterations (RowBatch.iteration,
// which rogd checks against the worker's clock first): row rows[k] gains
// counts[k] of its iterations, so afterwards it may hold at most
// `iteration` of them (`versions` is what the global rows hold). A count
// of 0 carries no iteration (a residual, or updates kept across a rejoin)
// and is always accepted.
// REQUIRES: rows.size() == counts.size(); every row < layout.num_rows().
absl::Status CheckUpdateCounts(const VersionStore& versions, size_t w, const Layout& layout,
                               const std::vector<RowId>& rows, const std::vector<uint32_t>& counts,
                               uint64_t iteration);

}  // namespace rog

#endif  // ROG_COMMON_UPLINK_RULES_H_
