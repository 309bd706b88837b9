#include "common/link_use.h"

#include "absl/status/statusor.h"
#include "catch2/catch.hpp"
#include "common/trace.h"

namespace rog {
namespace {

// 8 Mbit/s = 1e6 bytes/s for 1 s, then 16 Mbit/s for 1 s, looped.
Trace TwoRates() { return *Trace::Parse("0\t8\n1\t16\n", "two"); }

TEST_CASE("a push's time on the link ends a round trip's propagation before its last ack",
          "[link_use]") {
  UplinkUse use;
  // Started at 0.2 s, last ack 0.5 s later, 5 ms each way: on the link
  // from 0.2 to 0.69 s, at 1e6 bytes/s.
  use.AddPush(0.2, 0.5, 300000, 0.005);
  CHECK(use.bytes() == 300000);
  CHECK(use.Capacity(TwoRates(), 1) == Approx(0.49e6));
  CHECK(use.Capacity(TwoRates(), 2) == Approx(0.98e6));
}

TEST_CASE("overlapping pushes count the link's time once; the trace's rate is the one in force",
          "[link_use]") {
  UplinkUse use;
  use.AddPush(0.5, 0.6, 100, 0);  // 0.5-1.1 s
  use.AddPush(0.9, 0.4, 100, 0);  // 0.9-1.3 s, overlaps the first
  use.AddPush(1.5, 0.1, 100, 0);  // 1.5-1.6 s
  CHECK(use.bytes() == 300);
  // 0.5-1.0 s at 1e6, 1.0-1.3 s at 2e6, 1.5-1.6 s at 2e6.
  CHECK(use.Capacity(TwoRates(), 1) == Approx(0.5e6 + 0.6e6 + 0.2e6));
}

TEST_CASE("pushes with nothing acknowledged, or acknowledged within the propagation, count nothing",
          "[link_use]") {
  UplinkUse use;
  use.AddPush(0, 0, 100, 0);         // no acknowledgement
  use.AddPush(0, 0.5, 0, 0);         // nothing acknowledged
  use.AddPush(0, 0.01, 100, 0.005);  // the ack's time is the round trip's propagation
  CHECK(use.bytes() == 0);
  CHECK(use.Capacity(TwoRates(), 1) == 0);
  // A start before the trace's (clock skew) counts from the trace's start.
  use.AddPush(-0.1, 0.3, 100, 0);
  CHECK(use.Capacity(TwoRates(), 1) == Approx(0.3e6));
}

}  // namespace
}  // namespace rog
