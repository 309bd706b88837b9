// The replay buffer: acknowledged update batches rogd has not checkpointed
// yet (Ack.durable_seq). If rogd dies with -9 and restarts from its last
// checkpoint, its Welcome says it applied less than it acknowledged, and
// these batches go again. Part of WorkerProtocol, which alone uses it.
//
// Invariants: batches in increasing seq order, every one an UPDATE batch
// above the last durable seq rogd reported; bytes() is the sum of
// ReplayBytes over them and at most the capacity after every Keep (the
// oldest are dropped, counted in dropped()); a capacity of 0 keeps
// nothing. replayed() counts the batches handed back by TakeLost.
// Not thread-safe.
#ifndef ROG_CLIENT_REPLAY_BUFFER_H_
#define ROG_CLIENT_REPLAY_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "client/sent_batch.h"

namespace rog {

class ReplayBuffer {
 public:
  // At most `capacity_bytes` of batches (ProtocolOptions::
  // replay_buffer_bytes); `worker_id` names the worker in log lines.
  ReplayBuffer(size_t capacity_bytes, std::string worker_id)
      : capacity_(capacity_bytes), worker_id_(std::move(worker_id)) {}

  // Keeps an acknowledged update batch rogd has not checkpointed (at `now`,
  // for the warning that the buffer is full, at most once a minute).
  void Keep(SentBatch batch, double now);
  // rogd's checkpoint holds every batch up to `durable_seq`.
  void Forget(uint64_t durable_seq);
  // rogd restarted and applied only up to `applied`: the batches after it,
  // oldest first, leave the buffer to go again (counted in replayed()).
  std::deque<SentBatch> TakeLost(uint64_t applied);
  // Sets (*rows)[r] for every row of a batch kept.
  void MarkRows(std::vector<bool>* rows) const;

  size_t bytes() const { return bytes_; }
  uint64_t replayed() const { return replayed_; }
  uint64_t dropped() const { return dropped_; }

 private:
  // What a kept batch costs: its decoded values and its index.
  static size_t ReplayBytes(const SentBatch& b);

  size_t capacity_;
  std::string worker_id_;
  std::deque<SentBatch> batches_;
  size_t bytes_ = 0;
  uint64_t replayed_ = 0, dropped_ = 0;
  double warned_at_ = -1e9;
};

}  // namespace rog

#endif  // ROG_CLIENT_REPLAY_BUFFER_H_
