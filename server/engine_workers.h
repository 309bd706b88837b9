// The engine's worker records and the registry that finds them: each
// worker's identity, stream and clock, and the per-worker objects that own
// the rest of its state (its uplink, downlink, downlink plan, stalls, asks,
// detachment and progress); and whether the team has formed. Part of the
// engine core (server/engine_core.h); not for use outside it.
//
// Invariants of the registry: record i is worker column i of the version
// storage (index() == i); the ids map to the records one to one; a
// session maps to the worker whose stream it is, from Connect until that
// stream is replaced, closed or the worker evicted (a refused stream
// keeps its session until it closes; Live drops its events). A worker
// with a session has the stream's outbox; session 0 is no stream. The
// team, once ready (FormTeam, or a checkpoint that says so), stays ready
// for the life of the model.
// Invariants of a record: raised_to() <= clock(), and the worker's
// versions hold every iteration up to raised_to() (RaiseClock is the one
// place that moves both).
#ifndef ROG_SERVER_ENGINE_WORKERS_H_
#define ROG_SERVER_ENGINE_WORKERS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "checkpoint.pb.h"
#include "common/server_state.h"
#include "common/staleness.h"
#include "server/engine_core.h"
#include "server/engine_detachment.h"
#include "server/engine_downlink_plan.h"
#include "server/engine_downlink_state.h"
#include "server/engine_progress.h"
#include "server/engine_push_asks.h"
#include "server/engine_stall_state.h"
#include "server/engine_uplink_state.h"

namespace rog {
namespace engine_internal {

enum class WState { kConnected, kDisconnected, kEvicted };

const char* StateName(WState s);

class WorkerRegistry;

// One worker's record: 22 fields, above the engine's ~20 per object. 15
// are its own (identity, stream, clock), written by its methods and by the
// registry, its friend, in the same .cc file; the other seven are the
// objects that own the rest of its state, each with private fields. The
// stream's fields stay here rather than in an object of their own because
// they change together with the registry's session map (Connect, Replace,
// Evict, Closed).
class Worker {
 public:
  // Worker `id` in version column `index`, at `clock` (its join clock),
  // for a model of `rows` rows; nothing credited yet (RaiseClock), not
  // joined yet (Joined).
  Worker(std::string id, size_t index, uint64_t token, uint64_t clock, size_t rows);
  // A record from a checkpoint: disconnected (or evicted) as of `now`.
  static std::unique_ptr<Worker> FromCheckpoint(const pb::CheckpointWorker& c, size_t rows,
                                                double now);
  // Its identity, clock and uplink seq, for a checkpoint (its model state
  // is the checkpoint's to add).
  void ToCheckpoint(pb::CheckpointWorker* c) const;

  // --- identity and stream -----------------------------------------------------
  const std::string& id() const { return id_; }
  size_t index() const { return index_; }  // column in the version storage
  uint64_t token() const { return token_; }
  WState state() const { return state_; }
  uint64_t session() const { return session_; }
  // A session whose stream rogd refused: its later events are dropped (Live).
  uint64_t refused_session() const { return refused_session_; }
  Outbox* outbox() const { return outbox_.get(); }
  const std::string& peer() const { return peer_; }
  const std::string& sdk_version() const { return sdk_version_; }
  double disconnected_at() const { return disconnected_at_; }
  double last_seen() const { return last_seen_; }
  double joined_at() const { return joined_at_; }
  // A team member: not evicted (detached workers included).
  bool member() const { return state_ != WState::kEvicted; }
  // Counts for the staleness bound and the window.
  bool attached() const { return member() && !detach_.detached(); }

  // A message of the worker arrived at `now`.
  void Touch(double now);
  // Refuses what the worker sent on its current stream: the stream ends
  // with `status` (`label`: the refusal's reason) and its later events
  // are dropped.
  void Refuse(const absl::Status& status, const std::string& label);
  // Its stream ended at `now` while it was connected.
  void Disconnect(double now);
  // It joined the team at `now` (with the model, or as a new worker).
  void Joined(double now);

  // --- clock -------------------------------------------------------------------
  uint64_t clock() const { return clock_; }
  uint64_t join_clock() const { return join_clock_; }
  // The clock rogd last moved this worker's versions to (joining,
  // rejoining, reattaching): every iteration up to it is credited, so a
  // batch the worker formed before it heard of the move counts none.
  uint64_t raised_to() const { return raised_to_; }
  // The worker reports (or resumes at) `iteration`; its clock never goes back.
  void AdvanceClock(uint64_t iteration);
  // rogd moves the worker to `clock` and credits it every iteration up to
  // there: its versions in *state are raised to it.
  void RaiseClock(uint64_t clock, ServerState* state);

