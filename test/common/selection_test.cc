#include "common/selection.h"

#include <cmath>
#include <limits>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("mandatory rows come first, then rows by importance, ties by row id", "[selection]") {
  std::vector<RowCandidate> c = {{0, false, 1.0, 100}, {1, true, 0.0, 100}, {2, false, 5.0, 100},
                                 {3, false, 1.0, 100}, {4, true, 9.0, 100}, {5, false, 0.0, 100}};
  Selection s = SelectRows(c, 0.5, 600);
  std::vector<RowId> order;
  for (const auto& x : s.order) order.push_back(x.row);
  CHECK(order == std::vector<RowId>{1, 4, 2, 0, 3, 5});
  CHECK(s.mandatory == 2);
  // MTA share: 300 of 600 bytes; the two mandatory rows count towards it.
  CHECK(s.mta_end == 3);
  CHECK(s.mta_bytes == 300);
}

TEST_CASE("the MTA share holds every mandatory row even beyond the fraction", "[selection]") {
  std::vector<RowCandidate> c = {{0, true, 0, 400}, {1, true, 0, 400}, {2, false, 1, 100}};
  Selection s = SelectRows(c, 0.1, 1000);
  CHECK(s.mandatory == 2);
  CHECK(s.mta_end == 2);
}

TEST_CASE("importance is urgency times magnitude", "[selection]") {
  CHECK(Importance(3, 0.5) == 1.5);
  CHECK(Importance(0, 7.0) == 0);
  const std::vector<float> row = {1, -3, 0, 4};
  CHECK(MeanAbs(row) == 2.0);
  CHECK(MeanAbs({}) == 0.0);
}

TEST_CASE("rows one iteration from violating the bound are mandatory", "[selection]") {
  // Uplink, S = 3: a row unpushed for 3 iterations would be 4 behind next time.
  CHECK_FALSE(UplinkMandatory(2, 3));
  CHECK(UplinkMandatory(3, 3));
  CHECK(UplinkMandatory(1, 0));  // BSP: everything
  CHECK_FALSE(UplinkMandatory(0, 0));
  // Downlink, worker at clock 10, S = 3: needs 7 now and 8 at the next start.
  CHECK(DownlinkMandatory(7, 10, 3));
  CHECK_FALSE(DownlinkMandatory(8, 10, 3));
  CHECK(DownlinkMandatory(10, 10, 0));
}

}  // namespace
}  // namespace rog
