#include "common/trace.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

TEST_CASE("a time-scaled trace changes k times as often, at the same rates", "[trace]") {
  auto base = Trace::Parse("0\t8\n1\t16\n2\t0\n", "t");  // period 3
  REQUIRE(base.ok());
  const Trace t = base->TimeScaled(0.25);
  CHECK(t.period() == Approx(0.75));
  CHECK(t.MbitAt(0.1) == 8);
  CHECK(t.MbitAt(0.3) == 16);
  CHECK(t.MbitAt(0.6) == 0);
  CHECK(t.MbitAt(0.8) == 8);  // looped
  CHECK(t.NextChange(0.1) == Approx(0.25));
  CHECK(t.mean_mbit() == Approx(base->mean_mbit()));
  CHECK(t.BytesBetween(0, 0.75, 1.0) == Approx(0.75e6));  // (8 + 16) Mbit / 4
  CHECK(t.TransferEnd(0, 0.25e6, 1.0) == Approx(0.25));
  // A factor that is not a positive number leaves the trace as it is.
  CHECK(base->TimeScaled(0).period() == Approx(3.0));
  CHECK(base->TimeScaled(std::nan("")).period() == Approx(3.0));
}

TEST_CASE("bytes over an interval are the integral of the rate, whatever the rounding", "[trace]") {
  // The robot traces' 0.55 s cadence on a quarter time axis: sample
  // boundaries at multiples of 0.1375, which binary floating point cannot
  // hold exactly. An interval ending past a boundary that rounding put in
  // the sample before once lost everything after it.
  std::string text;
  for (int i = 0; i < 200; ++i) {
    absl::StrAppend(&text, absl::StrFormat("%.3f", 0.55 * i), "\t", 1 + (i * 37) % 23, "\n");
  }
  auto base = Trace::Parse(text, "t");
  REQUIRE(base.ok());
  const Trace t = base->TimeScaled(0.25);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> at(0, 2 * t.period()), len(0, 3);
  for (int k = 0; k < 2000; ++k) {
    const double t0 = at(rng), t1 = t0 + len(rng);
    // A reference: the rate at the middle of fine steps.
    double want = 0;
    const int steps = 3000;
    for (int s = 0; s < steps; ++s) {
      want += t.MbitAt(t0 + (t1 - t0) * (s + 0.5) / steps) * 1e6 / 8 * (t1 - t0) / steps;
    }
    INFO("[" << t0 << ", " << t1 << "]");
    REQUIRE(t.BytesBetween(t0, t1, 1.0) == Approx(want).epsilon(0.01));
  }
  // Starting exactly on boundaries, as a push starting at a sample change.
  for (int i = 1; i < 50; ++i) {
    const double t0 = 0.1375 * i;
    CHECK(t.BytesBetween(t0, t0 + 0.5, 1.0) > 0.5 * 1e6 / 8 * 0.99);
  }
}

TEST_CASE("the median rate is weighted by time over every trace", "[trace]") {
  // 1 s at 8, 3 s at 2 (the last value holds for the mean interval, 1 s):
  auto a = Trace::Parse("0\t8\n1\t2\n2\t2\n3\t2\n", "a");  // period 4
  auto b = Trace::Parse("0\t100\n1\t100\n", "b");          // 2 s at 100
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(Trace::MedianMbit({*a}) == Approx(2));
  // 3 s at 2, 1 s at 8, 2 s at 100: half of the 6 s is reached at 2.
  CHECK(Trace::MedianMbit({*a, *b}) == Approx(2));
  // 3 s at 2, 1 s at 8, 4 s at 100: half of the 8 s is reached at 8.
  CHECK(Trace::MedianMbit({*b, *b, *a}) == Approx(8));
  CHECK(Trace::MedianMbit({}) == 0);
  // Scaling the time axis changes no share of time.
  CHECK(Trace::MedianMbit({a->TimeScaled(0.1), b->TimeScaled(0.1)}) == Approx(2));
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
