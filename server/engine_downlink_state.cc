// One worker's downlink as rogd sent it (server/engine_downlink_state.h).
#include "server/engine_downlink_state.h"

#include <algorithm>
#include <utility>

namespace rog {
namespace engine_internal {

void Downlink::Reset() {
  next_seq_ = 1;
  inflight_.clear();
  inflight_bytes_ = 0;
  unapplied_.clear();
  unapplied_stream_ = 0;
  unapplied_next_seq_ = 0;
  CloseWindow();
}

void Downlink::EndStream(uint64_t stream) {
  unapplied_ = std::move(inflight_);
  unapplied_stream_ = stream;
  unapplied_next_seq_ = next_seq_;
  inflight_.clear();
  inflight_bytes_ = 0;
}

uint64_t Downlink::Record(pb::RowBatch* batch, SentBatch contents, double now) {
  batch->set_seq(next_seq_++);
  const uint64_t bytes = batch->ByteSizeLong();
  inflight_.push_back(InFlight{batch->seq(), bytes, now, inflight_bytes_, contents.values,
                               std::move(contents.taken)});
  inflight_bytes_ += bytes;
  bytes_ += bytes;
  rows_ += contents.rows;
  goodput_.OnSend(now, bytes);
  last_sent_ = now;
  return bytes;
}

void Downlink::OnAck(uint64_t seq, uint64_t bytes, double now) {
  while (!inflight_.empty() && inflight_.front().seq <= seq) {
    if (inflight_.front().seq == seq) rtt_.OnSample(now, now - inflight_.front().sent_at);
    inflight_bytes_ -= inflight_.front().bytes;
    inflight_.pop_front();
  }
  goodput_.OnAck(now, bytes);
}

void Downlink::OpenWindow(double now, double seconds) {
  transmitting_ = true;
  deadline_ = seconds > 0 ? now + seconds : std::numeric_limits<double>::infinity();
}

void Downlink::CloseWindow() {
  transmitting_ = false;
  deadline_ = std::numeric_limits<double>::infinity();
}

// The seqs fit when the worker applied at most what was sent on that
// stream, and the first batch kept is at most one past what it applied
// (with none kept, it applied all).
const std::deque<InFlight>* Downlink::Resumable(uint64_t stream, uint64_t applied) const {
  const bool fits = stream != 0 && stream == unapplied_stream_ && applied < unapplied_next_seq_ &&
                    (unapplied_.empty() ? applied + 1 == unapplied_next_seq_
                                        : unapplied_.front().seq <= applied + 1);
  bool values = false;
  for (const InFlight& b : unapplied_) values |= b.seq > applied && b.values;
  return fits && !values ? &unapplied_ : nullptr;
}

// On a link that just died the estimate keeps its last value until an ack
// comes, which may take many seconds. Until the oldest unacknowledged batch
// is acknowledged the link cannot have carried more than it and what was
// in flight ahead of it since it was sent (counting the batch alone would
// read a busy link as slow by the in-flight allowance over the batch size).
double Downlink::CappedRate(double now) const {
  double rate = goodput_.has_estimate() ? goodput_.rate() : 0;
  if (!inflight_.empty() && now > inflight_.front().sent_at) {
    const InFlight& oldest = inflight_.front();
    rate = std::min(rate, (oldest.ahead + oldest.bytes) / (now - oldest.sent_at));
  }
  return rate;
}

}  // namespace engine_internal
}  // namespace rog