  // --- the objects that own the rest of its state --------------------------------
  Uplink& uplink() { return uplink_; }
  const Uplink& uplink() const { return uplink_; }
  Downlink& downlink() { return downlink_; }
  const Downlink& downlink() const { return downlink_; }
  DownlinkPlan& plan() { return plan_; }
  const DownlinkPlan& plan() const { return plan_; }
  StallTracker& stall() { return stall_; }
  const StallTracker& stall() const { return stall_; }
  PushAsks& asks() { return asks_; }
  const PushAsks& asks() const { return asks_; }
  Detachment& detach() { return detach_; }
  const Detachment& detach() const { return detach_; }
  WorkerProgress& progress() { return progress_; }
  const WorkerProgress& progress() const { return progress_; }

 private:
  friend class WorkerRegistry;  // sessions, tokens, eviction

  std::string id_;
  size_t index_;
  uint64_t token_;
  WState state_ = WState::kConnected;
  uint64_t session_ = 0;
  uint64_t refused_session_ = 0;
  std::shared_ptr<Outbox> outbox_;
  std::string peer_;
  std::string sdk_version_;
  double disconnected_at_ = 0;
  double last_seen_ = 0;
  double joined_at_ = 0;
  uint64_t clock_;
  uint64_t join_clock_;
  uint64_t raised_to_ = 0;

  Uplink uplink_;
  Downlink downlink_;
  DownlinkPlan plan_;
  StallTracker stall_;
  PushAsks asks_;
  Detachment detach_;
  WorkerProgress progress_;
};

class WorkerRegistry {
 public:
  using Records = std::vector<std::unique_ptr<Worker>>;

  // --- lookups -------------------------------------------------------------------
  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  Records::const_iterator begin() const { return records_.begin(); }
  Records::const_iterator end() const { return records_.end(); }
  // The record in version column `index` (< size()).
  Worker& at(size_t index) const { return *records_[index]; }
  Worker* Find(const std::string& id) const;
  Worker* BySession(uint64_t session) const;
  // The worker of a stream whose messages still count: null once the
  // stream was replaced, closed or refused.
  Worker* Live(uint64_t session) const;

  // --- the team --------------------------------------------------------------------
  size_t Members() const;
  AttachedSet AttachedWorkers() const;
  // The slowest attached clock (but `except`'s); max uint64 with none.
  uint64_t MinAttachedClock(const Worker* except = nullptr) const;
  uint64_t MaxAttachedClock() const;
  // Every worker's clock, indexed like the version stores' columns.
  std::vector<uint64_t> Clocks() const;
  // Per worker index: whether rogd's last PushNow to it is unanswered.
  std::vector<bool> UnansweredAsks() const;
  // Whether the team formed: training has started.
  bool team_ready() const { return team_ready_; }
  // When it formed (0: before this process, or not yet).
  double team_ready_at() const { return team_ready_at_; }
  // The team forms at `now` once `team_size` members have joined: true
  // when it formed with this call.
  bool FormTeam(size_t team_size, double now);

  // --- records -----------------------------------------------------------------------
  // A new record (Worker's constructor) with a new resume token.
  Worker& Add(std::string id, size_t index, uint64_t clock, size_t rows);
  // Forgets every record (the model starts over).
  void Clear();
  // The records of a checkpoint (record i in column i), and whether the
  // team had formed.
  void Restore(Records records, bool team_ready);
  // A new incarnation of r (evicted, or its process restarted) rejoins at
  // `clock` (its join clock), with a new resume token.
  void Rejoin(Worker& r, uint64_t clock, ServerState* state);

  // --- streams -------------------------------------------------------------------------
  uint64_t NewSession() { return next_session_++; }
  // r's stream from now on: `session` through `outbox`, from `peer`.
  void Connect(Worker& r, uint64_t session, std::shared_ptr<Outbox> outbox, const std::string& peer,
               const std::string& sdk_version, double now);
  // A newer stream replaces r's (if it has one), which ends with `status`.
  void Replace(Worker& r, const absl::Status& status);
  // r is evicted: its stream (if any) ends with `status`.
  void Evict(Worker& r, const absl::Status& status);
  // Stream `session` ended: the worker whose current stream it was (now
  // without one), or null.
  Worker* Closed(uint64_t session);
  // Every stream ends with `status`; connected workers are disconnected.
  void Shutdown(const absl::Status& status);

 private:
  Records records_;  // by index
  std::map<std::string, size_t> by_id_;
  std::map<uint64_t, size_t> by_session_;
  uint64_t next_session_ = 1;
  std::mt19937_64 rng_{std::random_device{}()};  // resume tokens
  bool team_ready_ = false;
  double team_ready_at_ = 0;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_WORKERS_H_
