// How much of its uplink's capacity a worker's pushes used: the bytes their
// acknowledgements covered, over what the bandwidth trace let the link
// carry while they were on it. One rule for the benchmark's report (robots'
// ID.pushes.csv) and the simulator (the same PushStats), so that their
// "link utilisation" figures compare.
#ifndef ROG_COMMON_LINK_USE_H_
#define ROG_COMMON_LINK_USE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "common/trace.h"

namespace rog {

class UplinkUse {
 public:
  // A push that started at `start` (on the trace's time axis, seconds) and
  // whose acknowledgements covered `acked_bytes` within `ack_seconds` of its
  // start (PushStats::ack_seconds, acked_bytes). Each acknowledged byte
  // crossed the link within [start, start + ack_seconds - 2 x the one-way
  // `link_delay`]; a push with nothing acknowledged, or acknowledged within
  // the round trip's propagation alone, is not counted.
  void AddPush(double start, double ack_seconds, uint64_t acked_bytes, double link_delay);

  // Bytes the counted pushes' acknowledgements covered.
  uint64_t bytes() const { return bytes_; }

  // What the link could carry at `scale` x `trace` over the counted pushes'
  // spans, each instant once (a push may still be on the link when the next
  // one starts).
  double Capacity(const Trace& trace, double scale) const;

 private:
  uint64_t bytes_ = 0;
  std::vector<std::pair<double, double>> spans_;
};

}  // namespace rog

#endif  // ROG_COMMON_LINK_USE_H_
