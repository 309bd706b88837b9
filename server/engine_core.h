// rogd's engine core: the parameter server's state and every protocol rule
// it runs, as a single-threaded state machine over events, free of gRPC,
// threads and the steady clock. Each event (a hello, a row batch, an ack, a
// progress report, a stream's end, a tick) runs to completion on the
// caller's thread and answers through the streams' Outboxes; time is read
// from EngineOptions::clock only.
//
// Two drivers run it: rogd's Engine (server/engine.h), one engine thread
// fed by the stream handlers, and the simulator (sim/), on a simulated clock
// with simulated links. Both run the same rules because they run this code.
//
// The core is split by owner (docs/design.md, "Who owns what in the
// engine"). Its state lives in objects with private fields, one owner each
// (server/engine_impl.h lists them: the model, the worker registry and
// each worker's parts, the checkpointer). The rules are EngineCore::Impl's
// event handlers, which call those objects:
//   engine_core.cc       events, the window, refusals
//   engine_admission.cc  hello, resume, rejoin, lease, eviction, the first
//                        worker's model
//   engine_downlink.cc   row batches to workers: plans, resyncs, resumes
//   engine_stalls.cc     stalled workers: PushNow, stall causes
//   engine_patience.cc   team patience and pace: detach, probe, reattach
//   engine_reports.cc    admin answers: status, workers, staleness, metrics
// Not thread-safe: one caller at a time.
#ifndef ROG_SERVER_ENGINE_CORE_H_
#define ROG_SERVER_ENGINE_CORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/goodput.h"
#include "common/layout.h"
#include "common/protocol_rules.h"
#include "common/staleness.h"
#include "proto/convert.h"
#include "server/rejection.h"

