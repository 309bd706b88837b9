#include "client/worker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/credentials.h"
#include "client/worker_protocol.h"
#include "common/goodput.h"
#include "common/worker_id.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"
#include "security/credential_files.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Codes that retrying cannot fix.
bool Permanent(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return true;
    default:
      return false;
  }
}

using Stream = grpc::ClientReaderWriter<pb::WorkerMessage, pb::ServerMessage>;

// The protocol state machine's options, from the worker's (by name).
ProtocolOptions ProtocolOptionsOf(const WorkerOptions& opt, std::shared_ptr<const Clock> clock) {
  ProtocolOptions p;
  p.worker_id = opt.worker_id;
  p.batch_bytes = opt.batch_bytes;
  p.batch_seconds = opt.batch_seconds;
  p.inflight_lead = opt.inflight_lead;
  p.replay_buffer_bytes = opt.replay_buffer_bytes;
  p.return_after_share = opt.return_after_share;
  p.share_in_background = opt.share_in_background;
  p.drain = opt.drain;
  p.clock = std::move(clock);
  return p;
}

}  // namespace

// The SDK's session: the protocol state machine (client/worker_protocol.h)
// behind one lock, the stream to rogd, its two threads (the session thread
// reads, the sender writes), reconnects with backoff, and the waits of the
// public calls. The only part of the SDK that knows gRPC.
struct Worker::Impl {
  WorkerOptions opt;
  ClientCredentials security;  // TLS settings and the token, loaded
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::Trainer::Stub> stub;

  mutable std::mutex mu;
  std::condition_variable cv;
  // Every reading of time and every timed wait of the protocol goes through
  // the clock (WorkerOptions::clock), so that tests can move it. gRPC's own
  // deadlines (probes, connecting) and the sender's 20 ms poll stay on real
  // time: they are the transport's.
  std::shared_ptr<const Clock> clock;
  WorkerProtocol proto;  // guarded by mu

  // --- connection (guarded by mu) ---------------------------------------------
  bool closing = false;
  absl::Status fatal;  // set once; every call returns it
  std::string last_error;
  grpc::ClientContext* context = nullptr;  // the live stream's, to cancel it
  Stream* current_stream = nullptr;
  bool writing = false;   // the sender is inside Write
  uint64_t session = 0;   // counts streams
  double hold_until = 0;  // Disconnect(hold)
  uint64_t reconnects = 0;
  uint64_t sessions_at_last_warning = 0;
  double last_warning = 0;

  std::thread session_thread;
  std::thread sender_thread;

  // Worker::SetInterruptCheck; called by the waiting thread with mu
  // unlocked, on real time (the protocol's clock may be a fake one).
  std::function<absl::Status()> interrupt_check;
  std::chrono::steady_clock::time_point last_check{};

  Impl(WorkerOptions o, Layout l, std::vector<float> initial)
      : opt(std::move(o)),
        clock(opt.clock ? opt.clock : DefaultClock()),
        proto(ProtocolOptionsOf(opt, clock), std::move(l), std::move(initial)) {}

