#include "client/push_statistics.h"

#include <algorithm>
#include <limits>

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

void PushStatistics::CountTimedOutWait(double stalled_seconds, double detached_seconds) {
  carry_stall_ += stalled_seconds;
  carry_detached_ += detached_seconds;
  total_stall_ += stalled_seconds;
  total_detached_ += detached_seconds;
}

void PushStatistics::Begin(double t0, double now, bool waited, double detached_wait,
                           bool detached) {
  // Downlink received since the last stats (also while waiting) counts, and
  // so does the uplink a window still streaming sent meanwhile.
  IterationStats fresh;
  fresh.rows_down = current_.rows_down;
  fresh.bytes_down = current_.bytes_down;
  fresh.payload_down = current_.payload_down;
  fresh.rows_up = current_.rows_up;
  fresh.bytes_up = current_.bytes_up;
  fresh.payload_up = current_.payload_up;
  current_ = fresh;
  detached_wait = std::min(detached_wait, now - t0);
  const double stalled = waited ? now - t0 - detached_wait : 0;
  total_detached_ += detached_wait;
  total_stall_ += stalled;
  // Earlier calls that timed out waiting for this iteration count too.
  current_.detached_seconds = detached_wait + carry_detached_;
  current_.stall_seconds = stalled + carry_stall_;
  carry_stall_ = carry_detached_ = 0;
  current_.stalled = current_.stall_seconds > 0;
  if (current_.stalled) ++total_stalls_;
  // A local step: outside the bound.
  if (detached) current_.detached = true;
  begin_returned_ = now;
}

void PushStatistics::EndCompute(double t0) {
  push_started_ = t0;
  current_.compute_seconds = t0 - begin_returned_;
  total_compute_ += current_.compute_seconds;
  last_compute_ = current_.compute_seconds;
}

void PushStatistics::OpenPush(uint64_t phase, double t0, double deadline, uint64_t iteration,
                              double window_seconds) {
  current_.iteration = iteration;
  current_.window_seconds = window_seconds;
  Open p;
  p.phase = phase;
  p.t0 = t0;
  p.deadline = deadline;
  p.stats.iteration = iteration;
  p.stats.window_seconds = window_seconds;
  open_.push_back(p);
}

IterationStats PushStatistics::FinishPush(double now, uint64_t phase, double goodput,
                                          uint64_t rows_kept, double min_rtt) {
  current_.transmit_seconds = now - push_started_;
  total_transmit_ += current_.transmit_seconds;
  for (Open& p : open_) {
    if (p.phase != phase) continue;
    p.ended = true;
  }
  Complete(min_rtt);
  for (auto& [start, push] : done_) {
    push.age_seconds = now - start;
    current_.pushes.push_back(push);
  }
  done_.clear();
  current_.uplink_goodput = goodput;
  current_.rows_kept += rows_kept;
  IterationStats stats = current_;
  current_ = IterationStats();
  return stats;
}

void PushStatistics::OnReceived(uint64_t rows, uint64_t bytes, uint64_t payload) {
  current_.rows_down += rows;
  current_.bytes_down += bytes;
  current_.payload_down += payload;
}

void PushStatistics::OnSent(const SentBatch& batch, uint64_t payload) {
  current_.rows_up += batch.rows.size();
  current_.bytes_up += batch.bytes;
  current_.payload_up += payload;
  if (Open* p = PushOf(batch)) {
    ++p->unacked;
    p->stats.bytes += batch.bytes;
    p->stats.payload += payload;
    if (batch.sent_at >= p->deadline) p->stats.late_bytes += batch.bytes;
  }
}

void PushStatistics::OnAcked(const SentBatch& batch, double now) {
  if (Open* p = PushOf(batch)) {
    p->last_ack = now;
    p->stats.acked_bytes += batch.bytes;
    --p->unacked;
  }
}

void PushStatistics::OnStreamLost(double min_rtt) {
  for (Open& p : open_) {
    if (p.unacked > 0) p.stats.disconnected = true;
    p.unacked = 0;
  }
  Complete(min_rtt);
}

PushStatistics::Open* PushStatistics::PushOf(const SentBatch& b) {
  if (!b.in_push) return nullptr;
  for (Open& p : open_) {
    if (p.phase == b.phase) return &p;
  }
  return nullptr;
}

// Moves pushes whose EndIteration returned and whose batches are all
// acknowledged (or lost with a stream) to done_, in order.
void PushStatistics::Complete(double rtt) {
  while (!open_.empty() && open_.front().ended && open_.front().unacked == 0) {
    Open& p = open_.front();
    if (p.last_ack > 0) {
      p.stats.ack_seconds = std::max(0.0, p.last_ack - p.t0);
      p.stats.busy_seconds = std::max(0.0, p.last_ack - p.t0 - rtt);
      if (p.deadline < kInf) {
        p.stats.overshoot_seconds = std::max(0.0, p.last_ack - rtt / 2 - p.deadline);
      }
    }
    if (p.deadline < kInf) last_overshoot_ = p.stats.overshoot_seconds;
    done_.emplace_back(p.t0, p.stats);
    open_.pop_front();
  }
}

void PushStatistics::FillProgress(pb::Progress* p) const {
  p->set_compute_seconds(total_compute_);
  p->set_last_compute_seconds(last_compute_);
  p->set_transmit_seconds(total_transmit_);
  p->set_stall_seconds(total_stall_);
  p->set_detached_seconds(total_detached_);
  p->set_stalls(total_stalls_);
  p->set_window_overshoot(last_overshoot_);
}

}  // namespace rog
