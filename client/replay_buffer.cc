#include "client/replay_buffer.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace rog {

size_t ReplayBuffer::ReplayBytes(const SentBatch& b) {
  return b.decoded.size() * sizeof(float) + b.rows.size() * (sizeof(RowId) + sizeof(uint32_t));
}

void ReplayBuffer::Keep(SentBatch batch, double now) {
  if (capacity_ == 0) return;
  bytes_ += ReplayBytes(batch);
  batches_.push_back(std::move(batch));
  uint64_t dropped = 0;
  while (bytes_ > capacity_ && !batches_.empty()) {
    bytes_ -= ReplayBytes(batches_.front());
    batches_.pop_front();
    ++dropped;
  }
  dropped_ += dropped;
  if (dropped > 0 && now - warned_at_ > 60) {
    warned_at_ = now;
    spdlog::warn(
        "worker {}: the replay buffer (replay_buffer_bytes, {} MB of updates kept decoded, "
        "4 bytes per element whatever the codec) is full of batches rogd has not checkpointed, "
        "so a rogd crash now would lose the oldest of them: checkpoint more often (rogd "
        "--checkpoint_interval) or raise the buffer",
        worker_id_, capacity_ >> 20);
  }
}

void ReplayBuffer::Forget(uint64_t durable_seq) {
  while (!batches_.empty() && batches_.front().seq <= durable_seq) {
    bytes_ -= ReplayBytes(batches_.front());
    batches_.pop_front();
  }
}

std::deque<SentBatch> ReplayBuffer::TakeLost(uint64_t applied) {
  std::deque<SentBatch> lost;
  while (!batches_.empty() && batches_.back().seq > applied) {
    bytes_ -= ReplayBytes(batches_.back());
    lost.push_front(std::move(batches_.back()));
    batches_.pop_back();
  }
  if (!lost.empty()) {
    replayed_ += lost.size();
    spdlog::warn(
        "worker {}: rogd lost {} acknowledged batches (it restarted from a checkpoint at uplink "
        "seq {}); pushing them again",
        worker_id_, lost.size(), applied);
  }
  return lost;
}

void ReplayBuffer::MarkRows(std::vector<bool>* rows) const {
  for (const SentBatch& b : batches_) {
    for (RowId row : b.rows) (*rows)[row] = true;
  }
}

}  // namespace rog
