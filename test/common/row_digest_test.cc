#include "common/row_digest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "catch2/catch.hpp"

namespace rog {
namespace {

// `n` rows of 2 values, row r holding r and -r.
Layout Rows(uint32_t n) { return *Layout::Create({{"w", {n, 2}}}, /*min_split_numel=*/2); }
std::vector<float> Values(const Layout& layout) {
  std::vector<float> v(layout.total_numel());
  for (size_t j = 0; j < v.size(); ++j) v[j] = (j % 2 ? -1.0f : 1.0f) * static_cast<float>(j / 2);
  return v;
}

TEST_CASE("digests are of the bits, the same on every machine", "[row_digest]") {
  const std::vector<float> a = {1.0f, -2.5f, 3.0f};
  // Pinned (and computed apart, from the description in row_digest.cc): a
  // digest that changed between SDK and rogd versions would make every
  // robot download the whole model again.
  CHECK(ValuesDigest(a) == 0xd5ff9ef271a8d744ULL);
  std::vector<float> b = a;
  b[2] = std::nextafter(b[2], 4.0f);  // one bit
  CHECK(ValuesDigest(b) != ValuesDigest(a));
  CHECK(ValuesDigest(std::vector<float>{0.0f}) != ValuesDigest(std::vector<float>{-0.0f}));
  // The length counts: zeros are not fewer zeros.
  CHECK(ValuesDigest(std::vector<float>(4, 0.0f)) != ValuesDigest(std::vector<float>(3, 0.0f)));
  CHECK(ValuesDigest({}) != 0);
}

TEST_CASE("a hello's digests stay at most 64 whatever the model", "[row_digest]") {
  CHECK(RowDigestGroupRows(1) == 1);
  CHECK(RowDigestGroups(1) == 1);
  CHECK(RowDigestGroupRows(64) == 1);
  CHECK(RowDigestGroups(64) == 64);
  CHECK(RowDigestGroupRows(65) == 2);
  CHECK(RowDigestGroups(65) == 33);
  CHECK(RowDigestGroupRows(1568) == 25);  // the ConvMLP: 63 groups, 504 bytes
  CHECK(RowDigestGroups(1568) == 63);
  CHECK(RowDigestGroups(size_t{1} << 20) == 64);
  const Layout layout = Rows(1568);
  CHECK(RowDigests(layout, Values(layout), std::vector<bool>(1568, false)).size() == 63 * 8);
}

TEST_CASE("rows are in sync by group: a changed or withheld row's group is sent whole",
          "[row_digest]") {
  const Layout layout = Rows(130);  // groups of 3 rows: 44 groups, the last of 1
  REQUIRE(RowDigestGroupRows(130) == 3);
  const std::vector<float> model = Values(layout);
  const std::vector<bool> none(130, false);

  auto empty = RowsInSync(layout, model, "");
  REQUIRE(empty.ok());
  CHECK(*empty == std::vector<bool>(130, false));

  auto all = RowsInSync(layout, model, RowDigests(layout, model, none));
  REQUIRE(all.ok());
  CHECK(*all == std::vector<bool>(130, true));

  // Row 4 changed (group 1: rows 3-5), row 129 withheld (group 43, alone).
  std::vector<float> mine = model;
  mine[layout.row(4).offset] += 1;
  std::vector<bool> withheld = none;
  withheld[129] = true;
  auto some = RowsInSync(layout, model, RowDigests(layout, mine, withheld));
  REQUIRE(some.ok());
  std::vector<bool> want(130, true);
  want[3] = want[4] = want[5] = want[129] = false;
  CHECK(*some == want);
}

TEST_CASE("row digests of the wrong size are refused, saying what fits", "[row_digest][hostile]") {
  const Layout layout = Rows(2);
  const std::vector<float> model(4, 0.0f);
  for (size_t bytes : {1, 8, 15, 17, 24}) {
    auto r = RowsInSync(layout, model, std::string(bytes, '\x01'));
    REQUIRE_FALSE(r.ok());
    CHECK(std::string(r.status().message()).find("needs 16 (8 per group of 1 rows") !=
          std::string::npos);
  }
}

// A file of the repository, from the test's runfiles.
std::string RepoFile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  REQUIRE(srcdir != nullptr);
  std::ifstream in(absl::StrCat(srcdir, "/", workspace, "/", path));
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The line of `text` that starts with `key`, less the key.
std::string Field(const std::string& text, const std::string& key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, key)) return std::string(line);
  }
  FAIL("no line starting with '" << key << "'");
  return "";
}

std::string Hex(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(bytes[i]));
    absl::StrAppend(&out, i > 0 && i % 8 == 0 ? " " : "", b);
  }
  return out;
}

// docs/protocol.md "Row digests" gives a worked example, and proto/rog.proto
// the same one: both are read here and checked against this
// implementation, so that neither can drift from the code.
TEST_CASE("the worked example of docs/protocol.md and rog.proto is what the code computes",
          "[row_digest][docs]") {
  const std::string doc = RepoFile("docs/protocol.md");
  const size_t at = doc.find("<!-- not output: the row digest worked example");
  REQUIRE(at != std::string::npos);
  const std::string block = doc.substr(at, doc.find("```\n", doc.find("```text", at) + 7) - at);
  REQUIRE(Field(block, "tensors: ") == "w [3, 2], b [2]; min_split_numel 4");
  const Layout layout = *Layout::Create({{"w", {3, 2}}, {"b", {2}}}, /*min_split_numel=*/4);
  REQUIRE(layout.num_rows() == 4);
  std::vector<float> values;
  const std::string listed = Field(block, "values: ");
  for (absl::string_view v : absl::StrSplit(listed, ' ')) {
    float f = 0;
    REQUIRE(absl::SimpleAtof(v, &f));
    values.push_back(f);
  }
  REQUIRE(values.size() == layout.total_numel());
  CHECK(std::signbit(values[5]));  // -0.0 is not 0.0
  const std::string digests = Hex(RowDigests(layout, values, std::vector<bool>(4, false)));
  CHECK(Field(block, "row_digests: ") == digests);
  // Each group's digest as the docs' prose gives it.
  for (RowId r = 0; r < 4; ++r) {
    const uint64_t d = ValuesDigest(absl::MakeConstSpan(values).subspan(r * 2, 2));
    char hex[19];
    std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(d));
    INFO(hex);
    CHECK(absl::StrContains(doc, hex));
  }
  // The proto's comment: the same values and bytes, "//" and line breaks
  // aside.
  std::string proto;
  for (absl::string_view line : absl::StrSplit(RepoFile("proto/rog.proto"), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "//"))
      absl::StrAppend(&proto, absl::StripAsciiWhitespace(line), " ");
  }
  CHECK(absl::StrContains(proto, "tensors w [3, 2] and b [2], min_split_numel 4"));
  CHECK(absl::StrContains(proto, absl::StrCat("values ", listed, " give")));
  CHECK(absl::StrContains(proto, absl::StrCat("row_digests (hex) ", digests)));
}

}  // namespace
}  // namespace rog
