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

// The highest clock a hello may name: 2^48 iterations is a million a
// second for eight years.
constexpr uint64_t kMaxHelloClock = uint64_t{1} << 48;
// The highest clock counting may reach. Far above kMaxHelloClock, so that
// no hello can bring a worker, or a team that joins or reattaches at its
// clock, to where its progress is refused: from any clock a hello may
// name, 2^52 - 2^48 iterations remain (over a century at a million a
// second). Every clock stays exact in a double and far from UINT64_MAX,
// which rogd uses for "no worker".
constexpr uint64_t kMaxClock = uint64_t{1} << 52;
static_assert(kMaxClock - kMaxHelloClock > (uint64_t{1} << 51), "no hello may end counting");

// Progress.iteration from a worker rogd holds at clock `clock`: a worker
// reports after every iteration, so a report is at most one ahead (a lower
// one is a report sent before rogd moved the worker's clock, and ignored),
// and at most kMaxClock.
absl::Status CheckReportedClock(uint64_t clock, uint64_t reported);

// How far past the clock rogd holds for a worker id its hello may name a
// clock beyond kMaxHelloClock: the progress reports a lost stream may have
// carried, a million iterations.
constexpr uint64_t kHelloClockLead = uint64_t{1} << 20;

// Hello.iteration from a worker id rogd holds at clock `known` (0 for an id
// it does not hold): at most kMaxHelloClock, or at most kHelloClockLead
// past `known` (so that workers reconnect to a team that counted on past
// kMaxHelloClock), and never past kMaxClock. Not bounded further: a
// worker's last progress reports may have been lost with its stream, and
// one rogd restored from a checkpoint reports a clock past it (the
// staleness bound a reconnecting worker kept is the SDK's to keep; rogd
// bounds every count by the reported clock). A buggy or hostile hello may
// so move its worker, and the workers that join or reattach at its clock,
// up to kMaxHelloClock at once, past it only kHelloClockLead per hello,
// never to where counting stops.
absl::Status CheckHelloClock(uint64_t reported, uint64_t known);

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
