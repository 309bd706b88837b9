#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <queue>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/batch_plan.h"
#include "common/goodput.h"
#include "common/mta.h"
#include "common/protocol_rules.h"
#include "common/row_index.h"
#include "common/selection.h"
#include "common/server_state.h"
#include "common/worker_state.h"

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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

enum class EventType {
  kComputeDone,
  kUplinkArrive,
  kDownlinkArrive,
  kWindowEnd,
  kEnd,
  kPatience,      // a stall may have lasted the patience
  kReattachTick,  // a detached worker's link is measured again
  kPaceTick,      // detach_speedup: the team's pace is looked at again
};

// Team patience: how often a detached worker's goodput is looked at between
// acknowledged batches (how long it must stay good, kReattachHold, and the
// other rules are in protocol_rules.h).
constexpr double kReattachTick = 0.05;

struct Event {
  double time;
  uint64_t seq;
  EventType type;
  size_t worker;
  uint64_t batch;
};

struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

struct Batch {
  std::vector<RowId> rows;
  std::vector<uint32_t> counts;
  // Downlink: each row's versions (every worker) the replica holds after it.
  std::vector<uint64_t> held;
  std::vector<float> decoded;  // rows' decoded values, concatenated
  uint64_t wire = 0;
  uint64_t payload = 0;
};

// kDetached: detached and paused (a detached worker running a local step is
// kComputing).
enum class Phase { kReady, kComputing, kTransmitting, kStalled, kDone, kDetached };

struct SimWorker {
  std::unique_ptr<WorkerState> state;
  Phase phase = Phase::kReady;
  double phase_start = 0;
  double deadline = kInf;
  double last_arrival = 0;
  const Trace* trace = nullptr;
  double compute_factor = 1;

  bool up_busy = false;
  Plan up;
  std::vector<RowId> forced;  // rows the server asked for (PushNow)
  std::vector<bool> is_forced;

  bool down_busy = false;
  Plan down;

  GoodputEstimator up_goodput;
  GoodputEstimator down_goodput;
  // The batch in flight each way (sent when, wire bytes) and the last ack.
  double up_sent = 0, down_sent = 0;
  uint64_t up_wire = 0, down_wire = 0;
  double up_last_ack = -kInf, down_last_ack = -kInf;

  // What the replica holds of every worker, row by row (the server's copy
  // versions as of the last batch that arrived).
  VersionStore held;

  // Team patience.
  double detached_since = 0;
  uint64_t detach_epoch = 0;  // tags this detachment's reattach ticks
  uint32_t local_left = 0;    // local iterations it may still run
  double good_since = -1;     // goodput good enough since (-1: not now)
  double reattached_at = -1e9;
  RowId up_cursor = 0, down_cursor = 0;  // background round-robin

  SimWorkerReport report;
  double staleness_sum = 0;
  uint64_t staleness_n = 0;
  int stall_cause = -1;  // StallCause while stalled, else -1
};

class Simulation {
 public:
  Simulation(const SimConfig& config, const Layout& layout)
      : cfg_(config), layout_(layout), bound_(EffectiveBound(config.policy, config.staleness)) {}

  absl::StatusOr<SimReport> Run();

 private:
  void Schedule(double t, EventType type, size_t w, uint64_t batch = 0) {
    events_.push(Event{t, next_seq_++, type, w, batch});
  }
  // Time spent in [from, now], clipped to the training time.
  double Clipped(double from) const {
    return std::max(0.0, std::min(now_, cfg_.seconds) - std::min(from, cfg_.seconds));
  }
  uint64_t RowWireBytes(RowId row) const {
    return rog::RowWireBytes(cfg_.codec, layout_.row(row).numel);
  }
  uint64_t Needed(size_t w) const { return NeededVersion(workers_[w].state->clock(), bound_); }

  void TryStart(size_t w);
  void OnComputeDone(size_t w);
  void OnUplinkArrive(size_t w, uint64_t id);
  void OnDownlinkArrive(size_t w, uint64_t id);
  void OnEnd();
  void BuildPlans(size_t w);
  void BuildDownlinkPlan(size_t w);
  void KickUplink(size_t w);
  void KickDownlink(size_t w);
  void MaybeEndPhase(size_t w);
  uint64_t MinAttachedClock() const;
  // ROG: the worker at the slowest attached clock, which the others wait
  // for, sends mandatory rows and its MTA share only; faster workers fill
  // their window with speculative rows.
  bool SpeculativeAllowed(size_t w) const {
    return !cfg_.laggard_mta_only ||
           MaySpeculate(cfg_.policy, workers_[w].state->clock(), MinAttachedClock());
  }
  void ReplanStalls();
  void AttributeStalls(double until);
  void JudgeStallCauses();
  // Every worker's clock, indexed like the version stores' columns.
  std::vector<uint64_t> Clocks() const;
  void CheckBound(size_t w);
  // Team patience.
  bool patience() const { return cfg_.patience > 0; }
  void CheckPatience();
  void Detach(size_t q, const std::string& reason);
  void StartDetached(size_t w);
  void EvaluateReattach(size_t w);
  void Reattach(size_t w);
  double LinkGoodput(size_t w) const;
  // detach_speedup: the expected seconds to move a worker's share (0: unknown),
  // the team's expected iterations per second with the attached workers
  // and `extra` (SIZE_MAX: none) but without `without`, and the check.
  double ShareSeconds(size_t w) const;
  double TeamRate(size_t extra, size_t without) const;
  void CheckPace();
  // Re-derives every replica's lowest held version per row after the
  // attached set changed (rogd recomputes MayStart from the copies).
  void RefreshKnown();
  // The version a replica holding `count` real iterations of worker q holds:
  // a reattach raised q's versions past iterations it never ran (raises_).
  double EffectiveVersion(size_t q, double count) const;
  uint64_t ExpectedShareBytes() const { return static_cast<uint64_t>(mta_ * model_wire_bytes_); }
  void Drain();
  std::string Describe() const;

