#include "common/trace.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("traces parse the shared format and loop", "[trace]") {
  auto t = Trace::Parse("# seconds\tmbit_per_s\n0.000\t8\n1.000\t16\n\n2.000\t0\n", "t");
  REQUIRE(t.ok());
  CHECK(t->samples() == 3);
  CHECK(t->period() == Approx(3.0));  // last value held for the mean interval
  CHECK(t->MbitAt(0.5) == 8);
  CHECK(t->MbitAt(1.0) == 16);
  CHECK(t->MbitAt(2.5) == 0);
  CHECK(t->MbitAt(3.5) == 8);                        // looped
  CHECK(t->BytesBetween(0, 3, 1.0) == Approx(3e6));  // (8 + 16) Mbit
  CHECK(t->BytesBetween(0, 6, 0.5) == Approx(3e6));
  CHECK(t->mean_mbit() == Approx(8.0));
}

TEST_CASE("the next sample starts where the file says, looped", "[trace]") {
  auto t = Trace::Parse("0\t8\n1\t16\n2\t0\n", "t");  // period 3
  REQUIRE(t.ok());
  CHECK(t->NextChange(0) == Approx(1.0));
  CHECK(t->NextChange(0.5) == Approx(1.0));
  CHECK(t->NextChange(1.0) == Approx(2.0));
  CHECK(t->NextChange(2.5) == Approx(3.0));
  CHECK(t->NextChange(3.2) == Approx(4.0));  // second period
  CHECK(Trace::Constant(5).NextChange(0.25) == Approx(1.0));
}

TEST_CASE("bad trace text is refused with the line and the reason", "[trace]") {
  auto msg = [](const char* text) {
    auto t = Trace::Parse(text, "f.tsv");
    REQUIRE_FALSE(t.ok());
    return std::string(t.status().message());
  };
  CHECK(msg("0\t1\nx\t2\n").find("f.tsv:2") != std::string::npos);
  CHECK(msg("0\t1\n0\t2\n").find("rise strictly") != std::string::npos);
  CHECK(msg("1\t1\n").find("start at 0") != std::string::npos);
  CHECK(msg("0\t-1\n").find(">= 0") != std::string::npos);
  CHECK(msg("0\t0\n1\t0\n").find("every rate is 0") != std::string::npos);
  CHECK(msg("# nothing\n").find("no samples") != std::string::npos);
}

TEST_CASE("a transfer ends when the link has carried its bytes", "[trace]") {
  auto t = Trace::Parse("0\t8\n1\t0\n2\t80\n", "t");  // 1 MB/s, nothing, 10 MB/s
  REQUIRE(t.ok());
  CHECK(t->TransferEnd(0, 5e5, 1) == Approx(0.5));
  CHECK(t->TransferEnd(0.5, 1e6, 1) == Approx(2.05));  // waits out the dead second
  CHECK(t->TransferEnd(1.2, 0, 1) == Approx(1.2));
  // Property: BytesBetween(start, TransferEnd(start, b)) == b.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 2000; ++i) {
    const double start = 50 * u(rng);
    const double bytes = 5e7 * u(rng) * u(rng);
    const double scale = 0.1 + 2 * u(rng);
    CAPTURE(i, start, bytes, scale);
    const double end = t->TransferEnd(start, bytes, scale);
    REQUIRE(end >= start);
    CHECK(t->BytesBetween(start, end, scale) == Approx(bytes).epsilon(1e-9).margin(1e-3));
  }
}

TEST_CASE("a constant trace is a fixed rate", "[trace]") {
  Trace t = Trace::Constant(80);
  CHECK(t.TransferEnd(3, 1e7, 1) == Approx(4));
  CHECK(t.MbitAt(1234.5) == 80);
}

}  // namespace
}  // namespace rog
