#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/worker_protocol.h"
#include "common/clock.h"
#include "common/goodput.h"
#include "common/link_use.h"
#include "common/model_layouts.h"
#include "proto/convert.h"
#include "server/engine_core.h"
#include "server/uplink_batch.h"
#include "sim/invariants.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The SDK's reconnect backoff (WorkerOptions): while the model arrives,
// rogd turns joining workers away and they retry.
constexpr double kBackoffInitial = 0.1;
constexpr double kBackoffMax = 2.0;
// How long after the training time the drain may take, at most, before the
// simulation is called stuck (seconds of simulated time).
constexpr double kMaxDrainSeconds = 3600;
// How long the team may take to start (the model's upload over the
// slowest trace included).
constexpr double kMaxStartSeconds = 24 * 3600;

// SplitMix64: the same sequence on every platform and standard library.
uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(Mix(seed)) {}
  uint64_t Next() { return s_ = Mix(s_); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_;
};

// A seed for (run seed, worker, iteration, purpose): every policy sees the
// same compute times and updates for the same worker and iteration.
uint64_t SeedFor(uint64_t seed, size_t worker, uint64_t iteration, uint64_t purpose) {
  return Mix(Mix(Mix(seed ^ (purpose << 56)) ^ worker) ^ iteration);
}

// Bytes a message of `size` serialized bytes takes on the link: gRPC's
// 5-byte length prefix and an HTTP/2 frame header per 16 KiB frame.
uint64_t WireBytes(size_t size) { return size + 5 + 9 * (1 + size / 16384); }

// The simulation's time, set by its event loop. Nothing waits on it.
class SimClock final : public Clock {
 public:
  double Now() const override { return now_; }
  // A wall clock as FakeClock's: the simulated time from a fixed instant.
  double UnixNow() const override { return FakeClock::kUnixStart + now_; }
  void WaitUntil(std::condition_variable&, std::unique_lock<std::mutex>&, double) const override {}
  void Set(double t) { now_ = t; }

 private:
  double now_ = 0;
};

// One direction of a worker's link: messages cross one after another at the
// trace's rate, then arrive after the one-way delay.
template <typename Message>
class Link {
 public:
  Link(const Trace* trace, double scale, double delay)
      : trace_(trace), scale_(scale), delay_(delay) {}

  // Queues `m` at `now`; when it arrives.
  double Send(double now, Message m) {
    const uint64_t bytes = WireBytes(m.ByteSizeLong());
    const double start = std::max(now, free_at_);
    free_at_ = trace_->TransferEnd(start, static_cast<double>(bytes), scale_);
    queue_.push_back(Entry{std::move(m), bytes, start});
    return free_at_ + delay_;
  }
  // The oldest message: the one whose arrival is due.
  Message Receive() {
    Message m = std::move(queue_.front().message);
    queue_.pop_front();
    return m;
  }
  // Bytes queued whose transmission has not started by `now`.
  uint64_t waiting_bytes(double now) const {
    uint64_t bytes = 0;
    for (const Entry& e : queue_) bytes += e.start > now ? e.bytes : 0;
    return bytes;
  }

 private:
  struct Entry {
    Message message;
    uint64_t bytes;
    double start;
  };
  const Trace* trace_;
  double scale_, delay_;
  double free_at_ = 0;
  std::deque<Entry> queue_;
};

enum class EventType {
  kUplinkArrive,    // a worker's message reaches rogd
  kDownlinkArrive,  // rogd's message reaches a worker
  kConnect,         // a worker opens a stream (its hello leaves)
  kComputeDone,
  kPushPoll,  // EndIteration looks at its push again
  kTick,      // rogd's engine thread ticks
  kEnd,       // the training time is over
  kScore,     // the learning task scores every replica
};

struct Event {
  double time;
  uint64_t seq;
  EventType type;
  size_t worker;
  uint64_t tag;
};

struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

// Where a worker's robot loop is.
enum class Phase {
  kJoining,    // its stream is not welcomed yet
  kWaiting,    // in BeginIteration
  kComputing,  // between BeginIteration and EndIteration
  kPushing,    // in EndIteration
  kStopped,    // the training time is over
  kFlushing,   // in Worker::Flush
  kFlushed,    // waits for the others' flushes
  kSyncing,    // in Worker::Sync
  kDrained,
};

class Simulation;

// rogd's end of a worker's stream: messages go onto the worker's downlink.
class SimOutbox final : public Outbox {
 public:
  SimOutbox(Simulation* sim, size_t worker) : sim_(sim), worker_(worker) {}
  void Send(pb::ServerMessage message) override;
  uint64_t queued_bytes() const override;
  void End(absl::Status status, std::string reason) override;

 private:
  Simulation* sim_;
  size_t worker_;
};

struct SimWorker {
  std::string id;
  std::unique_ptr<WorkerProtocol> proto;
  std::unique_ptr<Link<pb::WorkerMessage>> up;
  std::unique_ptr<Link<pb::ServerMessage>> down;
  double compute_factor = 1;
  const Trace* trace = nullptr;
  // Its pushes' acknowledged bytes and time on the uplink (the benchmark's
  // link utilisation).
  UplinkUse uplink_use;
  // rogd's side of its stream (what the stream handler keeps).
  uint64_t session = 0;
  uint64_t expected_seq = 1;
  bool accepts_values = false;
  double backoff = kBackoffInitial;