  SimConfig cfg_;
  const Layout& layout_;
  uint32_t bound_;
  double mta_ = 1;
  uint64_t model_wire_bytes_ = 0;
  std::unique_ptr<ServerState> server_;
  std::vector<SimWorker> workers_;
  AttachedSet attached_;
  std::vector<float> initial_;
  std::vector<double> true_sum_;
  std::vector<uint32_t> amplitude_;  // per row
  std::priority_queue<Event, std::vector<Event>, EventLater> events_;
  std::unordered_map<uint64_t, Batch> batches_;
  uint64_t next_seq_ = 0;
  uint64_t next_batch_ = 0;
  double now_ = 0;
  SimReport report_;
  std::string scratch_;
  std::vector<float> update_;
  std::vector<float> zeros_;
  // Per worker: (real iterations at a reattach, versions raised past them).
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> raises_;
  bool in_patience_ = false;
};

absl::StatusOr<SimReport> Simulation::Run() {
  if (cfg_.workers < 1 || cfg_.workers > 64) {
    return absl::InvalidArgumentError("workers must be between 1 and 64");
  }
  if (!(cfg_.seconds > 0) || !(cfg_.compute_seconds > 0) || !(cfg_.trace_scale > 0)) {
    return absl::InvalidArgumentError("seconds, compute_seconds and trace_scale must be > 0");
  }
  if (cfg_.compute_jitter < 0 || cfg_.compute_jitter >= 1) {
    return absl::InvalidArgumentError("compute_jitter must be in [0, 1)");
  }
  if (cfg_.batch_bytes < 64) return absl::InvalidArgumentError("batch_bytes must be >= 64");
  if (cfg_.max_update < 1 || cfg_.max_update > 1000) {
    return absl::InvalidArgumentError("max_update must be between 1 and 1000");
  }
  if (!(cfg_.patience >= 0) || !std::isfinite(cfg_.patience)) {
    return absl::InvalidArgumentError("patience must be >= 0 seconds (0: off)");
  }
  if (!(cfg_.detach_speedup == 0 || cfg_.detach_speedup > 1) ||
      !std::isfinite(cfg_.detach_speedup)) {
    return absl::InvalidArgumentError("detach_speedup must be 0 (off) or above 1");
  }
  if (cfg_.compute_factors.empty()) cfg_.compute_factors = {1.0};
  static const Trace kDefaultTrace = Trace::Constant(100);

  const size_t n = cfg_.workers;
  mta_ = cfg_.policy == SyncPolicy::kRog ? MinimumTransmissionAmount(cfg_.staleness) : 1.0;
  for (RowId r = 0; r < layout_.num_rows(); ++r) model_wire_bytes_ += RowWireBytes(r);

  Rng init_rng(SeedFor(cfg_.seed, 0, 0, 1));
  initial_.resize(layout_.total_numel());
  for (float& v : initial_) v = static_cast<float>(static_cast<int>(init_rng.Next() % 201) - 100);
  amplitude_.resize(layout_.num_rows());
  for (uint32_t& a : amplitude_) {
    const double u = init_rng.Uniform();
    a = 1 + static_cast<uint32_t>((cfg_.max_update - 1) * u * u * u);
  }
  true_sum_.assign(layout_.total_numel(), 0.0);
  update_.resize(layout_.total_numel());
  server_ = std::make_unique<ServerState>(layout_, initial_, n);
  attached_.assign(n, true);
  workers_.resize(n);
  for (size_t w = 0; w < n; ++w) {
    SimWorker& sw = workers_[w];
    sw.state = std::make_unique<WorkerState>(layout_, initial_);
    sw.trace = cfg_.traces.empty() ? &kDefaultTrace : &cfg_.traces[w % cfg_.traces.size()];
    sw.compute_factor = cfg_.compute_factors[w % cfg_.compute_factors.size()];
    sw.is_forced.assign(layout_.num_rows(), false);
    sw.held = VersionStore(layout_.num_rows(), n);
  }
  raises_.resize(n);
  zeros_.assign(layout_.max_row_numel(), 0.0f);

  Schedule(cfg_.seconds, EventType::kEnd, 0);
  if (patience() && cfg_.detach_speedup > 0) Schedule(kReattachTick, EventType::kPaceTick, 0);
  for (size_t w = 0; w < n; ++w) TryStart(w);
  while (!events_.empty()) {
    if (++report_.events > cfg_.max_events) {
      return absl::InternalError(absl::StrCat("simulation exceeded ", cfg_.max_events,
                                              " events at t=", now_, ": ", Describe()));
    }
    const Event e = events_.top();
    events_.pop();
    AttributeStalls(e.time);
    now_ = e.time;
    switch (e.type) {
      case EventType::kComputeDone:
        OnComputeDone(e.worker);
        break;
      case EventType::kUplinkArrive:
        OnUplinkArrive(e.worker, e.batch);
        break;
      case EventType::kDownlinkArrive:
        OnDownlinkArrive(e.worker, e.batch);
        break;
      case EventType::kWindowEnd:
        MaybeEndPhase(e.worker);
        break;
      case EventType::kEnd:
        OnEnd();
        break;
      case EventType::kPatience:
        CheckPatience();
        break;
      case EventType::kPaceTick:
        CheckPace();
        if (now_ < cfg_.seconds) Schedule(now_ + kReattachTick, EventType::kPaceTick, 0);
        break;
      case EventType::kReattachTick:
        if (!attached_[e.worker] && workers_[e.worker].detach_epoch == e.batch &&
            workers_[e.worker].phase != Phase::kDone) {
          EvaluateReattach(e.worker);
          if (!attached_[e.worker])
            Schedule(now_ + kReattachTick, EventType::kReattachTick, e.worker, e.batch);
        }
        break;
    }
    JudgeStallCauses();
  }
  for (size_t w = 0; w < n; ++w) {
    if (workers_[w].phase != Phase::kDone) {
      return absl::InternalError(
          absl::StrCat("simulation deadlocked at t=", now_, ": ", Describe()));
    }
  }
  Drain();

  report_.config = cfg_;
  report_.seconds = cfg_.seconds;
  for (SimWorker& sw : workers_) {
    sw.report.mean_staleness = sw.staleness_n ? sw.staleness_sum / sw.staleness_n : 0;
    report_.workers.push_back(sw.report);
  }
  return report_;
}

