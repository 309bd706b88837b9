// What rogd accepts of a worker's clocks and counts (common/uplink_rules.h).
#include "common/uplink_rules.h"

#include <limits>
#include <string>

#include "catch2/catch.hpp"

namespace rog {
namespace {

bool Says(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

TEST_CASE("a progress report moves the clock by at most one, and stays within 2^52",
          "[uplink_rules]") {
  CHECK(CheckReportedClock(5, 6).ok());
  CHECK(CheckReportedClock(5, 5).ok());  // a stall report
  CHECK(CheckReportedClock(5, 2).ok());  // sent before rogd moved the clock
  // Counting goes on past the highest clock a hello may name.
  CHECK(CheckReportedClock(kMaxHelloClock, kMaxHelloClock + 1).ok());
  CHECK(CheckReportedClock(kMaxClock - 1, kMaxClock).ok());
  const absl::Status jump = CheckReportedClock(5, 7);
  CHECK(jump.code() == absl::StatusCode::kInvalidArgument);
  CHECK(Says(jump, "iteration 7 but rogd holds this worker at iteration 5"));
  const absl::Status beyond = CheckReportedClock(kMaxClock, kMaxClock + 1);
  CHECK(beyond.code() == absl::StatusCode::kInvalidArgument);
  CHECK(Says(beyond, "at most 4503599627370496 are possible"));
  CHECK_FALSE(CheckReportedClock(0, std::numeric_limits<uint64_t>::max()).ok());
}

TEST_CASE("a hello clock is at most 2^48, or a little past what rogd holds for the worker",
          "[uplink_rules]") {
  CHECK(CheckHelloClock(0, 0).ok());
  CHECK(CheckHelloClock(kMaxHelloClock, 0).ok());
  CHECK(CheckHelloClock(kMaxHelloClock, 7).ok());
  const absl::Status s = CheckHelloClock(kMaxHelloClock + 1, 0);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(Says(s, "at most 281474976710656 are possible: send"));
  CHECK_FALSE(CheckHelloClock(std::numeric_limits<uint64_t>::max(), 0).ok());
  // A worker rogd holds past 2^48 (its team counted on from there)
  // reconnects with the progress its lost stream carried, within the lead.
  const uint64_t known = kMaxHelloClock + 100;
  CHECK(CheckHelloClock(known, known).ok());
  CHECK(CheckHelloClock(known + kHelloClockLead, known).ok());
  const absl::Status far = CheckHelloClock(known + kHelloClockLead + 1, known);
  CHECK(far.code() == absl::StatusCode::kInvalidArgument);
  CHECK(Says(far, "(rogd holds this worker id at iteration 281474976710756)"));
  // Never past where counting stops.
  CHECK(CheckHelloClock(kMaxClock, kMaxClock).ok());
  CHECK_FALSE(CheckHelloClock(kMaxClock + 1, kMaxClock).ok());
  CHECK_FALSE(
      CheckHelloClock(std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max())
          .ok());
}

TEST_CASE("update counts keep every row within the worker's clock", "[uplink_rules]") {
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  VersionStore versions(4, 2);
  // Worker 1 pushed every row up to 3.
  for (RowId row = 0; row < 4; ++row) versions.Set(row, 1, 3);
  versions.Set(2, 1, 1);  // but row 2 only up to 1
  CHECK(CheckUpdateCounts(versions, 1, layout, {0, 2}, {2, 4}, 5).ok());
  CHECK(CheckUpdateCounts(versions, 1, layout, {0}, {0}, 3).ok());  // a residual
  const absl::Status over = CheckUpdateCounts(versions, 1, layout, {0, 2}, {2, 5}, 5);
  CHECK(over.code() == absl::StatusCode::kInvalidArgument);
  CHECK(Says(over, "row 2 (w[2]) carries count 5"));
  CHECK(Says(over, "at most 4 iterations can be new"));
  for (uint32_t count : {1000u, std::numeric_limits<uint32_t>::max()}) {
    CHECK_FALSE(CheckUpdateCounts(versions, 1, layout, {1}, {count}, 5).ok());
  }
  // Nothing can be new when the row already holds the clock.
  CHECK_FALSE(CheckUpdateCounts(versions, 1, layout, {0}, {1}, 3).ok());
}

}  // namespace
}  // namespace rog
