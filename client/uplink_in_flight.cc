#include "client/uplink_in_flight.h"

#include <algorithm>
#include <utility>

#include "common/protocol_rules.h"

namespace rog {

uint64_t UplinkInFlight::Cap(double lead, uint64_t batch_bytes) const {
  if (!goodput_.has_estimate()) return kInitialInFlight;
  return InFlightLimit(goodput_.rate(), std::max(lead, rtt_.min()), batch_bytes);
}

void UplinkInFlight::Send(SentBatch batch, double now) {
  bytes_ += batch.bytes;
  goodput_.OnSend(now, batch.bytes);
  batches_.push_back(std::move(batch));
}

std::vector<SentBatch> UplinkInFlight::Acknowledge(uint64_t seq, uint64_t bytes, double now) {
  std::vector<SentBatch> acked;
  while (!batches_.empty() && batches_.front().seq <= seq) {
    SentBatch& b = batches_.front();
    if (b.seq == seq) rtt_.OnSample(now, now - b.sent_at);
    bytes_ -= b.bytes;
    acked.push_back(std::move(b));
    batches_.pop_front();
  }
  last_acked_ = std::max(last_acked_, seq);
  goodput_.OnAck(now, bytes);
  return acked;
}

std::deque<SentBatch> UplinkInFlight::Restart(uint64_t applied, std::deque<SentBatch> lost) {
  for (auto it = lost.rbegin(); it != lost.rend(); ++it) batches_.push_front(std::move(*it));
  while (!batches_.empty() && batches_.front().seq <= applied) batches_.pop_front();
  std::deque<SentBatch> unapplied;
  unapplied.swap(batches_);
  acked_in_resync_.clear();
  bytes_ = 0;
  goodput_ = GoodputEstimator();
  last_acked_ = applied;
  next_seq_ = applied + 1;
  return unapplied;
}

}  // namespace rog
