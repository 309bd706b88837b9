// The engine core's private parts: EngineCore::Impl, whose event handlers
// are split over server/engine_*.cc by concern (server/engine_core.h), and
// the objects that own the engine's state, each in a header and .cc of its
// own (docs/design.md, "Who owns what in the engine"). Not for use outside
// the engine core.
#ifndef ROG_SERVER_ENGINE_IMPL_H_
#define ROG_SERVER_ENGINE_IMPL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
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
#include "server/engine_checkpoint.h"
#include "server/engine_core.h"
#include "server/engine_downlink_state.h"
#include "server/engine_model.h"
#include "server/engine_workers.h"

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
}  // namespace engine_internal

struct EngineCore::Impl {
  using Worker = engine_internal::Worker;
  using WorkerRegistry = engine_internal::WorkerRegistry;
  using WState = engine_internal::WState;
  using Checkpointer = engine_internal::Checkpointer;
  using InFlight = engine_internal::InFlight;
  using ModelStore = engine_internal::ModelStore;
  using SentBatch = engine_internal::SentBatch;

  // Under `options` (a null clock: the steady clock). Restores no
  // checkpoint (EngineCore::Create does).
  explicit Impl(EngineOptions options);

  // The run's settings, set once by the constructor (engine_core.cc).
  const EngineOptions opt;
  const uint32_t bound;  // EffectiveBound
  const double mta;      // the MTA share of the model, 1 under BSP and SSP
  const double start_time;

  // The engine's state, one owner each: their fields are private, written
  // in their own .cc files only.
  ModelStore model;         // the layout, the model state, the first upload
  WorkerRegistry workers;   // the worker records (each owns its parts), the team
  Checkpointer checkpoint;  // writes and restores model and workers

  // The rest is Impl's own, each field written in one file only.
  // engine_core.cc (Refuse, EngineCore::CountRejection): refusals counted
  // per reason label, and their log lines, per reason and worker (a client
  // can cause them at will).
  std::map<std::string, uint64_t> rejected;
  LogLimiter refusal_log;
  // engine_downlink.cc (FormBatch): a decode buffer reused across rows.
  std::vector<float> decoded;
  // engine_patience.cc: when CheckPatience last judged, and the worker
  // PaceDetachReason picked.
  double last_patience_check = 0;
  Worker* pace_candidate = nullptr;
  // engine_core.cc (EngineCore::set_deferred_settle, OnBatch, OnAck,
  // Settle): whether batches and acks leave their follow-up to Settle, and
  // whether one is owed.
  bool defer_settle = false;
  bool unsettled = false;

  // Every reading of time goes through opt.clock (a FakeClock in tests).
  double Now() const { return opt.clock->Now(); }
  // --- helpers ---------------------------------------------------------------
  // One line per refusal, at most a few per reason and client every 10 s
  // (a client can cause them as fast as it can send).
  void LogRefusal(const std::string& reason, const std::string& who, absl::string_view message);
  // Refuses what worker r sent on its current stream: nothing of it is
  // applied, it is counted under `reason` and logged, and the stream ends
  // with `status`; events the stream queued after it are dropped.
  void Refuse(Worker& r, Rejection reason, const absl::Status& status);

  // The version a downlink batch reports for `row`: the lowest over the other
  // attached workers; with nobody else, the worker's own clock.
  uint64_t ReportedVersion(const Worker& r, RowId row, const AttachedSet& attached) const {
    const uint64_t v =
        MinOtherVersion(model.state().copy_versions(r.index()), row, r.index(), attached);
    return v == std::numeric_limits<uint64_t>::max() ? r.clock() : v;
  }

  void SendDirective(Worker& r, std::function<void(pb::Directive*)> fill) {
    if (!r.outbox()) return;
    pb::ServerMessage m;
    fill(m.mutable_directive());
    r.outbox()->Send(std::move(m));
  }

  // Bytes a worker moves per iteration at least: its MTA share under ROG,
  // the whole model under BSP and SSP (mta is 1 there).
  double ShareBytes() const { return mta * static_cast<double>(model.wire_bytes()); }
  // Team patience: what it judges every policy's links by (the MTA share of
  // --staleness, MembershipShareBytes), and its length in seconds now, from
  // the attached workers' compute times (TeamPatience; 0 = off).
  double MembershipShare() const { return MembershipShareBytes(opt.staleness, model.wire_bytes()); }
  double Patience() const;
  // The team's compute time per iteration (TeamComputeSeconds over the
  // connected attached workers; 0 while unmeasured).
  double TeamCompute() const;

  // The team's window (TeamWindow) over the connected attached workers'
  // links: the uplink as the worker measured it, the downlink as rogd did.
  double ComputeWindow() const;
  pb::Window CurrentWindow(uint64_t iteration) const;

  bool SpeculativeAllowed(const Worker& r) const {
    return r.plan().sends_whole() ||
           MaySpeculate(opt.policy, r.clock(), workers.MinAttachedClock());
  }

