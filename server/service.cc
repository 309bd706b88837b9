#include "server/service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/row_index.h"
#include "common/worker_id.h"
#include "proto/convert.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

// Cancels streams at a time set in advance, on one thread for all streams:
// the synchronous API has no deadline for a server's Read or Write.
class Canceller {
 public:
  explicit Canceller(std::shared_ptr<const Clock> clock)
      : clock_(std::move(clock)), thread_([this] { Loop(); }) {}
  ~Canceller() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Cancels `context` `seconds` from now, setting *fired first, unless
  // Remove(id) comes before. REQUIRES: Remove(id) before `context` dies.
  uint64_t Add(grpc::ServerContext* context, double seconds, std::atomic<bool>* fired) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = next_id_++;
    timers_[id] = Timer{clock_->Now() + seconds, context, fired};
    cv_.notify_all();
    return id;
  }

  // After it returns the timer no longer touches its context.
  void Remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    timers_.erase(id);
  }

 private:
  struct Timer {
    double at;
    grpc::ServerContext* context;
    std::atomic<bool>* fired;
  };

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      const double now = clock_->Now();
      double next = now + 1;
      for (auto it = timers_.begin(); it != timers_.end();) {
        if (it->second.at <= now) {
          // Under the lock, so that Remove cannot return meanwhile.
          it->second.fired->store(true);
          it->second.context->TryCancel();
          it = timers_.erase(it);
        } else {
          next = std::min(next, it->second.at);
          ++it;
        }
      }
      clock_->WaitUntil(cv_, lock, next);
    }
  }

  std::shared_ptr<const Clock> clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Timer> timers_;
  uint64_t next_id_ = 1;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is constructed
};

// Decoded uplink bytes of one stream that the engine has not yet folded in
// (StreamLimits::max_uplink_bytes). Shared with the batches' holds, which
// may outlive the stream.
class UplinkBudget {
 public:
  explicit UplinkBudget(uint64_t limit) : limit_(limit) {}

  // Waits until `bytes` more fit (one batch always fits when nothing is
  // held), or `give_up()` (checked every 50 ms); false then.
  template <typename F>
  bool Acquire(uint64_t bytes, F give_up) {
    std::unique_lock<std::mutex> lock(mu_);
    while (held_ > 0 && held_ + bytes > limit_) {
      if (give_up()) return false;
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    held_ += bytes;
    return true;
  }

  void Release(uint64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ -= bytes;
    }
    cv_.notify_all();
  }

 private:
  const uint64_t limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t held_ = 0;
};

// Gives its bytes back to the budget when the engine drops the batch.
class UplinkHold {
 public:
  UplinkHold(std::shared_ptr<UplinkBudget> budget, uint64_t bytes)
      : budget_(std::move(budget)), bytes_(bytes) {}
  ~UplinkHold() { budget_->Release(bytes_); }
  UplinkHold(const UplinkHold&) = delete;
  UplinkHold& operator=(const UplinkHold&) = delete;

 private:
  std::shared_ptr<UplinkBudget> budget_;
  uint64_t bytes_;
};

// Counts uplink batches handed to the engine; a stream's writer and reader
// each have their own thread.
class StreamOutbox final : public Outbox {
 public:
  StreamOutbox(grpc::ServerContext* context,
               grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream,
               uint64_t max_backlog_bytes, Canceller* canceller)
      : context_(context),
        stream_(stream),
        max_backlog_(max_backlog_bytes),
        canceller_(canceller),
        writer_([this] { WriterLoop(); }) {}

  ~StreamOutbox() override { Stop(/*cancel=*/true); }

