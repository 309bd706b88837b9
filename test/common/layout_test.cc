#include "common/layout.h"

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("tensors with >= 2 dims and >= min_split_numel elements split along dim 0", "[layout]") {
  absl::StatusOr<Layout> l = Layout::Create({{"w", {32, 64}},         // 2048: split
                                             {"b", {2048}},           // 1-D: one row
                                             {"small", {4, 8}},       // 32 < 1024: one row
                                             {"edge", {2, 512}},      // exactly 1024: split
                                             {"conv", {8, 4, 3, 3}},  // 288: one row
                                             {"s", {}}});             // scalar: one row
  REQUIRE(l.ok());
  CHECK(l->num_rows() == 32 + 1 + 1 + 2 + 1 + 1);
  CHECK(l->tensor_rows(0) == 32);
  CHECK(l->tensor_rows(1) == 1);
  CHECK(l->tensor_rows(2) == 1);
  CHECK(l->tensor_rows(3) == 2);
  CHECK(l->tensor_rows(4) == 1);
  CHECK(l->tensor_rows(5) == 1);
  CHECK(l->row(0).numel == 64);
  CHECK(l->row(32).numel == 2048);
  CHECK(l->row(33).numel == 32);
  CHECK(l->row(34).numel == 512);
  CHECK(l->row(36).numel == 288);
  CHECK(l->row(37).numel == 1);
  CHECK(l->total_numel() == 2048 + 2048 + 32 + 1024 + 288 + 1);
}

TEST_CASE("rows tile the flattened model contiguously in tensor order", "[layout]") {
  absl::StatusOr<Layout> l = Layout::Create({{"a", {10, 200}}, {"b", {7}}, {"c", {3, 400}}}, 1000);
  REQUIRE(l.ok());
  uint64_t offset = 0;
  for (RowId r = 0; r < l->num_rows(); ++r) {
    CAPTURE(r);
    CHECK(l->row(r).offset == offset);
    offset += l->row(r).numel;
  }
  CHECK(offset == l->total_numel());
  CHECK(l->tensor_first_row(2) == 11);
  CHECK(l->row(12).tensor == 2);
  CHECK(l->row(12).index_in_tensor == 1);
  CHECK(l->RowName(12) == "c[1]");
  CHECK(l->RowName(10) == "b");
}

TEST_CASE("the fingerprint changes with names, shapes, order and min_split_numel", "[layout]") {
  auto fp = [](std::vector<TensorSpec> t, uint64_t m = 1024) {
    absl::StatusOr<Layout> l = Layout::Create(std::move(t), m);
    REQUIRE(l.ok());
    return l->fingerprint();
  };
  const uint64_t base = fp({{"a", {4, 4}}, {"b", {3}}});
  CHECK(base == fp({{"a", {4, 4}}, {"b", {3}}}));
  CHECK(base != fp({{"a", {4, 4}}, {"c", {3}}}));
  CHECK(base != fp({{"a", {4, 4}}, {"b", {4}}}));
  CHECK(base != fp({{"a", {16}}, {"b", {3}}}));
  CHECK(base != fp({{"b", {3}}, {"a", {4, 4}}}));
  CHECK(base != fp({{"a", {4, 4}}, {"b", {3}}}, 8));
  // Pinned so that a change of the hash (which would refuse every existing
  // checkpoint and worker) cannot slip in unnoticed: FNV-1a 64 over
  // min_split_numel (1024), the tensor count (1), then per tensor its
  // name's length and bytes ("w"), its rank (2) and dimensions (2, 3),
  // every integer as 8 little-endian bytes. Worked out by hand from that
  // definition (a Python one-liner) and equal to what Layout computes; it
  // depends on neither the host's byte order nor its word size.
  CHECK(fp({{"w", {2, 3}}}) == 0x6fee0b6b75d7edebull);
}

