// rogd's gRPC services: Trainer.Session (one bidirectional stream per
// worker) and Admin, on top of the Engine.
//
// Threading: the synchronous API, a thread per stream plus a writer thread
// per stream. A robot team is a handful to a few dozen workers, so threads
// are cheap here, and blocking reads and writes keep validation simple and
// sequential per stream. The reading thread validates and decodes each
// message (the costly part) in parallel with other streams, then hands it to
// the engine's single writer; the writer thread drains the stream's outbox,
// so a slow link never blocks the engine. Measured cost (16 linreg example
// workers against one rogd, 2-core machine): 43 threads instead of 11 with
// one worker, peak RSS 22.1 MB instead of 18.4 MB, i.e. about 0.25 MB per
// stream. The callback API would save those threads; it was not built to
// compare, since at team sizes this cost does not matter.
#ifndef ROG_SERVER_SERVICE_H_
#define ROG_SERVER_SERVICE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/clock.h"
#include "common/layout.h"
#include "rog.grpc.pb.h"
#include "server/auth.h"
#include "server/engine.h"
#include "server/rejection.h"
#include "server/uplink_batch.h"

namespace rog {

// What one client may hold of rogd (rogd's --max_* flags, docs/operations.md,
// "Resource limits"). Every refusal is a gRPC status saying which limit and
// what to do, counted in StatusReply.rejected, and changes no model state.
struct StreamLimits {
  BatchLimits batch{65536, 16 << 20};
  // Bytes of one stream's events waiting for the engine thread (decoded
  // batches; 512 per ack or progress report); past it the stream's
  // reading pauses (flow control pushes back on the worker), so a fast
  // sender cannot queue unbounded memory ahead of the engine.
  uint64_t max_uplink_bytes = 16 << 20;
  // Serialized downlink bytes (row batches, acks, directives) queued for one
  // stream and not yet taken by the transport: a worker that stops reading
  // its stream while still sending makes it grow; past it the stream ends
  // with RESOURCE_EXHAUSTED. Row batches stop at 256 KiB queued on their
  // own, so a worker that reads never comes near it.
  uint64_t max_backlog_bytes = 4 << 20;
  // Worker streams open at once, before or after their hello.
  uint32_t max_streams = 256;
  // Streams open at once that name the same worker id (a reconnecting
  // worker briefly has two: the new one and the one it replaces).
  uint32_t max_streams_per_worker = 4;
  // A stream must send its Hello within this many seconds of opening.
  double hello_timeout_seconds = 10;
  // Largest message taken from a worker (0: gRPC's limit only). rogd's
  // gRPC server takes up to twice this, so that a message over it is
  // refused here, counted and explained ("message_too_large"); gRPC refuses
  // larger ones itself (RESOURCE_EXHAUSTED, not counted by rogd).
  uint64_t max_message_bytes = 0;
};

class TrainerService final : public pb::Trainer::Service {
 public:
  // `clock` times the hello timeout and the end of streams (null: the
  // steady clock).
  explicit TrainerService(Engine* engine, StreamLimits limits = {},
                          std::shared_ptr<const Clock> clock = nullptr);
  // REQUIRES: every Session has returned (the server is shut down).
  ~TrainerService() override;
  // From now on every stream presents the worker token before its first
  // message is read. Call before the server starts; `auth` (null: no
  // tokens) must outlive the service.
  void set_token_auth(const TokenAuth* auth) { auth_ = auth; }
  grpc::Status Session(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream) override;

  // Shutdown, in this order (rogd on SIGTERM): StopAccepting(), then the
  // engine ends every stream (Engine::EndStreams: a StreamEnd{ABORTED}
  // each), then WaitForStreams() until each has ended the way any stream
  // the engine ends does (a client that closes its side on the StreamEnd
  // gets ABORTED as the status, any other CANCELLED within 0.5 s), and only
  // then the server's Shutdown. A server shutting down while streams still
  // end closes their connections under them (the client reads
  // "UNAVAILABLE: Socket closed" instead of the StreamEnd's code).
  // From StopAccepting on, a new stream is refused at once with
  // UNAVAILABLE (the SDK retries, reaching the next rogd); not counted as a
  // refusal.
  void StopAccepting();
  // Waits until no stream is open, at most `seconds`; whether none is.
  bool WaitForStreams(double seconds);

 private:
  class Streams;        // open streams by worker id, and the timer that cancels them
  class StreamSession;  // one stream, from its hello to its end

  Engine* engine_;
  const TokenAuth* auth_ = nullptr;
  StreamLimits limits_;
  std::unique_ptr<Streams> streams_;
};

class AdminService final : public pb::Admin::Service {
 public:
  explicit AdminService(Engine* engine) : engine_(engine) {}
  // From now on every call presents the admin token. Call before the
  // server starts; `auth` (null: no tokens) must outlive the service.
  void set_token_auth(const TokenAuth* auth) { auth_ = auth; }
  grpc::Status GetStatus(grpc::ServerContext*, const pb::StatusRequest*, pb::StatusReply*) override;
  grpc::Status ListWorkers(grpc::ServerContext*, const pb::WorkersRequest*,
                           pb::WorkersReply*) override;
  grpc::Status GetStaleness(grpc::ServerContext*, const pb::StalenessRequest*,
                            pb::StalenessReply*) override;
  grpc::Status Checkpoint(grpc::ServerContext*, const pb::CheckpointRequest*,
                          pb::CheckpointReply*) override;
  grpc::Status Export(grpc::ServerContext*, const pb::ExportRequest*,
                      grpc::ServerWriter<pb::ExportChunk>*) override;

 private:
  grpc::Status Authorize(grpc::ServerContext* context) const;

  Engine* engine_;
  const TokenAuth* auth_ = nullptr;
};

// absl::Status -> grpc::Status, keeping code and message.
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace rog

#endif  // ROG_SERVER_SERVICE_H_
