// Time behind one interface, so that protocol rules that depend on it
// (patience, pace, leases, windows, log rate limits) can be tested on a
// clock the test moves, without real time passing.
//
// Seconds are doubles on a monotonic axis with an arbitrary origin; only
// differences mean anything.
#ifndef ROG_COMMON_CLOCK_H_
#define ROG_COMMON_CLOCK_H_

#include <atomic>
#include <chrono>
#include <memory>

namespace rog {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds on a monotonic axis. Thread-safe.
  virtual double Now() const = 0;
};

// The steady clock.
class RealClock final : public Clock {
 public:
  double Now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start = 1000) : now_(start) {}
  double Now() const override { return now_.load(); }
  // REQUIRES: seconds >= 0.
  void Advance(double seconds) { now_.store(now_.load() + seconds); }

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
