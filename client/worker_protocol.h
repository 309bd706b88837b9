// The worker's end of ROG's protocol (docs/protocol.md) as a state machine:
// the replica, the accumulators and what the worker knows of the others'
// versions (WorkerState), the uplink sender (ATP's plan, the in-flight cap,
// the deadline taper), the downlink and its acks, and what rogd said of
// this worker's place in the team. It orchestrates parts that each own
// one concern, with their invariants in their headers:
//   - UplinkInFlight (client/uplink_in_flight.h): the batches in flight,
//     their seqs, the goodput and round trip their acks measure;
//   - ReplayBuffer (client/replay_buffer.h): acknowledged batches rogd has
//     not checkpointed, sent again if it restarts from a checkpoint;
//   - RowQueue (common/row_queue.h), twice: the rows a stalled peer asked
//     for (forced) and the rows asked for ahead of a peer's need;
//   - PushStatistics (client/push_statistics.h): every push's and
//     iteration's statistics and the totals progress reports carry.
// Free of gRPC, threads and locks: it answers rogd's messages and says what
// to write next; time comes from its clock only.
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
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client/push_statistics.h"
#include "client/replay_buffer.h"
#include "client/sent_batch.h"
#include "client/uplink_in_flight.h"
#include "client/worker_stats.h"
#include "common/batch_plan.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/goodput.h"
#include "common/layout.h"
#include "common/protocol_rules.h"
#include "common/row_queue.h"
#include "common/staleness.h"
#include "common/worker_state.h"
#include "proto/convert.h"

namespace rog {

// Set by name, one member at a time (ProtocolOptions o; o.batch_bytes =
// ...;): it has no positional initialisation (its constructor is explicit,
// so it is no aggregate), and members may be added anywhere.
struct ProtocolOptions {
  explicit ProtocolOptions() = default;

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
  // ROG: a worker at the slowest attached clock, which sends only its
  // mandatory rows and its MTA share (MaySpeculate), sends every row of its
  // plan when they fit its in-flight cap or its window (SendsWhole in
  // common/protocol_rules.h). Off: it cost ROG up to 7% in the simulator
  // (docs/design.md, "Pacing"). The simulator's --send_whole_when_it_fits;
  // not a WorkerOptions field.
  bool send_whole_when_it_fits = false;
  // What the final flush (StartDrain, Worker::Finish) pushes of what the
  // worker still holds: 1/N of it under ROG (kAverage), or all of it
  // (kSum). See DrainKeep in common/protocol_rules.h.
  DrainRule drain = DrainRule::kAverage;
  // Staleness-aware weighting of the worker's own update (StaleWeight in
  // common/protocol_rules.h): each row's part weighted 1 / (1 + s), s the
  // iterations of the team's updates the row lacked when the iteration
  // began. The simulator's --stale_weight; not a WorkerOptions field: it
  // lowered the final model in the simulator (issue 58, see
  // results/2026-12-04-stale-weight-55016c8/README.md).
  bool stale_weight = false;
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
  bool said_goodbye() const { return goodbye_.said; }
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
  // The weight StartPush gives row `row`'s part of the update of the
  // iteration begun last (1 unless options' stale_weight).
  float update_weight(RowId row) const { return row_weights_.empty() ? 1.0f : row_weights_[row]; }
  // Whether EndIteration may return at `now`: detached, disconnected (noted
  // in the stats), or the rows it waits for on their way.
  bool PushEnds(double now);
  // When to look at PushEnds again at the latest (acks and disconnects
  // come as events before it).
  double PushWakeAt(double now) const;
  // Whether every batch sent is acknowledged (nothing in flight).
  bool AllAcknowledged() const { return uplink_.empty(); }
  // Ends the push; the iteration's stats.
  IterationStats FinishPush();

  // --- Flush, Sync ------------------------------------------------------------------
  // The end of training: keeps DrainKeep(policy, options' drain, team
  // size) of what every row holds and takes the rest out of the replica
  // (WorkerState::KeepHeld); FlushStep then pushes what is kept. Returns
  // the fraction kept (1: nothing changed, e.g. before any welcome).
  double StartDrain();
  // Connected, with the initial model (if this worker brings it) uploaded.
  bool Uploaded() const;
  // Asks for every row with something unpushed to go now; true once rogd
  // acknowledged all of it.
  bool FlushStep();
  // After a flush: asks rogd for every pending row (once per stream); true
  // once rogd said it sent them all.
  bool SyncStep();
  void CancelSync() { flush_.waiting = false; }

