// The clock seam (common/clock.h): waits that end at a deadline on the
// steady clock and on a clock the test moves.
#include "common/clock.h"

#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("a wait on the fake clock ends once the test moves it past the deadline", "[clock]") {
  FakeClock clock(100);
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  // Nothing to wait for: the deadline has passed.
  clock.WaitUntil(cv, lock, 99);
  int waits = 0;
  std::thread mover([&] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      clock.Advance(1);
    }
  });
  while (clock.Now() < 105) {
    clock.WaitUntil(cv, lock, 105);
    ++waits;
  }
  mover.join();
  CHECK(clock.Now() == 105);
  CHECK(waits >= 1);
}

TEST_CASE("concurrent Advance calls all count", "[clock]") {
  FakeClock clock(0);
  std::thread a([&] {
    for (int i = 0; i < 10000; ++i) clock.Advance(1);
  });
  std::thread b([&] {
    for (int i = 0; i < 10000; ++i) clock.Advance(1);
  });
  a.join();
  b.join();
  CHECK(clock.Now() == 20000);
}

TEST_CASE("a wait on the steady clock ends at its deadline or when notified", "[clock]") {
  RealClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  const double deadline = clock.Now() + 0.02;
  while (clock.Now() < deadline) clock.WaitUntil(cv, lock, deadline);
  CHECK(clock.Now() >= deadline);
  // Without a deadline only a notification ends it.
  bool woken = false;
  std::thread notifier([&] {
    std::lock_guard<std::mutex> l(mu);
    woken = true;
    cv.notify_all();
  });
  while (!woken) clock.WaitUntil(cv, lock, std::numeric_limits<double>::infinity());
  notifier.join();
  CHECK(woken);
}

TEST_CASE("the fake clock's wall clock is fixed and moves with it; the real one is the system's",
          "[clock]") {
  FakeClock fake(100);
  CHECK(fake.UnixNow() == FakeClock::kUnixStart + 100);
  fake.Advance(2.5);
  CHECK(fake.UnixNow() == FakeClock::kUnixStart + 102.5);
  CHECK(FakeClock(100).UnixNow() == FakeClock(100).UnixNow());
  // The system clock: after 2020-01-01, and what UnixSeconds reads.
  RealClock real;
  const double before = UnixSeconds();
  const double now = real.UnixNow();
  CHECK(now > 1577836800);
  CHECK(now >= before);
  CHECK(now - before < 60);
}

}  // namespace
}  // namespace rog