void Simulation::TryStart(size_t w) {
  SimWorker& sw = workers_[w];
  if (sw.phase == Phase::kDone || sw.phase == Phase::kComputing) return;
  if (!attached_[w]) {
    StartDetached(w);
    return;
  }
  if (now_ >= cfg_.seconds) {
    if (sw.phase == Phase::kStalled) sw.report.stall_seconds += Clipped(sw.phase_start);
    sw.phase = Phase::kDone;
    return;
  }
  if (!sw.state->HasAllUpTo(Needed(w))) {
    if (sw.phase != Phase::kStalled) {
      sw.phase = Phase::kStalled;
      sw.phase_start = now_;
      ++sw.report.stalls;
      if (patience()) Schedule(now_ + cfg_.patience, EventType::kPatience, w);
      ReplanStalls();
    }
    return;
  }
  if (sw.phase == Phase::kStalled) sw.report.stall_seconds += Clipped(sw.phase_start);
  CheckBound(w);
  Rng rng(SeedFor(cfg_.seed, w, sw.state->clock(), 2));
  const double jitter = cfg_.compute_jitter * (2 * rng.Uniform() - 1);
  const double compute = cfg_.compute_seconds * sw.compute_factor * (1 + jitter);
  sw.phase = Phase::kComputing;
  sw.phase_start = now_;
  Schedule(now_ + compute, EventType::kComputeDone, w);
}

void Simulation::CheckBound(size_t w) {
  // Counters are exact only when nothing is lost in coding.
  if (!IsLossless(cfg_.codec)) return;
  const SimWorker& sw = workers_[w];
  const size_t n = workers_.size();
  const uint64_t clock = sw.state->clock();
  const uint64_t needed = NeededVersion(clock, bound_);
  const std::vector<float>& replica = sw.state->replica();
  bool violated = false;
  for (RowId r = 0; r < layout_.num_rows(); ++r) {
    const RowInfo& info = layout_.row(r);
    if (info.numel < n) continue;
    for (size_t q = 0; q < n; ++q) {
      if (q == w || !attached_[q]) continue;
      const double held = EffectiveVersion(q, replica[info.offset + q] - initial_[info.offset + q]);
      if (held < static_cast<double>(needed)) violated = true;
      const double lag = std::max(0.0, static_cast<double>(clock) - held);
      workers_[w].report.max_staleness =
          std::max<uint64_t>(workers_[w].report.max_staleness, static_cast<uint64_t>(lag));
      workers_[w].staleness_sum += lag;
      workers_[w].staleness_n += 1;
    }
  }
  ++report_.bound_checks;
  if (violated) ++report_.bound_violations;
}

void Simulation::OnComputeDone(size_t w) {
  SimWorker& sw = workers_[w];
  sw.report.compute_seconds += Clipped(sw.phase_start);
  if (now_ > cfg_.seconds) {
    // The iteration finished after training time: it does not count, and its
    // update is never produced.
    if (!attached_[w]) sw.report.detached_seconds += Clipped(sw.detached_since);
    sw.phase = Phase::kDone;
    return;
  }
  const size_t n = workers_.size();
  Rng rng(SeedFor(cfg_.seed, w, sw.state->clock(), 3));
  for (RowId r = 0; r < layout_.num_rows(); ++r) {
    const RowInfo& info = layout_.row(r);
    const uint32_t amp = amplitude_[r];
    float* u = update_.data() + info.offset;
    for (uint32_t j = 0; j < info.numel; ++j) {
      if (info.numel >= n && j < n) {
        u[j] = j == w ? 1.0f : 0.0f;  // the counters
      } else {
        u[j] = static_cast<float>(static_cast<int64_t>(rng.Next() % (2 * amp + 1)) - amp);
      }
    }
  }
  for (size_t j = 0; j < update_.size(); ++j) {
    true_sum_[j] += update_[j];
    report_.max_update_element =
        std::max(report_.max_update_element, static_cast<double>(std::fabs(update_[j])));
  }
  sw.state->ApplyLocalUpdate(update_);
  ++sw.report.iterations;

  if (!attached_[w]) {
    // Detached: no window, no plans; the uplink drains in the background.
    sw.phase = Phase::kDetached;
    KickUplink(w);
    TryStart(w);
    return;
  }
  sw.phase = Phase::kTransmitting;
  sw.phase_start = now_;
  sw.last_arrival = now_;
  sw.deadline = kInf;
  if (cfg_.policy == SyncPolicy::kRog) {
    // The team's window over the attached workers' links (TeamWindow).
    std::vector<double> goodputs;
    for (size_t q = 0; q < n; ++q) {
      if (!attached_[q]) continue;
      const SimWorker& o = workers_[q];
      const bool known = o.up_goodput.has_estimate() && o.down_goodput.has_estimate();
      goodputs.push_back(known ? std::min(o.up_goodput.rate(), o.down_goodput.rate()) : 0.0);
    }
    const double window = TeamWindow(cfg_.policy, goodputs,
                                     mta_ * static_cast<double>(model_wire_bytes_), cfg_.patience);
    if (window > 0) {
      sw.deadline = now_ + window;
      Schedule(sw.deadline, EventType::kWindowEnd, w);
    }
  }
  BuildPlans(w);
  KickUplink(w);
  KickDownlink(w);
  ReplanStalls();
  // The slowest clock may have moved: workers holding for it may go on.
  for (size_t q = 0; q < workers_.size(); ++q) MaybeEndPhase(q);
}