  Phase phase = Phase::kJoining;
  // The current BeginIteration: when it began, whether it had to wait, and
  // of the wait, the time spent detached (the SDK's accounting).
  double wait_start = 0;
  bool waited = false;
  double detached_wait = 0;
  double detached_since = -1;
  double begin_at = 0;
  double push_at = 0;
  uint64_t push_tag = 0;
  uint64_t iterations = 0;  // updates it computed (its counters' value)
  std::vector<float> params;
  // rogd's view: attached (the bound counts it).
  bool attached = true;
  // Its iterations, numbered by the clock each ended at (sim/invariants.h).
  IterationLog log;

  SimWorkerReport report;
  double staleness_sum = 0;
  uint64_t staleness_n = 0;
};

class Simulation {
 public:
  Simulation(const SimConfig& config, const Layout& layout)
      : cfg_(config),
        layout_(layout),
        bound_(EffectiveBound(config.engine.policy, config.engine.staleness)) {}

  absl::StatusOr<SimReport> Run();

  // SimOutbox's: rogd sends to worker w.
  void SendDown(size_t w, pb::ServerMessage m);
  uint64_t DownlinkWaiting(size_t w) const { return workers_[w].down->waiting_bytes(now_); }
  void StreamEnded(size_t w, const absl::Status& status);

 private:
  absl::Status Validate();
  absl::Status ValidateBatches() const;
  absl::Status ValidateEngine() const;
  void Setup();
  absl::Status Loop();
  void Schedule(double t, EventType type, size_t w, uint64_t tag = 0) {
    events_.push(Event{t, next_seq_++, type, w, tag});
  }
  bool Training() const { return start_ >= 0 && now_ < end_; }
  // Time of [from, to] within the training time.
  double Clipped(double from, double to) const {
    if (start_ < 0) return 0;
    return std::max(0.0, std::min(to, end_) - std::max(from, start_));
  }

  // rogd's side.
  void Connect(size_t w);
  void OnUplink(size_t w);
  void OnHello(size_t w, const pb::Hello& hello);
  void OnUplinkBatch(size_t w, const pb::RowBatch& batch);
  void OnDirectiveSent(size_t w, const pb::Directive& d);
  void StartTraining();
  void EndTraining();
  std::vector<pb::WorkerInfo> RogdWorkers() const;

  // The workers' side.
  void OnDownlink(size_t w);
  void Touch(size_t w);
  void Pump(size_t w);
  void NoteDetached(SimWorker& s);
  void TryBegin(size_t w);
  void CheckBound(size_t w);
  void ScoreReplicas(double time);
  void OnComputeDone(size_t w);
  void MakeUpdate(size_t w);
  void CountUpdate(size_t w);
  bool PushEnds(SimWorker& s);
  void EndPush(size_t w);
  void Stop(size_t w);
  void StartDrain(size_t w);
  bool AllIn(Phase phase) const;

  void Check();
  void Report();
  std::string Describe() const;

  SimConfig cfg_;
  const Layout& layout_;
  uint32_t bound_;
  std::shared_ptr<SimClock> clock_ = std::make_shared<SimClock>();
  std::unique_ptr<EngineCore> rogd_;
  std::vector<SimWorker> workers_;
  std::vector<float> initial_;
  std::vector<double> true_sum_;
  std::vector<uint32_t> amplitude_;  // per row
  std::vector<float> update_;
  std::priority_queue<Event, std::vector<Event>, EventLater> events_;
  uint64_t next_seq_ = 0;
  double now_ = 0;
  double start_ = -1, end_ = kInf, stopped_at_ = 0;
  // With a learning task: rogd's model when every worker had stopped, before
  // the drain.
  std::vector<float> stopped_model_;
  std::vector<pb::WorkerInfo> rogd_at_start_;
  absl::Status failure_;  // the first thing that went wrong
  SimReport report_;
};

void SimOutbox::Send(pb::ServerMessage message) { sim_->SendDown(worker_, std::move(message)); }

uint64_t SimOutbox::queued_bytes() const { return sim_->DownlinkWaiting(worker_); }

void SimOutbox::End(absl::Status status, std::string) { sim_->StreamEnded(worker_, status); }

