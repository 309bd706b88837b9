// Catch2 checks every integration test with a Team makes at its end.
#ifndef ROG_TEST_TESTING_TEAM_CHECKS_H_
#define ROG_TEST_TESTING_TEAM_CHECKS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "catch2/catch.hpp"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"

namespace rog {

// No member's training loop failed and none saw the staleness bound broken.
inline void RequireClean(Team& team) {
  for (auto& m : team.members()) {
    INFO(m->id << " checked " << m->starts_checked << " starts, largest lag " << m->max_lag);
    CHECK(m->error == "");
    CHECK(m->violation == "");
  }
}

// When rogd had each worker detached, from its log's "detached worker X"
// and "reattached worker X" lines (spdlog's local time, as the test's own
// clock reads it): [from, to) per worker, `to` infinite while still
// detached.
inline std::map<std::string, std::vector<std::pair<absl::Time, absl::Time>>> DetachedIntervals(
    const std::string& log) {
  std::map<std::string, std::vector<std::pair<absl::Time, absl::Time>>> out;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    absl::Time at;
    std::string error;
    if (line.size() < 25 || line[0] != '[' ||
        !absl::ParseTime("%Y-%m-%d %H:%M:%E3S", line.substr(1, 23), absl::LocalTimeZone(), &at,
                         &error)) {
      continue;
    }
    for (const bool re : {false, true}) {
      const absl::string_view mark = re ? "] reattached worker " : "] detached worker ";
      const size_t pos = line.find(mark);
      if (pos == absl::string_view::npos) continue;
      absl::string_view rest = line.substr(pos + mark.size());
      const std::string id(rest.substr(0, rest.find(' ')));
      auto& intervals = out[id];
      if (!re) {
        intervals.emplace_back(at, absl::InfiniteFuture());
      } else if (!intervals.empty() && intervals.back().second == absl::InfiniteFuture()) {
        intervals.back().second = at;
      }
    }
  }
  return out;
}

// As RequireClean, but a start that lacked a peer's iterations while rogd
// had that peer detached is what the design allows: a detached worker no
// longer holds the team at the bound. From its reattach on nothing is
// excused: rogd reattaches a worker only once every attached peer holds
// (has acknowledged) all it computed, so a peer starting on what it knew
// before hearing of the reattach misses nothing. rogd may detach a worker
// earlier than a test means to (a loaded machine slows its link's share
// past the patience); the bound holds by rogd's own account.
inline void RequireClean(Team& team, const std::string& rogd_log) {
  const auto detached = DetachedIntervals(rogd_log);
  for (auto& m : team.members()) {
    INFO(m->id << " checked " << m->starts_checked << " starts, largest lag " << m->max_lag);
    INFO(rogd_log);
    CHECK(m->error == "");
    for (const Violation& v : m->violations) {
      bool excused = false;
      if (auto it = detached.find(v.peer); it != detached.end()) {
        for (const auto& [from, to] : it->second) {
          excused |= v.at >= from && v.at < to;
        }
      }
      INFO("at " << absl::FormatTime("%H:%M:%E3S", v.at, absl::LocalTimeZone()));
      if (!excused) CHECK(v.text == "");
    }
  }
}

// Drains the team and checks conservation against rogd's exported model.
inline void RequireConserved(Team& team, RogdProcess& rogd,
                             const std::vector<std::vector<double>>& extra = {}) {
  const std::string drained = team.Drain();
  INFO(rogd.log());
  REQUIRE(drained == "");
  absl::StatusOr<std::vector<float>> global = AdminExport(rogd.address());
  REQUIRE(global.ok());
  CHECK(team.CheckConservation(*global, extra) == "");
}

}  // namespace rog

#endif  // ROG_TEST_TESTING_TEAM_CHECKS_H_
