#include "common/goodput.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/status/status.h"
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

TEST_CASE("the round trip is the minimum of the last 5 to 10 s", "[goodput]") {
  RoundTripFilter f;
  CHECK(f.min() == 0);
  f.OnSample(10, 0.3);
  f.OnSample(11, 0.01);  // an ack straight behind nothing
  f.OnSample(12, 0.4);
  CHECK(f.min() == Approx(0.01));
  f.OnSample(16, 0.3);  // a new bucket: the old one still counts
  CHECK(f.min() == Approx(0.01));
  f.OnSample(21.5, 0.25);  // two buckets on: the 0.01 s is forgotten
  CHECK(f.min() == Approx(0.25));
  f.OnSample(22, -1);  // not a round trip
  CHECK(f.min() == Approx(0.25));
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

TEST_CASE("an arrival window sums what arrived since a time, in bounded memory", "[goodput]") {
  ArrivalWindow w;
  CHECK(w.Since(0) == 0);
  w.Add(1.0, 100, 10);
  w.Add(1.01, 50, 10);  // the same bucket (10 s / 256 wide)
  w.Add(5.0, 200, 10);
  CHECK(w.Since(0) == 350);
  CHECK(w.Since(1.0) == 350);
  CHECK(w.Since(1.005) == 200);  // whole buckets only: never more than arrived
  CHECK(w.Since(5.0) == 200);
  CHECK(w.Since(5.1) == 0);
  // Past the horizon the old arrivals go.
  w.Add(20.0, 1, 10);
  CHECK(w.Since(0) == 1);
  // A byte a millisecond for an hour keeps at most a few hundred buckets:
  // the sum over the last 10 s stays near 10,000.
  for (int i = 0; i < 3600 * 1000; ++i) w.Add(20.0 + i * 1e-3, 1, 10);
  const uint64_t last = w.Since(20.0 + 3600 - 10);
  CHECK(last >= 9900);
  CHECK(last <= 10001);
  CHECK(w.buckets() <= ArrivalWindow::kBuckets + 2);
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

TEST_CASE("a row batch's budget is a few milliseconds of its link, within bounds", "[goodput]") {
  // 5 ms of a 4.6 Mbit/s link (575,000 B/s): 2,875 bytes.
  CHECK(BatchBudget(575000, 0.005, 16384) == 2875);
  // A fast link: capped at the configured budget.
  CHECK(BatchBudget(17.5e6, 0.005, 16384) == 16384);
  CHECK(BatchBudget(16384 / 0.005, 0.005, 16384) == 16384);
  // A link of a few KB/s: the floor, not a batch of a few bytes.
  CHECK(BatchBudget(4000, 0.005, 16384) == kMinBatchBytes);
  // A configured budget below the floor wins.
  CHECK(BatchBudget(4000, 0.005, 1024) == 1024);
  CHECK(BatchBudget(1e9, 0.005, 1024) == 1024);
  // No estimate yet, or a fixed budget asked for: the configured one.
  CHECK(BatchBudget(0, 0.005, 16384) == 16384);
  CHECK(BatchBudget(-1, 0.005, 16384) == 16384);
  CHECK(BatchBudget(std::nan(""), 0.005, 16384) == 16384);
  CHECK(BatchBudget(575000, 0, 16384) == 16384);
  CHECK(BatchBudget(std::numeric_limits<double>::infinity(), 0.005, 16384) == 16384);
}

TEST_CASE("batch_seconds is checked once, with the setting's own name in the message",
          "[goodput]") {
  CHECK(CheckBatchSeconds(0, "--batch_seconds", "--batch_bytes").ok());
  CHECK(CheckBatchSeconds(kDefaultBatchSeconds, "--batch_seconds", "--batch_bytes").ok());
  CHECK(CheckBatchSeconds(kMaxBatchSeconds, "--batch_seconds", "--batch_bytes").ok());
  for (const double bad : {-0.001, 1.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    INFO(bad);
    const absl::Status s = CheckBatchSeconds(bad, "--batch_seconds", "--batch_bytes");
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(s.message().find("--batch_seconds is ") == 0);
    CHECK(s.message().find("give 0 (a fixed --batch_bytes) to 1 second (0.005 by default)") !=
          absl::string_view::npos);
  }
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
