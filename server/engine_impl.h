// The engine core's private parts, shared by its files (server/engine_*.cc,
// one owner each; see server/engine_core.h). Not for use outside them.
#ifndef ROG_SERVER_ENGINE_IMPL_H_
#define ROG_SERVER_ENGINE_IMPL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/batch_plan.h"
#include "common/goodput.h"
#include "common/log_limiter.h"
#include "common/protocol_rules.h"
#include "common/server_state.h"
#include "common/staleness.h"
#include "proto/convert.h"
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

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr char kReplaced[] =
    "replaced by a newer stream of the same worker (a reconnect, or a second process under "
    "this worker id)";
// Bytes a stream's writer may have queued before the engine stops forming
// batches for it (the in-flight limit is the real bound; this keeps memory
// bounded while a stream is stuck).
constexpr uint64_t kMaxQueued = 256 * 1024;
// Rows listed in a pb::Stall directive.
constexpr size_t kMaxStallRows = 256;
// A detached worker whose downlink has been idle this long gets a probe: a
// batch of padding as large as its share (at most kMaxProbeBytes), so that
// the ack measures whether its link moves the share within the patience.
// Without it the estimate of a link that recovered while nothing flowed
// (the team idle, the worker paused) would never change.
constexpr double kProbeIdle = 0.25;
constexpr uint64_t kMaxProbeBytes = 256 * 1024;
// What the model state takes with `workers` worker records: the global
// model and a pending copy per worker (fp32), the global versions (rows x
// workers) and each worker's copy versions (rows x workers each).
uint64_t StateBytes(const Layout& layout, uint64_t workers);

enum class WState { kConnected, kDisconnected, kEvicted };

const char* StateName(WState s);

struct WorkerRec {
  // For a model of `rows` rows.
  explicit WorkerRec(size_t rows) : plan(rows) {}

  std::string id;
  size_t index = 0;  // column in the version storage
  uint64_t token = 0;
  WState state = WState::kConnected;
  uint64_t session = 0;
  // A session whose stream rogd refused: its later events are dropped (Live).
  uint64_t refused_session = 0;
  std::shared_ptr<Outbox> outbox;
  std::string peer;
  std::string sdk_version;
  double disconnected_at = 0;
  double last_seen = 0;
  double joined_at = 0;

  uint64_t clock = 0;
  uint64_t join_clock = 0;
  // The clock rogd last moved this worker's versions to (joining,
  // rejoining, reattaching): every iteration up to it is credited, so a
  // batch the worker formed before it heard of the move counts none.
  uint64_t raised_to = 0;
  // Uplink: what rogd applied of it.
  Uplink uplink;

  // Downlink: what was sent, and which rows go next.
  Downlink downlink;
  DownlinkPlan plan;

  // Stalls: its own, and what rogd asked it to push for others'.
  StallTracker stall;
  PushAsks asks;

  // Team patience: outside the bound and the window while detached.
  Detachment detach;
  // What the worker reported last, and its compute time per iteration.
  WorkerProgress progress;
};

}  // namespace engine_internal

struct EngineCore::Impl {
  using WorkerRec = engine_internal::WorkerRec;
  using WState = engine_internal::WState;
  using InFlight = engine_internal::InFlight;
  using SentBatch = engine_internal::SentBatch;

  EngineOptions opt;
  uint32_t bound = 0;
  double mta = 1;

  std::shared_ptr<const Layout> layout;
  std::unique_ptr<ServerState> state;
  uint64_t model_wire_bytes = 0;
  // The initial model while it arrives from the first worker.
  std::vector<float> staging;
  std::vector<bool> staged;
  size_t staged_rows = 0;
  std::vector<std::unique_ptr<WorkerRec>> workers;  // by index
  std::map<std::string, size_t> by_id;
  std::map<uint64_t, size_t> by_session;
  uint64_t next_session = 1;
  bool team_ready = false;
  double team_ready_at = 0;
  std::map<std::string, uint64_t> rejected;
  double start_time = 0;  // set by Create, from opt.clock
  double last_checkpoint_unix = 0;
  double last_checkpoint_time = 0;
  std::string last_checkpoint_path;
  std::mt19937_64 rng{std::random_device{}()};
  std::vector<float> decoded;
  double last_patience_check = 0;

  // Refusal lines, per reason and worker (a client can cause them at will).
  LogLimiter refusal_log;

  // Every reading of time goes through opt.clock (a FakeClock in tests).
  double Now() const { return opt.clock->Now(); }
  // --- helpers ---------------------------------------------------------------
  // A team member: not evicted (detached workers included).
  bool Member(const WorkerRec& r) const { return r.state != WState::kEvicted; }
  // Counts for the staleness bound and the window.
  bool Attached(const WorkerRec& r) const { return Member(r) && !r.detach.detached(); }

