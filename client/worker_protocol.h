// The worker's end of ROG's protocol (docs/protocol.md) as a state machine:
// the replica, the accumulators and what the worker knows of the others'
// versions (WorkerState), the uplink sender (ATP's plan, the in-flight cap,
// the deadline taper), the replay buffer of acknowledged batches rogd has
// not checkpointed, the downlink and its acks, and the statistics of every
// push. Free of gRPC, threads and locks: it answers rogd's messages and
// says what to write next; time comes from its clock only.
//
// Two drivers run it: rog::Worker (client/worker.cc), which adds the
// stream, the threads, the waits and the reconnects, and the simulator
// (sim/), on a simulated clock with simulated links. Both run the same
// rules because they run this code.
//
// Not thread-safe: the driver serialises every call.
#ifndef ROG_CLIENT_WORKER_PROTOCOL_H_
#define ROG_CLIENT_WORKER_PROTOCOL_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client/worker_stats.h"
#include "common/batch_plan.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/goodput.h"
#include "common/layout.h"
#include "common/staleness.h"
#include "common/worker_state.h"
#include "proto/convert.h"

namespace rog {

struct ProtocolOptions {
  std::string worker_id;  // for log lines
  // See WorkerOptions.
  size_t batch_bytes = 16 * 1024;
  double batch_seconds = kDefaultBatchSeconds;
  double inflight_lead = 0.05;
  size_t replay_buffer_bytes = 64 << 20;
  // ROG: EndIteration returns once the rows it waits for are on their way
  // (see share_in_background); the window's other rows
  // stream on in the background while the next iteration computes, until
  // the window closes or the next push starts. Off: it returns once the
  // window has closed (or every selected row is on its way).
  bool return_after_share = true;
  // With return_after_share: the MTA share streams in the background too,
  // so EndIteration waits for the mandatory rows alone (rows at the
  // staleness bound, which a peer may need before its next iteration).
  // Off: it waits for the MTA share as well (as before 2026-11-26).
  bool share_in_background = true;
  // Every reading of time (null: the steady clock).
  std::shared_ptr<const Clock> clock;
};

class WorkerProtocol {
 public:
  WorkerProtocol(ProtocolOptions options, Layout layout, std::vector<float> initial);

  const Layout& layout() const { return layout_; }
  double Now() const { return clock_->Now(); }

  // --- the stream -----------------------------------------------------------------
  // The hello that opens a stream: who this is, the layout, how far it got.
  pb::Hello MakeHello() const;
  // The stream's welcome; the worker is connected from here. An error
  // means the welcome does not fit: drop the stream.
  absl::Status OnWelcome(const pb::Welcome& welcome);
  // Any later message of rogd's but pb::StreamEnd. An error means the
  // stream must be dropped (a downlink batch that does not decode).
  absl::Status OnMessage(const pb::ServerMessage& message);
  // The stream ended, whatever the reason: not connected until a welcome.
  void OnStreamEnded() { active_ = false; }
  bool active() const { return active_; }
  // What to write next, in order: an ack of the downlink, progress reports,
  // at most one row batch (within the in-flight cap), or the goodbye once
  // everything else is acknowledged. Empty when nothing may go now.
  std::vector<pb::WorkerMessage> TakeOutgoing();
  bool said_goodbye() const { return said_goodbye_; }
  // Queues the goodbye (sent once nothing else is in flight).
  void SayGoodbye(const std::string& reason);

  // --- BeginIteration -------------------------------------------------------------
  bool in_iteration() const { return in_iteration_; }
  // Whether the policy lets the next iteration start now.
  bool MayBegin() const;
  // Called while BeginIteration waits: tells rogd once per wait that this
  // worker waits, so that it releases it or asks the others to push; while
  // detached, that it pauses (rogd reattaches only a paused worker). True
  // when a message was queued.
  bool ReportWait();
  // Why the worker waits (while connected).
  std::string WaitReason() const;
  // A wait that timed out: counted in the totals now, and in the stats of
  // the iteration that starts eventually.
  void CountTimedOutWait(double stalled_seconds, double detached_seconds);
  // Starts an iteration at `now` after a wait that began at `t0` (`waited`:
  // it had to wait; `detached_wait`: of that, the time spent detached); the
  // replica goes to `params` (layout().total_numel() elements).
  void Begin(double t0, double now, bool waited, double detached_wait, absl::Span<float> params);