absl::Status Simulation::Validate() {
  if (cfg_.workers < 1 || cfg_.workers > 64) {
    return absl::InvalidArgumentError("workers must be between 1 and 64");
  }
  if (!(cfg_.seconds > 0) || !(cfg_.compute_seconds > 0) || !(cfg_.trace_scale > 0)) {
    return absl::InvalidArgumentError("seconds, compute_seconds and trace_scale must be > 0");
  }
  if (cfg_.compute_jitter < 0 || cfg_.compute_jitter >= 1) {
    return absl::InvalidArgumentError("compute_jitter must be in [0, 1)");
  }
  if (absl::Status s = ValidateBatches(); !s.ok()) return s;
  if (!(cfg_.link_delay >= 0) || cfg_.link_delay > 10) {
    return absl::InvalidArgumentError("link_delay must be between 0 and 10 seconds");
  }
  if (cfg_.max_update < 1 || cfg_.max_update > 1000) {
    return absl::InvalidArgumentError("max_update must be between 1 and 1000");
  }
  if (absl::Status s = ValidateEngine(); !s.ok()) return s;
  if (cfg_.compute_factors.empty()) cfg_.compute_factors = {1.0};
  if (cfg_.learning != nullptr) {
    if (!(cfg_.score_every >= 0.01) || cfg_.seconds / cfg_.score_every > 100000) {
      return absl::InvalidArgumentError(
          "score_every must be at least 0.01 s and at most 100,000 scores per run");
    }
    initial_ = cfg_.learning->Initial();
    if (initial_.size() != layout_.total_numel()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the learning task's model has ", initial_.size(), " parameters and the layout ",
          layout_.total_numel(), ": simulate the model's own layout"));
    }
  }
  return absl::OkStatus();
}

// rogd's batches and the SDK's.
absl::Status Simulation::ValidateBatches() const {
  if (cfg_.engine.batch_bytes < 64 || cfg_.batch_bytes < 64) {
    return absl::InvalidArgumentError("engine.batch_bytes and batch_bytes must be >= 64");
  }
  if (absl::Status s = CheckBatchSeconds(cfg_.engine.batch_seconds, "engine.batch_seconds",
                                         "engine.batch_bytes");
      !s.ok()) {
    return s;
  }
  return CheckBatchSeconds(cfg_.batch_seconds, "batch_seconds", "batch_bytes");
}

// rogd's options the simulator does not set itself.
absl::Status Simulation::ValidateEngine() const {
  const EngineOptions& e = cfg_.engine;
  if (!(e.patience >= 0) || !std::isfinite(e.patience)) {
    return absl::InvalidArgumentError("engine.patience must be >= 0 seconds (0: off)");
  }
  if (!(e.patience_iterations >= 0 && e.patience_iterations <= 1000)) {
    return absl::InvalidArgumentError("engine.patience_iterations must be between 0 and 1000");
  }
  if (!(e.detach_speedup == 0 || e.detach_speedup > 1) || !std::isfinite(e.detach_speedup)) {
    return absl::InvalidArgumentError("engine.detach_speedup must be 0 (off) or above 1");
  }
  if (!e.checkpoint_path.empty() || !e.init_path.empty()) {
    return absl::InvalidArgumentError(
        "the simulated rogd keeps no checkpoints: leave engine.checkpoint_path and "
        "engine.init_path empty");
  }
  return absl::OkStatus();
}

void Simulation::Setup() {
  static const Trace kDefaultTrace = Trace::Constant(100);
  const size_t n = cfg_.workers;
  Rng init_rng(SeedFor(cfg_.seed, 0, 0, 1));
  if (cfg_.learning == nullptr) {
    initial_.resize(layout_.total_numel());
    for (float& v : initial_) v = static_cast<float>(static_cast<int>(init_rng.Next() % 201) - 100);
  }
  amplitude_.resize(layout_.num_rows());
  for (uint32_t& a : amplitude_) {
    const double u = init_rng.Uniform();
    a = 1 + static_cast<uint32_t>((cfg_.max_update - 1) * u * u * u);
  }
  true_sum_.assign(layout_.total_numel(), 0.0);
  update_.resize(layout_.total_numel());
  workers_.resize(n);
  size_t fastest = 0;
  for (size_t w = 0; w < n; ++w) {
    SimWorker& s = workers_[w];
    s.id = absl::StrCat("w", w);
    const Trace* trace =
        cfg_.traces.empty() ? &kDefaultTrace : &cfg_.traces[w % cfg_.traces.size()];
    s.up = std::make_unique<Link<pb::WorkerMessage>>(trace, cfg_.trace_scale, cfg_.link_delay);
    s.down = std::make_unique<Link<pb::ServerMessage>>(trace, cfg_.trace_scale, cfg_.link_delay);
    s.trace = trace;
    s.compute_factor = cfg_.compute_factors[w % cfg_.compute_factors.size()];
    s.params.resize(layout_.total_numel());
    // The protocol's options as configured (SimConfig is a ProtocolOptions),
    // so that every option the SDK has reaches the simulated workers; then
    // what the simulation sets itself: the id, its clock, no replay buffer
    // (links do not break here) and the SDK's in-flight lead.
    ProtocolOptions po = static_cast<const ProtocolOptions&>(cfg_);
    po.worker_id = s.id;
    po.inflight_lead = 0.05;
    po.replay_buffer_bytes = 0;
    po.clock = clock_;
    s.proto = std::make_unique<WorkerProtocol>(std::move(po), layout_, initial_);
    const Trace* best =
        cfg_.traces.empty() ? &kDefaultTrace : &cfg_.traces[fastest % cfg_.traces.size()];
    if (trace->MbitAt(0) > best->MbitAt(0)) fastest = w;
  }
  // As tools/run.sh starts a team: the robot on the fastest link brings the
  // model; the others join with row digests of the same initial values.
  Schedule(0, EventType::kConnect, fastest);
  for (size_t w = 0; w < n; ++w) {
    if (w != fastest) Schedule(kBackoffInitial, EventType::kConnect, w);
  }
  Schedule(EngineCore::kTickSeconds, EventType::kTick, 0);
}