  AttachedSet AttachedWorkers() const {
    AttachedSet set(workers.size(), false);
    for (const auto& r : workers) set[r->index] = Attached(*r);
    return set;
  }

  WorkerRec* BySession(uint64_t session) {
    auto it = by_session.find(session);
    return it == by_session.end() ? nullptr : workers[it->second].get();
  }

  // The worker of a stream whose messages still count: null once the
  // stream was replaced, closed or refused.
  WorkerRec* Live(uint64_t session) {
    WorkerRec* r = BySession(session);
    return r == nullptr || r->refused_session == session ? nullptr : r;
  }

  // One line per refusal, at most a few per reason and client every 10 s
  // (a client can cause them as fast as it can send).
  void LogRefusal(const std::string& reason, const std::string& who, absl::string_view message);
  // Refuses what worker r sent on its current stream: nothing of it is
  // applied, it is counted under `reason` and logged, and the stream ends
  // with `status`; events the stream queued after it are dropped.
  void Refuse(WorkerRec& r, Rejection reason, const absl::Status& status);

  uint64_t MinAttachedClock(const WorkerRec* except = nullptr) const {
    uint64_t min = std::numeric_limits<uint64_t>::max();
    for (const auto& r : workers) {
      if (r.get() != except && Attached(*r)) min = std::min(min, r->clock);
    }
    return min;
  }

  // Every worker's clock, indexed like the version stores' columns.
  std::vector<uint64_t> Clocks() const {
    std::vector<uint64_t> clocks(workers.size(), 0);
    for (const auto& q : workers) clocks[q->index] = q->clock;
    return clocks;
  }
  // Per worker index: whether rogd's last PushNow to it is unanswered.
  std::vector<bool> UnansweredAsks() const {
    std::vector<bool> unanswered(workers.size(), false);
    for (const auto& q : workers) unanswered[q->index] = q->asks.unanswered();
    return unanswered;
  }

  uint64_t MaxAttachedClock() const {
    uint64_t max = 0;
    for (const auto& r : workers) {
      if (Attached(*r)) max = std::max(max, r->clock);
    }
    return max;
  }

  uint64_t RowWireBytes(RowId row) const {
    return rog::RowWireBytes(opt.codec, layout->row(row).numel);
  }

  // The version a downlink batch reports for `row`: the lowest over the other
  // attached workers; with nobody else, the worker's own clock.
  uint64_t ReportedVersion(const WorkerRec& r, RowId row, const AttachedSet& attached) const {
    const uint64_t v = MinOtherVersion(state->copy_versions(r.index), row, r.index, attached);
    return v == std::numeric_limits<uint64_t>::max() ? r.clock : v;
  }

  void SendDirective(WorkerRec& r, std::function<void(pb::Directive*)> fill) {
    if (!r.outbox) return;
    pb::ServerMessage m;
    fill(m.mutable_directive());
    r.outbox->Send(std::move(m));
  }

  // Bytes a worker moves per iteration at least: its MTA share under ROG,
  // the whole model under BSP and SSP (mta is 1 there).
  double ShareBytes() const { return mta * static_cast<double>(model_wire_bytes); }
  // Team patience: what it judges every policy's links by (the MTA share of
  // --staleness, MembershipShareBytes), and its length in seconds now, from
  // the attached workers' compute times (TeamPatience; 0 = off).
  double MembershipShare() const { return MembershipShareBytes(opt.staleness, model_wire_bytes); }
  double Patience() const;
  // The team's compute time per iteration (TeamComputeSeconds over the
  // connected attached workers; 0 while unmeasured).
  double TeamCompute() const;

  // The team's window (TeamWindow) over the connected attached workers'
  // links: the uplink as the worker measured it, the downlink as rogd did.
  double ComputeWindow() const;
  pb::Window CurrentWindow(uint64_t iteration) const;

  bool SpeculativeAllowed(const WorkerRec& r) const {
    return r.plan.sends_whole() || MaySpeculate(opt.policy, r.clock, MinAttachedClock());
  }