  // --- EndIteration -----------------------------------------------------------------
  // Applies the iteration's update (finite, layout().total_numel()
  // elements) and starts its push: the plan, the window, a progress report.
  void StartPush(absl::Span<const float> update);
  // Whether EndIteration may return at `now`: detached, disconnected (noted
  // in the stats), or the rows it waits for on their way.
  bool PushEnds(double now);
  // When to look at PushEnds again at the latest (acks and disconnects
  // come as events before it).
  double PushWakeAt(double now) const;
  // Whether every batch sent is acknowledged (nothing in flight).
  bool AllAcknowledged() const { return inflight_.empty(); }
  // Ends the push; the iteration's stats.
  IterationStats FinishPush();

  // --- Flush, Sync ------------------------------------------------------------------
  // Connected, with the initial model (if this worker brings it) uploaded.
  bool Uploaded() const;
  // Asks for every row with something unpushed to go now; true once rogd
  // acknowledged all of it.
  bool FlushStep();
  // After a flush: asks rogd for every pending row (once per stream); true
  // once rogd said it sent them all.
  bool SyncStep();
  void CancelSync() { flush_waiting_ = false; }

  // --- what the facade reports ---------------------------------------------------------
  uint64_t clock() const { return state_.clock(); }
  const std::vector<float>& replica() const { return state_.replica(); }
  double total_stall() const { return total_stall_; }
  double total_detached() const { return total_detached_; }
  bool detached() const { return detached_; }
  uint64_t detaches() const { return detaches_; }
  uint64_t replayed() const { return replayed_; }
  uint64_t replay_dropped() const { return replay_dropped_; }
  // rogd's last account of why the worker waits ("" reason: none).
  const StallInfo& stall() const { return stall_; }
  // The window rogd sent last.
  const pb::Window& window() const { return window_; }

 private:
  // An uplink batch sent and not yet acknowledged: enough to undo it.
  struct SentBatch {
    uint64_t seq = 0;
    pb::BatchKind kind = pb::BATCH_KIND_UPDATE;
    std::vector<RowId> rows;
    std::vector<uint32_t> counts;
    std::vector<float> decoded;  // UPDATE: what the server folds, concatenated
    uint64_t bytes = 0;
    uint64_t phase = 0;    // the transmission phase that sent it
    bool in_push = false;  // formed inside EndIteration: part of that phase's push
    double sent_at = 0;
  };
  // A push whose statistics are not complete yet: its EndIteration has not
  // returned, or some of its batches are unacknowledged.
  struct OpenPush {
    uint64_t phase = 0;
    PushStats stats;
    double t0 = 0;  // EndIteration's call
    double deadline = 0;
    double last_ack = 0;
    uint64_t unacked = 0;  // its batches in flight
    bool ended = false;    // its EndIteration returned
  };

  uint64_t RowWireBytes(RowId row) const;
  uint64_t BatchBytes() const;
  uint64_t InFlightCap() const;
  bool WindowOpen(double now) const;
  bool Pushable(RowId row) const;
  bool PlanFinished(double now) const;
  bool ReturnsAfterShare() const;
  bool ReturnPointPassed() const;
  pb::Progress MakeProgress(bool stalled, bool flush) const;
  std::string HelloRowDigests() const;

  void ReplayLost(uint64_t applied);
  void ReturnInFlight(uint64_t applied);
  void AcceptWelcome(const pb::Welcome& w, const std::vector<RowId>& held);
  absl::Status OnBatch(const pb::RowBatch& b);
  void AddBackInFlight(RowId row, uint64_t applied_seq, uint64_t version);
  static size_t ReplayBytes(const SentBatch& b);
  void KeepForReplay(SentBatch b, double now);
  void OnAck(const pb::Ack& a);
  OpenPush* PushOf(const SentBatch& b);
  void CompletePushes();
  void OnDirective(const pb::Directive& d);
  void OnStall(const pb::Stall& s);
  void OnDetached(const pb::Detached& d);
  void OnReattached(const pb::Reattached& r);
  bool FormUplink(pb::WorkerMessage* m);
  void FillValues(SentBatch* sent, std::string* payload);
  bool FillUpdates(SentBatch* sent, std::string* payload);
  void FinishBatch(SentBatch sent, pb::RowBatch* b);