void Simulation::BuildPlans(size_t w) {
  SimWorker& sw = workers_[w];
  // Rows holding only a lossy codec's residual are not offered (the SDK
  // offers them): the explicit difference, UplinkOptions.
  sw.up.Reset(SelectRows(UplinkCandidates(cfg_.policy, bound_, *sw.state, cfg_.codec, layout_,
                                          UplinkOptions{/*include_residual_rows=*/false}),
                         mta_, model_wire_bytes_));
  BuildDownlinkPlan(w);
}

// BSP pulls at the barrier only: rows go down once they hold everything the
// next iteration needs (KickDownlink's first tier), so its plan is empty.
void Simulation::BuildDownlinkPlan(size_t w) {
  SimWorker& sw = workers_[w];
  sw.down.Reset(SelectRows(DownlinkCandidates(cfg_.policy, bound_, *server_, w, sw.state->clock(),
                                              attached_, cfg_.codec, layout_),
                           mta_, model_wire_bytes_));
}

void Simulation::KickUplink(size_t w) {
  SimWorker& sw = workers_[w];
  if (sw.up_busy) return;
  WorkerState& ws = *sw.state;
  BatchFill fill(layout_, cfg_.codec, cfg_.batch_bytes);
  // Rows a stalled worker waits for go first, whatever the window.
  while (!sw.forced.empty() && fill.Fits(sw.forced.back())) {
    const RowId r = sw.forced.back();
    sw.forced.pop_back();
    sw.is_forced[r] = false;
    if (ws.unpushed(r) > 0) fill.Add(r);
  }
  if (!attached_[w]) {
    // Detached: everything unpushed, no window, round robin over the rows so
    // that local steps cannot starve the later ones.
    const RowId rows = layout_.num_rows();
    for (RowId k = 0; k < rows; ++k) {
      const RowId r = (sw.up_cursor + k) % rows;
      if (ws.unpushed(r) == 0 || fill.Has(r)) continue;
      if (!fill.Fits(r)) break;
      fill.Add(r);
      sw.up_cursor = (r + 1) % rows;
    }
  } else if (sw.phase == Phase::kTransmitting) {
    FillFromPlan(&sw.up, now_ < sw.deadline, SpeculativeAllowed(w), &fill,
                 [&](RowId r) { return ws.unpushed(r) == 0; });  // pushed on request
  }
  const std::vector<RowId> rows = fill.Take();
  if (rows.empty()) return;
  const uint64_t id = next_batch_++;
  Batch& b = batches_[id];
  b.rows = rows;
  for (RowId r : rows) {
    const RowInfo& info = layout_.row(r);
    const size_t at = b.decoded.size();
    b.decoded.resize(at + info.numel);
    scratch_.clear();
    b.counts.push_back(
        ws.TakeUplink(r, cfg_.codec, &scratch_, absl::MakeSpan(b.decoded.data() + at, info.numel)));
    b.payload += scratch_.size();
  }
  const std::vector<uint64_t> lags(rows.size(), 0);
  b.wire = b.payload + IndexBytes(b.rows, b.counts, lags) + kBatchHeaderBytes;
  sw.up_busy = true;
  sw.up_sent = now_;
  sw.up_wire = b.wire;
  sw.up_goodput.OnSend(now_, b.wire);
  Schedule(sw.trace->TransferEnd(now_, static_cast<double>(b.wire), cfg_.trace_scale),
           EventType::kUplinkArrive, w, id);
}

void Simulation::KickDownlink(size_t w) {
  SimWorker& sw = workers_[w];
  if (sw.down_busy || sw.phase == Phase::kDone) return;
  BatchFill fill(layout_, cfg_.codec, cfg_.batch_bytes);
  // First, rows the worker needs for its next start that the server can
  // complete now.
  const StallPlan need =
      PlanStall(server_->versions(), server_->copy_versions(w), w, attached_, Needed(w));
  for (RowId r : need.deliverable) {
    if (!fill.Fits(r)) break;
    fill.Add(r);
  }
  if (!attached_[w]) {
    // Detached: every pending row, no window, round robin.
    const RowId rows = layout_.num_rows();
    for (RowId k = 0; k < rows; ++k) {
      const RowId r = (sw.down_cursor + k) % rows;
      if (!server_->HasPending(w, r) || fill.Has(r)) continue;
      if (!fill.Fits(r)) break;
      fill.Add(r);
      sw.down_cursor = (r + 1) % rows;
    }
  } else if (sw.phase == Phase::kTransmitting) {
    const bool open = now_ < sw.deadline;
    const bool speculate = SpeculativeAllowed(w);
    // Time left in the window: stream what other workers pushed since.
    if (open && speculate && sw.deadline < kInf && sw.down.done()) BuildDownlinkPlan(w);
    FillFromPlan(&sw.down, open, speculate, &fill,
                 [&](RowId r) { return !server_->HasPending(w, r); });
  }
  const std::vector<RowId> rows = fill.Take();
  if (rows.empty()) return;
  const uint64_t id = next_batch_++;
  Batch& b = batches_[id];
  b.rows = rows;
  const uint64_t clock = sw.state->clock();
  std::vector<uint64_t> lags;
  for (RowId r : rows) {
    const RowInfo& info = layout_.row(r);
    const size_t at = b.decoded.size();
    b.decoded.resize(at + info.numel);
    scratch_.clear();
    const uint64_t included = server_->TakeDownlink(
        w, r, cfg_.codec, &scratch_, absl::MakeSpan(b.decoded.data() + at, info.numel));
    b.counts.push_back(static_cast<uint32_t>(included));
    const VersionStore& copy = server_->copy_versions(w);
    for (size_t q = 0; q < workers_.size(); ++q) b.held.push_back(copy.Get(r, q));
    const uint64_t version = MinOtherVersion(copy, r, w, attached_);
    // The wire carries iteration − version zigzag-coded (it may be negative).
    const int64_t lag = static_cast<int64_t>(clock) - static_cast<int64_t>(version);
    lags.push_back(lag >= 0 ? 2 * static_cast<uint64_t>(lag) : 2 * static_cast<uint64_t>(-lag) - 1);
    b.payload += scratch_.size();
  }
  // rogd sends no counts downlink (workers learn versions from the lags).
  b.wire = b.payload + IndexBytes(b.rows, {}, lags) + kBatchHeaderBytes;
  sw.down_busy = true;
  sw.down_sent = now_;
  sw.down_wire = b.wire;
  sw.down_goodput.OnSend(now_, b.wire);
  Schedule(sw.trace->TransferEnd(now_, static_cast<double>(b.wire), cfg_.trace_scale),
           EventType::kDownlinkArrive, w, id);
}

