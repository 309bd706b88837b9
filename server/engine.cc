// rogd's engine thread: a queue of events in arrival order, run one at a
// time on the engine core (server/engine_core.h). Batches and acks leave
// their follow-up to EngineCore::Settle, which runs with the core's timers
// once the queue is empty, once the events since the last settle took as
// long as it did, and at least every EngineCore::kTickSeconds.
// Each event's wait in the queue is recorded (server/queue_delay.h) and
// reported with Status.
#include "server/engine.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "server/queue_delay.h"

namespace rog {

struct Engine::Impl {
  std::unique_ptr<EngineCore> core;

  std::mutex mu;
  std::condition_variable cv;
  // Each event with the time it arrived.
  std::deque<std::pair<std::function<void()>, std::chrono::steady_clock::time_point>> queue;
  bool stopping = false;
  QueueDelay queue_delay;  // engine thread only
  // Engine thread only: seconds spent on events since the last Settle, and
  // how long that Settle (with Tick) took.
  double busy_seconds = 0, settle_seconds = 0;
  std::thread thread;

  void Post(std::function<void()> task) {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.emplace_back(std::move(task), now);
    }
    cv.notify_one();
  }

  // Runs `fn` on the engine thread and waits for its result. It settles
  // first (and looks at the timers), so that a hello, a goodbye or an
  // admin call sees every event before it followed through.
  template <typename T>
  T Call(std::function<T()> fn) {
    std::promise<T> done;
    std::future<T> result = done.get_future();
    Post([&] {
      SettleNow();
      done.set_value(fn());
    });
    return result.get();
  }

  // Engine thread only.
  void SettleNow() {
    const auto start = std::chrono::steady_clock::now();
    core->Settle();
    core->Tick();
    settle_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    busy_seconds = 0;
  }

  void Loop() {
    for (;;) {
      std::function<void()> task;
      std::chrono::steady_clock::time_point posted;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::duration<double>(EngineCore::kTickSeconds),
                    [&] { return !queue.empty() || stopping; });
        if (!queue.empty()) {
          task = std::move(queue.front().first);
          posted = queue.front().second;
          queue.pop_front();
        } else if (stopping) {
          return;
        }
      }
      if (task) {
        const auto start = std::chrono::steady_clock::now();
        queue_delay.Record(std::chrono::duration<double>(start - posted).count());
        task();
        busy_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      // Settle and look at the timers once the queue is empty, or once the
      // events since the last settle took as long as it did: a burst of
      // batches pays the follow-up once, and settling never takes more
      // than about half the engine thread's time.
      if (!task || QueueEmpty() || busy_seconds >= settle_seconds ||
          busy_seconds >= EngineCore::kTickSeconds) {
        SettleNow();
      }
    }
  }

  bool QueueEmpty() {
    std::lock_guard<std::mutex> lock(mu);
    return queue.empty();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_one();
    if (thread.joinable()) thread.join();
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { impl_->Stop(); }

absl::StatusOr<std::unique_ptr<Engine>> Engine::Start(EngineOptions options) {
  absl::StatusOr<std::unique_ptr<EngineCore>> core = EngineCore::Create(std::move(options));
  if (!core.ok()) return core.status();
  auto impl = std::make_unique<Impl>();
  impl->core = *std::move(core);
  impl->core->set_deferred_settle(true);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  // For per-thread CPU time in /proc (tools/scale); at most 15 characters.
  ::pthread_setname_np(impl->thread.native_handle(), "rogd-engine");
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

absl::StatusOr<Admission> Engine::Hello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                        std::string peer, Rejection* reason) {
  return impl_->Call<absl::StatusOr<Admission>>(
      [&] { return impl_->core->Hello(std::move(outbox), hello, peer, reason); });
}

void Engine::Batch(uint64_t session, UplinkBatch batch) {
  auto shared = std::make_shared<UplinkBatch>(std::move(batch));
  impl_->Post([this, session, shared] { impl_->core->Batch(session, *shared); });
}

void Engine::Ack(uint64_t session, const pb::Ack& ack, std::shared_ptr<const void> hold) {
  impl_->Post([this, session, ack, hold] { impl_->core->Ack(session, ack); });
}

void Engine::Progress(uint64_t session, const pb::Progress& progress,
                      std::shared_ptr<const void> hold) {
  impl_->Post([this, session, progress, hold] { impl_->core->Progress(session, progress); });
}

void Engine::Goodbye(uint64_t session, std::string reason) {
  impl_->Call<bool>([this, session, reason] {
    impl_->core->Goodbye(session, reason);
    return true;
  });
}

void Engine::EndStreams(const std::string& why) {
  impl_->Call<bool>([this, why] {
    impl_->core->EndStreams(why);
    return true;
  });
}

void Engine::Closed(uint64_t session) {
  impl_->Post([this, session] { impl_->core->Closed(session); });
}

void Engine::CountRejection(Rejection reason, const std::string& who, const std::string& message) {
  impl_->Post([this, reason, who, message] { impl_->core->CountRejection(reason, who, message); });
}

namespace {

// The engine thread's queue delay into `reply` (proto/rog.proto, StatusReply).
void AddQueueDelay(const QueueDelay& delay, pb::StatusReply& reply) {
  reply.set_engine_events(delay.events());
  reply.set_engine_queue_delay_p50(delay.Quantile(0.5));
  reply.set_engine_queue_delay_p99(delay.Quantile(0.99));
  reply.set_engine_queue_delay_max(delay.max_seconds());
  for (uint64_t c : delay.counts()) reply.add_engine_queue_delay_counts(c);
}

}  // namespace

pb::StatusReply Engine::Status() {
  return impl_->Call<pb::StatusReply>([this] {
    pb::StatusReply reply = impl_->core->Status();
    AddQueueDelay(impl_->queue_delay, reply);
    return reply;
  });
}

pb::WorkersReply Engine::Workers() {
  return impl_->Call<pb::WorkersReply>([this] { return impl_->core->Workers(); });
}

absl::StatusOr<pb::StalenessReply> Engine::Staleness(const pb::StalenessRequest& request) {
  return impl_->Call<absl::StatusOr<pb::StalenessReply>>(
      [&] { return impl_->core->Staleness(request); });
}

absl::StatusOr<pb::CheckpointReply> Engine::CheckpointNow() {
  return impl_->Call<absl::StatusOr<pb::CheckpointReply>>(
      [this] { return impl_->core->CheckpointNow(); });
}

absl::StatusOr<ModelSnapshot> Engine::Export() {
  return impl_->Call<absl::StatusOr<ModelSnapshot>>([this] { return impl_->core->Export(); });
}

MetricsSnapshot Engine::Metrics() {
  return impl_->Call<MetricsSnapshot>([this] {
    MetricsSnapshot snapshot = impl_->core->Metrics();
    AddQueueDelay(impl_->queue_delay, snapshot.status);
    return snapshot;
  });
}

absl::Status Engine::CheckInvariants() {
  return impl_->Call<absl::Status>([this] { return impl_->core->CheckInvariants(); });
}

absl::Status Engine::Shutdown() {
  absl::Status result = impl_->Call<absl::Status>([this] { return impl_->core->Shutdown(); });
  impl_->Stop();
  return result;
}

}  // namespace rog