  ProtocolOptions opt_;
  std::shared_ptr<const Clock> clock_;
  Layout layout_;
  WorkerState state_;

  bool active_ = false;  // welcomed, and the stream not ended since
  uint64_t token_ = 0;
  SyncPolicy policy_ = SyncPolicy::kRog;
  uint32_t bound_ = 0;
  double mta_ = 1;
  Codec codec_ = Codec::kFp32;
  uint64_t model_wire_bytes_ = 0;
  bool HackFill() const;
  bool team_ready_ = false;
  // rogd's last Release: the worker may start the iteration after this clock
  // (a Release may arrive while the next iteration computes: it must not
  // let the one after start).
  bool released_ = false;
  uint64_t released_clock_ = 0;
  bool stall_reported_ = false;
  StallInfo stall_;
  pb::Window window_;
  // Team patience (pb::Detached): outside the bound; pushes everything it
  // holds in the background; trains on its own while its clock is below
  // `local_until_`, then pauses until rogd reattaches it.
  bool detached_ = false;
  uint64_t local_until_ = 0;
  // Detached: this worker told rogd it pauses (Progress.paused, at its
  // clock) since the detachment or its last local step.
  bool pause_reported_ = false;
  std::string detach_reason_;
  uint64_t detaches_ = 0;
  // Downlink.
  uint64_t next_down_seq_ = 1;
  uint64_t downlink_stream_ = 0;  // Welcome.stream of the stream next_down_seq_ counts on
  uint64_t down_ack_seq_ = 0;
  uint64_t down_ack_bytes_ = 0;
  bool ack_due_ = false;
  size_t resync_rows_ = 0;  // VALUES rows still expected
  bool flush_waiting_ = false;
  bool flushed_ = false;
  // Uplink.
  uint64_t last_acked_up_ = 0;
  uint64_t next_up_seq_ = 1;
  std::deque<SentBatch> inflight_;
  // Acknowledged update batches not yet in a checkpoint of rogd's
  // (Ack.durable_seq): if rogd dies with -9 and restarts from its last
  // checkpoint, its Welcome says it applied less, and these are replayed.
  std::deque<SentBatch> not_durable_;
  size_t not_durable_bytes_ = 0;
  uint64_t replayed_ = 0, replay_dropped_ = 0;
  double replay_warned_at_ = -1e9;
  // Batches acknowledged while a resync is under way: rogd sends acks ahead
  // of queued rows, so values formed before a batch was applied may arrive
  // after its ack, and the batch must still be added back to them.
  std::deque<SentBatch> acked_in_resync_;
  uint64_t inflight_bytes_ = 0;
  GoodputEstimator goodput_;
  RoundTripFilter rtt_;    // the uplink's round trip
  RowId values_next_ = 0;  // initial model upload; == rows when none/done
  std::deque<RowId> forced_;
  std::vector<bool> is_forced_;
  // Rows rogd asked for ahead of a peer's need (PushNow.ahead): first while
  // a window is open, never past it.
  std::deque<RowId> ahead_;
  std::vector<bool> is_ahead_;
  Plan plan_;
  bool transmitting_ = false;
  bool speculate_ = true;
  double deadline_;
  uint64_t phase_ = 0;
  std::vector<uint64_t> sent_phase_;  // per row: last phase it was sent in
  std::deque<OpenPush> open_pushes_;
  std::vector<std::pair<double, PushStats>> pushes_done_;  // (its t0, stats)
  std::deque<pb::Progress> progress_out_;
  bool goodbye_due_ = false;
  bool said_goodbye_ = false;
  std::string goodbye_reason_;

  // Statistics.
  IterationStats current_;
  double begin_returned_ = 0;
  double push_started_ = 0;
  bool in_iteration_ = false;
  double total_compute_ = 0, total_transmit_ = 0, total_stall_ = 0, total_detached_ = 0;
  double last_compute_ = 0;  // the last finished iteration's (Progress.last_compute_seconds)
  // Waits of BeginIteration calls that timed out, for the next stats.
  double carry_stall_ = 0, carry_detached_ = 0;
  uint64_t total_stalls_ = 0;
  double last_overshoot_ = 0;
};

}  // namespace rog

#endif  // ROG_CLIENT_WORKER_PROTOCOL_H_
