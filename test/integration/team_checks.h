// Catch2 checks every integration test with a Team makes at its end.
#ifndef ROG_TEST_INTEGRATION_TEAM_CHECKS_H_
#define ROG_TEST_INTEGRATION_TEAM_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "catch2/catch.hpp"
#include "test/integration/rogd_harness.h"
#include "test/integration/team.h"

namespace rog {

// No member's training loop failed and none saw the staleness bound broken.
inline void RequireClean(Team& team) {
  for (auto& m : team.members()) {
    INFO(m->id << " checked " << m->starts_checked << " starts, largest lag " << m->max_lag);
    CHECK(m->error == "");
    CHECK(m->violation == "");
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

#endif  // ROG_TEST_INTEGRATION_TEAM_CHECKS_H_