  double Now() const { return clock->Now(); }
  // Waits on cv until notified or the clock reaches `deadline`; callers loop.
  // With an interrupt check, at most 50 ms at a time, then the check (mu
  // unlocked while it runs): its status, OK to go on waiting.
  absl::Status WaitUntil(std::unique_lock<std::mutex>& lock, double deadline) {
    if (!interrupt_check) {
      clock->WaitUntil(cv, lock, deadline);
      return absl::OkStatus();
    }
    clock->WaitUntil(cv, lock, std::min(deadline, Now() + 0.05));
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < std::chrono::milliseconds(50)) return absl::OkStatus();
    last_check = now;
    lock.unlock();
    absl::Status s = interrupt_check();
    lock.lock();
    return s;
  }

  void SetFatal(absl::Status s) {
    if (fatal.ok()) {
      spdlog::error("worker {}: {}", opt.worker_id, std::string(s.message()));
      fatal = std::move(s);
    }
    cv.notify_all();
  }

  std::string WaitReason() const {
    if (!proto.active()) {
      return absl::StrCat("not connected to rogd at ", opt.server,
                          last_error.empty() ? "" : absl::StrCat(" (", last_error, ")"));
    }
    return proto.WaitReason();
  }

  // --- threads ----------------------------------------------------------------------
  void SenderLoop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      std::vector<pb::WorkerMessage> out;
      // Wakes on every state change and at least every 20 ms, so that a
      // window's end is noticed without a message.
      cv.wait_for(lock, std::chrono::milliseconds(20),
                  [&] { return closing || !fatal.ok() || proto.active(); });
      if (!fatal.ok() || (closing && !proto.active())) return;
      if (!proto.active() || context == nullptr) continue;
      out = proto.TakeOutgoing();
      if (out.empty()) {
        cv.wait_for(lock, std::chrono::milliseconds(20));
        continue;
      }
      Stream* stream = current_stream;
      const uint64_t s = session;
      writing = true;
      lock.unlock();
      bool ok = true;
      for (const pb::WorkerMessage& m : out) {
        if (!stream->Write(m)) {
          ok = false;
          break;
        }
      }
      lock.lock();
      writing = false;
      cv.notify_all();
      if (!ok && s == session && context != nullptr) {
        proto.OnStreamEnded();
        context->TryCancel();
      }
    }
  }

  void SessionLoop() {
    double backoff = opt.backoff_initial;
    std::mt19937_64 rng{std::random_device{}()};
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (closing || !fatal.ok()) return;
        if (hold_until > Now()) {
          while (!closing && Now() < hold_until) clock->WaitUntil(cv, lock, hold_until);
          continue;
        }
      }
      const double started = Now();
      grpc::Status status = RunStream();
      std::unique_lock<std::mutex> lock(mu);
      if (closing || proto.said_goodbye()) return;
      if (!status.ok() && Permanent(status.error_code())) {
        SetFatal(absl::Status(
            static_cast<absl::StatusCode>(status.error_code()),
            absl::StrCat("rogd refused worker '", opt.worker_id, "': ", status.error_message())));
        return;
      }
      last_error = status.ok() ? "stream ended" : status.error_message();
      // Say so when rogd stays out of reach: at the first failure, then every
      // 10 s (a worker waiting silently looks hung).
      const double now = Now();
      if (session == sessions_at_last_warning && now - last_warning >= 10) {
        spdlog::warn("worker {}: cannot reach rogd at {}: {}; retrying", opt.worker_id, opt.server,
                     last_error);
        last_warning = now;
      } else if (session != sessions_at_last_warning) {
        sessions_at_last_warning = session;
        last_warning = 0;
      }
      if (Now() - started > 10) backoff = opt.backoff_initial;
      std::uniform_real_distribution<double> jitter(0.5, 1.0);
      const double wait = backoff * jitter(rng);
      backoff = std::min(opt.backoff_max, backoff * 2);
      spdlog::debug("worker {}: reconnecting in {:.2f} s ({})", opt.worker_id, wait, last_error);
      const double retry_at = Now() + wait;
      while (!closing && Now() < retry_at) clock->WaitUntil(cv, lock, retry_at);
    }
  }

  // Why the channel does not connect. WaitForConnected does not say, and a
  // refused TLS handshake looks like an unreachable rogd to it, so a call
  // that may not wait for the connection asks the channel for its last
  // error. (Should the channel connect meanwhile, the call reaches rogd
  // with the token and no hello, and ends at its deadline: no state.)
  grpc::Status ConnectError() {
    grpc::ClientContext probe;
    security.Authorize(&probe);
    probe.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    std::unique_ptr<Stream> stream = stub->Session(&probe);
    const grpc::Status s = stream->Finish();
    std::string why = s.error_message();
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || why.empty()) {
      why = absl::StrCat("no connection within ", std::max(0.1, opt.backoff_max),
                         " s (is rogd running there?)");
    } else if (absl::StrContains(why, "Socket closed")) {
      absl::StrAppend(
          &why, security.tls ? "; rogd closed the connection during TLS: if it requires client "
                               "certificates (rogd --tls_ca), it refused this worker's "
                               "(tls_cert_file: signed by another CA, expired, or none given); "
                               "rogd's log says which"
                             : "; rogd closed the connection: if it serves TLS (rogd --tls_cert), "
                               "set tls_ca_file to the CA that signed its certificate");
    } else if (LooksLikeTlsFailure(why)) {
      absl::StrAppend(&why,
                      "; this worker does not trust rogd's certificate: it must be signed by "
                      "the CA in tls_ca_file, be valid now and name the host of the server "
                      "address (or tls_server_name)");
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, why);
  }

  // One stream from hello to its end.
  grpc::Status RunStream() {
    // Fail fast while rogd is away; the session loop backs off and retries.
    if (!channel->WaitForConnected(
            std::chrono::system_clock::now() +
            std::chrono::milliseconds(static_cast<int>(std::max(0.1, opt.backoff_max) * 1000)))) {
      return ConnectError();
    }
    grpc::ClientContext ctx;
    security.Authorize(&ctx);
    pb::WorkerMessage hello;
    {
      std::lock_guard<std::mutex> lock(mu);
      *hello.mutable_hello() = proto.MakeHello();
      context = &ctx;
    }
    std::unique_ptr<Stream> stream = stub->Session(&ctx);
    // rogd's own account of why it ended the stream (pb::StreamEnd): the
    // call's status may say only CANCELLED.
    std::unique_ptr<grpc::Status> ended_by_rogd;
    pb::ServerMessage m;
    bool ok = stream->Write(hello) && stream->Read(&m);
    if (ok && m.kind_case() != pb::ServerMessage::kWelcome) ok = false;
    if (ok) {
      std::lock_guard<std::mutex> lock(mu);
      ++session;
      if (session > 1) ++reconnects;
      current_stream = stream.get();
      const absl::Status welcomed = proto.OnWelcome(m.welcome());
      if (!welcomed.ok()) {
        spdlog::error("worker {}: bad welcome ({}); reconnecting", opt.worker_id,
                      std::string(welcomed.message()));
        ctx.TryCancel();
      }
      spdlog::info("worker {}: connected to {} at iteration {}{}", opt.worker_id, opt.server,
                   proto.clock(),
                   m.welcome().send_initial_values() ? " (uploading the model)" : "");
      cv.notify_all();
    }
    while (ok && stream->Read(&m)) {
      std::lock_guard<std::mutex> lock(mu);
      if (m.kind_case() == pb::ServerMessage::kEnd) {
        // rogd's last word on this stream: close our side at once.
        ended_by_rogd = std::make_unique<grpc::Status>(
            static_cast<grpc::StatusCode>(m.end().code()), m.end().message());
        ctx.TryCancel();
      } else if (absl::Status s = proto.OnMessage(m); !s.ok()) {
        spdlog::error("worker {}: bad message from rogd ({}); reconnecting", opt.worker_id,
                      std::string(s.message()));
        ctx.TryCancel();
      }
      cv.notify_all();
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      proto.OnStreamEnded();
      cv.notify_all();
      // The call is over (or was cancelled); a write still in progress ends
      // with it. Cancel only if it does not, so Finish reports rogd's status.
      if (!cv.wait_for(lock, std::chrono::seconds(1), [&] { return !writing; })) {
        ctx.TryCancel();
        cv.wait(lock, [&] { return !writing; });
      }
      current_stream = nullptr;
      context = nullptr;
    }
    grpc::Status status = stream->Finish();
    if (ended_by_rogd != nullptr) status = *ended_by_rogd;
    spdlog::info("worker {}: stream to {} ended: {}", opt.worker_id, opt.server,
                 status.ok() ? std::string("ok") : status.error_message());
    return status;
  }
};

