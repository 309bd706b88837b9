#include "test/fault/fault_model.h"

#include <vector>

#include "catch2/catch.hpp"

namespace rog {
namespace {

// global = the sum of incarnation m's iterations 1..j[m][row].
std::vector<float> Apply(const Layout& layout, const std::vector<std::vector<uint64_t>>& j) {
  std::vector<float> global(layout.total_numel(), 0), u(layout.total_numel());
  for (size_t m = 0; m < j.size(); ++m) {
    for (RowId r = 0; r < layout.num_rows(); ++r) {
      for (uint64_t k = 1; k <= j[m][r]; ++k) {
        FaultUpdate(layout, static_cast<int>(m), k, absl::MakeSpan(u));
        for (uint32_t e = 0; e < layout.row(r).numel; ++e) {
          global[layout.row(r).offset + e] += u[layout.row(r).offset + e];
        }
      }
    }
  }
  return global;
}

TEST_CASE("the fault model's check accepts prefixes and counts what was lost", "[fault]") {
  const Layout layout = FaultLayout();
  REQUIRE(layout.num_rows() == 65);
  std::vector<std::vector<uint64_t>> j(2, std::vector<uint64_t>(layout.num_rows(), 40));
  for (RowId r = 0; r < layout.num_rows(); ++r) j[1][r] = 30 + r % 3;  // killed mid-iteration
  const std::vector<float> global = Apply(layout, j);
  const std::vector<Incarnation> incs = {{"a", 0, 40, true}, {"v", 1, 33, false}};
  const ConservationReport ok = CheckFaultConservation(layout, global, incs);
  INFO(ok.problems);
  CHECK(ok.ok);
  uint64_t lost = 0;
  for (RowId r = 0; r < layout.num_rows(); ++r) lost += 33 - j[1][r];
  CHECK(ok.row_updates_lost == lost);
  CHECK(ok.summary.find("v (marker 1, killed)") != std::string::npos);
}

TEST_CASE("the fault model's check finds updates applied twice or lost", "[fault]") {
  const Layout layout = FaultLayout();
  std::vector<std::vector<uint64_t>> j(1, std::vector<uint64_t>(layout.num_rows(), 20));
  std::vector<float> global = Apply(layout, j);
  std::vector<float> u(layout.total_numel());
  SECTION("a batch of iterations 12..14 of row 3 applied twice") {
    for (uint64_t k = 12; k <= 14; ++k) {
      FaultUpdate(layout, 0, k, absl::MakeSpan(u));
      for (uint32_t e = 0; e < 128; ++e)
        global[layout.row(3).offset + e] += u[layout.row(3).offset + e];
    }
    const ConservationReport r = CheckFaultConservation(layout, global, {{"a", 0, 30, false}});
    CHECK_FALSE(r.ok);
  }
  SECTION("a finished worker's last iteration missing") {
    const ConservationReport r = CheckFaultConservation(layout, global, {{"a", 0, 21, true}});
    CHECK_FALSE(r.ok);
    CHECK(r.problems.find("lost") != std::string::npos);
  }
  SECTION("iteration 7 of row 0 missing from the middle") {
    FaultUpdate(layout, 0, 7, absl::MakeSpan(u));
    for (uint32_t e = 0; e < 128; ++e) global[e] -= u[e];
    global[0] += 1;  // the marker still says 20
    const ConservationReport r = CheckFaultConservation(layout, global, {{"a", 0, 20, true}});
    CHECK_FALSE(r.ok);
  }
}

}  // namespace
}  // namespace rog