  // --- the worker registry (engine_admission.cc) -------------------------------
  absl::StatusOr<Admission> OnHello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                    const std::string& peer, Rejection* reason);
  struct CheckedHello {
    Layout layout;
    std::vector<bool> in_sync;  // rows the worker holds already (empty: none)
  };
  absl::StatusOr<CheckedHello> CheckHello(const pb::Hello& hello, Rejection* reason) const;
  absl::StatusOr<WorkerRec*> AdmitFirst(const pb::Hello& hello, Layout parsed, WorkerRec* known,
                                        const std::string& peer, pb::Welcome* welcome,
                                        Admission* admission);
  absl::StatusOr<WorkerRec*> AdmitMember(const pb::Hello& hello, CheckedHello checked,
                                         WorkerRec* known, const std::string& peer,
                                         pb::Welcome* welcome, Rejection* reason);
  void Resume(WorkerRec& r, const pb::Hello& hello, const std::string& peer);
  void Rejoin(WorkerRec& r, const pb::Hello& hello, const std::string& peer);
  absl::Status RoomForNewWorker(const pb::Hello& hello, Rejection* reason) const;
  absl::StatusOr<WorkerRec*> AddWorker(const pb::Hello& hello, const std::string& peer,
                                       Rejection* reason);
  void Connect(WorkerRec& r, uint64_t session, std::shared_ptr<Outbox> outbox,
               const pb::Hello& hello, const std::string& peer, pb::Welcome welcome);
  void ModelComplete();
  void CheckTeamReady();
  void Evict(WorkerRec& r, const std::string& reason, bool left = false);
  void OnClosed(uint64_t session);

  // --- stalls (engine_stalls.cc) -------------------------------------------------
  void CheckStalled(WorkerRec& r);
  void AskHolders(const WorkerRec& r, const StallPlan& plan, uint64_t needed, uint64_t min_clock,
                  bool ahead);
  void AskAhead(WorkerRec& r);
  void AskBeforeReport(WorkerRec& r);
  void ReplanStalls();
  // The version r needs to start its next iteration while it computes
  // (EngineOptions::downlink_lookahead, push_ahead); 0 when rogd does not
  // look ahead for it.
  uint64_t LookaheadVersion(const WorkerRec& r) const;

  // --- downlink (engine_downlink.cc) ---------------------------------------------
  void BuildDownlinkPlan(WorkerRec& r);
  std::vector<RowId> FirstRows(const WorkerRec& r) const;
  bool FormBatch(WorkerRec& r, const std::vector<RowId>& first, pb::RowBatch* b, SentBatch* sent);
  void AddReattachRows(const WorkerRec& r, BatchFill* fill);
  uint64_t DownBatchBytes(const WorkerRec& r) const;
  // The bytes r's downlink may keep unacknowledged (InFlightLimit).
  uint64_t DownInFlightLimit(const WorkerRec& r) const;
  void Pump(WorkerRec& r);
  void PumpAll();
  bool ResumeDownlink(WorkerRec& r, const pb::Hello& hello);
  void StartResync(WorkerRec& r, std::vector<bool> in_sync, pb::Welcome* welcome);

  // --- events (engine_core.cc) ---------------------------------------------------
  void OnBatch(uint64_t session, UplinkBatch& batch);
  bool CheckBatch(WorkerRec& r, UplinkBatch& b);
  void ApplyBatch(WorkerRec& r, const UplinkBatch& b);
  void OnAck(uint64_t session, const pb::Ack& ack);
  void OnProgress(uint64_t session, const pb::Progress& p);
  void OnTick();
  void SendFreshWindows(uint64_t min_before, const WorkerRec* except);

  // --- team patience and pace (engine_patience.cc) --------------------------------
  void CheckPatience(double now);
  bool MayReattach(WorkerRec& q, double now, double patience);
  void NoteNotPaused(WorkerRec& q, bool fits, double now, double patience);
  std::string PatienceText(double patience) const;
  bool OthersHoldAll(const WorkerRec& q) const;
  void MaybeProbe(WorkerRec& q, double now);
  double ShareSeconds(const WorkerRec& q) const;
  double TeamRate(const WorkerRec* with, const WorkerRec* without) const;
  std::string PaceDetachReason(double now);
  WorkerRec* pace_candidate = nullptr;  // set by PaceDetachReason
  void SendKnownVersions(const WorkerRec* except);
  void Detach(WorkerRec& q, const std::string& reason);
  void Reattach(WorkerRec& q, const std::string& reason);
  void SendDetached(WorkerRec& q);

  // --- checkpoints (engine_checkpoint.cc) ------------------------------------------
  absl::StatusOr<pb::CheckpointReply> WriteCheckpointNow();
  absl::Status Restore(const std::string& path);

  // --- admin answers (engine_reports.cc) -------------------------------------------
  pb::StatusReply StatusReport() const;
  pb::WorkersReply WorkersReport() const;
  std::map<uint64_t, uint64_t> StalenessCounts() const;
  absl::StatusOr<pb::StalenessReply> StalenessReport(const pb::StalenessRequest& request) const;
  absl::Status Invariants() const;
};

}  // namespace rog

#endif  // ROG_SERVER_ENGINE_IMPL_H_
