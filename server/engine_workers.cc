// The engine's worker records and their registry (server/engine_workers.h).
#include "server/engine_workers.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace rog {
namespace engine_internal {

const char* StateName(WState s) {
  switch (s) {
    case WState::kConnected:
      return "connected";
    case WState::kDisconnected:
      return "disconnected";
    case WState::kEvicted:
      return "evicted";
  }
  return "?";
}

// --- Worker ---------------------------------------------------------------------

Worker::Worker(std::string id, size_t index, uint64_t token, uint64_t clock, size_t rows)
    : id_(std::move(id)),
      index_(index),
      token_(token),
      clock_(clock),
      join_clock_(clock),
      plan_(rows) {}

std::unique_ptr<Worker> Worker::FromCheckpoint(const pb::CheckpointWorker& c, size_t rows,
                                               double now) {
  auto r = std::make_unique<Worker>(c.worker_id(), c.index(), c.resume_token(), c.clock(), rows);
  r->uplink_.Restore(c.last_applied_uplink_seq());
  r->state_ = c.evicted() ? WState::kEvicted : WState::kDisconnected;
  r->disconnected_at_ = now;
  r->sdk_version_ = c.sdk_version();
  return r;
}

void Worker::ToCheckpoint(pb::CheckpointWorker* c) const {
  c->set_worker_id(id_);
  c->set_resume_token(token_);
  c->set_index(static_cast<uint32_t>(index_));
  c->set_clock(clock_);
  c->set_last_applied_uplink_seq(uplink_.last_applied());
  c->set_evicted(state_ == WState::kEvicted);
  c->set_sdk_version(sdk_version_);
}

void Worker::Touch(double now) { last_seen_ = now; }

void Worker::Refuse(const absl::Status& status, const std::string& label) {
  refused_session_ = session_;
  if (outbox_) outbox_->End(status, label);
}

void Worker::Disconnect(double now) {
  state_ = WState::kDisconnected;
  disconnected_at_ = now;
}

void Worker::Joined(double now) { joined_at_ = now; }

void Worker::AdvanceClock(uint64_t iteration) { clock_ = std::max(clock_, iteration); }

void Worker::RaiseClock(uint64_t clock, ServerState* state) {
  clock_ = clock;
  state->RaiseVersion(index_, clock);
  raised_to_ = clock;
}

// --- WorkerRegistry ---------------------------------------------------------------

Worker* WorkerRegistry::Find(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : records_[it->second].get();
}

Worker* WorkerRegistry::BySession(uint64_t session) const {
  auto it = by_session_.find(session);
  return it == by_session_.end() ? nullptr : records_[it->second].get();
}

Worker* WorkerRegistry::Live(uint64_t session) const {
  Worker* r = BySession(session);
  return r == nullptr || r->refused_session_ == session ? nullptr : r;
}

size_t WorkerRegistry::Members() const {
  size_t members = 0;
  for (const auto& r : records_) members += r->member() ? 1 : 0;
  return members;
}

AttachedSet WorkerRegistry::AttachedWorkers() const {
  AttachedSet set(records_.size(), false);
  for (const auto& r : records_) set[r->index_] = r->attached();
  return set;
}

uint64_t WorkerRegistry::MinAttachedClock(const Worker* except) const {
  uint64_t min = std::numeric_limits<uint64_t>::max();
  for (const auto& r : records_) {
    if (r.get() != except && r->attached()) min = std::min(min, r->clock_);
  }
  return min;
}

uint64_t WorkerRegistry::MaxAttachedClock() const {
  uint64_t max = 0;
  for (const auto& r : records_) {
    if (r->attached()) max = std::max(max, r->clock_);
  }
  return max;
}

std::vector<uint64_t> WorkerRegistry::Clocks() const {
  std::vector<uint64_t> clocks(records_.size(), 0);
  for (const auto& r : records_) clocks[r->index_] = r->clock_;
  return clocks;
}

std::vector<bool> WorkerRegistry::UnansweredAsks() const {
  std::vector<bool> unanswered(records_.size(), false);
  for (const auto& r : records_) unanswered[r->index_] = r->asks_.unanswered();
  return unanswered;
}

bool WorkerRegistry::FormTeam(size_t team_size, double now) {
  if (team_ready_ || Members() < team_size) return false;
  team_ready_ = true;
  team_ready_at_ = now;
  return true;
}

Worker& WorkerRegistry::Add(std::string id, size_t index, uint64_t clock, size_t rows) {
  records_.push_back(std::make_unique<Worker>(std::move(id), index, rng_() | 1, clock, rows));
  Worker& r = *records_.back();
  by_id_[r.id_] = index;
  return r;
}

void WorkerRegistry::Clear() {
  records_.clear();
  by_id_.clear();
}

void WorkerRegistry::Restore(Records records, bool team_ready) {
  records_ = std::move(records);
  for (const auto& r : records_) by_id_[r->id_] = r->index_;
  team_ready_ = team_ready;
}

void WorkerRegistry::Rejoin(Worker& r, uint64_t clock, ServerState* state) {
  r.token_ = rng_() | 1;
  r.join_clock_ = clock;
  r.RaiseClock(clock, state);
}

void WorkerRegistry::Connect(Worker& r, uint64_t session, std::shared_ptr<Outbox> outbox,
                             const std::string& peer, const std::string& sdk_version, double now) {
  r.state_ = WState::kConnected;
  r.session_ = session;
  r.outbox_ = std::move(outbox);
  r.peer_ = peer;
  r.sdk_version_ = sdk_version;
  r.last_seen_ = now;
  by_session_[session] = r.index_;
}

void WorkerRegistry::Replace(Worker& r, const absl::Status& status) {
  if (!r.outbox_) return;
  r.outbox_->End(status);
  by_session_.erase(r.session_);
}

void WorkerRegistry::Evict(Worker& r, const absl::Status& status) {
  r.state_ = WState::kEvicted;
  if (r.outbox_) {
    r.outbox_->End(status);
    r.outbox_.reset();
  }
  by_session_.erase(r.session_);
  r.session_ = 0;
}

Worker* WorkerRegistry::Closed(uint64_t session) {
  Worker* r = BySession(session);
  by_session_.erase(session);
  if (r == nullptr || r->session_ != session) return nullptr;
  r->session_ = 0;
  r->outbox_.reset();
  return r;
}

void WorkerRegistry::Shutdown(const absl::Status& status) {
  for (auto& r : records_) {
    if (r->outbox_) r->outbox_->End(status);
    r->outbox_.reset();
    if (r->state_ == WState::kConnected) r->state_ = WState::kDisconnected;
  }
}

}  // namespace engine_internal
}  // namespace rog