void Simulation::OnUplinkArrive(size_t w, uint64_t id) {
  SimWorker& sw = workers_[w];
  Batch b = std::move(batches_[id]);
  batches_.erase(id);
  sw.up_busy = false;
  sw.up_goodput.OnAck(now_, b.wire);
  sw.up_last_ack = now_;
  if (!attached_[w]) sw.report.late_rows += b.rows.size();
  size_t at = 0;
  for (size_t k = 0; k < b.rows.size(); ++k) {
    const uint32_t numel = layout_.row(b.rows[k]).numel;
    server_->Fold(w, b.rows[k], absl::MakeConstSpan(b.decoded.data() + at, numel), b.counts[k]);
    at += numel;
  }
  sw.report.bytes_up += b.wire;
  sw.report.payload_up += b.payload;
  sw.report.rows_up += b.rows.size();
  if (sw.phase == Phase::kTransmitting) sw.last_arrival = now_;
  KickUplink(w);
  ReplanStalls();
  for (size_t q = 0; q < workers_.size(); ++q) KickDownlink(q);
  MaybeEndPhase(w);
  if (patience() && !attached_[w]) EvaluateReattach(w);
}

void Simulation::OnDownlinkArrive(size_t w, uint64_t id) {
  SimWorker& sw = workers_[w];
  Batch b = std::move(batches_[id]);
  batches_.erase(id);
  sw.down_busy = false;
  sw.down_goodput.OnAck(now_, b.wire);
  sw.down_last_ack = now_;
  const size_t n = workers_.size();
  size_t at = 0;
  for (size_t k = 0; k < b.rows.size(); ++k) {
    const RowId r = b.rows[k];
    const uint32_t numel = layout_.row(r).numel;
    for (size_t q = 0; q < n; ++q) sw.held.Set(r, q, b.held[k * n + q]);
    sw.state->ApplyDownlink(r, absl::MakeConstSpan(b.decoded.data() + at, numel),
                            MinOtherVersion(sw.held, r, w, attached_));
    at += numel;
  }
  sw.report.bytes_down += b.wire;
  sw.report.payload_down += b.payload;
  sw.report.rows_down += b.rows.size();
  if (sw.phase == Phase::kTransmitting) sw.last_arrival = now_;
  KickDownlink(w);
  if (sw.phase == Phase::kStalled) TryStart(w);
  MaybeEndPhase(w);
  if (patience() && !attached_[w]) EvaluateReattach(w);
}

void Simulation::OnEnd() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    SimWorker& sw = workers_[w];
    if (sw.phase == Phase::kStalled || sw.phase == Phase::kReady || sw.phase == Phase::kDetached) {
      TryStart(w);
    }
  }
}

void Simulation::MaybeEndPhase(size_t w) {
  SimWorker& sw = workers_[w];
  if (sw.phase != Phase::kTransmitting || sw.up_busy || sw.down_busy) return;
  // ATP paces the team: a worker ahead of the slowest attached clock keeps
  // its link for the whole window (receiving more rows if there are any)
  // instead of running ahead into the bound, where it would make the slowest
  // push every row at once. One that is not ahead goes on at once.
  if (HoldForPace(now_, sw.deadline, sw.state->clock(), MinAttachedClock(), cfg_.pace_lead)) {
    return;
  }
  sw.report.transmit_seconds += Clipped(sw.phase_start);
  if (sw.deadline < kInf)
    sw.report.overshoots.push_back(std::max(0.0, sw.last_arrival - sw.deadline));
  sw.phase = Phase::kReady;
  TryStart(w);
}

uint64_t Simulation::MinAttachedClock() const {
  uint64_t min = std::numeric_limits<uint64_t>::max();
  for (size_t q = 0; q < workers_.size(); ++q) {
    if (attached_[q] && workers_[q].phase != Phase::kDone)
      min = std::min(min, workers_[q].state->clock());
  }
  return min;
}

void Simulation::AttributeStalls(double until) {
  const double from = std::min(now_, cfg_.seconds);
  const double to = std::min(until, cfg_.seconds);
  if (to <= from) return;
  for (SimWorker& sw : workers_) {
    if (sw.stall_cause >= 0) sw.report.stall_cause_seconds[sw.stall_cause] += to - from;
  }
}

std::vector<uint64_t> Simulation::Clocks() const {
  std::vector<uint64_t> clocks(workers_.size());
  for (size_t q = 0; q < workers_.size(); ++q) clocks[q] = workers_[q].state->clock();
  return clocks;
}

void Simulation::JudgeStallCauses() {
  const std::vector<uint64_t> clocks = Clocks();
  for (size_t s = 0; s < workers_.size(); ++s) {
    SimWorker& sw = workers_[s];
    sw.stall_cause = -1;
    if (sw.phase != Phase::kStalled || !attached_[s]) continue;
    const uint64_t needed = Needed(s);
    const StallPlan plan =
        PlanStall(server_->versions(), server_->copy_versions(s), s, attached_, needed);
    sw.stall_cause = ClassifyStall(plan, clocks, needed);
  }
}