namespace rog {

struct EngineOptions {
  SyncPolicy policy = SyncPolicy::kRog;
  uint32_t staleness = 4;
  Codec codec = Codec::kFp32;
  // Workers to wait for before the first iteration.
  size_t team_size = 1;
  // How long a disconnected worker's state is kept before it is evicted.
  double lease_seconds = 30;
  uint64_t max_message_bytes = 4 << 20;
  // Worker records kept (connected, disconnected and evicted): each holds a
  // copy of the model and a column of versions. A hello with a new worker id
  // beyond it is refused with RESOURCE_EXHAUSTED.
  size_t max_workers = 256;
  // Largest payload of one downlink row batch (see batch_seconds), and the
  // one batch the in-flight cap allows beyond its lead.
  size_t batch_bytes = 16 * 1024;
  // Each downlink batch: at most this many seconds of the worker's measured
  // downlink goodput (at least 2 KiB, at most batch_bytes); 0: batch_bytes.
  double batch_seconds = kDefaultBatchSeconds;
  // Unacknowledged downlink bytes: this many seconds of measured goodput.
  double inflight_lead = 0.05;
  // Checkpoint file ("" = none) and interval in seconds (0 = only on
  // shutdown and on request).
  std::string checkpoint_path;
  double checkpoint_interval = 0;
  // A checkpoint to start from ("" = wait for the first worker's model).
  std::string init_path;
  // Team patience (0 = off, the paper's behaviour): at least `patience`
  // seconds, and `patience_iterations` times the attached workers' median
  // compute time per iteration when that is longer (TeamPatience). ROG's
  // window never exceeds it and leaves out links too slow to move their MTA
  // share within it; a worker that keeps another waiting at the bound
  // longer is detached until its link moves its MTA share within half of
  // it (docs/design.md, "Team patience").
  double patience = 0;
  double patience_iterations = kPatienceIterations;
  // Iterations a detached worker may train on its own before it pauses.
  uint32_t detached_local_steps = 0;
  // Team pace (with patience; 0 = off): the worker on the slowest link is
  // detached too once the team without it would run at least this many
  // times the iterations per second it runs with it, estimated as
  // attached workers / (compute time per iteration + the slowest attached
  // link's time for its share). A detached worker then reattaches only
  // while the team with it would run at least as fast as without it.
  double detach_speedup = 0;
  // ROG, looking one iteration ahead (docs/design.md, "Stalls"): while a
  // worker computes, rogd sends it first the rows it will need to start its
  // next iteration as soon as rogd holds them, whatever the window
  // (downlink_lookahead), and asks the holders at most one iteration behind
  // it for the rows it will need that they have computed but not pushed
  // (push_ahead: PushNow.ahead, which SDKs that announce it send within
  // their window only), instead of waiting for the worker to stall on them.
  // downlink_lookahead is on since 2026-11-26 (off: the behaviour before,
  // for A/Bs). push_ahead is off: it did not pay in the simulator
  // (docs/design.md, "Stalls").
  bool downlink_lookahead = true;
  bool push_ahead = false;
  // A worker that has finished an iteration and whose copy cannot start the
  // next one (the rows rogd has sent it fall short of the bound) will stall:
  // rogd asks the holders for those rows then (PushNow, as its stall would),
  // instead of when its stall report arrives behind its own push
  // (docs/design.md, "Stalls"). Every policy.
  bool ask_before_report = false;
  // ROG: a worker at the slowest attached clock, to which rogd sends only
  // the mandatory rows and the MTA share (MaySpeculate), gets every row of
  // its plan when they fit the downlink's in-flight limit or its window
  // (SendsWhole in common/protocol_rules.h), as the SDK's
  // ProtocolOptions::send_whole_when_it_fits does on the uplink. Off: it
  // cost ROG up to 7% in the simulator (docs/design.md, "Pacing").
  bool send_whole_when_it_fits = false;
  // What a first worker's layout may describe (--max_model_bytes,
  // --max_rows), checked before anything is allocated for it.
  LayoutLimits layout_limits{uint64_t{1} << 30, uint64_t{1} << 20};
  // Memory the model state may take (--max_state_bytes): a copy of the
  // model per worker plus versions per row, worker and copy, which grow
  // with rows x workers^2. Checked before a first worker's model (for
  // team_size workers) and before every new worker record.
  uint64_t max_state_bytes = uint64_t{8} << 30;
  // Every reading of time (null: the steady clock). Tests pass a FakeClock.
  std::shared_ptr<const Clock> clock;
};

// What the engine needs of a worker stream.
class Outbox {
 public:
  virtual ~Outbox() = default;
  // Queues a message for the stream; never blocks.
  virtual void Send(pb::ServerMessage message) = 0;
  // Serialized bytes queued and not yet handed to the transport.
  virtual uint64_t queued_bytes() const = 0;
  // Ends the stream once the queued messages are written, with `status`:
  // ABORTED when superseded by a newer stream of the same worker, evicted
  // or at shutdown; a refusal's code when rogd refused what the worker sent
  // (`reason` is then its label, as counted in StatusReply.rejected). The
  // stream's last message is a pb::StreamEnd saying the same. The first
  // call wins.
  virtual void End(absl::Status status, std::string reason = "") = 0;
};

// A validated, decoded uplink row batch.
struct UplinkBatch {
  uint64_t seq = 0;
  uint64_t iteration = 0;
  pb::BatchKind kind = pb::BATCH_KIND_UPDATE;
  std::vector<RowId> rows;
  std::vector<uint32_t> counts;
  std::vector<float> values;  // the rows' decoded values, concatenated
  uint64_t wire_bytes = 0;
  uint64_t payload_bytes = 0;
  // Released with the batch once the engine is done with it: the stream
  // handler's bound on the uplink memory of one stream.
  std::shared_ptr<const void> hold;
};

// The engine's answer to a hello.
struct Admission {
  uint64_t session = 0;
  // The model's layout; fixed for the engine's life once set.
  std::shared_ptr<const Layout> layout;
  // The first uplink seq the stream must carry.
  uint64_t next_uplink_seq = 1;
  // Whether the stream may carry pb::BATCH_KIND_VALUES (the initial model).
  bool accepts_values = false;
};

// Global rows as fp32, for Export.
struct ModelSnapshot {
  std::shared_ptr<const Layout> layout;
  std::vector<float> values;
};

// What rogd's metrics endpoint shows, taken in one visit to the engine
// thread so that the numbers fit together: the admin answers `rogctl status`
// and `rogctl workers` get, plus the staleness `rogctl staleness` shows, as
// counts: how many (row, attached worker) pairs have a copy that many
// iterations behind the freshest contribution.
struct MetricsSnapshot {
  pb::StatusReply status;
  pb::WorkersReply workers;
  uint32_t staleness_bound = 0;
  std::map<uint64_t, uint64_t> staleness;
};

class EngineCore {
 public:
  // How often the driver must call Tick at least (it also calls it after
  // every event): leases, checkpoints, patience and windows that open or
  // close with time alone are looked at then.
  static constexpr double kTickSeconds = 0.05;