absl::StatusOr<SimReport> Simulation::Run() {
  if (absl::Status s = Validate(); !s.ok()) return s;
  EngineOptions o = cfg_.engine;
  o.team_size = cfg_.workers;
  o.lease_seconds = 1e9;  // nobody disconnects
  o.clock = clock_;
  absl::StatusOr<std::unique_ptr<EngineCore>> core = EngineCore::Create(std::move(o));
  if (!core.ok()) return core.status();
  rogd_ = *std::move(core);
  Setup();
  if (absl::Status s = Loop(); !s.ok()) return s;
  Check();
  Report();
  return report_;
}

absl::Status Simulation::Loop() {
  while (!events_.empty()) {
    if (!failure_.ok()) return failure_;
    if (++report_.events > cfg_.max_events) {
      return absl::InternalError(absl::StrCat("simulation exceeded ", cfg_.max_events,
                                              " events at t=", now_, ": ", Describe()));
    }
    if (AllIn(Phase::kDrained)) return absl::OkStatus();
    if (start_ < 0 && now_ > kMaxStartSeconds) {
      return absl::InternalError(absl::StrCat("the team did not start within ", kMaxStartSeconds,
                                              " s of simulated time: ", Describe()));
    }
    if (now_ > end_ + kMaxDrainSeconds) {
      return absl::InternalError(absl::StrCat("the team did not drain within ", kMaxDrainSeconds,
                                              " s after the training time: ", Describe()));
    }
    const Event e = events_.top();
    events_.pop();
    now_ = e.time;
    clock_->Set(now_);
    switch (e.type) {
      case EventType::kUplinkArrive:
        OnUplink(e.worker);
        break;
      case EventType::kDownlinkArrive:
        OnDownlink(e.worker);
        break;
      case EventType::kConnect:
        Connect(e.worker);
        break;
      case EventType::kComputeDone:
        OnComputeDone(e.worker);
        break;
      case EventType::kPushPoll:
        if (workers_[e.worker].phase == Phase::kPushing && workers_[e.worker].push_tag == e.tag) {
          Touch(e.worker);
          if (workers_[e.worker].phase == Phase::kPushing) {
            Schedule(workers_[e.worker].proto->PushWakeAt(now_), EventType::kPushPoll, e.worker,
                     e.tag);
          }
        }
        break;
      case EventType::kTick:
        rogd_->Tick();
        Schedule(now_ + EngineCore::kTickSeconds, EventType::kTick, 0);
        break;
      case EventType::kEnd:
        if (cfg_.learning != nullptr) ScoreReplicas(cfg_.seconds);
        EndTraining();
        break;
      case EventType::kScore:
        // The k-th score time exactly (start_ + t - start_ may round).
        ScoreReplicas(static_cast<double>(e.tag) * cfg_.score_every);
        break;
    }
    if (start_ >= 0 && rogd_at_start_.empty()) rogd_at_start_ = RogdWorkers();
  }
  return absl::InternalError("the simulation ran out of events");
}

// --- rogd's side -------------------------------------------------------------------

void Simulation::Connect(size_t w) {
  SimWorker& s = workers_[w];
  pb::WorkerMessage m;
  *m.mutable_hello() = s.proto->MakeHello();
  Schedule(s.up->Send(now_, std::move(m)), EventType::kUplinkArrive, w);
}

void Simulation::OnUplink(size_t w) {
  SimWorker& s = workers_[w];
  const pb::WorkerMessage m = s.up->Receive();
  switch (m.kind_case()) {
    case pb::WorkerMessage::kHello:
      OnHello(w, m.hello());
      break;
    case pb::WorkerMessage::kBatch:
      OnUplinkBatch(w, m.batch());
      break;
    case pb::WorkerMessage::kAck:
      rogd_->Ack(s.session, m.ack());
      break;
    case pb::WorkerMessage::kProgress:
      rogd_->Progress(s.session, m.progress());
      break;
    case pb::WorkerMessage::kGoodbye:
      rogd_->Goodbye(s.session, m.goodbye().reason());
      break;
    default:
      break;
  }
  // As rogd's engine thread: the timers after every event.
  rogd_->Tick();
}

void Simulation::OnHello(size_t w, const pb::Hello& hello) {
  SimWorker& s = workers_[w];
  Rejection reason = Rejection::kNone;
  absl::StatusOr<Admission> a = rogd_->Hello(std::make_shared<SimOutbox>(this, w), hello,
                                             absl::StrCat("sim:", s.id), &reason);
  if (absl::IsUnavailable(a.status())) {
    // The model is still arriving: the SDK retries with backoff.
    Schedule(now_ + s.backoff, EventType::kConnect, w);
    s.backoff = std::min(kBackoffMax, 2 * s.backoff);
    return;
  }
  if (!a.ok()) {
    failure_ = absl::InternalError(
        absl::StrCat("rogd refused ", s.id, "'s hello: ", a.status().message()));
    return;
  }
  s.session = a->session;
  s.expected_seq = a->next_uplink_seq;
  s.accepts_values = a->accepts_values;
}