  void Send(pb::ServerMessage message) override {
    const uint64_t bytes = message.ByteSizeLong();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || ending_) return;
      if (queued_.load() + bytes > max_backlog_) {
        // The worker stopped reading. Its stream ends; what was queued is
        // dropped (a reconnect resends and resyncs everything).
        ending_ = true;
        backlogged_ = true;
        end_status_ = absl::ResourceExhaustedError(absl::StrCat(
            "the worker stopped reading its stream: ", queued_.load(),
            " bytes of row batches, acknowledgements and directives are waiting for it, and "
            "--max_stream_backlog_bytes is ",
            max_backlog_, "; read the stream continuously (rog::Worker does), then reconnect"));
        for (const pb::ServerMessage& m : queue_) queued_ -= m.ByteSizeLong();
        queue_.clear();
        // The reading thread waits for the worker's next message and the
        // writer for the worker to read: give them 2 s, then cancel.
        end_timer_ = canceller_->Add(context_, 2, &end_cancelled_);
        cv_.notify_all();
        return;
      }
      if (message.has_ack()) {
        // Acks have no order to keep with batches and directives; a worker's
        // window cutoff waits on them, so they go ahead of queued rows.
        auto it = queue_.begin();
        while (it != queue_.end() && it->has_ack()) ++it;
        queue_.insert(it, std::move(message));
      } else {
        queue_.push_back(std::move(message));
      }
    }
    queued_ += bytes;
    cv_.notify_all();
  }

  uint64_t queued_bytes() const override { return queued_.load(); }

  void End(absl::Status status, std::string reason) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || ending_) return;
      ending_ = true;
      // The last message says why: the client may see CANCELLED, since the
      // writer cancels the call to wake the reading thread.
      pb::ServerMessage m;
      pb::StreamEnd* e = m.mutable_end();
      e->set_code(static_cast<int32_t>(status.code()));
      e->set_message(std::string(status.message()));
      e->set_reason(reason);
      queued_ += m.ByteSizeLong();
      queue_.push_back(std::move(m));
      end_status_ = std::move(status);
      end_timer_ = canceller_->Add(context_, 2, &end_cancelled_);
    }
    cv_.notify_all();
  }

  bool ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return ending_;
  }

  absl::Status end_status() {
    std::lock_guard<std::mutex> lock(mu_);
    return end_status_;
  }

  // Ended because the worker stopped reading (StreamLimits::max_backlog_bytes).
  bool backlogged() {
    std::lock_guard<std::mutex> lock(mu_);
    return backlogged_;
  }

  // Stops the writer: after the queued messages unless `cancel`, and within
  // two seconds in any case (a peer that stopped reading is cancelled).
  void Stop(bool cancel) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stop_ = true;
      if (end_timer_ != 0) canceller_->Remove(end_timer_);
      end_timer_ = 0;
      if (cancel) queue_.clear();
      cv_.notify_all();
      if (!cv_.wait_for(lock, std::chrono::seconds(2), [&] { return writer_done_; })) {
        context_->TryCancel();
      }
    }
    if (writer_.joinable()) writer_.join();
  }

 private:
  void WriterLoop() {
    for (;;) {
      pb::ServerMessage m;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || stop_ || ending_; });
        if (queue_.empty()) {
          // End(): everything is written, the StreamEnd last. The client
          // gets a moment to read it and close its side (rog::Worker does),
          // which wakes the reading thread; else a cancel does.
          if (ending_ && !stop_) {
            cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stop_; });
            if (!stop_) context_->TryCancel();
          }
          break;
        }
        m = std::move(queue_.front());
        queue_.pop_front();
      }
      const uint64_t bytes = m.ByteSizeLong();
      const bool ok = stream_->Write(m);
      queued_ -= bytes;
      if (!ok) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    writer_done_ = true;
    cv_.notify_all();
  }

  grpc::ServerContext* context_;
  grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream_;
  const uint64_t max_backlog_;
  Canceller* canceller_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<pb::ServerMessage> queue_;
  std::atomic<uint64_t> queued_{0};
  bool stop_ = false;
  bool ending_ = false;
  bool writer_done_ = false;
  bool backlogged_ = false;
  // Cancels the stream 2 s after it began to end (a peer that stopped
  // reading would keep the writer in Write for ever); Canceller id.
  uint64_t end_timer_ = 0;
  std::atomic<bool> end_cancelled_{false};
  absl::Status end_status_;
  std::thread writer_;  // last: starts once the rest is constructed
};

bool ValidSeconds(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// Streams open at once, in all and by worker id (StreamLimits), and the
// timer that cancels streams past their time.
class TrainerService::Streams {
 public:
  // A slot among the open streams; false when all are taken.
  bool Open(uint32_t max) {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_ >= max) return false;
    ++open_;
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
  }
  // A slot among the streams of worker `id`; false when all are taken.
  bool OpenFor(const std::string& id, uint32_t max) {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t& n = by_id_[id];
    if (n >= max) return false;
    ++n;
    return true;
  }
  void CloseFor(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_id_.find(id);
    if (it != by_id_.end() && --it->second == 0) by_id_.erase(it);
  }
  explicit Streams(std::shared_ptr<const Clock> clock) : canceller_(std::move(clock)) {}
  Canceller& canceller() { return canceller_; }

 private:
  std::mutex mu_;
  uint32_t open_ = 0;
  std::map<std::string, uint32_t> by_id_;
  Canceller canceller_;
};