  // Restores `options.init_path`, or else the checkpoint at
  // `options.checkpoint_path` if one exists; a file that cannot be used is
  // an error naming it and why.
  static absl::StatusOr<std::unique_ptr<EngineCore>> Create(EngineOptions options);
  ~EngineCore();

  // --- worker streams ----------------------------------------------------------
  // Admits a stream whose first message was `hello`; sends pb::Welcome (and
  // what follows) through `outbox`. Errors carry the gRPC-style code and a
  // message saying what to do; a refusal's reason goes to *reason.
  absl::StatusOr<Admission> Hello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                  const std::string& peer, Rejection* reason);
  // May modify `batch` (counts of iterations rogd credited already).
  void Batch(uint64_t session, UplinkBatch& batch);
  void Ack(uint64_t session, const pb::Ack& ack);
  void Progress(uint64_t session, const pb::Progress& progress);
  // The worker leaves the team for good (pb::Goodbye).
  void Goodbye(uint64_t session, const std::string& reason);
  // The stream ended (any reason). Idempotent.
  void Closed(uint64_t session);
  // A message refused by a stream handler: counted and logged.
  void CountRejection(Rejection reason, const std::string& who, const std::string& message);
  // Timers; see kTickSeconds.
  void Tick();
  // With `on`, an uplink batch or an ack leaves its follow-up (re-checking
  // every stalled worker, PlanStall, and pumping every downlink) to
  // Settle(), which the driver calls between bursts of events. That
  // follow-up costs O(workers x rows) per worker waiting at the bound, so
  // after every one of a burst of batches it grows as workers^2 x rows per
  // event (scale study, results/2026-12-04-scale-*). The batch is folded
  // and acknowledged at once either way. Off by default: the simulator
  // settles after every event; rogd's engine thread (server/engine.h, and
  // so every test through it) turns it on.
  void set_deferred_settle(bool on);
  // Runs the follow-up the events since the last call left (nothing if
  // none).
  void Settle();
  // Ends every worker stream once its queued messages are written.
  void EndStreams(const std::string& why);
  // Ends every stream and writes a final checkpoint (if configured).
  absl::Status Shutdown();

  // --- admin answers -----------------------------------------------------------
  pb::StatusReply Status() const;
  pb::WorkersReply Workers() const;
  absl::StatusOr<pb::StalenessReply> Staleness(const pb::StalenessRequest& request) const;
  absl::StatusOr<pb::CheckpointReply> CheckpointNow();
  absl::StatusOr<ModelSnapshot> Export() const;
  MetricsSnapshot Metrics() const;
  // See Engine::CheckInvariants.
  absl::Status CheckInvariants() const;

  struct Impl;

 private:
  explicit EngineCore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rog

#endif  // ROG_SERVER_ENGINE_CORE_H_