void Simulation::ReplanStalls() {
  if (patience()) CheckPatience();
  for (size_t s = 0; s < workers_.size(); ++s) {
    if (workers_[s].phase != Phase::kStalled) continue;
    const StallPlan plan =
        PlanStall(server_->versions(), server_->copy_versions(s), s, attached_, Needed(s));
    for (size_t q = 0; q < plan.pushes.size(); ++q) {
      SimWorker& holder = workers_[q];
      bool added = false;
      for (RowId r : plan.pushes[q]) {
        if (holder.is_forced[r] || holder.state->unpushed(r) == 0) continue;
        holder.is_forced[r] = true;
        holder.forced.push_back(r);
        added = true;
      }
      if (added) KickUplink(q);
    }
    KickDownlink(s);
  }
}

// --- Team patience ---------------------------------------------------------

void Simulation::CheckPatience() {
  if (!patience() || in_patience_ || now_ >= cfg_.seconds) return;
  in_patience_ = true;
  bool changed = true;
  while (changed) {
    changed = false;
    // Every attached worker stalled at the bound for the patience detaches
    // the workers at the ends of its chain of waits (as rogd does), at once.
    std::vector<std::pair<size_t, std::string>> detach;
    std::vector<bool> chosen(workers_.size(), false);
    const auto waited_long = [&](size_t s) {
      return attached_[s] && workers_[s].phase == Phase::kStalled &&
             now_ >= workers_[s].phase_start + cfg_.patience;
    };
    bool any = false;
    for (size_t s = 0; s < workers_.size(); ++s) any = any || waited_long(s);
    if (!any) break;
    std::vector<std::vector<size_t>> waits_for(workers_.size());
    const std::vector<uint64_t> clocks = Clocks();
    std::vector<uint64_t> needed(workers_.size());
    for (size_t s = 0; s < workers_.size(); ++s) {
      needed[s] = Needed(s);
      if (!attached_[s] || workers_[s].phase != Phase::kStalled) continue;
      waits_for[s] =
          PlanStall(server_->versions(), server_->copy_versions(s), s, attached_, needed[s])
              .waiting_for;
    }
    for (size_t s = 0; s < workers_.size(); ++s) {
      if (!waited_long(s)) continue;
      const SimWorker& sw = workers_[s];
      for (size_t q : BlameForStall(s, waits_for[s], waits_for, clocks, needed, attached_)) {
        if (chosen[q]) continue;
        chosen[q] = true;
        detach.emplace_back(
            q, absl::StrFormat("w%d kept w%d waiting %.2f s at the bound before iteration %d", q, s,
                               now_ - sw.phase_start, sw.state->clock() + 1));
      }
    }
    if (detach.empty()) break;
    for (const auto& d : detach) Detach(d.first, d.second);
    RefreshKnown();
    changed = true;
    // Waiters may go on now, and so may workers holding for the slowest.
    for (size_t s = 0; s < workers_.size(); ++s) {
      if (attached_[s] && workers_[s].phase == Phase::kStalled) TryStart(s);
    }
    for (size_t s = 0; s < workers_.size(); ++s) MaybeEndPhase(s);
  }
  in_patience_ = false;
}

void Simulation::Detach(size_t q, const std::string& reason) {
  SimWorker& sw = workers_[q];
  attached_[q] = false;
  ++sw.report.detaches;
  sw.detached_since = now_;
  sw.local_left = cfg_.detached_local_steps;
  sw.good_since = -1;
  ++sw.detach_epoch;
  report_.transitions.push_back(SimTransition{now_, q, false, reason});
  switch (sw.phase) {
    case Phase::kStalled:
      sw.report.stall_seconds += Clipped(sw.phase_start);
      sw.phase = Phase::kDetached;
      break;
    case Phase::kTransmitting:
      sw.report.transmit_seconds += Clipped(sw.phase_start);
      sw.phase = Phase::kDetached;
      break;
    case Phase::kReady:
      sw.phase = Phase::kDetached;
      break;
    default:  // computing: the iteration finishes, detached
      break;
  }
  sw.deadline = kInf;
  for (RowId r : sw.forced) sw.is_forced[r] = false;
  sw.forced.clear();
  Schedule(now_ + kReattachTick, EventType::kReattachTick, q, sw.detach_epoch);
  TryStart(q);  // a local step, or pause
  KickUplink(q);
  KickDownlink(q);
}

void Simulation::StartDetached(size_t w) {
  SimWorker& sw = workers_[w];
  if (now_ >= cfg_.seconds) {
    sw.report.detached_seconds += Clipped(sw.detached_since);
    sw.detached_since = cfg_.seconds;
    sw.phase = Phase::kDone;
    return;
  }
  sw.phase = Phase::kDetached;
  if (sw.local_left == 0) return;  // paused
  --sw.local_left;
  ++sw.report.local_steps;
  Rng rng(SeedFor(cfg_.seed, w, sw.state->clock(), 2));
  const double jitter = cfg_.compute_jitter * (2 * rng.Uniform() - 1);
  sw.phase = Phase::kComputing;
  sw.phase_start = now_;
  Schedule(now_ + cfg_.compute_seconds * sw.compute_factor * (1 + jitter), EventType::kComputeDone,
           w);
}

double Simulation::LinkGoodput(size_t w) const {
  // What the link carries now: each direction's estimate from acks, never
  // more than its unacknowledged batch shows so far (a link that died keeps
  // its old estimate until the next ack, which may take a minute), and a
  // direction idle for longer than the hold says nothing any more.
  const SimWorker& sw = workers_[w];
  double g = kInf;
  auto look = [&](const GoodputEstimator& est, bool busy, double sent, uint64_t wire,
                  double last_ack) {
    if (!est.has_estimate()) return;
    if (busy) {
      double rate = est.rate();
      if (now_ > sent) rate = std::min(rate, static_cast<double>(wire) / (now_ - sent));
      g = std::min(g, rate);
    } else if (now_ - last_ack <= kReattachHold) {
      g = std::min(g, est.rate());
    }
  };
  look(sw.up_goodput, sw.up_busy, sw.up_sent, sw.up_wire, sw.up_last_ack);
  look(sw.down_goodput, sw.down_busy, sw.down_sent, sw.down_wire, sw.down_last_ack);
  return g == kInf ? 0 : g;
}