TrainerService::TrainerService(Engine* engine, StreamLimits limits,
                               std::shared_ptr<const Clock> clock)
    : engine_(engine),
      limits_(limits),
      streams_(std::make_unique<Streams>(clock ? std::move(clock) : DefaultClock())) {}

TrainerService::~TrainerService() = default;

namespace {

// Runs `fn` when the scope ends, however it ends.
template <typename F>
class Finally {
 public:
  explicit Finally(F fn) : fn_(std::move(fn)) {}
  ~Finally() { fn_(); }
  Finally(const Finally&) = delete;
  Finally& operator=(const Finally&) = delete;

 private:
  F fn_;
};

// What an ack or a progress report costs while it waits for the engine
// thread: the copied message and the queued task.
constexpr uint64_t kSmallEventBytes = 512;

uint64_t HeldBytes(const UplinkBatch& b) {
  return sizeof(UplinkBatch) + b.values.size() * sizeof(float) + b.rows.size() * sizeof(RowId) +
         b.counts.size() * sizeof(uint32_t);
}

}  // namespace

grpc::Status TrainerService::Session(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream) {
  const std::string peer = context->peer();
  if (auth_ != nullptr) {
    grpc::Status allowed = auth_->Check(context->client_metadata(), Caller::kWorker, peer);
    if (!allowed.ok()) return allowed;
  }
  std::string who = peer;
  const auto reject = [&](Rejection reason, grpc::StatusCode code, const std::string& message) {
    engine_->CountRejection(reason, who, message);
    return grpc::Status(code, message);
  };
  // A message over --max_message_bytes: gRPC takes up to twice that (so
  // that rogd sees it and can say so); past that gRPC refuses it itself.
  const auto too_large = [&](const pb::WorkerMessage& m) {
    return limits_.max_message_bytes > 0 && m.ByteSizeLong() > limits_.max_message_bytes;
  };
  const auto refuse_too_large = [&](const pb::WorkerMessage& m) {
    return reject(Rejection::kMessageTooLarge, grpc::StatusCode::RESOURCE_EXHAUSTED,
                  absl::StrCat("a message of ", m.ByteSizeLong(), " bytes; rogd takes at most ",
                               limits_.max_message_bytes,
                               " (--max_message_bytes, told in Welcome.max_message_bytes): send "
                               "smaller row batches (WorkerOptions.batch_bytes)"));
  };
  if (!streams_->Open(limits_.max_streams)) {
    return reject(Rejection::kTooManyStreams, grpc::StatusCode::RESOURCE_EXHAUSTED,
                  absl::StrCat("rogd serves at most ", limits_.max_streams,
                               " worker streams at once (--max_streams) and all are open; retry "
                               "later, or raise --max_streams"));
  }
  Finally close_slot([&] { streams_->Close(); });

  pb::WorkerMessage m;
  {
    // A stream that sends nothing would hold its slot and thread for ever.
    std::atomic<bool> timed_out{false};
    const uint64_t timer =
        streams_->canceller().Add(context, limits_.hello_timeout_seconds, &timed_out);
    const bool read = stream->Read(&m);
    streams_->canceller().Remove(timer);
    if (timed_out.load()) {
      return reject(Rejection::kNoHello, grpc::StatusCode::DEADLINE_EXCEEDED,
                    absl::StrCat("no Hello within ", limits_.hello_timeout_seconds,
                                 " s of opening the stream (--hello_timeout): a worker sends "
                                 "its Hello first, at once"));
    }
    if (!read) {
      // The client left, or sent half a stream; or gRPC could not parse
      // what it sent (the sync API says only that no message came).
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "no hello");
      return reject(Rejection::kUnparseable, grpc::StatusCode::INVALID_ARGUMENT,
                    "the stream ended before its first message could be read as a "
                    "rog.v1.WorkerMessage: send a Hello first, encoded from proto/rog.proto");
    }
  }
  if (too_large(m)) return refuse_too_large(m);
  if (m.kind_case() != pb::WorkerMessage::kHello) {
    return reject(Rejection::kNotHello, grpc::StatusCode::INVALID_ARGUMENT,
                  "the first message of a stream must be a Hello");
  }
  if (!ValidWorkerId(m.hello().worker_id())) {
    return reject(Rejection::kBadWorkerId, grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("worker id '", m.hello().worker_id().substr(0, 80),
                               "' is invalid: use 1-64 letters, digits, '.', '_' or '-'"));
  }
  const std::string worker_id = m.hello().worker_id();
  who = absl::StrCat("worker ", worker_id, " at ", peer);
  if (!streams_->OpenFor(worker_id, limits_.max_streams_per_worker)) {
    return reject(
        Rejection::kWorkerStreams, grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("worker '", worker_id, "' already has ", limits_.max_streams_per_worker,
                     " streams open (--max_streams_per_worker): a worker needs one; close the "
                     "others (is a second process running under this id?), or retry once "
                     "they have ended"));
  }
  Finally close_worker_slot([&] { streams_->CloseFor(worker_id); });
  auto outbox = std::make_shared<StreamOutbox>(context, stream, limits_.max_backlog_bytes,
                                               &streams_->canceller());
  Rejection hello_reason = Rejection::kNone;
  absl::StatusOr<Admission> admitted = engine_->Hello(outbox, m.hello(), peer, &hello_reason);
  if (!admitted.ok()) {
    outbox->Stop(/*cancel=*/false);
    const absl::StatusCode code = admitted.status().code();
    if (code == absl::StatusCode::kUnavailable) {
      return ToGrpc(admitted.status());  // retried by the worker; not a bad message
    }
    return reject(hello_reason, static_cast<grpc::StatusCode>(code),
                  std::string(admitted.status().message()));
  }
  const uint64_t session = admitted->session;
  const Layout& layout = *admitted->layout;
  uint64_t expected_seq = admitted->next_uplink_seq;
  const bool accepts_values = admitted->accepts_values;
  auto budget = std::make_shared<UplinkBudget>(limits_.max_uplink_bytes);
  // Every event this stream hands the engine holds part of its budget until
  // the engine has run it: while the engine thread is behind, the stream
  // is not read (StreamLimits::max_uplink_bytes). Null when the stream
  // ended while waiting.
  const auto hold_for = [&](uint64_t bytes) -> std::shared_ptr<const void> {
    if (!budget->Acquire(bytes, [&] { return context->IsCancelled() || outbox->ended(); })) {
      return nullptr;
    }
    return std::make_shared<UplinkHold>(budget, bytes);
  };
  grpc::Status result = grpc::Status::OK;
  bool clean = false;
  bool read = false;
  while ((read = stream->Read(&m))) {
    if (outbox->ended()) break;
    if (too_large(m)) {
      result = refuse_too_large(m);
      break;
    }
    switch (m.kind_case()) {
      case pb::WorkerMessage::kBatch: {
        UplinkBatch batch;
        Rejection reason = Rejection::kNone;
        absl::Status s = ValidateUplinkBatch(m.batch(), layout, expected_seq, accepts_values,
                                             &batch, &reason, limits_.batch);
        if (!s.ok()) {
          result =
              reject(reason, static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
          break;
        }
        batch.hold = hold_for(HeldBytes(batch));
        if (batch.hold == nullptr) break;
        if (batch.seq == expected_seq) ++expected_seq;
        engine_->Batch(session, std::move(batch));
        continue;
      }
      case pb::WorkerMessage::kAck: {
        std::shared_ptr<const void> hold = hold_for(kSmallEventBytes);
        if (hold == nullptr) break;
        engine_->Ack(session, m.ack(), std::move(hold));
        continue;
      }
      case pb::WorkerMessage::kProgress: {
        const pb::Progress& p = m.progress();
        if (!ValidSeconds(p.compute_seconds()) || !ValidSeconds(p.transmit_seconds()) ||
            !ValidSeconds(p.stall_seconds()) || !ValidSeconds(p.uplink_goodput()) ||
            !ValidSeconds(p.window_overshoot())) {
          result = reject(Rejection::kBadProgress, grpc::StatusCode::INVALID_ARGUMENT,
                          "progress carries a negative or non-finite time or goodput");
          break;
        }
        std::shared_ptr<const void> hold = hold_for(kSmallEventBytes);
        if (hold == nullptr) break;
        engine_->Progress(session, p, std::move(hold));
        continue;
      }
      case pb::WorkerMessage::kGoodbye:
        engine_->Goodbye(session, m.goodbye().reason());
        clean = true;
        break;
      case pb::WorkerMessage::kHello:
        result = reject(Rejection::kSecondHello, grpc::StatusCode::INVALID_ARGUMENT,
                        "a stream carries one Hello; open a new stream to reconnect");
        break;
      default:
        result = reject(Rejection::kUnknownMessage, grpc::StatusCode::INVALID_ARGUMENT,
                        "empty or unknown pb::WorkerMessage (is the SDK newer than rogd?)");
        break;
    }
    break;
  }
  if (result.ok() && !read && !clean && !outbox->ended() && !context->IsCancelled()) {
    // No Goodbye, not cancelled: the client half-closed, or gRPC could not
    // parse its message (the sync API does not say which).
    result = reject(Rejection::kUnparseable, grpc::StatusCode::INVALID_ARGUMENT,
                    "the stream ended without a Goodbye, or a message could not be read as a "
                    "rog.v1.WorkerMessage: encode messages from proto/rog.proto, and send a "
                    "Goodbye before closing the stream");
  }
  engine_->Closed(session);
  if (result.ok() && outbox->backlogged()) {
    // Counted here, once: the outbox only ends the stream.
    result = reject(Rejection::kDownlinkBacklog, grpc::StatusCode::RESOURCE_EXHAUSTED,
                    std::string(outbox->end_status().message()));
    outbox->Stop(/*cancel=*/true);
    return result;
  }
  if (result.ok() && outbox->ended() && (!clean || !outbox->end_status().ok())) {
    // Ended by the engine (replaced, evicted, refused, shutting down; a
    // refusal can come before a Goodbye, which waits for it): its status,
    // also sent in-band as the stream's last message.
    const absl::Status why = outbox->end_status();
    outbox->Stop(/*cancel=*/!clean);
    return ToGrpc(why);
  }
  outbox->Stop(/*cancel=*/!result.ok() ? false : !clean);
  return result;
}

