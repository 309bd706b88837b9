#include "server/service.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

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
    // Named for per-thread CPU time in /proc (tools/scale).
    ::pthread_setname_np(::pthread_self(), "rogd-writer");
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

// Goodbye.reason is free text for one log line: longer ones are cut.
constexpr size_t kMaxGoodbyeReasonBytes = 200;

// The first time or goodput in `p` that is negative or non-finite, as
// "name (value)"; empty when every one is valid.
std::string BadProgressField(const pb::Progress& p) {
  const std::pair<const char*, double> fields[] = {
      {"compute_seconds", p.compute_seconds()},
      {"transmit_seconds", p.transmit_seconds()},
      {"stall_seconds", p.stall_seconds()},
      {"uplink_goodput", p.uplink_goodput()},
      {"window_overshoot", p.window_overshoot()},
      {"detached_seconds", p.detached_seconds()},
      {"last_compute_seconds", p.last_compute_seconds()},
  };
  for (const auto& [name, value] : fields) {
    if (!ValidSeconds(value)) return absl::StrCat(name, " (", value, ")");
  }
  return "";
}

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
    {
      std::lock_guard<std::mutex> lock(mu_);
      --open_;
    }
    closed_.notify_all();
  }
  // Shutdown: new streams are refused from now on.
  void StopAccepting() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }
  // Real time: shutdown waits for gRPC's threads, not for the protocol.
  bool WaitUntilNoneOpen(double seconds) {
    std::unique_lock<std::mutex> lock(mu_);
    return closed_.wait_for(lock, std::chrono::duration<double>(seconds),
                            [&] { return open_ == 0; });
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
  std::condition_variable closed_;
  uint32_t open_ = 0;
  bool stopping_ = false;
  std::map<std::string, uint32_t> by_id_;
  Canceller canceller_;
};

TrainerService::TrainerService(Engine* engine, StreamLimits limits,
                               std::shared_ptr<const Clock> clock)
    : engine_(engine),
      limits_(limits),
      streams_(std::make_unique<Streams>(clock ? std::move(clock) : DefaultClock())) {}

TrainerService::~TrainerService() = default;

void TrainerService::StopAccepting() { streams_->StopAccepting(); }

bool TrainerService::WaitForStreams(double seconds) { return streams_->WaitUntilNoneOpen(seconds); }

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

// One worker stream from its hello to its end: admission, then every
// message checked and handed to the engine, then how the stream ends.
class TrainerService::StreamSession {
 public:
  using Stream = grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>;
  StreamSession(TrainerService* service, grpc::ServerContext* context, Stream* stream)
      : svc_(*service), context_(context), stream_(stream), peer_(context->peer()), who_(peer_) {}

  grpc::Status Run();

 private:
  grpc::Status Reject(Rejection reason, grpc::StatusCode code, const std::string& message) {
    svc_.engine_->CountRejection(reason, who_, message);
    return grpc::Status(code, message);
  }
  // A message over --max_message_bytes: gRPC takes up to twice that (so
  // that rogd sees it and can say so); past that gRPC refuses it itself.
  bool TooLarge(const pb::WorkerMessage& m) const {
    return svc_.limits_.max_message_bytes > 0 && m.ByteSizeLong() > svc_.limits_.max_message_bytes;
  }
  grpc::Status RefuseTooLarge(const pb::WorkerMessage& m) {
    return Reject(Rejection::kMessageTooLarge, grpc::StatusCode::RESOURCE_EXHAUSTED,
                  absl::StrCat("a message of ", m.ByteSizeLong(), " bytes; rogd takes at most ",
                               svc_.limits_.max_message_bytes,
                               " (--max_message_bytes, told in Welcome.max_message_bytes): send "
                               "smaller row batches (WorkerOptions.batch_bytes)"));
  }
  grpc::Status ReadHello(pb::WorkerMessage* m);
  grpc::Status CheckHello(const pb::WorkerMessage& m);
  grpc::Status Admit(const pb::Hello& hello);
  grpc::Status ReadMessages();
  bool Handle(const pb::WorkerMessage& m, grpc::Status* result);
  bool HandleProgress(const pb::Progress& p, grpc::Status* result);
  std::shared_ptr<const void> HoldFor(uint64_t bytes);
  grpc::Status End(grpc::Status result);

  TrainerService& svc_;
  grpc::ServerContext* context_;
  Stream* stream_;
  const std::string peer_;
  std::string who_;  // the peer, then the worker id and the peer
  std::shared_ptr<StreamOutbox> outbox_;
  uint64_t session_ = 0;
  std::shared_ptr<const Layout> layout_;
  uint64_t expected_seq_ = 1;
  bool accepts_values_ = false;
  std::shared_ptr<UplinkBudget> budget_;
  bool clean_ = false;  // the worker said goodbye
  bool read_ = false;   // the last read brought a message
};

