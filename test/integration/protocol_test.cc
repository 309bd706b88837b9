// rogd and rog::Worker end to end: real rogd processes on loopback, several
// workers each, every policy, team changes, faults and restarts. Each test
// is bounded: workers give up after 60 s, rogd is killed with the test.
#include <signal.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "test/integration/rogd_harness.h"
#include "test/integration/team.h"

namespace rog {
namespace {

void RequireClean(Team& team) {
  for (auto& m : team.members()) {
    INFO(m->id << " checked " << m->starts_checked << " starts, largest lag " << m->max_lag);
    CHECK(m->error == "");
    CHECK(m->violation == "");
  }
}

// Drains the team and checks conservation against rogd's exported model.
void RequireConserved(Team& team, RogdProcess& rogd,
                      const std::vector<std::vector<double>>& extra = {}) {
  const std::string drained = team.Drain();
  INFO(rogd.log());
  REQUIRE(drained == "");
  absl::StatusOr<std::vector<float>> global = AdminExport(rogd.address());
  REQUIRE(global.ok());
  CHECK(team.CheckConservation(*global, extra) == "");
}

TEST_CASE("every policy trains a team with the bound held and updates conserved", "[protocol]") {
  struct Case {
    const char* sync;
    uint32_t staleness;
    uint32_t bound;
  };
  for (const Case& c : {Case{"bsp", 1, 0}, Case{"ssp", 2, 2}, Case{"rog", 2, 2}}) {
    SECTION(c.sync) {
      auto rogd = RogdProcess::Start(
          {absl::StrCat("--sync=", c.sync), absl::StrCat("--staleness=", c.staleness),
           "--workers=3"});
      REQUIRE(rogd.ok());
      Team team((*rogd)->address(), c.bound);
      for (int i = 0; i < 3; ++i) team.Add(absl::StrCat("w", i), i);
      // Different compute times, so that the workers drift apart.
      for (int i = 0; i < 3; ++i) team.Train(*team.members()[i], 25, 1 + 3 * i);
      team.JoinAll();
      RequireClean(team);
      for (auto& m : team.members()) CHECK(m->worker->clock() == 25);
      RequireConserved(team, **rogd);
      auto status = AdminStatus((*rogd)->address());
      REQUIRE(status.ok());
      CHECK(status->workers_connected() == 3);
      CHECK(status->rejected().empty());
    }
  }
}

}  // namespace
}  // namespace rog