double Simulation::ShareSeconds(size_t w) const {
  const SimWorker& sw = workers_[w];
  double g = 0;
  if (attached_[w]) {
    if (sw.up_goodput.has_estimate() && sw.down_goodput.has_estimate())
      g = std::min(sw.up_goodput.rate(), sw.down_goodput.rate());
  } else {
    g = LinkGoodput(w);
  }
  return g > 0 ? static_cast<double>(ExpectedShareBytes()) / g : 0;
}

double Simulation::TeamRate(size_t extra, size_t without) const {
  size_t members = 0;
  double slowest = 0;
  for (size_t q = 0; q < workers_.size(); ++q) {
    if (q == without || !(attached_[q] || q == extra) || workers_[q].phase == Phase::kDone)
      continue;
    ++members;
    slowest = std::max(slowest, ShareSeconds(q));
  }
  return rog::TeamRate(members, cfg_.compute_seconds, slowest);
}

void Simulation::CheckPace() {
  if (now_ >= cfg_.seconds) return;
  size_t attached = 0, slowest = SIZE_MAX;
  double worst = 0;
  for (size_t q = 0; q < workers_.size(); ++q) {
    if (!attached_[q] || workers_[q].phase == Phase::kDone) continue;
    ++attached;
    const double t = ShareSeconds(q);
    if (t == 0) return;  // a link without an estimate yet
    if (t > worst) worst = t, slowest = q;
  }
  if (attached < 2 || slowest == SIZE_MAX) return;
  if (now_ - workers_[slowest].reattached_at < kPaceGrace) return;
  const double with = TeamRate(SIZE_MAX, SIZE_MAX);
  const double without = TeamRate(SIZE_MAX, slowest);
  if (without < cfg_.detach_speedup * with) return;
  Detach(slowest, absl::StrFormat("w%d's share takes %.3f s: the team would run %.2fx as fast "
                                  "without it",
                                  slowest, worst, without / with));
  RefreshKnown();
  for (size_t s = 0; s < workers_.size(); ++s) {
    if (attached_[s] && workers_[s].phase == Phase::kStalled) TryStart(s);
  }
  for (size_t s = 0; s < workers_.size(); ++s) MaybeEndPhase(s);
}

void Simulation::EvaluateReattach(size_t w) {
  SimWorker& sw = workers_[w];
  if (attached_[w] || sw.phase == Phase::kDone || now_ >= cfg_.seconds) return;
  const double g = LinkGoodput(w);
  const bool good =
      ReattachLinkFits(static_cast<double>(ExpectedShareBytes()), cfg_.patience, g) &&
      (cfg_.detach_speedup <= 0 || TeamRate(w, SIZE_MAX) >= TeamRate(SIZE_MAX, SIZE_MAX));
  if (!HeldFor(good, now_, &sw.good_since)) return;
  // Its own updates first: a reattach raises its versions, which may only
  // cover iterations it never ran, so it waits until everything it ran is
  // folded in (paused, uplink drained).
  if (sw.phase != Phase::kDetached || sw.up_busy) return;
  for (RowId r = 0; r < layout_.num_rows(); ++r) {
    if (sw.state->unpushed(r) > 0) return;
  }
  Reattach(w);
}

void Simulation::Reattach(size_t w) {
  SimWorker& sw = workers_[w];
  const uint64_t own = sw.state->clock();
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  for (size_t q = 0; q < workers_.size(); ++q) {
    if (q != w && attached_[q]) slowest = std::min(slowest, workers_[q].state->clock());
  }
  const uint64_t clock =
      slowest == std::numeric_limits<uint64_t>::max() ? own : std::max(own, slowest);
  if (clock > own) {
    // Every row holds all `own` iterations (drained). Copies, replicas and
    // batches on their way that hold all of them are raised with the rows.
    uint64_t raised = 0;  // by earlier reattaches: `own` counts those too
    for (const auto& raise : raises_[w]) raised += raise.second;
    raises_[w].emplace_back(own - raised, clock - own);
    server_->RaiseVersion(w, clock);
    for (size_t a = 0; a < workers_.size(); ++a) {
      if (a == w) continue;
      for (RowId r = 0; r < layout_.num_rows(); ++r) {
        if (workers_[a].held.Get(r, w) == own) workers_[a].held.Set(r, w, clock);
      }
    }
    const size_t n = workers_.size();
    for (auto& entry : batches_) {
      std::vector<uint64_t>& held = entry.second.held;
      for (size_t k = 0; k * n < held.size(); ++k) {
        if (held[k * n + w] == own) held[k * n + w] = clock;
      }
    }
    sw.state->Rebase(clock);
  }
  attached_[w] = true;
  sw.reattached_at = now_;
  ++sw.report.reattaches;
  sw.report.detached_seconds += Clipped(sw.detached_since);
  report_.transitions.push_back(
      SimTransition{now_, w, true,
                    absl::StrFormat("w%d reattached: goodput %.3f Mbit/s moved its share in %.3f s "
                                    "(<= patience/2) for %.1f s; clock %d -> %d",
                                    w, 8e-6 * LinkGoodput(w), ExpectedShareBytes() / LinkGoodput(w),
                                    kReattachHold, own, clock)});
  RefreshKnown();
  sw.phase = Phase::kReady;
  TryStart(w);
  ReplanStalls();
  for (size_t q = 0; q < workers_.size(); ++q) MaybeEndPhase(q);
}