void Simulation::OnUplinkBatch(size_t w, const pb::RowBatch& batch) {
  SimWorker& s = workers_[w];
  UplinkBatch b;
  Rejection reason = Rejection::kNone;
  absl::Status v =
      ValidateUplinkBatch(batch, layout_, s.expected_seq, s.accepts_values, &b, &reason);
  if (!v.ok()) {
    failure_ = absl::InternalError(absl::StrCat("rogd would refuse ", s.id, "'s row batch (",
                                                RejectionLabel(reason), "): ", v.message()));
    return;
  }
  if (b.seq == s.expected_seq) ++s.expected_seq;
  rogd_->Batch(s.session, b);
}

void Simulation::SendDown(size_t w, pb::ServerMessage m) {
  SimWorker& s = workers_[w];
  if (m.has_directive()) OnDirectiveSent(w, m.directive());
  Schedule(s.down->Send(now_, std::move(m)), EventType::kDownlinkArrive, w);
}

void Simulation::StreamEnded(size_t w, const absl::Status& status) {
  if (failure_.ok()) {
    failure_ = absl::InternalError(
        absl::StrCat("rogd ended ", workers_[w].id, "'s stream: ", status.message()));
  }
}

// What rogd decided, as it decided it: the team's start, and the attach
// state the bound check uses.
void Simulation::OnDirectiveSent(size_t w, const pb::Directive& d) {
  SimWorker& s = workers_[w];
  if (d.has_release() && start_ < 0) StartTraining();
  if (d.has_detached() && s.attached) {
    s.attached = false;
    if (Training()) report_.transitions.push_back({now_ - start_, w, false, d.detached().reason()});
  }
  if (d.has_reattached() && !s.attached) {
    // Its next iteration is numbered past rogd's clock for it: the versions
    // in between are claimed, never computed (IterationLog).
    s.attached = true;
    if (Training()) {
      report_.transitions.push_back({now_ - start_, w, true, d.reattached().reason()});
    }
  }
}

// Called from inside rogd's event (its Release): rogd's account of the
// workers is taken once the event is over (Loop).
void Simulation::StartTraining() {
  start_ = now_;
  end_ = now_ + cfg_.seconds;
  Schedule(end_, EventType::kEnd, 0);
  if (cfg_.learning != nullptr) ScoreReplicas(0);
  for (int k = 1; cfg_.learning != nullptr && k * cfg_.score_every < cfg_.seconds; ++k) {
    Schedule(start_ + k * cfg_.score_every, EventType::kScore, 0, static_cast<uint64_t>(k));
  }
}

// rogd's account of each worker, in the simulator's order (rogd numbers
// them as they joined).
std::vector<pb::WorkerInfo> Simulation::RogdWorkers() const {
  std::vector<pb::WorkerInfo> out(workers_.size());
  const pb::WorkersReply reply = rogd_->Workers();
  for (const pb::WorkerInfo& info : reply.workers()) {
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (workers_[w].id == info.worker_id()) out[w] = info;
    }
  }
  return out;
}

void Simulation::EndTraining() {
  const std::vector<pb::WorkerInfo> now = RogdWorkers();
  for (size_t w = 0; w < workers_.size(); ++w) {
    SimWorkerReport& r = workers_[w].report;
    const pb::WorkerInfo& a = rogd_at_start_[w];
    const pb::WorkerInfo& b = now[w];
    r.detached_seconds = b.detached_seconds() - a.detached_seconds();
    r.detaches = b.detaches() - a.detaches();
    r.reattaches = b.reattaches() - a.reattaches();
    r.late_rows = b.late_rows() - a.late_rows();
    r.stall_cause_seconds[kStallPeerCompute] =
        b.stall_peer_compute_seconds() - a.stall_peer_compute_seconds();
    r.stall_cause_seconds[kStallPeerUplink] =
        b.stall_peer_uplink_seconds() - a.stall_peer_uplink_seconds();
    r.stall_cause_seconds[kStallDownlink] = b.stall_downlink_seconds() - a.stall_downlink_seconds();
    r.stall_cause_seconds[kStallPeerAsked] =
        b.stall_peer_asked_seconds() - a.stall_peer_asked_seconds();
    if (workers_[w].phase == Phase::kWaiting) Stop(w);
  }
}

// --- the workers' side ------------------------------------------------------------------

void Simulation::OnDownlink(size_t w) {
  SimWorker& s = workers_[w];
  const pb::ServerMessage m = s.down->Receive();
  absl::Status st;
  if (m.has_welcome()) {
    st = s.proto->OnWelcome(m.welcome());
    if (st.ok() && s.phase == Phase::kJoining) {
      s.phase = Phase::kWaiting;
      s.wait_start = now_;
      s.waited = false;
      s.detached_wait = 0;
    }
  } else if (m.has_end()) {
    st = absl::InternalError(absl::StrCat("rogd ended the stream: ", m.end().message()));
  } else {
    st = s.proto->OnMessage(m);
  }
  if (!st.ok()) {
    failure_ = absl::InternalError(absl::StrCat(s.id, ": ", st.message()));
    return;
  }
  Touch(w);
}

