#include "common/mta.h"

#include <cmath>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("MTA matches the paper's table to two decimals", "[mta]") {
  auto [s, expected] = GENERATE(table<uint32_t, double>(
      {{2, 0.50}, {3, 0.38}, {4, 0.32}, {5, 0.28}, {6, 0.25}, {7, 0.22}, {8, 0.20}}));
  CAPTURE(s);
  CHECK(std::round(MinimumTransmissionAmount(s) * 100) / 100 == Approx(expected));
}

TEST_CASE("MTA special cases: S=0 sends everything, S=1 half", "[mta]") {
  CHECK(MinimumTransmissionAmount(0) == 1.0);
  CHECK(MinimumTransmissionAmount(1) == 0.5);
  CHECK(MinimumTransmissionAmount(3) == Approx((3 - std::sqrt(5.0)) / 2).epsilon(1e-12));
}

TEST_CASE("MTA solves (1-P)^(S-1) = P and falls with S up to 10,000", "[mta]") {
  double prev = 1.0;
  for (uint32_t s = 2; s <= 10000; s += (s < 100 ? 1 : 97)) {
    CAPTURE(s);
    const double p = MinimumTransmissionAmount(s);
    REQUIRE(std::isfinite(p));
    CHECK(p > 0);
    CHECK(p < 1);
    CHECK(p <= prev);
    CHECK(std::pow(1 - p, s - 1) == Approx(p).epsilon(1e-9));
    prev = p;
  }
  CHECK(MinimumTransmissionAmount(10000) > 0);
  CHECK(MinimumTransmissionAmount(0xFFFFFFFFu) > 0);
}

}  // namespace
}  // namespace rog