void Simulation::RefreshKnown() {
  for (size_t a = 0; a < workers_.size(); ++a) {
    SimWorker& sa = workers_[a];
    for (RowId r = 0; r < layout_.num_rows(); ++r) {
      const uint64_t known = MinOtherVersion(sa.held, r, a, attached_);
      if (known == sa.state->known_version(r)) continue;
      // Adding zeros changes no value; it records the version.
      sa.state->ApplyDownlink(r, absl::MakeConstSpan(zeros_.data(), layout_.row(r).numel), known);
    }
  }
}

double Simulation::EffectiveVersion(size_t q, double count) const {
  double version = count;
  for (const auto& raise : raises_[q]) {
    if (count >= static_cast<double>(raise.first)) version += static_cast<double>(raise.second);
  }
  return version;
}

void Simulation::Drain() {
  const bool lossless = IsLossless(cfg_.codec);
  const int rounds = lossless ? 1 : std::max(1, cfg_.drain_rounds);
  std::vector<float> decoded(layout_.max_row_numel());
  for (int round = 0; round < rounds; ++round) {
    for (size_t w = 0; w < workers_.size(); ++w) {
      WorkerState& ws = *workers_[w].state;
      for (RowId r = 0; r < layout_.num_rows(); ++r) {
        if (lossless && ws.unpushed(r) == 0) continue;
        const uint32_t numel = layout_.row(r).numel;
        scratch_.clear();
        const uint32_t count =
            ws.TakeUplink(r, cfg_.codec, &scratch_, absl::MakeSpan(decoded.data(), numel));
        server_->Fold(w, r, absl::MakeConstSpan(decoded.data(), numel), count);
      }
    }
    for (size_t w = 0; w < workers_.size(); ++w) {
      for (RowId r = 0; r < layout_.num_rows(); ++r) {
        if (lossless && !server_->HasPending(w, r)) continue;
        const uint32_t numel = layout_.row(r).numel;
        scratch_.clear();
        server_->TakeDownlink(w, r, cfg_.codec, &scratch_, absl::MakeSpan(decoded.data(), numel));
        workers_[w].state->ApplyDownlink(
            r, absl::MakeConstSpan(decoded.data(), numel),
            MinOtherVersion(server_->copy_versions(w), r, w, attached_));
      }
    }
  }
  const std::vector<float>& global = server_->global();
  for (const SimWorker& sw : workers_) {
    const std::vector<float>& replica = sw.state->replica();
    for (size_t j = 0; j < global.size(); ++j) {
      report_.max_replica_error =
          std::max(report_.max_replica_error, std::fabs(double{replica[j]} - global[j]));
    }
    for (RowId r = 0; r < layout_.num_rows(); ++r) {
      for (float v : sw.state->accumulator_row(r)) {
        report_.max_residual = std::max(report_.max_residual, double{std::fabs(v)});
      }
    }
  }
  for (size_t j = 0; j < global.size(); ++j) {
    report_.max_sum_error = std::max(report_.max_sum_error,
                                     std::fabs((double{global[j]} - initial_[j]) - true_sum_[j]));
  }
}

std::string Simulation::Describe() const {
  std::string s;
  for (size_t w = 0; w < workers_.size(); ++w) {
    const SimWorker& sw = workers_[w];
    static const char* kPhase[] = {"ready",   "computing", "transmitting",
                                   "stalled", "done",      "detached"};
    absl::StrAppend(&s, "w", w, "{", kPhase[static_cast<int>(sw.phase)],
                    attached_[w] ? "" : " detached", " clock=", sw.state->clock(),
                    " up_busy=", sw.up_busy, " down_busy=", sw.down_busy,
                    " forced=", sw.forced.size(), "} ");
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

absl::StatusOr<SimReport> RunSimulation(const SimConfig& config, const Layout& layout) {
  Simulation sim(config, layout);
  return sim.Run();
}

absl::StatusOr<Layout> SyntheticLayout(const std::string& name) {
  if (name == "cnn") {
    return Layout::Create({
        {"conv1.weight", {32, 1, 3, 3}},
        {"conv1.bias", {32}},
        {"conv2.weight", {64, 32, 3, 3}},
        {"conv2.bias", {64}},
        {"fc1.weight", {128, 3136}},
        {"fc1.bias", {128}},
        {"fc2.weight", {10, 128}},
        {"fc2.bias", {10}},
    });
  }
  if (name == "fmnist") {
    return Layout::Create({
        {"conv1.weight", {8, 1, 5, 5}},
        {"conv1.bias", {8}},
        {"conv2.weight", {16, 8, 5, 5}},
        {"conv2.bias", {16}},
        {"fc1.weight", {64, 256}},
        {"fc1.bias", {64}},
        {"fc2.weight", {10, 64}},
        {"fc2.bias", {10}},
    });
  }
  if (name == "convmlp") {
    // fmnist_worker --model=convmlp: the CNN's convolutions under a wide
    // MLP head, 3.2 MB fp32.
    return Layout::Create({
        {"conv1.weight", {8, 1, 5, 5}},
        {"conv1.bias", {8}},
        {"conv2.weight", {16, 8, 5, 5}},
        {"conv2.bias", {16}},
        {"fc1.weight", {1024, 256}},
        {"fc1.bias", {1024}},
        {"fc2.weight", {512, 1024}},
        {"fc2.bias", {512}},
        {"fc3.weight", {10, 512}},
        {"fc3.bias", {10}},
    });
  }
  if (name == "tiny") {
    return Layout::Create(
        {
            {"a.weight", {16, 24}},
            {"a.bias", {16}},
            {"b.weight", {8, 40}},
            {"b.bias", {8}},
            {"c.weight", {4, 4, 2}},
            {"scale", {}},
        },
        64);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown synthetic model '", name, "'; use cnn, fmnist, convmlp or tiny"));
}

}  // namespace rog