// --- Worker -----------------------------------------------------------------------

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Start(WorkerOptions options, Layout layout,
                                                      std::vector<float> initial) {
  if (!ValidWorkerId(options.worker_id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker id '", options.worker_id.substr(0, 80),
        "' is invalid: use 1-64 letters, digits, '.', '_' or '-' (e.g. the robot's host name)"));
  }
  if (initial.size() != layout.total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("initial values have ", initial.size(),
                                                   " elements; the layout has ",
                                                   layout.total_numel()));
  }
  if (options.batch_bytes < 1024) {
    return absl::InvalidArgumentError("batch_bytes must be at least 1024");
  }
  if (absl::Status s = CheckBatchSeconds(options.batch_seconds, "batch_seconds", "batch_bytes");
      !s.ok()) {
    return s;
  }
  if (!(options.keepalive_timeout >= 1 && options.keepalive_timeout <= 3600)) {
    return absl::InvalidArgumentError(
        absl::StrCat("keepalive_timeout is ", options.keepalive_timeout,
                     " s: give 1 to 3600 seconds (30 by default; docs/sdk.md, \"Faults\")"));
  }
  ClientSecurity sec{options.tls_ca_file,     options.tls_cert_file, options.tls_key_file,
                     options.tls_server_name, options.token,         options.token_file};
  absl::StatusOr<ClientCredentials> security =
      LoadClientCredentials(sec, options.server, SettingNames::kWorkerOptions);
  if (!security.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker '", options.worker_id, "': ", security.status().message()));
  }
  if (options.credentials != nullptr && security->tls) {
    return absl::InvalidArgumentError(
        "give WorkerOptions.credentials or the tls_* files, not both");
  }
  for (const std::string& w : security->warnings) {
    spdlog::warn("worker {}: {}", options.worker_id, w);
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(layout), std::move(initial));
  impl->security = *std::move(security);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(impl->opt.keepalive_timeout * 1000));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::max(0.1, impl->opt.backoff_max) * 1000));
  args.SetMaxReceiveMessageSize(64 << 20);
  impl->security.Apply(&args);
  std::shared_ptr<grpc::ChannelCredentials> creds =
      impl->opt.credentials ? impl->opt.credentials : impl->security.channel;
  impl->channel = grpc::CreateCustomChannel(impl->opt.server, creds, args);
  impl->stub = pb::Trainer::NewStub(impl->channel);
  Impl* raw = impl.get();
  impl->session_thread = std::thread([raw] { raw->SessionLoop(); });
  impl->sender_thread = std::thread([raw] { raw->SenderLoop(); });
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->closing = true;
    if (impl_->context != nullptr) impl_->context->TryCancel();
    impl_->cv.notify_all();
  }
  if (impl_->session_thread.joinable()) impl_->session_thread.join();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->proto.OnStreamEnded();
    impl_->cv.notify_all();
  }
  if (impl_->sender_thread.joinable()) impl_->sender_thread.join();
}

