#include "common/goodput.h"

#include <limits>
#include <vector>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("goodput of back-to-back batches equals the link rate", "[goodput]") {
  GoodputEstimator g;
  CHECK_FALSE(g.has_estimate());
  double t = 10;
  // 1 MB/s: each 10 kB batch takes 10 ms; two in flight at a time.
  g.OnSend(t, 10000);
  g.OnSend(t, 10000);
  for (int i = 0; i < 100; ++i) {
    t += 0.01;
    g.OnAck(t, 10000);
    g.OnSend(t, 10000);
  }
  REQUIRE(g.has_estimate());
  CHECK(g.rate() == Approx(1e6).epsilon(1e-6));
}

TEST_CASE("idle time between iterations does not dilute goodput", "[goodput]") {
  GoodputEstimator g;
  double t = 0;
  for (int it = 0; it < 5; ++it) {
    g.OnSend(t, 50000);
    t += 0.05;  // 1 MB/s
    g.OnAck(t, 50000);
    t += 3.0;  // computing: nothing outstanding
  }
  CHECK(g.rate() == Approx(1e6).epsilon(1e-6));
  CHECK(g.in_flight() == 0);
}

TEST_CASE("goodput follows a drop in bandwidth within a few time constants", "[goodput]") {
  GoodputEstimator g(0.5);
  double t = 0;
  g.OnSend(t, 100000);
  for (int i = 0; i < 100; ++i) {  // 10 MB/s for 1 s
    t += 0.01;
    g.OnAck(t, 100000);
    g.OnSend(t, 100000);
  }
  CHECK(g.rate() == Approx(1e7).epsilon(1e-3));
  for (int i = 0; i < 30; ++i) {  // then 1 MB/s for 3 s: 6 time constants
    t += 0.1;
    g.OnAck(t, 100000);
    g.OnSend(t, 100000);
  }
  CHECK(g.rate() == Approx(1e6).epsilon(0.05));
}

// 1 MB/s measured from a backlog: 10 kB batches, two in flight, 1 s.
GoodputEstimator MeasuredAt1MBps(double* t) {
  GoodputEstimator g(0.5);
  g.OnSend(*t, 10000);
  g.OnSend(*t, 10000);
  for (int i = 0; i < 100; ++i) {
    *t += 0.01;
    g.OnAck(*t, 10000);
    g.OnSend(*t, 10000);
  }
  for (int i = 0; i < 2; ++i) {
    *t += 0.01;
    g.OnAck(*t, 10000);
  }
  return g;
}

// A trickle: one 2 kB batch at a time, acknowledged a 10 ms round trip
// later (0.2 MB/s read from the ack, on a 1 MB/s link), marked app-limited
// or not.
void Trickle(GoodputEstimator* g, double* t, bool mark) {
  for (int i = 0; i < 200; ++i) {
    *t += 0.05;
    g->OnSend(*t, 2000);
    if (mark) g->MarkAppLimited(*t);  // nothing else to send
    *t += 0.01;
    g->OnAck(*t, 2000);
  }
}

TEST_CASE("a trickle of lone batches does not drag the estimate down", "[goodput]") {
  double t = 0;
  GoodputEstimator g = MeasuredAt1MBps(&t);
  REQUIRE(g.rate() == Approx(1e6).epsilon(1e-6));
  SECTION("marked app-limited: the estimate stays") {
    Trickle(&g, &t, /*mark=*/true);
    CHECK(g.rate() == Approx(1e6).epsilon(1e-6));
  }
  SECTION("unmarked: it reads the round trip, not the link") {
    Trickle(&g, &t, /*mark=*/false);
    CHECK(g.rate() < 0.3e6);
  }
}

TEST_CASE("an app-limited sample may raise the estimate", "[goodput]") {
  GoodputEstimator g(0.5);
  double t = 0;
  g.OnSend(t, 10000);
  t += 0.1;
  g.OnAck(t, 10000);  // 0.1 MB/s
  REQUIRE(g.rate() == Approx(1e5));
  for (int i = 0; i < 20; ++i) {  // lone 10 kB batches in 10 ms: 1 MB/s
    t += 0.05;
    g.OnSend(t, 10000);
    g.MarkAppLimited(t);
    t += 0.01;
    g.OnAck(t, 10000);
  }
  CHECK(g.rate() > 0.3e6);
}

TEST_CASE("a backlog after an app-limited spell still measures a drop", "[goodput]") {
  double t = 0;
  GoodputEstimator g = MeasuredAt1MBps(&t);
  g.MarkAppLimited(t);  // ran dry at the end of that transfer
  t += 1;
  // Then a backlog at 0.1 MB/s for 3 s: cap-limited, never marked.
  g.OnSend(t, 10000);
  for (int i = 0; i < 30; ++i) {
    t += 0.1;
    g.OnAck(t, 10000);
    g.OnSend(t, 10000);
  }
  CHECK(g.rate() == Approx(1e5).epsilon(0.05));
}

TEST_CASE("acks beyond what is in flight are clamped", "[goodput]") {
  GoodputEstimator g;
  g.OnSend(0, 100);
  g.OnAck(1, 1000);
  CHECK(g.in_flight() == 0);
  CHECK(g.rate() == Approx(100));
  g.OnAck(2, 50);  // nothing in flight: ignored
  CHECK(g.rate() == Approx(100));
}

TEST_CASE("the slowest worker's MTA time sets the window", "[goodput]") {
  const std::vector<double> rates = {1e6, 2.5e5, 4e6};
  CHECK(TransmissionWindow(rates, 5e5, 0, 0) == Approx(2.0));
  CHECK(TransmissionWindow(rates, 5e5, 0, 1.5) == Approx(1.5));  // capped
  CHECK(TransmissionWindow(rates, 5e5, 3.0, 0) == Approx(3.0));  // floor
  const std::vector<double> unknown = {1e6, 0};
  CHECK(TransmissionWindow(unknown, 5e5, 0, 0) == 0);  // no limit
  CHECK(TransmissionWindow(unknown, 5e5, 0, 7) == 7);
  CHECK(InFlightLimit(1e6, 0.05, 16384) == 50000 + 16384);
}

TEST_CASE("the deadline taper: an optional message starts only if it can arrive in time",
          "[goodput]") {
  const double inf = std::numeric_limits<double>::infinity();
  // 50,000 bytes in flight and a 16,384-byte message at 1 MB/s: 66.4 ms.
  CHECK(ArrivesBeforeDeadline(10.0, 10.1, 50000, 16384, 1e6));
  CHECK_FALSE(ArrivesBeforeDeadline(10.0, 10.05, 50000, 16384, 1e6));
  CHECK(ArrivesBeforeDeadline(10.0, 10.05, 0, 16384, 1e6));
  // Closed at and after the deadline, whatever the link.
  CHECK_FALSE(ArrivesBeforeDeadline(10.1, 10.1, 0, 1, 1e9));
  CHECK_FALSE(ArrivesBeforeDeadline(11.0, 10.1, 0, 1, 0));
  // No estimate yet: open until the deadline; no deadline: always open.
  CHECK(ArrivesBeforeDeadline(10.0, 10.05, 50000, 16384, 0));
  CHECK(ArrivesBeforeDeadline(10.0, inf, uint64_t{1} << 40, 16384, 1.0));
}

}  // namespace
}  // namespace rog