grpc::Status AdminService::Authorize(grpc::ServerContext* context) const {
  if (auth_ == nullptr) return grpc::Status::OK;
  return auth_->Check(context->client_metadata(), Caller::kAdmin, context->peer());
}

grpc::Status AdminService::GetStatus(grpc::ServerContext* context, const pb::StatusRequest*,
                                     pb::StatusReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  *reply = engine_->Status();
  return grpc::Status::OK;
}

grpc::Status AdminService::ListWorkers(grpc::ServerContext* context, const pb::WorkersRequest*,
                                       pb::WorkersReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  *reply = engine_->Workers();
  return grpc::Status::OK;
}

grpc::Status AdminService::GetStaleness(grpc::ServerContext* context,
                                        const pb::StalenessRequest* request,
                                        pb::StalenessReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  absl::StatusOr<pb::StalenessReply> r = engine_->Staleness(*request);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status AdminService::Checkpoint(grpc::ServerContext* context, const pb::CheckpointRequest*,
                                      pb::CheckpointReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  absl::StatusOr<pb::CheckpointReply> r = engine_->CheckpointNow();
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status AdminService::Export(grpc::ServerContext* context, const pb::ExportRequest*,
                                  grpc::ServerWriter<pb::ExportChunk>* writer) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  absl::StatusOr<ModelSnapshot> snap = engine_->Export();
  if (!snap.ok()) return ToGrpc(snap.status());
  const Layout& layout = *snap->layout;
  constexpr size_t kChunkBytes = 1 << 20;
  RowId row = 0;
  bool first = true;
  while (row < layout.num_rows() || first) {
    pb::ExportChunk chunk;
    if (first) *chunk.mutable_layout() = LayoutToProto(layout);
    first = false;
    const RowId begin = row;
    size_t bytes = 0;
    while (row < layout.num_rows() &&
           (row == begin || bytes + layout.row(row).numel * 4 <= kChunkBytes)) {
      bytes += layout.row(row).numel * 4;
      ++row;
    }
    chunk.set_first_row(begin);
    chunk.set_rows(row - begin);
    if (row > begin) {
      const uint64_t offset = layout.row(begin).offset;
      chunk.set_values(FloatsToBytes(absl::MakeConstSpan(snap->values.data() + offset, bytes / 4)));
    }
    if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "reader left");
  }
  return grpc::Status::OK;
}

}  // namespace rog
