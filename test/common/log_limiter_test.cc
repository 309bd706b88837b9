// Rate limits for client-caused log lines (common/log_limiter.h).
#include "common/log_limiter.h"

#include <string>

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("at most `burst` lines per key and period, then a count of those left out",
          "[log_limiter]") {
  LogLimiter limiter(/*burst=*/3, /*period=*/10);
  uint64_t suppressed = 99;
  int printed = 0;
  for (int k = 0; k < 255; ++k) printed += limiter.Allow("bad_seq|x", 1.0 + k * 0.001) ? 1 : 0;
  CHECK(printed == 3);
  // Another key has its own budget.
  CHECK(limiter.Allow("bad_seq|y", 2, &suppressed));
  CHECK(suppressed == 0);
  // The next period: printed again, saying how many were left out.
  CHECK_FALSE(limiter.Allow("bad_seq|x", 10.9));
  CHECK(limiter.Allow("bad_seq|x", 11.0, &suppressed));
  CHECK(suppressed == 253);
  CHECK(limiter.Allow("bad_seq|x", 11.1, &suppressed));
  CHECK(suppressed == 0);
}

TEST_CASE("keys are bounded: past max_keys they share one budget", "[log_limiter]") {
  LogLimiter limiter(/*burst=*/1, /*period=*/10, /*max_keys=*/4);
  int printed = 0;
  for (int k = 0; k < 1000; ++k) printed += limiter.Allow("key" + std::to_string(k), 1) ? 1 : 0;
  CHECK(printed == 4 + 1);  // four keys, then the shared one once
  // Quiet keys are forgotten once their period is over.
  CHECK(limiter.Allow("fresh", 20));
}

TEST_CASE("a client's free text is cut and made printable for one log line", "[log_limiter]") {
  CHECK(ClientText("training done", 64) == "training done");
  CHECK(ClientText(std::string("a\nb\x01\xff", 5), 64) == "a?b??");
  CHECK(ClientText(std::string(1 << 20, 'x'), 4) == "xxxx ... (1048576 bytes)");
  CHECK(ClientText("", 4).empty());
  CHECK(PrintableAscii("0.9.0 (rog sdk)"));
  CHECK(PrintableAscii(""));
  CHECK_FALSE(PrintableAscii("0.9\n"));
  CHECK_FALSE(PrintableAscii(std::string("\x80", 1)));
}

}  // namespace
}  // namespace rog
