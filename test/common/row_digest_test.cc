#include "common/row_digest.h"

#include <cmath>
#include <vector>

#include "catch2/catch.hpp"

namespace rog {
namespace {

Layout TwoRows() { return *Layout::Create({{"w", {2, 3}}}, /*min_split_numel=*/3); }

TEST_CASE("row digests are of the bits, the same on every machine", "[row_digest]") {
  const std::vector<float> a = {1.0f, -2.5f, 3.0f};
  // Pinned (and computed apart, from the description in row_digest.cc): a
  // digest that changed between SDK and rogd versions would make every
  // robot download the whole model again.
  CHECK(RowDigest(a) == 0xd5ff9ef271a8d744ULL);
  CHECK(RowDigest(a) == RowDigest(std::vector<float>(a)));
  std::vector<float> b = a;
  b[2] = std::nextafter(b[2], 4.0f);  // one bit
  CHECK(RowDigest(b) != RowDigest(a));
  CHECK(RowDigest(std::vector<float>{0.0f}) != RowDigest(std::vector<float>{-0.0f}));
  // The length counts: a row of zeros is not a shorter row of zeros.
  CHECK(RowDigest(std::vector<float>(4, 0.0f)) != RowDigest(std::vector<float>(3, 0.0f)));
  CHECK(RowDigest({}) != 0);
}

TEST_CASE("rows in sync are those whose digest matches; 0 offers none", "[row_digest]") {
  const Layout layout = TwoRows();
  const std::vector<float> model = {1, 2, 3, 4, 5, 6};
  const uint64_t row0 = RowDigest(absl::MakeConstSpan(model).subspan(0, 3));
  const uint64_t row1 = RowDigest(absl::MakeConstSpan(model).subspan(3, 3));

  auto none = RowsInSync(layout, model, "");
  REQUIRE(none.ok());
  CHECK(*none == std::vector<bool>{false, false});

  auto both = RowsInSync(layout, model, PackRowDigests({row0, row1}));
  REQUIRE(both.ok());
  CHECK(*both == std::vector<bool>{true, true});

  auto first = RowsInSync(layout, model, PackRowDigests({row0, 0}));
  REQUIRE(first.ok());
  CHECK(*first == std::vector<bool>{true, false});

  // Swapped rows hold other values: neither matches.
  auto swapped = RowsInSync(layout, model, PackRowDigests({row1, row0}));
  REQUIRE(swapped.ok());
  CHECK(*swapped == std::vector<bool>{false, false});
}

TEST_CASE("row digests of the wrong size are refused, saying what fits", "[row_digest][hostile]") {
  const Layout layout = TwoRows();
  const std::vector<float> model(6, 0.0f);
  for (size_t bytes : {1, 8, 15, 17, 24}) {
    auto r = RowsInSync(layout, model, std::string(bytes, '\x01'));
    REQUIRE_FALSE(r.ok());
    CHECK(std::string(r.status().message()).find("needs 16 (8 per row") != std::string::npos);
  }
}

}  // namespace
}  // namespace rog
