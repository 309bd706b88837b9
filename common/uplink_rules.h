// What rogd accepts from a worker, where the answer depends on what rogd
// knows of that worker: its clock and the versions it has pushed. The
// stateless checks of a message (sizes, row ids, codecs, finite values) are
// in server/uplink_batch.cc's ValidateUplinkBatch; these are the rest, pure so
// that they are tested without a server. Each error is InvalidArgument and
// says what was wrong and what a well-behaved worker sends instead.
#ifndef ROG_COMMON_UPLINK_RULES_H_
#define ROG_COMMON_UPLINK_RULES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/layout.h"
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

// Hello.iteration: at most kMaxClock. Not bounded further: a worker may have
// trained on while it was away, and one rogd restored from a checkpoint
// reports a clock past it (the staleness bound a reconnecting worker kept
// is the SDK's to keep; rogd bounds every count by the reported clock).
absl::Status CheckHelloClock(uint64_t reported);

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