// After anything that may change what a worker's calls wait for, as the
// SDK's condition variable wakes them.
void Simulation::Touch(size_t w) {
  SimWorker& s = workers_[w];
  switch (s.phase) {
    case Phase::kWaiting:
      NoteDetached(s);
      TryBegin(w);
      break;
    case Phase::kPushing:
      if (PushEnds(s)) EndPush(w);
      break;
    case Phase::kFlushing:
      if (s.proto->Uploaded() && s.proto->FlushStep()) {
        s.phase = Phase::kFlushed;
        // Every worker syncs once every worker's updates are in rogd's
        // model: a sync before another's flush would miss its last rows.
        if (AllIn(Phase::kFlushed)) {
          for (size_t q = 0; q < workers_.size(); ++q) {
            workers_[q].phase = Phase::kSyncing;
            if (q != w) Touch(q);
          }
          Touch(w);
          return;
        }
      }
      break;
    case Phase::kSyncing:
      if (s.proto->SyncStep()) s.phase = Phase::kDrained;
      break;
    default:
      break;
  }
  Pump(w);
}

// The SDK's sender: writes whatever the protocol has for the stream.
void Simulation::Pump(size_t w) {
  SimWorker& s = workers_[w];
  if (!s.proto->active()) return;
  for (;;) {
    std::vector<pb::WorkerMessage> out = s.proto->TakeOutgoing();
    if (out.empty()) return;
    for (pb::WorkerMessage& m : out) {
      const bool stall_report = m.has_progress() && m.progress().stalled();
      const double arrival = s.up->Send(now_, std::move(m));
      if (stall_report && Training()) s.report.stall_report_seconds += arrival - now_;
      Schedule(arrival, EventType::kUplinkArrive, w);
    }
  }
}

// BeginIteration counts the part of its wait spent detached apart.
void Simulation::NoteDetached(SimWorker& s) {
  const bool detached = s.proto->detached();
  if (detached && s.detached_since < 0) s.detached_since = now_;
  if (!detached && s.detached_since >= 0) {
    s.detached_wait += now_ - s.detached_since;
    s.detached_since = -1;
  }
}

void Simulation::TryBegin(size_t w) {
  SimWorker& s = workers_[w];
  if (start_ >= 0 && now_ >= end_) {
    Stop(w);
    return;
  }
  if (!s.proto->MayBegin()) {
    s.proto->ReportWait();
    s.waited = true;
    return;
  }
  if (s.detached_since >= 0) s.detached_wait += now_ - s.detached_since;
  s.detached_since = -1;
  const double detached = std::min(s.detached_wait, now_ - s.wait_start);
  s.report.stall_seconds += Clipped(s.wait_start, now_) - Clipped(now_ - detached, now_);
  if (s.waited && Clipped(s.wait_start, now_) > 0) ++s.report.stalls;
  s.proto->Begin(s.wait_start, now_, s.waited, s.detached_wait, absl::MakeSpan(s.params));
  if (s.proto->detached()) {
    if (Training()) ++s.report.local_steps;
  } else if (s.attached) {
    // rogd's decision counts, not the SDK's knowledge of it: a worker rogd
    // has detached is out of the team's bound while the directive is still
    // on its way (behind an obstacle that may be many seconds).
    CheckBound(w);
  }
  Rng rng(SeedFor(cfg_.seed, w, s.iterations, 2));
  const double jitter = cfg_.compute_jitter * (2 * rng.Uniform() - 1);
  s.phase = Phase::kComputing;
  s.begin_at = now_;
  Schedule(now_ + cfg_.compute_seconds * s.compute_factor * (1 + jitter), EventType::kComputeDone,
           w);
}

// The staleness bound at w's start, against every peer rogd holds attached
// (sim/invariants.h).
void Simulation::CheckBound(size_t w) {
  // Counters are exact only when nothing is lost in coding, and only the
  // training time counts.
  if (!IsLossless(cfg_.engine.codec) || !Training() || cfg_.learning != nullptr) return;
  SimWorker& s = workers_[w];
  const uint64_t clock = s.proto->clock();
  bool violated = false;
  for (size_t q = 0; q < workers_.size(); ++q) {
    if (q == w || !workers_[q].attached) continue;
    const PeerAtStart p = CheckPeerAtStart(layout_, s.proto->replica(), initial_, q,
                                           workers_[q].log, /*join=*/0, clock, bound_);
    violated |= !p.ok;
    s.report.max_staleness = std::max(s.report.max_staleness, p.max_lag);
    s.staleness_sum += p.lag_sum;
    s.staleness_n += p.rows;
  }
  ++report_.bound_checks;
  if (violated) ++report_.bound_violations;
}

