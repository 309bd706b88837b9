// What engine_test and contract_engine_test share: the options they start
// the engine with and a harness whose first worker brought the model.
#ifndef ROG_TEST_SERVER_ENGINE_FIXTURES_H_
#define ROG_TEST_SERVER_ENGINE_FIXTURES_H_

#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "test/testing/engine_testing.h"

namespace rog {

// `policy` with S = 2 and a team of `team`.
inline EngineOptions Options(SyncPolicy policy = SyncPolicy::kSsp, size_t team = 1) {
  EngineOptions o;
  o.policy = policy;
  o.staleness = 2;
  o.team_size = team;
  return o;
}

inline std::vector<float> Ones(const Layout& layout) {
  return std::vector<float>(layout.total_numel(), 1);
}

// A harness whose first worker "a" brought the model (all ones) and is at
// clock 0.
struct WithModel {
  explicit WithModel(EngineOptions options = Options(), Layout layout = SmallLayout())
      : h(options, std::move(layout)) {
    a = *h.Hello(h.MakeHello("a"));
    h.SendValues(a, Ones(h.layout()));
    h.Settle();
    h.Account(a);
    REQUIRE(h.engine().Status().has_model());
  }
  EngineHarness h;
  EngineHarness::Stream a;
};

}  // namespace rog

#endif  // ROG_TEST_SERVER_ENGINE_FIXTURES_H_
