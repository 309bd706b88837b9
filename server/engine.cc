// rogd's engine thread: a queue of events in arrival order, run one at a
// time on the engine core (server/engine_core.h), with the core's timers
// looked at after every event and at least every EngineCore::kTickSeconds.
#include "server/engine.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace rog {

struct Engine::Impl {
  std::unique_ptr<EngineCore> core;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  std::thread thread;

  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(std::move(task));
    }
    cv.notify_one();
  }

  // Runs `fn` on the engine thread and waits for its result.
  template <typename T>
  T Call(std::function<T()> fn) {
    std::promise<T> done;
    std::future<T> result = done.get_future();
    Post([&] { done.set_value(fn()); });
    return result.get();
  }

  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::duration<double>(EngineCore::kTickSeconds),
                    [&] { return !queue.empty() || stopping; });
        if (!queue.empty()) {
          task = std::move(queue.front());
          queue.pop_front();
        } else if (stopping) {
          return;
        }
      }
      if (task) task();
      core->Tick();
    }
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
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
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

pb::StatusReply Engine::Status() {
  return impl_->Call<pb::StatusReply>([this] { return impl_->core->Status(); });
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
  return impl_->Call<MetricsSnapshot>([this] { return impl_->core->Metrics(); });
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
