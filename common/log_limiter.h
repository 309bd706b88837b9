// Log lines that clients can cause. LogLimiter: rate limits (refusals): at
// most `burst` lines per key (e.g. reason and worker) in any `period`
// seconds; the next line printed for the key says how many were left out
// meanwhile. Pure: the caller passes the time. Not thread-safe.
// ClientText: what of a client's free text goes into a line.
#ifndef ROG_COMMON_LOG_LIMITER_H_
#define ROG_COMMON_LOG_LIMITER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace rog {

class LogLimiter {
 public:
  // REQUIRES: burst >= 1, period > 0, max_keys >= 1.
  explicit LogLimiter(uint32_t burst = 5, double period = 10, size_t max_keys = 1024)
      : burst_(burst), period_(period), max_keys_(max_keys) {}

  // Whether to print a line for `key` at time `now` (seconds). When it
  // returns true, *suppressed (if not null) receives how many lines of the
  // key were left out since the last one printed. Keys beyond `max_keys`
  // (quiet ones are forgotten first) share one budget, so memory stays
  // bounded whatever clients send.
  bool Allow(const std::string& key, double now, uint64_t* suppressed = nullptr);

 private:
  struct Window {
    double start = 0;
    uint32_t printed = 0;
    uint64_t suppressed = 0;
  };

  const uint32_t burst_;
  const double period_;
  const size_t max_keys_;
  std::map<std::string, Window> windows_;
};

// Free text a client sent, fit for one log line: its first `max_bytes`
// bytes, each byte outside printable ASCII as '?', and when cut, how long
// it was (" ... (N bytes)").
std::string ClientText(const std::string& text, size_t max_bytes);

// Whether every byte of `text` is printable ASCII (space to '~').
bool PrintableAscii(const std::string& text);

}  // namespace rog

#endif  // ROG_COMMON_LOG_LIMITER_H_