grpc::Status TrainerService::StreamSession::Run() {
  if (svc_.auth_ != nullptr) {
    grpc::Status allowed = svc_.auth_->Check(context_->client_metadata(), Caller::kWorker, peer_);
    if (!allowed.ok()) return allowed;
  }
  if (svc_.streams_->stopping()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "rogd is shutting down; reconnect to the next rogd");
  }
  if (!svc_.streams_->Open(svc_.limits_.max_streams)) {
    return Reject(Rejection::kTooManyStreams, grpc::StatusCode::RESOURCE_EXHAUSTED,
                  absl::StrCat("rogd serves at most ", svc_.limits_.max_streams,
                               " worker streams at once (--max_streams) and all are open; retry "
                               "later, or raise --max_streams"));
  }
  Finally close_slot([&] { svc_.streams_->Close(); });
  pb::WorkerMessage m;
  if (grpc::Status s = ReadHello(&m); !s.ok()) return s;
  if (grpc::Status s = CheckHello(m); !s.ok()) return s;
  const std::string worker_id = m.hello().worker_id();
  who_ = absl::StrCat("worker ", worker_id, " at ", peer_);
  if (!svc_.streams_->OpenFor(worker_id, svc_.limits_.max_streams_per_worker)) {
    return Reject(
        Rejection::kWorkerStreams, grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("worker '", worker_id, "' already has ", svc_.limits_.max_streams_per_worker,
                     " streams open (--max_streams_per_worker): a worker needs one; close the "
                     "others (is a second process running under this id?), or retry once "
                     "they have ended"));
  }
  Finally close_worker_slot([&] { svc_.streams_->CloseFor(worker_id); });
  if (grpc::Status s = Admit(m.hello()); !s.ok()) return s;
  return End(ReadMessages());
}

// The first message, within --hello_timeout: a stream that sends nothing
// would hold its slot and thread for ever.
grpc::Status TrainerService::StreamSession::ReadHello(pb::WorkerMessage* m) {
  std::atomic<bool> timed_out{false};
  const uint64_t timer =
      svc_.streams_->canceller().Add(context_, svc_.limits_.hello_timeout_seconds, &timed_out);
  const bool read = stream_->Read(m);
  svc_.streams_->canceller().Remove(timer);
  if (timed_out.load()) {
    return Reject(Rejection::kNoHello, grpc::StatusCode::DEADLINE_EXCEEDED,
                  absl::StrCat("no Hello within ", svc_.limits_.hello_timeout_seconds,
                               " s of opening the stream (--hello_timeout): a worker sends "
                               "its Hello first, at once"));
  }
  if (!read) {
    // The client left, or sent half a stream; or gRPC could not parse
    // what it sent (the sync API says only that no message came).
    if (context_->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "no hello");
    return Reject(Rejection::kUnparseable, grpc::StatusCode::INVALID_ARGUMENT,
                  "the stream ended before its first message could be read as a "
                  "rog.v1.WorkerMessage: send a Hello first, encoded from proto/rog.proto");
  }
  return grpc::Status::OK;
}

grpc::Status TrainerService::StreamSession::CheckHello(const pb::WorkerMessage& m) {
  if (TooLarge(m)) return RefuseTooLarge(m);
  if (m.kind_case() != pb::WorkerMessage::kHello) {
    return Reject(Rejection::kNotHello, grpc::StatusCode::INVALID_ARGUMENT,
                  "the first message of a stream must be a Hello");
  }
  if (!ValidWorkerId(m.hello().worker_id())) {
    return Reject(Rejection::kBadWorkerId, grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("worker id '", ClientText(m.hello().worker_id(), 80),
                               "' is invalid: use 1-64 letters, digits, '.', '_' or '-'"));
  }
  return grpc::Status::OK;
}

// The engine's answer to the hello: the stream's session, or a refusal.
grpc::Status TrainerService::StreamSession::Admit(const pb::Hello& hello) {
  outbox_ = std::make_shared<StreamOutbox>(context_, stream_, svc_.limits_.max_backlog_bytes,
                                           &svc_.streams_->canceller());
  Rejection hello_reason = Rejection::kNone;
  absl::StatusOr<Admission> admitted = svc_.engine_->Hello(outbox_, hello, peer_, &hello_reason);
  if (!admitted.ok()) {
    outbox_->Stop(/*cancel=*/false);
    const absl::StatusCode code = admitted.status().code();
    if (code == absl::StatusCode::kUnavailable) {
      return ToGrpc(admitted.status());  // retried by the worker; not a bad message
    }
    return Reject(hello_reason, static_cast<grpc::StatusCode>(code),
                  std::string(admitted.status().message()));
  }
  if (svc_.streams_->stopping()) {
    // Admitted after the engine ended every stream (TrainerService::
    // StopAccepting came first): this one ends like them.
    outbox_->End(absl::AbortedError("rogd is shutting down; reconnect to the next rogd"), "");
  }
  session_ = admitted->session;
  layout_ = admitted->layout;
  expected_seq_ = admitted->next_uplink_seq;
  accepts_values_ = admitted->accepts_values;
  budget_ = std::make_shared<UplinkBudget>(svc_.limits_.max_uplink_bytes);
  return grpc::Status::OK;
}

