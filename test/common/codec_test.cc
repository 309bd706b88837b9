#include "common/codec.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "catch2/catch.hpp"

namespace rog {
namespace {

const Codec kAll[] = {Codec::kFp32, Codec::kBf16, Codec::kInt8, Codec::kSign};

std::vector<float> RandomRow(std::mt19937_64& rng, size_t n, float scale = 3.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

bool MessageHas(const absl::Status& s, const char* text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

TEST_CASE("codec names parse and print", "[codec]") {
  for (Codec c : kAll) CHECK(*ParseCodec(CodecName(c)) == c);
  auto bad = ParseCodec("fp16");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(MessageHas(bad.status(), "fp32, bf16, int8, sign"));
  CHECK(IsLossless(Codec::kFp32));
  CHECK_FALSE(IsLossless(Codec::kInt8));
}

TEST_CASE("EncodedSize is exactly what Encode writes", "[codec]") {
  const Codec c = GENERATE(Codec::kFp32, Codec::kBf16, Codec::kInt8, Codec::kSign);
  const size_t n = GENERATE(0, 1, 7, 8, 9, 1000);
  CAPTURE(CodecName(c), n);
  std::mt19937_64 rng(n);
  std::string out = "prefix";
  Encode(c, RandomRow(rng, n), &out);
  CHECK(out.size() == 6 + EncodedSize(c, n));
  CHECK(out.substr(0, 6) == "prefix");
}

TEST_CASE("fp32 round-trips bit for bit", "[codec]") {
  std::mt19937_64 rng(1);
  std::vector<float> v = RandomRow(rng, 100);
  v.push_back(-0.0f);
  v.push_back(std::numeric_limits<float>::denorm_min());
  v.push_back(std::numeric_limits<float>::max());
  v.push_back(-std::numeric_limits<float>::max());
  std::string out;
  Encode(Codec::kFp32, v, &out);
  CHECK(static_cast<unsigned char>(out[0]) == (0xFF & [&] {
          uint32_t u;
          std::memcpy(&u, &v[0], 4);
          return u;
        }()));  // little-endian
  std::vector<float> back(v.size());
  REQUIRE(Decode(Codec::kFp32, out, absl::MakeSpan(back)).ok());
  CHECK(std::memcmp(back.data(), v.data(), 4 * v.size()) == 0);
}

TEST_CASE("bf16 rounds to nearest even", "[codec]") {
  std::string out;
  Encode(Codec::kBf16, std::vector<float>{1.0f}, &out);
  CHECK(static_cast<unsigned char>(out[0]) == 0x80);
  CHECK(static_cast<unsigned char>(out[1]) == 0x3F);
  // 1 + 2^-8 lies exactly halfway between 1 and 1 + 2^-7: ties go to even (1).
  // 1 + 3×2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6... ties to 1 + 2^-6.
  std::vector<float> back(2);
  out.clear();
  Encode(Codec::kBf16, std::vector<float>{1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f}, &out);
  REQUIRE(Decode(Codec::kBf16, out, absl::MakeSpan(back)).ok());
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == 1.0f + 0x1p-6f);
  std::mt19937_64 rng(2);
  std::vector<float> v = RandomRow(rng, 1000);
  out.clear();
  Encode(Codec::kBf16, v, &out);
  std::vector<float> r(v.size());
  REQUIRE(Decode(Codec::kBf16, out, absl::MakeSpan(r)).ok());
  for (size_t i = 0; i < v.size(); ++i) CHECK(std::fabs(r[i] - v[i]) <= std::fabs(v[i]) * 0x1p-8f);
}

TEST_CASE("int8 keeps the extreme exactly and every error within half a step", "[codec]") {
  std::vector<float> v = {0.5f, -2.54f, 1.0f, 0.0f, 0.01f};
  std::string out;
  Encode(Codec::kInt8, v, &out);
  std::vector<float> r(v.size());
  REQUIRE(Decode(Codec::kInt8, out, absl::MakeSpan(r)).ok());
  const float scale = 2.54f / 127;
  CHECK(r[1] == Approx(-2.54f));
  for (size_t i = 0; i < v.size(); ++i) CHECK(std::fabs(r[i] - v[i]) <= scale / 2 * 1.0001f);
  out.clear();
  Encode(Codec::kInt8, std::vector<float>(9, 0.0f), &out);
  std::vector<float> z(9, 5.0f);
  REQUIRE(Decode(Codec::kInt8, out, absl::MakeSpan(z)).ok());
  CHECK(z == std::vector<float>(9, 0.0f));
}

TEST_CASE("sign keeps signs and the mean magnitude", "[codec]") {
  std::vector<float> v = {3, -1, 0, -4, 2, 1, -1, 5, -3};
  std::string out;
  Encode(Codec::kSign, v, &out);
  std::vector<float> r(v.size());
  REQUIRE(Decode(Codec::kSign, out, absl::MakeSpan(r)).ok());
  const float mean = 20.0f / 9;
  for (size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    CHECK(r[i] == Approx(v[i] >= 0 ? mean : -mean));
  }
}

TEST_CASE("decoders refuse malformed payloads with a reason", "[codec]") {
  std::vector<float> out(9);
  SECTION("wrong sizes") {
    for (Codec c : kAll) {
      CAPTURE(CodecName(c));
      std::string ok;
      Encode(c, std::vector<float>(9, 1.0f), &ok);
      absl::Status shorter = Decode(c, ok.substr(0, ok.size() - 1), absl::MakeSpan(out));
      CHECK(shorter.code() == absl::StatusCode::kInvalidArgument);
      CHECK(MessageHas(shorter, "must be"));
      CHECK_FALSE(Decode(c, ok + "x", absl::MakeSpan(out)).ok());
      CHECK_FALSE(Decode(c, "", absl::MakeSpan(out)).ok());
      CHECK(Decode(c, ok, absl::MakeSpan(out)).ok());
    }
  }
  SECTION("non-finite elements") {
    std::string p;
    Encode(Codec::kFp32, std::vector<float>(9, 1.0f), &p);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&p[4 * 3], &nan, 4);
    absl::Status s = Decode(Codec::kFp32, p, absl::MakeSpan(out));
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(MessageHas(s, "element 3"));
    std::string b(18, '\0');
    b[11] = static_cast<char>(0x7F);  // element 5: 0x7F80 = +Inf
    b[10] = static_cast<char>(0x80);
    CHECK(MessageHas(Decode(Codec::kBf16, b, absl::MakeSpan(out)), "element 5"));
  }
  SECTION("bad scales") {
    for (float scale :
         {std::numeric_limits<float>::infinity(), -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
      for (Codec c : {Codec::kInt8, Codec::kSign}) {
        CAPTURE(CodecName(c), scale);
        std::string p(EncodedSize(c, 9), '\0');
        std::memcpy(&p[0], &scale, 4);
        CHECK(MessageHas(Decode(c, p, absl::MakeSpan(out)), "scale"));
      }
    }
    // Finite, but q × scale would overflow to Inf.
    const float huge = std::numeric_limits<float>::max() / 2;
    std::string p(EncodedSize(Codec::kInt8, 9), static_cast<char>(0x80));
    std::memcpy(&p[0], &huge, 4);
    CHECK(MessageHas(Decode(Codec::kInt8, p, absl::MakeSpan(out)), "scale"));
  }
  SECTION("sign padding bits") {
    std::string p(EncodedSize(Codec::kSign, 9), '\0');
    p[5] = 0x02;  // bit 9 of a 9-element row
    CHECK(MessageHas(Decode(Codec::kSign, p, absl::MakeSpan(out)), "padding"));
  }
}

TEST_CASE("random garbage never crashes a decoder", "[codec]") {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 5000; ++i) {
    const Codec c = kAll[rng() % 4];
    const size_t n = rng() % 40;
    std::string bytes(rng() % 2 ? EncodedSize(c, n) : rng() % 200, '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    std::vector<float> out(n);
    const absl::Status s = Decode(c, bytes, absl::MakeSpan(out));
    if (s.ok()) {
      for (float x : out) CHECK(std::isfinite(x));
    }
  }
}

TEST_CASE("error feedback keeps exactly what the receiver did not get", "[codec]") {
  const Codec c = GENERATE(Codec::kFp32, Codec::kBf16, Codec::kInt8, Codec::kSign);
  CAPTURE(CodecName(c));
  std::mt19937_64 rng(5);
  const std::vector<float> original = RandomRow(rng, 64);
  std::vector<float> residual = original;
  std::vector<float> decoded(64);
  std::string out;
  EncodeWithFeedback(c, absl::MakeSpan(residual), &out, absl::MakeSpan(decoded));
  std::vector<float> check(64);
  REQUIRE(Decode(c, out, absl::MakeSpan(check)).ok());
  CHECK(check == decoded);
  for (size_t i = 0; i < 64; ++i) {
    CHECK(residual[i] == original[i] - decoded[i]);
    if (c == Codec::kFp32) CHECK(residual[i] == 0.0f);
  }
}

TEST_CASE("the largest finite values encode to payloads every receiver decodes", "[codec]") {
  // rogd folds any finite push, so a row may hold values up to FLT_MAX;
  // bf16 once rounded them to Inf and int8's scale once passed what Decode
  // accepts, and every receiver then refused the batch.
  const Codec c = GENERATE(Codec::kFp32, Codec::kBf16, Codec::kInt8, Codec::kSign);
  CAPTURE(CodecName(c));
  const float max = std::numeric_limits<float>::max();
  const std::vector<std::vector<float>> rows = {
      {max, -max, 1.0f, -0.5f},
      {3.3961e38f, -3.3961e38f, 3.39e38f, 0.0f},
      {3.38e38f, 1e-3f, -3.377e38f, 2.0f},
      {0.0f, 0.0f, 0.0f, 0.0f},
  };
  for (const std::vector<float>& original : rows) {
    CAPTURE(original);
    std::string out;
    Encode(c, original, &out);
    std::vector<float> plain(original.size());
    REQUIRE(Decode(c, out, absl::MakeSpan(plain)).ok());
    std::vector<float> residual = original;
    std::vector<float> decoded(original.size());
    std::string fed;
    EncodeWithFeedback(c, absl::MakeSpan(residual), &fed, absl::MakeSpan(decoded));
    CHECK(fed == out);
    CHECK(decoded == plain);
    for (size_t i = 0; i < original.size(); ++i) {
      CAPTURE(i);
      CHECK(std::isfinite(decoded[i]));
      CHECK(std::isfinite(residual[i]));
      // Nothing lost: what went plus what stays is the value, in double
      // (their float sum may round), up to the one rounding of the
      // residual's float subtraction (residual = original - decoded,
      // rounded to nearest: half an ulp, at most 2^-24 of |original -
      // decoded|, 2^-150 where that is subnormal). That error can be
      // large for a small value: the sign codec sends 1.0 as half of
      // FLT_MAX here, and its residual, about -FLT_MAX / 2, cannot hold
      // the 1.0 (its ulp there is 2^103 and more). 2^-52 of |original| covers the double
      // sum's own rounding and the double difference below.
      const double o = original[i], d = decoded[i], r = residual[i];
      CAPTURE(o, d, r, d + r - o);
      CHECK(std::fabs(d + r - o) <= 0x1p-24 * std::fabs(o - d) + 0x1p-52 * std::fabs(o) + 0x1p-150);
      // Saturation keeps the sign and carries most of the value.
      if (c != Codec::kSign && std::fabs(original[i]) > 1e38f) {
        CHECK(decoded[i] / original[i] > 0.99f);
      }
    }
  }
}

TEST_CASE("repeated feedback rounds drive the residual down", "[codec]") {
  auto norm = [](const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += double{x} * x;
    return std::sqrt(s);
  };
  const Codec c = GENERATE(Codec::kBf16, Codec::kInt8, Codec::kSign);
  CAPTURE(CodecName(c));
  std::mt19937_64 rng(6);
  std::vector<float> residual = RandomRow(rng, 64);
  const double start = norm(residual);
  double prev = start;
  for (int round = 0; round < 300; ++round) {
    std::string out;
    EncodeWithFeedback(c, absl::MakeSpan(residual), &out);
    const double now = norm(residual);
    CHECK(now <= prev * (1 + 1e-6));
    prev = now;
  }
  CAPTURE(start, prev);
  if (c == Codec::kSign) {
    CHECK(prev < start / 10);
  } else {
    CHECK(prev < start * 1e-5);
  }
}

}  // namespace
}  // namespace rog