absl::Status Worker::BeginIteration(absl::Span<float> params, double timeout_seconds) {
  Impl& m = *impl_;
  if (params.size() != m.proto.layout().total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("BeginIteration: params have ", params.size(),
                                                   " elements; the model has ",
                                                   m.proto.layout().total_numel()));
  }
  std::unique_lock<std::mutex> lock(m.mu);
  if (!m.fatal.ok()) return m.fatal;
  if (m.proto.in_iteration()) {
    return absl::FailedPreconditionError("BeginIteration called twice without EndIteration");
  }
  const double t0 = m.Now();
  const double until = timeout_seconds > 0 ? t0 + timeout_seconds : kInf;
  bool waited = false;
  double detached_wait = 0;  // of the wait, the time spent detached
  while (!m.proto.MayBegin()) {
    if (!m.fatal.ok()) return m.fatal;
    if (m.closing) return absl::CancelledError("the worker is closing");
    // Tell rogd we wait: it releases us, or asks the others to push.
    if (m.proto.ReportWait()) m.cv.notify_all();
    waited = true;
    const double now = m.Now();
    if (now >= until) {
      // The wait counts all the same: in the totals now, and in the stats
      // of the iteration that starts eventually.
      m.proto.CountTimedOutWait(now - t0 - detached_wait, detached_wait);
      return absl::DeadlineExceededError(
          absl::StrCat("worker '", m.opt.worker_id, "' could not start iteration ",
                       m.proto.clock() + 1, " within ", timeout_seconds, " s: ", m.WaitReason()));
    }
    const bool was_detached = m.proto.detached();
    absl::Status go_on = m.WaitUntil(lock, std::min(until, now + 0.1));
    if (was_detached) detached_wait += m.Now() - now;
    if (!go_on.ok()) {
      m.proto.CountTimedOutWait(m.Now() - t0 - detached_wait, detached_wait);
      return go_on;
    }
  }
  m.proto.Begin(t0, m.Now(), waited, detached_wait, params);
  return absl::OkStatus();
}

absl::StatusOr<IterationStats> Worker::EndIteration(absl::Span<const float> update) {
  Impl& m = *impl_;
  if (update.size() != m.proto.layout().total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("EndIteration: the update has ", update.size(),
                                                   " elements; the model has ",
                                                   m.proto.layout().total_numel()));
  }
  for (float v : update) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          "EndIteration: the update holds NaN or infinity; it was not applied (check the "
          "learning rate and the loss)");
    }
  }
  std::unique_lock<std::mutex> lock(m.mu);
  if (!m.fatal.ok()) return m.fatal;
  if (!m.proto.in_iteration()) {
    return absl::FailedPreconditionError("EndIteration called without BeginIteration");
  }
  m.proto.StartPush(update);
  m.cv.notify_all();
  absl::Status go_on;
  for (;;) {
    if (!m.fatal.ok()) break;
    const double now = m.Now();
    if (m.proto.PushEnds(now)) break;
    // Acks and disconnects notify; the poll notices the window's end.
    go_on = m.WaitUntil(lock, m.proto.PushWakeAt(now));
    if (!go_on.ok()) break;  // the rows stream on in the background
  }
  IterationStats stats = m.proto.FinishPush();
  if (!m.fatal.ok()) return m.fatal;
  if (!go_on.ok()) return go_on;
  return stats;
}

