// rogd's engine: the engine core (server/engine_core.h, the state and
// every protocol rule, free of gRPC) on one thread of its own. Stream handlers (server/service.cc)
// validate and decode what workers send, then hand it to the engine; the engine answers through
// each stream's Outbox.
//
// Threading: a single writer. One engine thread owns all model state
// (ServerState, per-worker records) and runs every event in arrival order;
// the public methods only enqueue an event (Hello and the admin calls wait
// for its result). Decoding and validating row batches, the costly part of
// receiving, happens before, on the stream threads, in parallel. There is no
// lock on the hot path besides the queue's; //server:fold_bench measures the
// fold itself against memcpy. A batch is folded and acknowledged as its
// event runs; what follows from it (stalls re-checked, downlinks pumped)
// runs once per burst of events (EngineCore::set_deferred_settle), since
// with tens of workers waiting at the bound it costs more than the fold.
#ifndef ROG_SERVER_ENGINE_H_
#define ROG_SERVER_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/engine_core.h"

namespace rog {

class Engine {
 public:
  // Starts the engine thread. Restores `options.init_path`, or else the
  // checkpoint at `options.checkpoint_path` if one exists; a file that
  // cannot be used is an error naming it and why.
  static absl::StatusOr<std::unique_ptr<Engine>> Start(EngineOptions options);
  ~Engine();

  // --- Worker streams (thread-safe) ----------------------------------------
  // Admits a stream whose first message was `hello`; sends pb::Welcome (and
  // what follows) through `outbox`. Errors carry the gRPC-style code and a
  // message saying what to do. A refusal's reason (counted in
  // StatusReply.rejected under its label) goes to *reason (if not null).
  absl::StatusOr<Admission> Hello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                  std::string peer, Rejection* reason = nullptr);
  void Batch(uint64_t session, UplinkBatch batch);
  // `hold` (may be null) is released once the engine is done with the
  // event, as UplinkBatch::hold is.
  void Ack(uint64_t session, const pb::Ack& ack, std::shared_ptr<const void> hold = nullptr);
  void Progress(uint64_t session, const pb::Progress& progress,
                std::shared_ptr<const void> hold = nullptr);
  // Waits until the engine has run every event the stream queued before
  // it, so that a refusal among them is known (the stream's Outbox ended
  // with its status) when it returns.
  void Goodbye(uint64_t session, std::string reason);
  // The stream ended (any reason). Idempotent.
  void Closed(uint64_t session);
  // A message refused by a stream handler: counted by reason for status and
  // metrics, and logged (at most a few lines per reason and client every
  // 10 s) as coming from `who`.
  void CountRejection(Rejection reason, const std::string& who, const std::string& message);

  // --- pb::Admin (thread-safe; wait for the engine thread) -------------------
  pb::StatusReply Status();
  pb::WorkersReply Workers();
  absl::StatusOr<pb::StalenessReply> Staleness(const pb::StalenessRequest& request);
  absl::StatusOr<pb::CheckpointReply> CheckpointNow();
  absl::StatusOr<ModelSnapshot> Export();
  // For metrics: costs the engine thread about what Status, Workers and an
  // unfiltered Staleness cost together, once per scrape.
  MetricsSnapshot Metrics();

  // For tests and fuzzers: the engine's invariants, checked now. No
  // worker's updates in any row count more iterations than its clock (what
  // the staleness bound relies on), no copy holds more of a worker than
  // the global rows, clocks stay at most 2^52, and the model is finite.
  // Internal with what broke, else OK.
  absl::Status CheckInvariants();

  // Ends every worker stream once its queued messages are written (workers
  // reconnect by themselves); the first step of a clean shutdown.
  void EndStreams(const std::string& why);

  // Runs every queued event, writes a final checkpoint (if configured) and
  // stops the engine thread. Call after the streams have ended.
  absl::Status Shutdown();

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rog

#endif  // ROG_SERVER_ENGINE_H_