void Simulation::OnComputeDone(size_t w) {
  SimWorker& s = workers_[w];
  s.report.compute_seconds += Clipped(s.begin_at, now_);
  if (now_ > end_) {
    // Finished after the training time: it does not count, and its update
    // is never produced.
    Stop(w);
    return;
  }
  MakeUpdate(w);
  s.log.Add(s.proto->clock() + 1);
  ++s.iterations;
  ++s.report.iterations;
  s.proto->StartPush(update_);
  s.phase = Phase::kPushing;
  s.push_at = now_;
  ++s.push_tag;
  Pump(w);
  if (PushEnds(s)) {
    EndPush(w);
  } else {
    Schedule(s.proto->PushWakeAt(now_), EventType::kPushPoll, w, s.push_tag);
  }
}

// Every replica as it stands (a robot's model between its steps), scored.
void Simulation::ScoreReplicas(double time) {
  for (size_t w = 0; w < workers_.size(); ++w) {
    report_.scores.push_back(SimScore{time, w, cfg_.learning->Score(workers_[w].proto->replica())});
  }
}

// Integer updates: the counters, and values of the row's amplitude; or the
// learning task's step on what the compute started from.
void Simulation::MakeUpdate(size_t w) {
  if (cfg_.learning != nullptr) {
    cfg_.learning->Step(w, workers_[w].iterations, workers_[w].params, absl::MakeSpan(update_));
    CountUpdate(w);
    return;
  }
  const size_t n = workers_.size();
  Rng rng(SeedFor(cfg_.seed, w, workers_[w].iterations, 3));
  for (RowId r = 0; r < layout_.num_rows(); ++r) {
    const RowInfo& info = layout_.row(r);
    const uint32_t amp = amplitude_[r];
    float* u = update_.data() + info.offset;
    for (uint32_t j = 0; j < info.numel; ++j) {
      if (j < n) {
        u[j] = j == w ? 1.0f : 0.0f;  // the markers (sim/invariants.h)
      } else {
        u[j] = static_cast<float>(static_cast<int64_t>(rng.Next() % (2 * amp + 1)) - amp);
      }
    }
  }
  CountUpdate(w);
}

// The update as w's replica will receive it (each row weighted as the
// protocol will weigh it: 1 unless stale_weight) into the sum conservation
// is checked against.
void Simulation::CountUpdate(size_t w) {
  const WorkerProtocol& proto = *workers_[w].proto;
  for (RowId r = 0; r < layout_.num_rows(); ++r) {
    const RowInfo& info = layout_.row(r);
    const float weight = proto.update_weight(r);
    for (size_t j = info.offset; j < info.offset + info.numel; ++j) {
      true_sum_[j] += update_[j] * weight;  // as WorkerState adds it (x 1 is exact)
      report_.max_update_element =
          std::max(report_.max_update_element, static_cast<double>(std::fabs(update_[j])));
    }
  }
}

// Whether the worker's EndIteration returns now: as the SDK's, or with
// push_waits_for_acks also not before every batch is acknowledged.
bool Simulation::PushEnds(SimWorker& s) {
  return s.proto->PushEnds(now_) && (!cfg_.push_waits_for_acks || s.proto->AllAcknowledged());
}

void Simulation::EndPush(size_t w) {
  SimWorker& s = workers_[w];
  const IterationStats stats = s.proto->FinishPush();
  s.report.transmit_seconds += Clipped(s.push_at, now_);
  if (s.push_at <= end_) {
    s.report.rows_up += stats.rows_up;
    s.report.bytes_up += stats.bytes_up;
    s.report.payload_up += stats.payload_up;
    s.report.rows_down += stats.rows_down;
    s.report.bytes_down += stats.bytes_down;
    s.report.payload_down += stats.payload_down;
    for (const PushStats& p : stats.pushes) {
      if (p.window_seconds > 0) s.report.overshoots.push_back(p.overshoot_seconds);
      // The links' time axis is the simulation's.
      s.uplink_use.AddPush(now_ - p.age_seconds, p.ack_seconds, p.acked_bytes, cfg_.link_delay);
    }
  }
  s.phase = Phase::kWaiting;
  s.wait_start = now_;
  s.waited = false;
  s.detached_wait = 0;
  s.detached_since = s.proto->detached() ? now_ : -1;
  TryBegin(w);
}

// The training time is over for worker w; once it is for all, every worker
// drains (Flush, then Sync).
void Simulation::Stop(size_t w) {
  SimWorker& s = workers_[w];
  if (s.phase == Phase::kWaiting) {
    NoteDetached(s);
    const double detached = s.detached_wait + (s.detached_since >= 0 ? now_ - s.detached_since : 0);
    s.report.stall_seconds +=
        Clipped(s.wait_start, now_) - Clipped(now_ - std::min(detached, now_ - s.wait_start), now_);
  }
  s.phase = Phase::kStopped;
  if (!AllIn(Phase::kStopped)) return;
  stopped_at_ = now_;
  if (cfg_.learning != nullptr) {
    absl::StatusOr<ModelSnapshot> model = rogd_->Export();
    if (model.ok()) {
      stopped_model_ = model->values;
      report_.stopped_score = cfg_.learning->Score(stopped_model_);
    }
  }
  for (size_t q = 0; q < workers_.size(); ++q) {
    StartDrain(q);
    workers_[q].phase = Phase::kFlushing;
    Touch(q);
  }
}