// Every event this stream hands the engine holds part of its budget until
// the engine has run it: while the engine thread is behind, the stream is
// not read (StreamLimits::max_uplink_bytes). Null when the stream ended
// while waiting.
std::shared_ptr<const void> TrainerService::StreamSession::HoldFor(uint64_t bytes) {
  if (!budget_->Acquire(bytes, [&] { return context_->IsCancelled() || outbox_->ended(); })) {
    return nullptr;
  }
  return std::make_shared<UplinkHold>(budget_, bytes);
}

// Reads until the stream ends, a message is refused or the worker says
// goodbye; the refusal's status, else OK.
grpc::Status TrainerService::StreamSession::ReadMessages() {
  grpc::Status result = grpc::Status::OK;
  pb::WorkerMessage m;
  while ((read_ = stream_->Read(&m))) {
    if (outbox_->ended()) break;
    if (TooLarge(m)) {
      result = RefuseTooLarge(m);
      break;
    }
    if (!Handle(m, &result)) break;
  }
  return result;
}

// One message after the hello; false when the stream is done reading.
bool TrainerService::StreamSession::Handle(const pb::WorkerMessage& m, grpc::Status* result) {
  switch (m.kind_case()) {
    case pb::WorkerMessage::kBatch: {
      UplinkBatch batch;
      Rejection reason = Rejection::kNone;
      absl::Status s = ValidateUplinkBatch(m.batch(), *layout_, expected_seq_, accepts_values_,
                                           &batch, &reason, svc_.limits_.batch);
      if (!s.ok()) {
        *result = Reject(reason, static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
        return false;
      }
      batch.hold = HoldFor(HeldBytes(batch));
      if (batch.hold == nullptr) return false;
      if (batch.seq == expected_seq_) ++expected_seq_;
      svc_.engine_->Batch(session_, std::move(batch));
      return true;
    }
    case pb::WorkerMessage::kAck: {
      std::shared_ptr<const void> hold = HoldFor(kSmallEventBytes);
      if (hold == nullptr) return false;
      svc_.engine_->Ack(session_, m.ack(), std::move(hold));
      return true;
    }
    case pb::WorkerMessage::kProgress:
      return HandleProgress(m.progress(), result);
    case pb::WorkerMessage::kGoodbye:
      svc_.engine_->Goodbye(session_, ClientText(m.goodbye().reason(), kMaxGoodbyeReasonBytes));
      clean_ = true;
      return false;
    case pb::WorkerMessage::kHello:
      *result = Reject(Rejection::kSecondHello, grpc::StatusCode::INVALID_ARGUMENT,
                       "a stream carries one Hello; open a new stream to reconnect");
      return false;
    default:
      *result = Reject(Rejection::kUnknownMessage, grpc::StatusCode::INVALID_ARGUMENT,
                       "empty or unknown pb::WorkerMessage (is the SDK newer than rogd?)");
      return false;
  }
}

bool TrainerService::StreamSession::HandleProgress(const pb::Progress& p, grpc::Status* result) {
  if (const std::string bad = BadProgressField(p); !bad.empty()) {
    *result = Reject(Rejection::kBadProgress, grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrCat("Progress.", bad,
                                  " is negative or non-finite: a worker's times and goodput "
                                  "must be finite and >= 0 (the ROG SDK never sends such a "
                                  "value; fix the client that did)"));
    return false;
  }
  std::shared_ptr<const void> hold = HoldFor(kSmallEventBytes);
  if (hold == nullptr) return false;
  svc_.engine_->Progress(session_, p, std::move(hold));
  return true;
}

// How the stream ends, once reading is over with `result`.
grpc::Status TrainerService::StreamSession::End(grpc::Status result) {
  if (result.ok() && !read_ && !clean_ && !outbox_->ended() && !context_->IsCancelled()) {
    // No Goodbye, not cancelled: the client half-closed, or gRPC could not
    // parse its message (the sync API does not say which).
    result = Reject(Rejection::kUnparseable, grpc::StatusCode::INVALID_ARGUMENT,
                    "the stream ended without a Goodbye, or a message could not be read as a "
                    "rog.v1.WorkerMessage: encode messages from proto/rog.proto, and send a "
                    "Goodbye before closing the stream");
  }
  svc_.engine_->Closed(session_);
  if (result.ok() && outbox_->backlogged()) {
    // Counted here, once: the outbox only ends the stream.
    result = Reject(Rejection::kDownlinkBacklog, grpc::StatusCode::RESOURCE_EXHAUSTED,
                    std::string(outbox_->end_status().message()));
    outbox_->Stop(/*cancel=*/true);
    return result;
  }
  if (result.ok() && outbox_->ended() && (!clean_ || !outbox_->end_status().ok())) {
    // Ended by the engine (replaced, evicted, refused, shutting down; a
    // refusal can come before a Goodbye, which waits for it): its status,
    // also sent in-band as the stream's last message.
    const absl::Status why = outbox_->end_status();
    outbox_->Stop(/*cancel=*/!clean_);
    return ToGrpc(why);
  }
  outbox_->Stop(/*cancel=*/!result.ok() ? false : !clean_);
  return result;
}

grpc::Status TrainerService::Session(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream) {
  return StreamSession(this, context, stream).Run();
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