TEST_CASE("invalid layouts are refused with a message naming the tensor", "[layout]") {
  SECTION("no tensors") {
    auto l = Layout::Create({});
    REQUIRE_FALSE(l.ok());
    CHECK(l.status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("duplicate name") {
    auto l = Layout::Create({{"x", {2}}, {"x", {3}}});
    REQUIRE_FALSE(l.ok());
    CHECK(std::string(l.status().message()).find("'x' appears twice") != std::string::npos);
  }
  SECTION("zero dimension") {
    auto l = Layout::Create({{"bad", {4, 0}}});
    REQUIRE_FALSE(l.ok());
    CHECK(std::string(l.status().message()).find("bad") != std::string::npos);
  }
  SECTION("empty name") { CHECK_FALSE(Layout::Create({{"", {2}}}).ok()); }
  SECTION("min_split_numel 0") { CHECK_FALSE(Layout::Create({{"a", {2}}}, 0).ok()); }
  SECTION("absurd size") {
    CHECK_FALSE(Layout::Create({{"huge", {1 << 30, 1 << 30, 1 << 30}}}).ok());
  }
}

TEST_CASE("limits are checked before the row table is built", "[layout]") {
  LayoutLimits limits;
  limits.max_model_bytes = 1 << 20;
  limits.max_rows = 100;
  SECTION("a model over max_model_bytes") {
    auto l = Layout::Create({{"a", {16}}, {"big", {50, 8192}}}, 1024, limits);
    REQUIRE_FALSE(l.ok());
    CHECK(l.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK(std::string(l.status().message()).find("'big' of shape [50, 8192]") != std::string::npos);
    CHECK(std::string(l.status().message()).find("1048576") != std::string::npos);
  }
  SECTION("more rows than max_rows, in one tensor or many") {
    auto l = Layout::Create({{"w", {101, 16}}}, 16, limits);
    REQUIRE_FALSE(l.ok());
    CHECK(l.status().code() == absl::StatusCode::kResourceExhausted);
    std::vector<TensorSpec> many;
    for (int k = 0; k < 101; ++k) many.push_back({"t" + std::to_string(k), {}});
    l = Layout::Create(many, 1024, limits);
    REQUIRE_FALSE(l.ok());
    CHECK(l.status().code() == absl::StatusCode::kResourceExhausted);
  }
  SECTION("exactly at the limits") {
    auto l = Layout::Create({{"w", {100, 2621}}}, 16, limits);  // 100 rows, 1,048,400 bytes
    REQUIRE(l.ok());
    CHECK(l->num_rows() == 100);
  }
  SECTION("2^24 rows of 2^30 elements: within the hard limits, over any rogd limit") {
    CHECK(Layout::Create({{"huge", {1 << 24, 1 << 30}}}, 1024, limits).status().code() ==
          absl::StatusCode::kResourceExhausted);
  }
}

TEST_CASE("FindTensor finds by name and explains a miss", "[layout]") {
  auto l = Layout::Create({{"fc.weight", {4, 4}}, {"fc.bias", {4}}});
  REQUIRE(l.ok());
  CHECK(*l->FindTensor("fc.bias") == 1);
  auto miss = l->FindTensor("conv");
  REQUIRE_FALSE(miss.ok());
  CHECK(miss.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(miss.status().message()).find("fc.weight") != std::string::npos);
}

TEST_CASE("DescribeLayoutDifference names the first differing tensor", "[layout]") {
  auto ours = Layout::Create({{"conv.weight", {8, 1, 5, 5}}, {"fc.weight", {64, 256}}});
  auto shape = Layout::Create({{"conv.weight", {8, 1, 5, 5}}, {"fc.weight", {16, 256}}});
  auto extra =
      Layout::Create({{"conv.weight", {8, 1, 5, 5}}, {"fc.weight", {64, 256}}, {"fc.bias", {64}}});
  auto split = Layout::Create({{"conv.weight", {8, 1, 5, 5}}, {"fc.weight", {64, 256}}}, 1);
  REQUIRE((ours.ok() && shape.ok() && extra.ok() && split.ok()));
  CHECK(DescribeLayoutDifference(*ours, *ours, "a", "b").empty());
  CHECK(DescribeLayoutDifference(*shape, *ours, "the worker's", "rogd's") ==
        "tensor 1 is 'fc.weight' [16, 256] in the worker's but 'fc.weight' [64, 256] in rogd's");
  CHECK(DescribeLayoutDifference(*extra, *ours, "the worker's", "rogd's") ==
        "the worker's has 3 tensors and rogd's 2; the first extra one is 'fc.bias' [64] in "
        "the worker's");
  CHECK(DescribeLayoutDifference(*ours, *extra, "the worker's", "rogd's") ==
        "the worker's has 2 tensors and rogd's 3; the first extra one is 'fc.bias' [64] in "
        "rogd's");
  CHECK(DescribeLayoutDifference(*split, *ours, "x", "y").find("min_split_numel is 1 in x") !=
        std::string::npos);
}

}  // namespace
}  // namespace rog
