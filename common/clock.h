// Time behind one interface, so that protocol rules that depend on it
// (patience, pace, leases, windows, log rate limits) can be tested on a
// clock the test moves, without real time passing.
//
// Seconds are doubles on a monotonic axis with an arbitrary origin; only
// differences mean anything. UnixNow() is the one reading of the wall
// clock (times shown to people or kept in files, such as a checkpoint's),
// behind the same seam so that a FakeClock makes it deterministic too.
#ifndef ROG_COMMON_CLOCK_H_
#define ROG_COMMON_CLOCK_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace rog {

// Seconds since the Unix epoch on the system clock, now. The wall clock,
// for times people read or files keep; never for durations (it jumps when
// the system time is set: use a Clock's Now()). Code given a Clock reads
// its UnixNow() instead, so that tests control it.
inline double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds on a monotonic axis. Thread-safe.
  virtual double Now() const = 0;
  // Waits on `cv` (with `lock` held) until it is notified or Now() reaches
  // `deadline` (infinity: no deadline). It may return earlier, spuriously
  // or, on a clock that tests move, after a short real wait: callers loop
  // on their own condition and Now().
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         double deadline) const = 0;
  // Seconds since the Unix epoch (wall-clock time, for checkpoint times
  // and the like). Thread-safe. The system clock unless a clock says
  // otherwise (FakeClock does), so that a Clock written against the SDK
  // before this existed still builds; last, so that the slots of the
  // functions above stay where such a Clock's compiled code has them.
  virtual double UnixNow() const { return UnixSeconds(); }
};

// The steady clock.
class RealClock final : public Clock {
 public:
  double Now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 double deadline) const override {
    if (std::isinf(deadline) && deadline > 0) {
      cv.wait(lock);
      return;
    }
    const double left = deadline - Now();
    if (!(left > 0)) return;
    // At most an hour per wait: a duration of centuries would overflow the
    // clock's nanoseconds (callers loop, so a far deadline still holds).
    cv.wait_for(lock, std::chrono::duration<double>(std::min(left, 3600.0)));
  }
};

// A clock that moves only when told to. Thread-safe. Its wall clock is
// kUnixStart plus Now(): the same in every run, and moved by Advance.
class FakeClock final : public Clock {
 public:
  // 2026-01-01 00:00:00 UTC.
  static constexpr double kUnixStart = 1767225600;

  explicit FakeClock(double start = 1000) : now_(start) {}
  double Now() const override { return now_.load(); }
  double UnixNow() const override { return kUnixStart + Now(); }
  // Time moves only in Advance, so a waiter gets a short real wait (or a
  // notification) and looks at Now() again.
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 double deadline) const override {
    if (!(deadline > Now())) return;
    cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  // REQUIRES: seconds >= 0. Safe against concurrent Advance calls.
  void Advance(double seconds) {
    double now = now_.load();
    while (!now_.compare_exchange_weak(now, now + seconds)) {
    }
  }

 private:
  std::atomic<double> now_;
};

// One RealClock for everyone who is not given another.
inline std::shared_ptr<const Clock> DefaultClock() {
  static const std::shared_ptr<const Clock> clock = std::make_shared<RealClock>();
  return clock;
}

}  // namespace rog

#endif  // ROG_COMMON_CLOCK_H_