  // --- the worker registry (engine_admission.cc) -------------------------------
  absl::StatusOr<Admission> OnHello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                    const std::string& peer, Rejection* reason);
  struct CheckedHello {
    Layout layout;
    std::vector<bool> in_sync;  // rows the worker holds already (empty: none)
  };
  absl::StatusOr<CheckedHello> CheckHello(const pb::Hello& hello, Rejection* reason) const;
  absl::StatusOr<Worker*> AdmitFirst(const pb::Hello& hello, Layout parsed, Worker* known,
                                     const std::string& peer, pb::Welcome* welcome,
                                     Admission* admission);
  absl::StatusOr<Worker*> AdmitMember(const pb::Hello& hello, CheckedHello checked, Worker* known,
                                      const std::string& peer, pb::Welcome* welcome,
                                      Rejection* reason);
  void Resume(Worker& r, const pb::Hello& hello, const std::string& peer);
  void Rejoin(Worker& r, const pb::Hello& hello, const std::string& peer);
  absl::Status RoomForNewWorker(const pb::Hello& hello, Rejection* reason) const;
  absl::StatusOr<Worker*> AddWorker(const pb::Hello& hello, const std::string& peer,
                                    Rejection* reason);
  void Connect(Worker& r, uint64_t session, std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
               const std::string& peer, pb::Welcome welcome);
  void ModelComplete();
  void CheckTeamReady();
  void Evict(Worker& r, const std::string& reason, bool left = false);
  void OnClosed(uint64_t session);

  // --- stalls (engine_stalls.cc) -------------------------------------------------
  void CheckStalled(Worker& r);
  void AskHolders(const Worker& r, const StallPlan& plan, uint64_t needed, uint64_t min_clock,
                  bool ahead);
  void AskAhead(Worker& r);
  void AskBeforeReport(Worker& r);
  void ReplanStalls();
  // The version r needs to start its next iteration while it computes
  // (EngineOptions::downlink_lookahead, push_ahead); 0 when rogd does not
  // look ahead for it.
  uint64_t LookaheadVersion(const Worker& r) const;

  // --- downlink (engine_downlink.cc) ---------------------------------------------
  void BuildDownlinkPlan(Worker& r);
  std::vector<RowId> FirstRows(const Worker& r) const;
  bool FormBatch(Worker& r, const std::vector<RowId>& first, pb::RowBatch* b, SentBatch* sent);
  void AddReattachRows(const Worker& r, BatchFill* fill);
  uint64_t DownBatchBytes(const Worker& r) const;
  // The bytes r's downlink may keep unacknowledged (InFlightLimit).
  uint64_t DownInFlightLimit(const Worker& r) const;
  void Pump(Worker& r);
  void PumpAll();
  bool ResumeDownlink(Worker& r, const pb::Hello& hello);
  void StartResync(Worker& r, std::vector<bool> in_sync, pb::Welcome* welcome);

  // --- events (engine_core.cc) ---------------------------------------------------
  void OnBatch(uint64_t session, UplinkBatch& batch);
  bool CheckBatch(Worker& r, UplinkBatch& b);
  void ApplyBatch(Worker& r, const UplinkBatch& b);
  void OnAck(uint64_t session, const pb::Ack& ack);
  void OnProgress(uint64_t session, const pb::Progress& p);
  void OnTick();
  void SendFreshWindows(uint64_t min_before, const Worker* except);

  // --- team patience and pace (engine_patience.cc) --------------------------------
  void CheckPatience(double now);
  bool MayReattach(Worker& q, double now, double patience);
  void NoteNotPaused(Worker& q, bool fits, double now, double patience);
  std::string PatienceText(double patience) const;
  bool OthersHoldAll(const Worker& q) const;
  void MaybeProbe(Worker& q, double now);
  double ShareSeconds(const Worker& q) const;
  double TeamRate(const Worker* with, const Worker* without) const;
  std::string PaceDetachReason(double now);
  void SendKnownVersions(const Worker* except);
  void Detach(Worker& q, const std::string& reason);
  void Reattach(Worker& q, const std::string& reason);
  void SendDetached(Worker& q);

  // --- checkpoints (the Checkpointer, engine_checkpoint.cc) ---------------------------
  absl::StatusOr<pb::CheckpointReply> WriteCheckpointNow() {
    return checkpoint.Write(model, workers);
  }

  // --- admin answers (engine_reports.cc) -------------------------------------------
  pb::StatusReply StatusReport() const;
  pb::WorkersReply WorkersReport() const;
  std::map<uint64_t, uint64_t> StalenessCounts() const;
  absl::StatusOr<pb::StalenessReply> StalenessReport(const pb::StalenessRequest& request) const;
  absl::Status Invariants() const;
};

}  // namespace rog

#endif  // ROG_SERVER_ENGINE_IMPL_H_