  // --- what the facade reports ---------------------------------------------------------
  uint64_t clock() const { return state_.clock(); }
  const std::vector<float>& replica() const { return state_.replica(); }
  double total_stall() const { return stats_.total_stall(); }
  double total_detached() const { return stats_.total_detached(); }
  bool detached() const { return team_.detached; }
  uint64_t detaches() const { return team_.detaches; }
  uint64_t replayed() const { return replay_.replayed(); }
  uint64_t replay_dropped() const { return replay_.dropped(); }
  // rogd's last account of why the worker waits ("" reason: none).
  const StallInfo& stall() const { return team_.stall; }
  // The window rogd sent last.
  const pb::Window& window() const { return team_.window; }

 private:
  // The terms the welcome set for the stream (OnWelcome alone writes them).
  struct Terms {
    uint64_t token = 0;  // the resume token to present on the next hello
    SyncPolicy policy = SyncPolicy::kRog;
    uint32_t bound = 0;
    double mta = 1;
    Codec codec = Codec::kFp32;
    uint64_t model_wire_bytes = 0;  // every row once in `codec`
    uint64_t team_size = 0;         // Welcome.team_size (0: unknown)
  };
  // What rogd said of this worker's place in the team: released, stalled
  // (and whether this worker said it waits), detached (team patience).
  // A welcome or a Begin resets the per-wait parts.
  struct Team {
    bool ready = false;  // Welcome.team_ready, or a Release since
    // rogd's last Release: the worker may start the iteration after this
    // clock (a Release may arrive while the next iteration computes: it
    // must not let the one after start).
    bool released = false;
    uint64_t released_clock = 0;
    bool stall_reported = false;  // this wait's stalled progress is queued
    StallInfo stall;
    pb::Window window;  // the window rogd sent last
    // Team patience (pb::Detached): outside the bound; pushes everything
    // it holds in the background; trains on its own while its clock is
    // below `local_until`, then pauses until rogd reattaches it.
    bool detached = false;
    uint64_t local_until = 0;
    // Detached: this worker told rogd it pauses (Progress.paused, at its
    // clock) since the detachment or its last local step.
    bool pause_reported = false;
    std::string detach_reason;
    uint64_t detaches = 0;
  };
  // The downlink: the seq expected next and the ack owed for it.
  struct Downlink {
    uint64_t next_seq = 1;
    uint64_t stream = 0;  // Welcome.stream of the stream next_seq counts on
    uint64_t ack_seq = 0;
    uint64_t ack_bytes = 0;
    bool ack_due = false;
  };
  // The push of the last EndIteration while its rows go (transmitting):
  // its plan, its window's deadline and its phase; sent_phase says which
  // rows went in the phase already.
  struct Push {
    Plan plan;
    bool transmitting = false;
    bool speculate = true;
    double deadline = std::numeric_limits<double>::infinity();
    uint64_t phase = 0;
    std::vector<uint64_t> sent_phase;  // per row: last phase it was sent in
  };
  // Flush and Sync: rogd's answer to a flush request.
  struct Flush {
    bool waiting = false;  // a flush progress report is out
    bool flushed = false;  // rogd's Release said every pending row went
  };
  struct Goodbye {
    bool due = false;
    bool said = false;
    std::string reason;
  };

  uint64_t RowWireBytes(RowId row) const;
  uint64_t BatchBytes() const;
  uint64_t InFlightCap() const;
  double Goodput() const;
  bool WindowOpen(double now) const;
  bool Pushable(RowId row) const;
  bool PlanFinished(double now) const;
  bool ReturnsAfterShare() const;
  bool ReturnPointPassed() const;
  pb::Progress MakeProgress(bool stalled, bool flush) const;
  std::string HelloRowDigests() const;

  void ReturnInFlight(uint64_t applied);
  void AcceptWelcome(const pb::Welcome& w, const std::vector<RowId>& held);
  absl::Status OnBatch(const pb::RowBatch& b);
  void AddBackInFlight(RowId row, uint64_t applied_seq, uint64_t version);
  void OnAck(const pb::Ack& a);
  void OnDirective(const pb::Directive& d);
  void OnPushNow(const pb::PushNow& p);
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
  Terms terms_;
  Team team_;
  Downlink down_;
  size_t resync_rows_ = 0;  // VALUES rows of a resync still expected
  Flush flush_;
  RowId values_next_ = 0;  // initial model upload; == rows when none/done
  UplinkInFlight uplink_;
  ReplayBuffer replay_;
  RowQueue forced_;  // rows a stalled peer waits for: first, whatever the window
  // Rows rogd asked for ahead of a peer's need (PushNow.ahead): first while
  // a window is open, never past it.
  RowQueue ahead_;
  Push push_;
  std::deque<pb::Progress> progress_out_;
  Goodbye goodbye_;
  bool in_iteration_ = false;
  // stale_weight: each row's StaleWeight when the iteration began.
  std::vector<float> row_weights_;
  PushStatistics stats_;
};

}  // namespace rog

#endif  // ROG_CLIENT_WORKER_PROTOCOL_H_
