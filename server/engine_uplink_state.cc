// One worker's uplink as rogd applied it (server/engine_uplink_state.h).
#include "server/engine_uplink_state.h"

namespace rog {
namespace engine_internal {

void Uplink::Restore(uint64_t seq) { last_applied_ = durable_ = seq; }

void Uplink::Applied(uint64_t seq, uint64_t rows, uint64_t bytes) {
  rows_ += rows;
  bytes_ += bytes;
  last_applied_ = seq;
}

void Uplink::NoteArrival(double now, uint64_t bytes, double horizon) {
  arrivals_.Add(now, bytes, horizon);
}

void Uplink::MarkDurable() { durable_ = last_applied_; }

}  // namespace engine_internal
}  // namespace rog