absl::Status Worker::Flush(double timeout_seconds) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  const double until = m.Now() + timeout_seconds;
  // Connected first, so that what is unacknowledged is settled by a welcome.
  while (!m.proto.Uploaded()) {
    if (!m.fatal.ok()) return m.fatal;
    if (m.Now() >= until) {
      return absl::DeadlineExceededError(absl::StrCat("Flush: ", m.WaitReason()));
    }
    if (absl::Status s = m.WaitUntil(lock, std::min(until, m.Now() + 0.1)); !s.ok()) return s;
  }
  for (;;) {
    if (!m.fatal.ok()) return m.fatal;
    const bool done = m.proto.FlushStep();
    m.cv.notify_all();
    if (done) return absl::OkStatus();
    if (m.Now() >= until) {
      return absl::DeadlineExceededError(
          absl::StrCat("Flush: rogd did not acknowledge every row within ", timeout_seconds, " s (",
                       m.WaitReason(), ")"));
    }
    if (absl::Status s = m.WaitUntil(lock, std::min(until, m.Now() + 0.05)); !s.ok()) return s;
  }
}

absl::Status Worker::Sync(double timeout_seconds) {
  const double until = impl_->Now() + timeout_seconds;
  absl::Status s = Flush(timeout_seconds);
  if (!s.ok()) return s;
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  for (;;) {
    if (!m.fatal.ok()) return m.fatal;
    const bool done = m.proto.SyncStep();
    m.cv.notify_all();
    if (done) return absl::OkStatus();
    if (m.Now() >= until) {
      m.proto.CancelSync();
      return absl::DeadlineExceededError(
          absl::StrCat("Sync: rogd did not send every pending row within ", timeout_seconds, " s (",
                       m.WaitReason(), ")"));
    }
    if (absl::Status s = m.WaitUntil(lock, std::min(until, m.Now() + 0.05)); !s.ok()) {
      m.proto.CancelSync();
      return s;
    }
  }
}

absl::Status Worker::Finish(double timeout_seconds) {
  {
    Impl& m = *impl_;
    std::lock_guard<std::mutex> lock(m.mu);
    if (!m.fatal.ok()) return m.fatal;
    m.proto.StartDrain();
  }
  return Sync(timeout_seconds);
}

absl::Status Worker::Close(double timeout_seconds) {
  absl::Status s = Flush(timeout_seconds);
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  if (s.ok() && m.proto.active()) {
    m.proto.SayGoodbye("worker closed");
    m.cv.notify_all();
    // rogd ends the stream once it has the goodbye.
    const double until = m.Now() + timeout_seconds;
    while (m.proto.active() && m.Now() < until) {
      if (absl::Status w = m.WaitUntil(lock, until); !w.ok()) {
        s = w;
        break;
      }
    }
  }
  m.closing = true;
  if (m.context != nullptr) m.context->TryCancel();
  m.cv.notify_all();
  return s;
}

std::vector<float> Worker::Replica() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.replica();
}

const Layout& Worker::layout() const { return impl_->proto.layout(); }

uint64_t Worker::clock() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.clock();
}

bool Worker::connected() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.active();
}

double Worker::stall_seconds() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.total_stall();
}

double Worker::detached_seconds() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.total_detached();
}

bool Worker::detached() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.detached();
}

uint64_t Worker::detaches() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.detaches();
}

uint64_t Worker::reconnects() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->reconnects;
}

uint64_t Worker::replayed() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.replayed();
}

uint64_t Worker::replay_dropped() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->proto.replay_dropped();
}

StallInfo Worker::last_stall() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  StallInfo s = impl_->proto.stall();
  if (s.reason.empty()) s.reason = impl_->WaitReason();
  return s;
}

void Worker::SetInterruptCheck(std::function<absl::Status()> check) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->interrupt_check = std::move(check);
}

void Worker::Disconnect(double hold_seconds) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->hold_until = impl_->Now() + hold_seconds;
  if (impl_->context != nullptr) impl_->context->TryCancel();
  impl_->cv.notify_all();
}

}  // namespace rog
