#include "common/row_index.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("row ids round-trip through delta coding", "[row_index]") {
  const std::vector<RowId> rows = {0, 1, 5, 6, 100, 4000};
  std::vector<uint32_t> deltas = EncodeRowIds(rows);
  CHECK(deltas == std::vector<uint32_t>{0, 1, 4, 1, 94, 3900});
  auto back = DecodeRowIds(deltas, 4001);
  REQUIRE(back.ok());
  CHECK(*back == rows);
}

TEST_CASE("untrusted row indexes are refused, never trusted", "[row_index]") {
  SECTION("repeat") {
    auto r = DecodeRowIds(std::vector<uint32_t>{3, 0}, 10);
    REQUIRE_FALSE(r.ok());
    CHECK(std::string(r.status().message()).find("strictly ascending") != std::string::npos);
  }
  SECTION("out of range") {
    auto r = DecodeRowIds(std::vector<uint32_t>{3, 7}, 10);
    REQUIRE_FALSE(r.ok());
    CHECK(std::string(r.status().message()).find("model has 10 rows") != std::string::npos);
  }
  SECTION("overflow") {
    CHECK_FALSE(DecodeRowIds(std::vector<uint32_t>{0xFFFFFFFFu, 0xFFFFFFFFu}, 10).ok());
  }
  SECTION("empty is fine") { CHECK(DecodeRowIds({}, 0).ok()); }
}

TEST_CASE("index bytes stay under 1% of fp32 payload for rows of 128 elements", "[row_index]") {
  std::vector<RowId> rows(100);
  std::iota(rows.begin(), rows.end(), 1000);
  std::vector<uint32_t> counts(100, 3);
  std::vector<uint64_t> lags(100, 2);
  const size_t index = IndexBytes(rows, counts, lags);
  const size_t payload = 100 * 128 * 4;
  CAPTURE(index);
  CHECK(index < payload / 100);
  CHECK(VarintSize(0) == 1);
  CHECK(VarintSize(127) == 1);
  CHECK(VarintSize(128) == 2);
  CHECK(VarintSize(~0ull) == 10);
}

}  // namespace
}  // namespace rog