// The drain rule, as Worker::Finish applies it: what a worker does not
// push of what it holds leaves its replica, and the conservation check's
// sum of updates.
void Simulation::StartDrain(size_t w) {
  WorkerProtocol& proto = *workers_[w].proto;
  const std::vector<float> before = proto.replica();
  if (proto.StartDrain() >= 1) return;
  const std::vector<float>& after = proto.replica();
  for (size_t j = 0; j < before.size(); ++j) {
    const double withheld = static_cast<double>(before[j]) - static_cast<double>(after[j]);
    true_sum_[j] -= withheld;
    report_.drain_withheld += std::fabs(withheld);
  }
}

bool Simulation::AllIn(Phase phase) const {
  for (const SimWorker& s : workers_) {
    if (s.phase != phase) return false;
  }
  return !workers_.empty();
}

// --- after the drain ------------------------------------------------------------------

void Simulation::Check() {
  absl::StatusOr<ModelSnapshot> model = rogd_->Export();
  if (!model.ok()) return;
  const std::vector<float>& global = model->values;
  report_.max_sum_error = ConservationError(global, initial_, true_sum_);
  // A replica differs from rogd's model by what its accumulators still
  // hold: nothing with a lossless codec, a residual with a lossy one.
  for (const SimWorker& s : workers_) {
    report_.max_replica_error =
        std::max(report_.max_replica_error, MaxDifference(s.proto->replica(), global));
  }
  report_.max_residual = report_.max_replica_error;
  if (cfg_.learning == nullptr) return;
  report_.final_score = cfg_.learning->Score(global);
  if (stopped_model_.size() == global.size()) {
    // The drain's updates averaged over the workers instead of summed.
    std::vector<float> averaged(global.size());
    const double n = static_cast<double>(workers_.size());
    for (size_t i = 0; i < global.size(); ++i) {
      averaged[i] = static_cast<float>(stopped_model_[i] + (global[i] - stopped_model_[i]) / n);
    }
    report_.averaged_drain_score = cfg_.learning->Score(averaged);
  }
}

void Simulation::Report() {
  report_.config = cfg_;
  report_.seconds = cfg_.seconds;
  report_.start = start_;
  report_.drain_seconds = now_ - stopped_at_;
  for (SimWorker& s : workers_) {
    s.report.mean_staleness = s.staleness_n ? s.staleness_sum / s.staleness_n : 0;
    s.report.uplink_acked_bytes = s.uplink_use.bytes();
    s.report.uplink_capacity_bytes = s.uplink_use.Capacity(*s.trace, cfg_.trace_scale);
    report_.workers.push_back(s.report);
  }
}

std::string Simulation::Describe() const {
  static const char* kPhase[] = {"joining",  "waiting", "computing", "pushing", "stopped",
                                 "flushing", "flushed", "syncing",   "drained"};
  std::string s;
  for (const SimWorker& sw : workers_) {
    absl::StrAppend(&s, sw.id, "{", kPhase[static_cast<int>(sw.phase)],
                    sw.attached ? "" : " detached", sw.proto->active() ? "" : " offline",
                    " clock=", sw.proto->clock(), "} ");
  }
  return s;
}

}  // namespace

double SimReport::iterations_per_second() const {
  if (workers.empty() || seconds <= 0) return 0;
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.iterations;
  return static_cast<double>(total) / workers.size() / seconds;
}

double SimReport::stall_share() const {
  if (workers.empty() || seconds <= 0) return 0;
  double total = 0;
  for (const SimWorkerReport& w : workers) total += w.stall_seconds;
  return total / (workers.size() * seconds);
}

uint64_t SimReport::stalls() const {
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.stalls;
  return total;
}

uint64_t SimReport::bytes_up() const {
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.bytes_up;
  return total;
}

uint64_t SimReport::bytes_down() const {
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.bytes_down;
  return total;
}

double SimReport::detached_share() const {
  if (workers.empty() || seconds <= 0) return 0;
  double total = 0;
  for (const SimWorkerReport& w : workers) total += w.detached_seconds;
  return total / (workers.size() * seconds);
}

uint64_t SimReport::detaches() const {
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.detaches;
  return total;
}

uint64_t SimReport::reattaches() const {
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.reattaches;
  return total;
}

uint64_t SimReport::late_rows() const {
  uint64_t total = 0;
  for (const SimWorkerReport& w : workers) total += w.late_rows;
  return total;
}

double SimReport::team_score(double time) const {
  double sum = 0;
  size_t n = 0;
  for (const SimScore& s : scores) {
    if (s.time == time) {
      sum += s.score;
      ++n;
    }
  }
  return n > 0 ? sum / n : -1;
}

absl::StatusOr<SimReport> RunSimulation(const SimConfig& config, const Layout& layout) {
  // rogd's and the SDK's log lines (joins, detaches) are not the
  // simulator's output; errors still show.
  const spdlog::level::level_enum level = spdlog::get_level();
  spdlog::set_level(spdlog::level::err);
  Simulation sim(config, layout);
  absl::StatusOr<SimReport> report = sim.Run();
  spdlog::set_level(level);
  return report;
}

absl::StatusOr<Layout> SyntheticLayout(const std::string& name) { return NamedLayout(name); }

}  // namespace rog
