#include "server/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/batch_plan.h"
#include "common/goodput.h"
#include "common/log_limiter.h"
#include "common/mta.h"
#include "common/protocol_rules.h"
#include "common/row_digest.h"
#include "common/row_index.h"
#include "common/selection.h"
#include "common/server_state.h"
#include "common/uplink_rules.h"
#include "proto/convert.h"
#include "server/checkpoint.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr char kReplaced[] =
    "replaced by a newer stream of the same worker (a reconnect, or a second process under "
    "this worker id)";
// Bytes a stream's writer may have queued before the engine stops forming
// batches for it (the in-flight limit is the real bound; this keeps memory
// bounded while a stream is stuck).
constexpr uint64_t kMaxQueued = 256 * 1024;
// Rows listed in a pb::Stall directive.
constexpr size_t kMaxStallRows = 256;
constexpr double kTick = 0.05;
// A detached worker whose downlink has been idle this long gets a probe: a
// batch of padding as large as its share (at most kMaxProbeBytes), so that
// the ack measures whether its link moves the share within the patience.
// Without it the estimate of a link that recovered while nothing flowed
// (the team idle, the worker paused) would never change.
constexpr double kProbeIdle = 0.25;
constexpr uint64_t kMaxProbeBytes = 256 * 1024;

// What the model state takes with `workers` worker records: the global
// model and a pending copy per worker (fp32), the global versions (rows x
// workers) and each worker's copy versions (rows x workers each).
uint64_t StateBytes(const Layout& layout, uint64_t workers) {
  return layout.total_numel() * 4 * (workers + 1) +
         static_cast<uint64_t>(layout.num_rows()) * workers * (workers + 1) * 8;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

enum class WState { kConnected, kDisconnected, kEvicted };

const char* StateName(WState s) {
  switch (s) {
    case WState::kConnected:
      return "connected";
    case WState::kDisconnected:
      return "disconnected";
    case WState::kEvicted:
      return "evicted";
  }
  return "?";
}

struct InFlight {
  uint64_t seq;
  uint64_t bytes;
  double sent_at;
  uint64_t ahead;  // unacknowledged bytes sent before it, when it was sent
  // A resync's values (a resume cannot undo them: it resyncs again).
  bool values = false;
  // How to undo the update rows it took from the worker's copy, if it
  // never reached the worker (ServerState::Untake).
  std::vector<TakenRow> taken;
};

struct WorkerRec {
  std::string id;
  size_t index = 0;  // column in the version storage
  uint64_t token = 0;
  WState state = WState::kConnected;
  uint64_t session = 0;
  // A session whose stream rogd refused: its later events are dropped (Live).
  uint64_t refused_session = 0;
  std::shared_ptr<Outbox> outbox;
  std::string peer;
  std::string sdk_version;
  double disconnected_at = 0;
  double last_seen = 0;
  double joined_at = 0;

  uint64_t clock = 0;
  uint64_t join_clock = 0;
  // The clock rogd last moved this worker's versions to (joining,
  // rejoining, reattaching): every iteration up to it is credited, so a
  // batch the worker formed before it heard of the move counts none.
  uint64_t raised_to = 0;
  uint64_t last_applied = 0;  // uplink seq
  uint64_t durable = 0;       // uplink seq in the last checkpoint

  // Downlink.
  uint64_t next_down_seq = 1;
  std::deque<InFlight> inflight;
  uint64_t inflight_bytes = 0;
  // The unacknowledged batches of its last stream once it ended, that
  // stream's id (its session) and its next downlink seq: a resume that
  // says how far it applied them undoes the rest instead of resyncing.
  std::deque<InFlight> unapplied;
  uint64_t unapplied_stream = 0;
  uint64_t unapplied_next_seq = 0;
  GoodputEstimator down_goodput;
  RowId resync_next = 0;  // rows below are resynced; == rows when done
  // Rows the resync leaves out: the worker's hello showed it holds them
  // (common/row_digest.h). Empty when none are.
  std::vector<bool> in_sync;
  Plan down;
  bool plan_stale = false;
  bool transmitting = false;
  double deadline = kInf;

  bool stalled = false;
  double stalled_since = 0;
  bool stall_announced = false;
  // rogd's view of its stalls: seconds by what it waited for (StallCause),
  // and the cause judged at the last stall plan (-1: not stalled) since when.
  double stall_cause_seconds[kStallCauses] = {0, 0, 0};
  int stall_cause = -1;
  double stall_cause_since = 0;
  bool flush = false;
  // Team patience: outside the bound and the window while detached.
  bool detached = false;
  double detached_at = 0;
  uint64_t detached_clock = 0;  // its clock when detached (local steps count from it)
  double detached_total = 0;    // seconds, over earlier detachments
  double reattached_at = -1e9;
  double reattach_ok_since = -1;  // negative: its link does not qualify (yet)
  uint64_t detaches = 0, reattaches = 0, late_rows = 0;
  std::string detach_reason;
  uint64_t probes = 0;        // probes sent during this detachment
  double last_down_sent = 0;  // when a downlink batch last left
  // Team pace: compute seconds per iteration (a moving average of what its
  // progress reports), and the totals of the last progress it came from.
  double compute_per_iteration = 0;
  double compute_total_seen = 0;
  uint64_t compute_iteration_seen = 0;
  std::vector<uint64_t> requested;  // per row: the needed version asked for

  // What the worker reported last.
  pb::Progress progress;
  uint64_t rows_up = 0, rows_down = 0, bytes_up = 0, bytes_down = 0;
};

}  // namespace

struct Engine::Impl {
  EngineOptions opt;
  uint32_t bound = 0;
  double mta = 1;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  std::thread thread;

  // Engine thread only from here on.
  std::shared_ptr<const Layout> layout;
  std::unique_ptr<ServerState> state;
  uint64_t model_wire_bytes = 0;
  // The initial model while it arrives from the first worker.
  std::vector<float> staging;
  std::vector<bool> staged;
  size_t staged_rows = 0;
  std::vector<std::unique_ptr<WorkerRec>> workers;  // by index
  std::map<std::string, size_t> by_id;
  std::map<uint64_t, size_t> by_session;
  uint64_t next_session = 1;
  bool team_ready = false;
  double team_ready_at = 0;
  std::map<std::string, uint64_t> rejected;
  double start_time = 0;  // set by Start, from opt.clock
  double last_checkpoint_unix = 0;
  double last_checkpoint_time = 0;
  std::string last_checkpoint_path;
  std::mt19937_64 rng{std::random_device{}()};
  std::vector<float> decoded;
  double last_patience_check = 0;

  // Refusal lines, per reason and worker (a client can cause them at will).
  LogLimiter refusal_log;

  // Every reading of time goes through opt.clock (a FakeClock in tests).
  double Now() const { return opt.clock->Now(); }

  // --- the queue -------------------------------------------------------------
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(std::move(task));
    }
    cv.notify_one();
  }

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
        cv.wait_for(lock, std::chrono::duration<double>(kTick),
                    [&] { return !queue.empty() || stopping; });
        if (!queue.empty()) {
          task = std::move(queue.front());
          queue.pop_front();
        } else if (stopping) {
          return;
        }
      }
      if (task) task();
      OnTick();
    }
  }

  // --- helpers ---------------------------------------------------------------
  // A team member: not evicted (detached workers included).
  bool Member(const WorkerRec& r) const { return r.state != WState::kEvicted; }
  // Counts for the staleness bound and the window.
  bool Attached(const WorkerRec& r) const { return Member(r) && !r.detached; }

  AttachedSet AttachedWorkers() const {
    AttachedSet set(workers.size(), false);
    for (const auto& r : workers) set[r->index] = Attached(*r);
    return set;
  }

  WorkerRec* BySession(uint64_t session) {
    auto it = by_session.find(session);
    return it == by_session.end() ? nullptr : workers[it->second].get();
  }

  // The worker of a stream whose messages still count: null once the
  // stream was replaced, closed or refused.
  WorkerRec* Live(uint64_t session) {
    WorkerRec* r = BySession(session);
    return r == nullptr || r->refused_session == session ? nullptr : r;
  }

  // One line per refusal, at most a few per reason and client every 10 s
  // (a client can cause them as fast as it can send).
  void LogRefusal(const std::string& reason, const std::string& who, absl::string_view message) {
    // Per client host, not per connection: a client that reconnects for
    // each bad message gets a new port every time.
    absl::string_view client = who;
    const size_t colon = client.rfind(':');
    if (colon != absl::string_view::npos &&
        client.find_first_not_of("0123456789", colon + 1) == absl::string_view::npos) {
      client = client.substr(0, colon);
    }
    uint64_t suppressed = 0;
    if (!refusal_log.Allow(absl::StrCat(reason, "|", client), Now(), &suppressed)) return;
    if (suppressed > 0) {
      spdlog::warn("refused a message from {} ({}): {} [{} more refusals of this kind not logged]",
                   who, reason, std::string(message), suppressed);
    } else {
      spdlog::warn("refused a message from {} ({}): {}", who, reason, std::string(message));
    }
  }

  // Refuses what worker r sent on its current stream: nothing of it is
  // applied, it is counted under `reason` and logged, and the stream ends
  // with `status`; events the stream queued after it are dropped.
  void Refuse(WorkerRec& r, Rejection reason, const absl::Status& status) {
    const std::string label = RejectionLabel(reason);
    ++rejected[label];
    LogRefusal(label, absl::StrCat("worker ", r.id, " at ", r.peer), status.message());
    r.refused_session = r.session;
    if (r.outbox) r.outbox->End(status, label);
  }

  uint64_t MinAttachedClock(const WorkerRec* except = nullptr) const {
    uint64_t min = std::numeric_limits<uint64_t>::max();
    for (const auto& r : workers) {
      if (r.get() != except && Attached(*r)) min = std::min(min, r->clock);
    }
    return min;
  }

  // Every worker's clock, indexed like the version stores' columns.
  std::vector<uint64_t> Clocks() const {
    std::vector<uint64_t> clocks(workers.size(), 0);
    for (const auto& q : workers) clocks[q->index] = q->clock;
    return clocks;
  }

  uint64_t MaxAttachedClock() const {
    uint64_t max = 0;
    for (const auto& r : workers) {
      if (Attached(*r)) max = std::max(max, r->clock);
    }
    return max;
  }

  uint64_t RowWireBytes(RowId row) const {
    return rog::RowWireBytes(opt.codec, layout->row(row).numel);
  }

  // The version a downlink batch reports for `row`: the lowest over the other
  // attached workers; with nobody else, the worker's own clock.
  uint64_t ReportedVersion(const WorkerRec& r, RowId row, const AttachedSet& attached) const {
    const uint64_t v = MinOtherVersion(state->copy_versions(r.index), row, r.index, attached);
    return v == std::numeric_limits<uint64_t>::max() ? r.clock : v;
  }

  void SendDirective(WorkerRec& r, std::function<void(pb::Directive*)> fill) {
    if (!r.outbox) return;
    pb::ServerMessage m;
    fill(m.mutable_directive());
    r.outbox->Send(std::move(m));
  }

  // Bytes a worker moves per iteration at least: its MTA share under ROG,
  // the whole model under BSP and SSP (mta is 1 there).
  double ShareBytes() const { return mta * static_cast<double>(model_wire_bytes); }

  // The team's window (TeamWindow) over the connected attached workers'
  // links: the uplink as the worker measured it, the downlink as rogd did.
  double ComputeWindow() const {
    if (opt.policy != SyncPolicy::kRog) return 0;
    std::vector<double> goodputs;
    for (const auto& r : workers) {
      if (r->state != WState::kConnected || !Attached(*r)) continue;
      const double up = r->progress.uplink_goodput();
      const bool known = up > 0 && r->down_goodput.has_estimate();
      goodputs.push_back(known ? std::min(up, r->down_goodput.rate()) : 0.0);
    }
    return TeamWindow(opt.policy, goodputs, ShareBytes(), opt.patience);
  }

  pb::Window CurrentWindow(uint64_t iteration) const {
    pb::Window w;
    w.set_iteration(iteration);
    w.set_seconds(ComputeWindow());
    const uint64_t min = MinAttachedClock();
    w.set_min_iteration(min == std::numeric_limits<uint64_t>::max() ? 0 : min);
    return w;
  }

  bool SpeculativeAllowed(const WorkerRec& r) const {
    return MaySpeculate(opt.policy, r.clock, MinAttachedClock());
  }

  // --- team ------------------------------------------------------------------
  void CheckTeamReady() {
    if (team_ready || !state) return;
    size_t members = 0;
    for (const auto& r : workers) members += Member(*r) ? 1 : 0;
    if (members < opt.team_size) return;
    team_ready = true;
    team_ready_at = Now();
    spdlog::info("team ready: {} workers joined, training starts", members);
    for (auto& r : workers) {
      if (r->state != WState::kConnected) continue;
      r->stall_announced = false;
      SendDirective(*r, [&](pb::Directive* d) { d->mutable_release()->set_iteration(r->clock); });
    }
  }

  void Evict(WorkerRec& r, const std::string& reason, bool left = false) {
    if (r.state == WState::kEvicted) return;
    if (left) {
      spdlog::info("worker {} left at iteration {}: {}", r.id, r.clock, reason);
    } else {
      spdlog::info("evicted worker {} at iteration {}: {}", r.id, r.clock, reason);
    }
    r.state = WState::kEvicted;
    if (r.detached) {
      r.detached = false;
      r.detached_total += Now() - r.detached_at;
    }
    if (state) state->SetActive(r.index, false);
    if (r.outbox) {
      SendDirective(r, [&](pb::Directive* d) { d->mutable_evicted()->set_reason(reason); });
      r.outbox->End(left ? absl::OkStatus()
                         : absl::AbortedError(absl::StrCat("rogd evicted this worker: ", reason)));
      r.outbox.reset();
    }
    by_session.erase(r.session);
    r.session = 0;
    JudgeStall(r, -1);
    r.stalled = false;
    r.inflight.clear();
    r.inflight_bytes = 0;
    r.unapplied.clear();  // its copy is gone; a rejoin resyncs
    r.unapplied_stream = 0;
    ReplanStalls();
    PumpAll();
  }

  // --- stalls ----------------------------------------------------------------
  // Charges the time since the last judgement to the cause judged then, and
  // judges `cause` from now on (-1: the worker is no longer stalled).
  void JudgeStall(WorkerRec& r, int cause) {
    const double now = Now();
    if (r.stall_cause >= 0) r.stall_cause_seconds[r.stall_cause] += now - r.stall_cause_since;
    r.stall_cause = cause;
    r.stall_cause_since = now;
  }

  void CheckStalled(WorkerRec& r) {
    if (!r.stalled || r.state != WState::kConnected || r.detached || !team_ready ||
        r.resync_next < layout->num_rows()) {
      // Waits for the team to form or for a resync are not stalls at the bound.
      if (r.stall_cause >= 0) JudgeStall(r, -1);
    }
    if (!r.stalled || r.state != WState::kConnected || r.detached) return;
    if (!team_ready) {
      if (!r.stall_announced) {
        r.stall_announced = true;
        size_t members = 0;
        for (const auto& q : workers) members += Member(*q) ? 1 : 0;
        SendDirective(r, [&](pb::Directive* d) {
          pb::Stall* s = d->mutable_stall();
          s->set_iteration(r.clock);
          s->add_waiting_for(
              absl::StrCat("team: ", members, " of ", opt.team_size, " workers joined"));
        });
      }
      return;
    }
    if (r.resync_next < layout->num_rows()) return;  // re-checked when the resync ends
    const AttachedSet attached = AttachedWorkers();
    const VersionStore& copy = state->copy_versions(r.index);
    if (MayStart(copy, r.index, attached, r.clock, bound)) {
      JudgeStall(r, -1);
      r.stalled = false;
      r.stall_announced = false;
      SendDirective(r, [&](pb::Directive* d) { d->mutable_release()->set_iteration(r.clock); });
      return;
    }
    const uint64_t needed = NeededVersion(r.clock, bound);
    const StallPlan plan = PlanStall(state->versions(), copy, r.index, attached, needed);
    JudgeStall(r, ClassifyStall(plan, Clocks(), needed));
    for (auto& holder : workers) {
      const size_t q = holder->index;
      if (q >= plan.pushes.size() || plan.pushes[q].empty()) continue;
      // A worker that has not computed the iterations yet cannot push them;
      // it is asked again after its next progress.
      if (holder->state != WState::kConnected || holder->clock < needed) continue;
      pb::PushNow push;
      push.set_needed_version(needed);
      for (RowId row : plan.pushes[q]) {
        if (holder->requested[row] >= needed) continue;
        holder->requested[row] = needed;
        push.add_rows(row);
      }
      if (push.rows_size() == 0) continue;
      spdlog::debug("asking {} to push {} rows now for {} (needs version {})", holder->id,
                    push.rows_size(), r.id, needed);
      SendDirective(*holder, [&](pb::Directive* d) { *d->mutable_push_now() = std::move(push); });
    }
    if (!r.stall_announced) {
      r.stall_announced = true;
      SendDirective(r, [&](pb::Directive* d) {
        pb::Stall* s = d->mutable_stall();
        s->set_iteration(r.clock);
        const std::vector<MissingUpdate> missing =
            FindMissing(copy, r.index, attached, needed, kMaxStallRows);
        RowId last = std::numeric_limits<RowId>::max();
        for (const MissingUpdate& m : missing) {
          if (m.row != last) s->add_rows(m.row);
          last = m.row;
        }
        s->set_missing_rows(plan.missing_rows);
        for (size_t q : plan.waiting_for) {
          for (const auto& w : workers) {
            if (w->index == q) s->add_waiting_for(w->id);
          }
        }
      });
    }
  }

  void ReplanStalls() {
    if (!state) return;
    for (auto& r : workers) CheckStalled(*r);
  }

  // --- downlink --------------------------------------------------------------
  // BSP's rows go down at the barrier only (the deliverable tier in
  // FormBatch), so its plan is empty.
  void BuildDownlinkPlan(WorkerRec& r) {
    r.down.Reset(SelectRows(DownlinkCandidates(opt.policy, bound, *state, r.index, r.clock,
                                               AttachedWorkers(), opt.codec, *layout),
                            mta, model_wire_bytes));
    r.plan_stale = false;
  }

  // Forms r's next downlink batch into *m, and into *sent what undoes it;
  // false when there is nothing to send.
  bool FormBatch(WorkerRec& r, pb::ServerMessage* m, InFlight* sent) {
    const AttachedSet attached = AttachedWorkers();
    pb::RowBatch* b = m->mutable_batch();
    std::vector<RowId> rows;
    std::string* payload = b->mutable_payload();
    if (r.resync_next < layout->num_rows()) {
      BatchFill fill(*layout, Codec::kFp32, opt.batch_bytes);
      while (r.resync_next < layout->num_rows() && fill.Fits(r.resync_next)) {
        fill.Add(r.resync_next++);
        SkipInSync(r);
      }
      rows = fill.Take();
      b->set_kind(pb::BATCH_KIND_VALUES);
      b->set_codec(pb::CODEC_FP32);
      sent->values = true;
      b->set_applied_uplink_seq(r.last_applied);
      for (RowId row : rows) state->TakeValues(r.index, row, payload);
    } else {
      BatchFill fill(*layout, opt.codec, opt.batch_bytes);
      if (r.stalled) {
        const StallPlan need = PlanStall(state->versions(), state->copy_versions(r.index), r.index,
                                         attached, NeededVersion(r.clock, bound));
        for (RowId row : need.deliverable) {
          if (!fill.Fits(row)) break;
          fill.Add(row);
        }
      }
      if (r.flush || r.detached) {
        // A flush, or a detached worker: every pending row, whatever the window.
        for (RowId row = 0; row < layout->num_rows(); ++row) {
          if (!state->HasPending(r.index, row) || fill.Has(row)) continue;
          if (!fill.Fits(row)) break;
          fill.Add(row);
        }
      }
      if (r.transmitting) {
        const double now = Now();
        const bool open = now < r.deadline;
        const bool speculate = SpeculativeAllowed(r);
        // Time left in the window: stream what other workers pushed since.
        if (open && speculate && r.deadline < kInf && r.down.done() && r.plan_stale) {
          BuildDownlinkPlan(r);
        }
        FillFromPlan(&r.down, open, speculate, &fill,
                     [&](RowId row) { return !state->HasPending(r.index, row); });
      }
      rows = fill.Take();
      if (rows.empty()) return false;
      b->set_kind(pb::BATCH_KIND_UPDATE);
      b->set_codec(static_cast<pb::Codec>(opt.codec));
      for (RowId row : rows) {
        const uint32_t numel = layout->row(row).numel;
        decoded.resize(numel);
        state->TakeDownlink(r.index, row, opt.codec, payload, absl::MakeSpan(decoded),
                            &sent->taken.emplace_back());
      }
    }
    if (rows.empty()) return false;
    b->set_seq(r.next_down_seq++);
    b->set_iteration(r.clock);
    for (uint32_t d : EncodeRowIds(rows)) b->add_row_delta(d);
    // No `count` downlink: workers do not use it, and on the main job's
    // model it was a quarter of the index bytes.
    for (size_t k = 0; k < rows.size(); ++k) {
      const uint64_t version = ReportedVersion(r, rows[k], attached);
      b->add_version_lag(static_cast<int64_t>(r.clock) - static_cast<int64_t>(version));
    }
    r.rows_down += rows.size();
    return true;
  }

  void Pump(WorkerRec& r) {
    if (r.state != WState::kConnected || !r.outbox || !state) return;
    const bool resyncing = r.resync_next < layout->num_rows();
    const uint64_t limit =
        r.down_goodput.has_estimate()
            ? InFlightLimit(r.down_goodput.rate(), opt.inflight_lead, opt.batch_bytes)
            : kInitialInFlight;
    bool exhausted = false;
    bool sent_any = false;
    while (r.inflight_bytes < limit && r.outbox->queued_bytes() < kMaxQueued) {
      pb::ServerMessage m;
      InFlight sent{};
      if (!FormBatch(r, &m, &sent)) {
        exhausted = true;
        break;
      }
      const uint64_t bytes = m.batch().ByteSizeLong();
      sent.seq = m.batch().seq();
      sent.bytes = bytes;
      sent.sent_at = Now();
      sent.ahead = r.inflight_bytes;
      r.inflight.push_back(std::move(sent));
      r.inflight_bytes += bytes;
      r.bytes_down += bytes;
      r.down_goodput.OnSend(Now(), bytes);
      r.last_down_sent = Now();
      r.outbox->Send(std::move(m));
      sent_any = true;
    }
    if (resyncing && r.resync_next >= layout->num_rows()) {
      spdlog::debug("worker {}: full resync sent", r.id);
      CheckStalled(r);
    } else if (r.stalled && sent_any) {
      CheckStalled(r);  // the rows just sent may be what it waits for
    }
    if (exhausted && r.flush) {
      r.flush = false;
      SendDirective(r, [&](pb::Directive* d) {
        d->mutable_release()->set_iteration(r.clock);
        d->mutable_release()->set_flushed(true);
      });
    }
  }

  // Keeps what r's ending stream has not had acknowledged, for a resume
  // (ResumeDownlink).
  void KeepUnapplied(WorkerRec& r) {
    r.unapplied = std::move(r.inflight);
    r.unapplied_stream = r.session;
    r.unapplied_next_seq = r.next_down_seq;
    r.inflight.clear();
    r.inflight_bytes = 0;
  }

  // A resuming worker's downlink: when its hello says how far it applied
  // its last stream's batches (Hello.downlink_stream and
  // last_applied_downlink_seq), the batches after that never reached it
  // and are undone from its copy, newest first, and nothing needs
  // resyncing. False (a full resync follows) when that stream's resync had
  // not reached it whole, or the hello's account does not fit what rogd
  // sent.
  bool ResumeDownlink(WorkerRec& r, const pb::Hello& hello) {
    const uint64_t applied = hello.last_applied_downlink_seq();
    const bool fits = state && state->active(r.index) && r.resync_next >= layout->num_rows() &&
                      hello.downlink_stream() != 0 &&
                      hello.downlink_stream() == r.unapplied_stream &&
                      applied < r.unapplied_next_seq &&
                      (r.unapplied.empty() ? applied + 1 == r.unapplied_next_seq
                                           : r.unapplied.front().seq <= applied + 1);
    bool values = false;
    for (const InFlight& b : r.unapplied) values |= b.seq > applied && b.values;
    if (!fits || values) return false;
    uint64_t rows = 0;
    for (auto it = r.unapplied.rbegin(); it != r.unapplied.rend() && it->seq > applied; ++it) {
      for (const TakenRow& t : it->taken) state->Untake(r.index, t);
      rows += it->taken.size();
    }
    r.plan_stale = true;
    spdlog::info("worker {}: resumes its downlink after seq {}; {} rows it never received go again",
                 r.id, applied, rows);
    return true;
  }

  // Moves r's resync past the rows it holds already.
  void SkipInSync(WorkerRec& r) {
    while (r.resync_next < r.in_sync.size() && r.in_sync[r.resync_next]) ++r.resync_next;
    if (r.resync_next >= layout->num_rows()) std::vector<bool>().swap(r.in_sync);
  }

  // Starts r's full resync, leaving out the rows its hello showed it holds
  // (in_sync, from RowsInSync): their copies are marked current and the
  // welcome lists them with their versions.
  void StartResync(WorkerRec& r, std::vector<bool> in_sync, pb::Welcome* welcome) {
    welcome->set_full_resync(true);
    r.resync_next = 0;
    r.in_sync = std::move(in_sync);
    std::vector<RowId> rows;
    for (RowId row = 0; row < r.in_sync.size(); ++row) {
      if (r.in_sync[row]) rows.push_back(row);
    }
    const AttachedSet attached = AttachedWorkers();
    for (RowId row : rows) {
      state->MarkInSync(r.index, row);
      welcome->add_in_sync_version_lag(static_cast<int64_t>(r.clock) -
                                       static_cast<int64_t>(ReportedVersion(r, row, attached)));
    }
    for (uint32_t d : EncodeRowIds(rows)) welcome->add_in_sync_row_delta(d);
    SkipInSync(r);
    if (!rows.empty()) {
      spdlog::info("worker {}: {} of {} rows already in sync (its row digests), resyncing {}", r.id,
                   rows.size(), layout->num_rows(), layout->num_rows() - rows.size());
    }
  }

  void PumpAll() {
    for (auto& r : workers) Pump(*r);
  }

  // --- events ----------------------------------------------------------------
  absl::StatusOr<Admission> OnHello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                    const std::string& peer, Rejection* reason);
  void OnBatch(uint64_t session, UplinkBatch& batch);
  void OnAck(uint64_t session, const pb::Ack& ack);
  void OnProgress(uint64_t session, const pb::Progress& p);
  void OnClosed(uint64_t session);
  void OnTick();
  void CheckPatience(double now);
  bool MayReattach(WorkerRec& q, double now);
  double DownlinkRate(const WorkerRec& q, double now) const;
  void MaybeProbe(WorkerRec& q, double now);
  void SendPace(uint64_t min_before, const WorkerRec* except);
  double ShareSeconds(const WorkerRec& q, double now) const;
  double TeamRate(const WorkerRec* with, const WorkerRec* without, double now) const;
  std::string PaceDetachReason(double now);
  WorkerRec* pace_candidate = nullptr;  // set by PaceDetachReason
  void SendKnownVersions(const WorkerRec* except);
  void Detach(WorkerRec& q, const std::string& reason);
  void Reattach(WorkerRec& q, const std::string& reason);
  void SendDetached(WorkerRec& q);
  void ModelComplete();

  absl::StatusOr<pb::CheckpointReply> WriteCheckpointNow();
  absl::Status Restore(const std::string& path);

  // --- admin answers ---------------------------------------------------------
  pb::StatusReply StatusReport() const;
  pb::WorkersReply WorkersReport() const;
  std::map<uint64_t, uint64_t> StalenessCounts() const;
};

absl::StatusOr<Admission> Engine::Impl::OnHello(std::shared_ptr<Outbox> outbox,
                                                const pb::Hello& hello, const std::string& peer,
                                                Rejection* reason) {
  *reason = Rejection::kBadHello;
  // Bounded before anything is allocated for it: a hello of a few bytes can
  // describe petabytes.
  absl::StatusOr<Layout> parsed = LayoutFromProto(hello.layout(), opt.layout_limits);
  if (!parsed.ok()) {
    if (absl::IsResourceExhausted(parsed.status())) {
      *reason = Rejection::kModelTooLarge;
      return absl::ResourceExhaustedError(
          absl::StrCat("hello from '", hello.worker_id(), "': ", parsed.status().message(),
                       " (rogd --max_model_bytes=", opt.layout_limits.max_model_bytes,
                       ", --max_rows=", opt.layout_limits.max_rows,
                       "): register the model's parameters only, or raise the limit"));
    }
    return absl::InvalidArgumentError(absl::StrCat("hello from '", hello.worker_id(),
                                                   "': bad layout: ", parsed.status().message()));
  }
  {
    absl::Status clock = CheckHelloClock(hello.iteration());
    if (!clock.ok()) {
      *reason = Rejection::kBadClock;
      return absl::InvalidArgumentError(
          absl::StrCat("hello from '", hello.worker_id(), "': ", clock.message()));
    }
  }
  if (parsed->fingerprint() != hello.layout_fingerprint()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hello from '%s': layout_fingerprint %016x does not match its layout (%016x); "
        "compute it with pb::Layout::fingerprint()",
        hello.worker_id(), hello.layout_fingerprint(), parsed->fingerprint()));
  }
  // Rows the worker holds already: checked before anything changes, so a
  // bad hello leaves no trace.
  absl::StatusOr<std::vector<bool>> in_sync = std::vector<bool>();
  if (state && parsed->fingerprint() == layout->fingerprint()) {
    in_sync = RowsInSync(*layout, state->global(), hello.row_digests());
    if (!in_sync.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("hello from '", hello.worker_id(), "': ", in_sync.status().message()));
    }
  }
  const double now = Now();
  const uint64_t session = next_session++;
  pb::Welcome welcome;
  welcome.set_sync(static_cast<pb::SyncPolicy>(opt.policy));
  welcome.set_staleness(opt.staleness);
  welcome.set_mta(mta);
  welcome.set_codec(static_cast<pb::Codec>(opt.codec));
  welcome.set_max_message_bytes(opt.max_message_bytes);
  Admission admission;
  admission.session = session;

  auto it = by_id.find(hello.worker_id());
  WorkerRec* r = it == by_id.end() ? nullptr : workers[it->second].get();

  if (!state && workers.empty()) {
    const uint64_t team = std::max<uint64_t>(opt.team_size, 1);
    const uint64_t need = StateBytes(*parsed, team);
    if (need > opt.max_state_bytes) {
      *reason = Rejection::kModelTooLarge;
      return absl::ResourceExhaustedError(absl::StrCat(
          "hello from '", hello.worker_id(), "': a model of ", parsed->total_numel() * 4,
          " bytes in ", parsed->num_rows(), " rows needs ", need, " bytes of state for ", team,
          " workers (a copy per worker, versions per row and worker); rogd may use ",
          opt.max_state_bytes,
          " (--max_state_bytes): use fewer rows (a larger "
          "min_split_numel) or a smaller model, or raise the limit"));
    }
  }
  if (state && parsed->fingerprint() != layout->fingerprint()) *reason = Rejection::kLayoutMismatch;
  if (!state) {
    // No model yet: the first worker brings it.
    if (!workers.empty() && r == nullptr) {
      return absl::UnavailableError(absl::StrCat(
          "the model is still arriving from worker '", workers[0]->id,
          "'; this worker will be admitted once it is complete (retrying is automatic)"));
    }
    if (r != nullptr && r->outbox) {
      r->outbox->End(absl::AbortedError(kReplaced));
      by_session.erase(r->session);
    }
    workers.clear();
    by_id.clear();
    layout = std::make_shared<const Layout>(*std::move(parsed));
    staging.assign(layout->total_numel(), 0.0f);
    staged.assign(layout->num_rows(), false);
    staged_rows = 0;
    auto rec = std::make_unique<WorkerRec>();
    rec->id = hello.worker_id();
    rec->index = 0;
    rec->token = rng() | 1;
    rec->clock = rec->join_clock = hello.iteration();
    rec->resync_next = static_cast<RowId>(layout->num_rows());
    rec->requested.assign(layout->num_rows(), 0);
    r = rec.get();
    workers.push_back(std::move(rec));
    by_id[r->id] = 0;
    welcome.set_send_initial_values(true);
    admission.accepts_values = true;
    spdlog::info("worker {} connected from {}: it brings the model ({} tensors, {} rows, {} bytes)",
                 r->id, peer, layout->tensors().size(), layout->num_rows(),
                 layout->total_numel() * 4);
  } else {
    if (parsed->fingerprint() != layout->fingerprint()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "worker '%s' registers a model layout (fingerprint %016x, %d tensors, %d rows) that "
          "differs from the model rogd holds (fingerprint %016x, %d tensors, %d rows): %s. Every "
          "worker must register the same tensors with the same shapes in the same order "
          "(see `rogctl status` for the server's layout)",
          hello.worker_id(), parsed->fingerprint(), parsed->tensors().size(), parsed->num_rows(),
          layout->fingerprint(), layout->tensors().size(), layout->num_rows(),
          DescribeLayoutDifference(*parsed, *layout, "the worker's model", "rogd's")));
    }
    const uint64_t team_min = MinAttachedClock(r);
    const bool alone = team_min == std::numeric_limits<uint64_t>::max();
    bool resumed = false;
    if (r != nullptr && r->state != WState::kEvicted && hello.resume_token() != 0 &&
        hello.resume_token() == r->token) {
      // Resume: same incarnation, its state kept within the lease.
      if (r->outbox) {
        KeepUnapplied(*r);
        r->outbox->End(absl::AbortedError(kReplaced));
        by_session.erase(r->session);
      }
      resumed = true;
      r->clock = std::max(r->clock, hello.iteration());
      spdlog::info("worker {} reconnected from {} at iteration {} (resumes after uplink seq {})",
                   r->id, peer, r->clock, r->last_applied);
    } else if (r != nullptr) {
      // Rejoin: evicted, or a new incarnation (its process restarted).
      if (r->outbox) {
        r->outbox->End(absl::AbortedError(
            "replaced by a new incarnation of the same worker (its process restarted, or a second "
            "process runs under this worker id)"));
        by_session.erase(r->session);
      }
      const bool was_evicted = r->state == WState::kEvicted;
      if (was_evicted) state->SetActive(r->index, true);
      r->token = rng() | 1;
      // The uplink seqs go on: a worker that comes back after eviction drops
      // what was applied before it and resends the rest, exactly once.
      // Never below its own clock: its folded updates count iterations up
      // to there, and its new ones must count after them (a new
      // incarnation starting at the team's clock below that would push
      // iterations rogd already holds).
      r->clock = alone ? std::max(r->clock, hello.iteration()) : std::max(team_min, r->clock);
      r->join_clock = r->clock;
      state->RaiseVersion(r->index, r->clock);
      r->raised_to = r->clock;
      spdlog::info("worker {} rejoined from {} ({}) at iteration {}", r->id, peer,
                   was_evicted ? "was evicted" : "new incarnation", r->clock);
    } else {
      if (workers.size() < opt.max_workers &&
          StateBytes(*layout, workers.size() + 1) > opt.max_state_bytes) {
        *reason = Rejection::kTooManyWorkers;
        return absl::ResourceExhaustedError(absl::StrCat(
            "'", hello.worker_id(), "' would be worker record ", workers.size() + 1,
            ", and the model state would then need ", StateBytes(*layout, workers.size() + 1),
            " bytes (a copy of the model per worker, versions per row and worker); rogd may use ",
            opt.max_state_bytes,
            " (--max_state_bytes): restart robots under their old worker ids, or raise the "
            "limit"));
      }
      if (workers.size() >= opt.max_workers) {
        *reason = Rejection::kTooManyWorkers;
        return absl::ResourceExhaustedError(absl::StrCat(
            "rogd keeps ", workers.size(),
            " worker records (--max_workers), evicted ones "
            "included, and '",
            hello.worker_id(),
            "' would be a new one: restart robots under "
            "their old worker ids (a stable id, e.g. the host name, rejoins), or raise "
            "--max_workers"));
      }
      auto rec = std::make_unique<WorkerRec>();
      rec->id = hello.worker_id();
      rec->clock = alone ? hello.iteration() : team_min;
      rec->join_clock = rec->clock;
      rec->index = state->AddWorker(rec->clock);
      rec->raised_to = rec->clock;
      rec->token = rng() | 1;
      rec->joined_at = now;
      r = rec.get();
      by_id[r->id] = r->index;
      workers.push_back(std::move(rec));
      spdlog::info("worker {} joined from {} at iteration {} (team of {})", r->id, peer, r->clock,
                   workers.size());
    }
    if (!resumed || !ResumeDownlink(*r, hello)) StartResync(*r, *std::move(in_sync), &welcome);
    r->unapplied.clear();
    r->unapplied_stream = 0;
  }
  r->state = WState::kConnected;
  r->session = session;
  r->outbox = std::move(outbox);
  r->peer = peer;
  r->sdk_version = hello.sdk_version();
  r->last_seen = now;
  r->next_down_seq = 1;
  r->inflight.clear();
  r->inflight_bytes = 0;
  JudgeStall(*r, -1);
  r->stalled = r->stall_announced = r->flush = r->transmitting = false;
  r->deadline = kInf;
  r->requested.assign(layout->num_rows(), 0);
  r->down = Plan();
  by_session[session] = r->index;
  admission.layout = layout;
  admission.next_uplink_seq = r->last_applied + 1;

  welcome.set_resume_token(r->token);
  welcome.set_stream(session);
  welcome.set_iteration(r->clock);
  welcome.set_last_applied_uplink_seq(r->last_applied);
  welcome.set_team_ready(team_ready);
  if (state) *welcome.mutable_window() = CurrentWindow(r->clock + 1);
  pb::ServerMessage m;
  *m.mutable_welcome() = std::move(welcome);
  r->outbox->Send(std::move(m));
  // Detachment outlives a reconnect: the link that caused it is the same.
  if (r->detached) SendDetached(*r);
  // After the welcome: the team's Release must follow it on this stream.
  CheckTeamReady();
  ReplanStalls();
  Pump(*r);
  return admission;
}

void Engine::Impl::ModelComplete() {
  state = std::make_unique<ServerState>(*layout, std::move(staging), 1);
  staging.clear();
  staged.clear();
  model_wire_bytes = 0;
  for (RowId row = 0; row < layout->num_rows(); ++row) model_wire_bytes += RowWireBytes(row);
  WorkerRec& r = *workers[0];
  r.joined_at = Now();
  state->RaiseVersion(0, r.clock);
  r.raised_to = r.clock;
  spdlog::info("model received from worker {}: {} rows, {} bytes", r.id, layout->num_rows(),
               layout->total_numel() * 4);
  CheckTeamReady();
}

void Engine::Impl::OnBatch(uint64_t session, UplinkBatch& b) {
  WorkerRec* r = Live(session);
  if (r == nullptr) return;  // a stream already replaced, closed or refused
  r->last_seen = Now();
  pb::ServerMessage ack;
  if (b.seq <= r->last_applied) {
    // Resent after a reconnect: applied already.
    ack.mutable_ack()->set_seq(r->last_applied);
    ack.mutable_ack()->set_durable_seq(r->durable);
    r->outbox->Send(std::move(ack));
    return;
  }
  if (b.seq != r->last_applied + 1) {
    // The stream handler checks seqs; this is the engine's own guard, never
    // a silent drop.
    Refuse(*r, Rejection::kBadSeq,
           absl::InvalidArgumentError(
               absl::StrCat("row batch seq ", b.seq, " after ", r->last_applied,
                            ": seqs rise by 1 per batch; after a reconnect continue from "
                            "Welcome.last_applied_uplink_seq + 1")));
    return;
  }
  // Everything is checked before anything is applied: a batch is folded
  // whole or not at all.
  if (b.kind == pb::BATCH_KIND_VALUES && state) {
    Refuse(*r, Rejection::kUnexpectedValues,
           absl::InvalidArgumentError(absl::StrCat(
               "initial values (BATCH_KIND_VALUES, seq ", b.seq,
               ") after the model was complete: every row's values had arrived; send updates "
               "as BATCH_KIND_UPDATE")));
    return;
  }
  if (b.kind != pb::BATCH_KIND_VALUES && !state) {
    Refuse(*r, Rejection::kUpdateBeforeModel,
           absl::InvalidArgumentError(absl::StrCat(
               "an update (seq ", b.seq, ") before the initial model was complete: ", staged_rows,
               " of ", layout->num_rows(),
               " rows have arrived. Send every row's values as BATCH_KIND_VALUES first "
               "(Welcome.send_initial_values), then updates")));
    return;
  }
  if (b.kind != pb::BATCH_KIND_VALUES) {
    if (b.iteration > r->clock) {
      Refuse(*r, Rejection::kBadClock,
             absl::InvalidArgumentError(absl::StrCat(
                 "row batch formed at iteration ", b.iteration,
                 " but rogd holds this worker at iteration ", r->clock,
                 ": send the Progress of an iteration before the batches that carry it")));
      return;
    }
    if (b.iteration <= r->raised_to) {
      // Formed before the worker heard that rogd moved its clock (a
      // reattach or rejoin while the batch was on its way): rogd credits
      // every iteration up to the move already, so the batch counts none.
      // Its values are folded like any other.
      std::fill(b.counts.begin(), b.counts.end(), 0);
    }
    absl::Status s =
        CheckUpdateCounts(state->versions(), r->index, *layout, b.rows, b.counts, b.iteration);
    if (!s.ok()) {
      Refuse(*r, Rejection::kBadCount, s);
      return;
    }
    size_t at = 0;
    for (size_t k = 0; k < b.rows.size(); ++k) {
      const uint32_t numel = layout->row(b.rows[k]).numel;
      s = state->CheckFold(r->index, b.rows[k], absl::MakeConstSpan(b.values.data() + at, numel));
      if (!s.ok()) {
        Refuse(*r, Rejection::kNonFiniteFold, s);
        return;
      }
      at += numel;
    }
  }
  size_t at = 0;
  if (b.kind == pb::BATCH_KIND_VALUES) {
    for (RowId row : b.rows) {
      const RowInfo& info = layout->row(row);
      std::copy_n(b.values.data() + at, info.numel, staging.data() + info.offset);
      at += info.numel;
      if (!staged[row]) {
        staged[row] = true;
        ++staged_rows;
      }
    }
  } else {
    for (size_t k = 0; k < b.rows.size(); ++k) {
      const uint32_t numel = layout->row(b.rows[k]).numel;
      state->Fold(r->index, b.rows[k], absl::MakeConstSpan(b.values.data() + at, numel),
                  b.counts[k]);
      at += numel;
    }
    // Folded as usual; counted apart because nobody waited for them.
    if (r->detached) r->late_rows += b.rows.size();
    for (auto& q : workers) q->plan_stale = true;
  }
  r->rows_up += b.rows.size();
  r->bytes_up += b.wire_bytes;
  r->last_applied = b.seq;
  ack.mutable_ack()->set_seq(b.seq);
  ack.mutable_ack()->set_bytes(b.wire_bytes);
  ack.mutable_ack()->set_durable_seq(r->durable);
  r->outbox->Send(std::move(ack));
  if (!state && staged_rows == layout->num_rows()) ModelComplete();
  ReplanStalls();
  PumpAll();
}

void Engine::Impl::OnAck(uint64_t session, const pb::Ack& ack) {
  WorkerRec* r = Live(session);
  if (r == nullptr) return;
  if (ack.seq() >= r->next_down_seq) {
    Refuse(*r, Rejection::kBadAck,
           absl::InvalidArgumentError(absl::StrCat(
               "ack of downlink seq ", ack.seq(), " but rogd has sent up to seq ",
               r->next_down_seq - 1,
               " on this stream: acknowledge only batches received (seqs restart at 1 on every "
               "stream)")));
    return;
  }
  r->last_seen = Now();
  while (!r->inflight.empty() && r->inflight.front().seq <= ack.seq()) {
    r->inflight_bytes -= r->inflight.front().bytes;
    r->inflight.pop_front();
  }
  r->down_goodput.OnAck(Now(), ack.bytes());
  Pump(*r);
}

void Engine::Impl::OnProgress(uint64_t session, const pb::Progress& p) {
  WorkerRec* r = Live(session);
  if (r == nullptr) return;
  if (absl::Status s = CheckReportedClock(r->clock, p.iteration()); !s.ok()) {
    Refuse(*r, Rejection::kBadClock, s);
    return;
  }
  r->last_seen = Now();
  r->progress = p;
  if (p.iteration() > r->compute_iteration_seen && p.compute_seconds() >= r->compute_total_seen) {
    if (r->compute_iteration_seen > 0) {
      const double sample = (p.compute_seconds() - r->compute_total_seen) /
                            static_cast<double>(p.iteration() - r->compute_iteration_seen);
      r->compute_per_iteration =
          r->compute_per_iteration > 0 ? 0.9 * r->compute_per_iteration + 0.1 * sample : sample;
    }
    r->compute_iteration_seen = p.iteration();
    r->compute_total_seen = p.compute_seconds();
  }
  const uint64_t before = r->clock;
  const uint64_t min_before = MinAttachedClock();
  r->clock = std::max(r->clock, p.iteration());
  if (p.flush()) r->flush = true;
  if (r->detached) {
    // Outside the bound and the window: no stall handling, no window; its
    // rows stream as fast as its link allows (FormBatch).
  } else if (state && p.stalled()) {
    if (!r->stalled) r->stalled_since = Now();
    r->stalled = true;
    CheckStalled(*r);
  } else if (state && !p.flush()) {
    // The worker finished computing an iteration: its transmission window.
    JudgeStall(*r, -1);
    r->stalled = false;
    r->stall_announced = false;
    const pb::Window window = CurrentWindow(r->clock + 1);
    r->transmitting = true;
    r->deadline = window.seconds() > 0 ? Now() + window.seconds() : kInf;
    BuildDownlinkPlan(*r);
    SendDirective(*r, [&](pb::Directive* d) { *d->mutable_window() = window; });
    spdlog::debug("worker {} iteration {}: window {:.3f} s", r->id, r->clock, window.seconds());
  }
  if (r->clock != before) {
    SendPace(min_before, r);
    ReplanStalls();
  }
  PumpAll();
}

// The slowest attached clock moved past `min_before`: every other attached
// worker gets a fresh window now, not at its next iteration, so that one
// holding its link for pacing (ahead of the slowest by more than its pace
// lead) stops holding as soon as the slowest catches up, as the simulator's
// workers do. Without it a worker held for the whole window, on the clock
// it heard of when its own iteration began.
void Engine::Impl::SendPace(uint64_t min_before, const WorkerRec* except) {
  if (opt.policy != SyncPolicy::kRog || !state) return;
  const uint64_t min = MinAttachedClock();
  if (min == std::numeric_limits<uint64_t>::max() || min <= min_before) return;
  for (auto& w : workers) {
    if (w.get() == except || w->state != WState::kConnected || !Attached(*w)) continue;
    const pb::Window window = CurrentWindow(w->clock + 1);
    SendDirective(*w, [&](pb::Directive* d) { *d->mutable_window() = window; });
  }
}

void Engine::Impl::OnClosed(uint64_t session) {
  WorkerRec* r = BySession(session);
  by_session.erase(session);
  if (r == nullptr || r->session != session) return;
  KeepUnapplied(*r);
  r->session = 0;
  r->outbox.reset();
  if (!state) {
    spdlog::info(
        "worker {} disconnected before its model arrived; waiting for a worker to bring it", r->id);
    workers.clear();
    by_id.clear();
    layout.reset();
    staging.clear();
    return;
  }
  if (r->state == WState::kConnected) {
    r->state = WState::kDisconnected;
    r->disconnected_at = Now();
    spdlog::info("worker {} disconnected at iteration {}; state kept for {} s", r->id, r->clock,
                 opt.lease_seconds);
  }
}

void Engine::Impl::OnTick() {
  if (!state) return;
  const double now = Now();
  for (auto& r : workers) {
    if (r->state == WState::kDisconnected && now - r->disconnected_at >= opt.lease_seconds) {
      Evict(*r, absl::StrCat("no connection for ", opt.lease_seconds, " s (--lease)"));
    }
  }
  if (opt.checkpoint_interval > 0 && !opt.checkpoint_path.empty() &&
      now - last_checkpoint_time >= opt.checkpoint_interval) {
    absl::StatusOr<pb::CheckpointReply> c = WriteCheckpointNow();
    if (!c.ok()) spdlog::error("checkpoint failed: {}", std::string(c.status().message()));
  }
  CheckPatience(now);
  // Windows end and open with time alone: let the senders form batches.
  PumpAll();
}

void Engine::Impl::CheckPatience(double now) {
  if (opt.patience <= 0 || !team_ready) return;
  // OnTick follows every event; a stall plan per tick is enough.
  if (now - last_patience_check < kTick) return;
  last_patience_check = now;
  // Detach: whoever kept an attached worker waiting at the bound too long.
  std::vector<std::pair<WorkerRec*, std::string>> detach;
  const AttachedSet attached = AttachedWorkers();
  // waits_for[q]: whom stalled worker q waits for, with every worker's clock
  // and needed version; filled when first needed.
  std::vector<std::vector<size_t>> waits_for;
  std::vector<uint64_t> clocks, needed;
  for (auto& r : workers) {
    if (!r->stalled || r->state != WState::kConnected || !Attached(*r)) continue;
    if (r->resync_next < layout->num_rows() || now - r->stalled_since < opt.patience) continue;
    // The blame passes along waiting holders to the robot on the slow link.
    if (waits_for.empty()) {
      waits_for.resize(workers.size());
      clocks = Clocks();
      needed.assign(workers.size(), 0);
      for (auto& q : workers) {
        needed[q->index] = NeededVersion(q->clock, bound);
        if (!q->stalled || q->state != WState::kConnected || !Attached(*q)) continue;
        waits_for[q->index] = PlanStall(state->versions(), state->copy_versions(q->index), q->index,
                                        attached, needed[q->index])
                                  .waiting_for;
      }
    }
    for (size_t q :
         BlameForStall(r->index, waits_for[r->index], waits_for, clocks, needed, attached)) {
      WorkerRec* holder = workers[q].get();
      bool listed = false;
      for (const auto& d : detach) listed |= d.first == holder;
      if (listed) continue;
      detach.emplace_back(
          holder, absl::StrFormat("kept %s waiting %.1f s at the staleness bound before iteration "
                                  "%d (--patience=%gs)",
                                  r->id, now - r->stalled_since, r->clock + 1, opt.patience));
    }
  }
  if (detach.empty() && opt.detach_speedup > 0) {
    std::string reason = PaceDetachReason(now);
    if (!reason.empty()) detach.emplace_back(pace_candidate, std::move(reason));
  }
  const uint64_t min_before = MinAttachedClock();
  for (auto& [q, reason] : detach) Detach(*q, reason);
  if (!detach.empty()) SendPace(min_before, nullptr);
  // Reattach: a detached worker whose link moves its share well within the
  // patience again, for long enough. The downlink estimate decides: rogd
  // streams every pending row to a detached worker, so it stays fresh.
  for (auto& q : workers) {
    if (!q->detached || q->state != WState::kConnected) continue;
    MaybeProbe(*q, now);
    if (!MayReattach(*q, now)) continue;
    const double rate = DownlinkRate(*q, now);
    Reattach(*q,
             absl::StrFormat("its link moves its share (%d bytes) in %.2f s, within half the "
                             "patience%s, for %.1f s (%d probes), and what it computed is folded",
                             static_cast<uint64_t>(ShareBytes()), ShareBytes() / rate,
                             opt.detach_speedup > 0 ? " and with the team's pace" : "",
                             now - q->reattach_ok_since, q->probes));
  }
  if (!detach.empty()) {
    SendKnownVersions(nullptr);
    ReplanStalls();
    PumpAll();
  }
}

void Engine::Impl::MaybeProbe(WorkerRec& q, double now) {
  if (!q.outbox || q.resync_next < layout->num_rows() || !q.inflight.empty()) return;
  if (q.outbox->queued_bytes() > 0 || now - q.last_down_sent < kProbeIdle) return;
  pb::ServerMessage m;
  pb::RowBatch* b = m.mutable_batch();
  b->set_seq(q.next_down_seq++);
  b->set_iteration(q.clock);
  b->set_kind(pb::BATCH_KIND_UPDATE);
  b->set_codec(static_cast<pb::Codec>(opt.codec));
  b->mutable_padding()->assign(static_cast<size_t>(std::min<double>(ShareBytes(), kMaxProbeBytes)),
                               '\0');
  const uint64_t bytes = b->ByteSizeLong();
  q.inflight.push_back(InFlight{b->seq(), bytes, now, q.inflight_bytes, false, {}});
  q.inflight_bytes += bytes;
  q.bytes_down += bytes;
  q.down_goodput.OnSend(now, bytes);
  q.last_down_sent = now;
  ++q.probes;
  spdlog::debug("worker {}: probe of {} bytes (detached, downlink idle)", q.id, bytes);
  q.outbox->Send(std::move(m));
}

// The downlink goodput estimate, capped by what the oldest unacknowledged
// batch shows: on a link that just died the estimate keeps its last value
// until an ack comes, which may take many seconds. Until that batch is
// acknowledged the link cannot have carried more than it and what was in
// flight ahead of it since it was sent (counting the batch alone would read
// a busy link as slow by the in-flight allowance over the batch size).
double Engine::Impl::DownlinkRate(const WorkerRec& q, double now) const {
  double rate = q.down_goodput.has_estimate() ? q.down_goodput.rate() : 0;
  if (!q.inflight.empty() && now > q.inflight.front().sent_at) {
    const InFlight& oldest = q.inflight.front();
    rate = std::min(rate, (oldest.ahead + oldest.bytes) / (now - oldest.sent_at));
  }
  return rate;
}

// Team pace: the seconds q's link takes for its share, from the estimates
// the window uses (attached) or the downlink estimate reattachment uses
// (detached); 0 while unknown.
double Engine::Impl::ShareSeconds(const WorkerRec& q, double now) const {
  double rate = 0;
  if (q.detached) {
    rate = DownlinkRate(q, now);
  } else if (q.progress.uplink_goodput() > 0 && q.down_goodput.has_estimate()) {
    rate = std::min(q.progress.uplink_goodput(), q.down_goodput.rate());
  }
  return rate > 0 ? ShareBytes() / rate : 0;
}

// Team pace: the iterations per second the connected attached workers (plus
// `with`, minus `without`) would run together, each iteration costing the
// mean compute time plus the slowest member's share time.
double Engine::Impl::TeamRate(const WorkerRec* with, const WorkerRec* without, double now) const {
  size_t members = 0;
  double compute = 0, slowest = 0;
  for (const auto& r : workers) {
    const bool member = r.get() == with || (r->state == WState::kConnected && Attached(*r));
    if (!member || r.get() == without) continue;
    ++members;
    compute += r->compute_per_iteration;
    slowest = std::max(slowest, ShareSeconds(*r, now));
  }
  if (members == 0) return 0;
  return rog::TeamRate(members, compute / static_cast<double>(members), slowest);
}

// Team pace: why the worker on the slowest attached link should be detached
// now (it is left in pace_candidate), or "" if it should not.
std::string Engine::Impl::PaceDetachReason(double now) {
  pace_candidate = nullptr;
  size_t attached = 0;
  double worst = 0;
  for (auto& r : workers) {
    if (!Attached(*r)) continue;
    // Someone disconnected, resyncing or not measured yet: the patience and
    // the lease judge for now.
    if (r->state != WState::kConnected || r->resync_next < layout->num_rows()) return "";
    const double t = ShareSeconds(*r, now);
    if (t <= 0 || r->compute_per_iteration <= 0) return "";
    ++attached;
    if (t > worst) {
      worst = t;
      pace_candidate = r.get();
    }
  }
  if (attached < 2 || pace_candidate == nullptr || now - team_ready_at < kPaceGrace ||
      now - pace_candidate->joined_at < kPaceGrace ||
      now - pace_candidate->reattached_at < kPaceGrace) {
    pace_candidate = nullptr;
    return "";
  }
  const double with = TeamRate(nullptr, nullptr, now);
  const double without = TeamRate(nullptr, pace_candidate, now);
  if (!(with > 0) || without < opt.detach_speedup * with) {
    pace_candidate = nullptr;
    return "";
  }
  return absl::StrFormat(
      "its link moves its share (%d bytes) in %.3f s; the team would run %.2fx the iterations "
      "per second without it (--detach_speedup=%g)",
      static_cast<uint64_t>(ShareBytes()), worst, without / with, opt.detach_speedup);
}

bool Engine::Impl::MayReattach(WorkerRec& q, double now) {
  if (q.resync_next < layout->num_rows() || !q.down_goodput.has_estimate()) return false;
  const bool fits =
      ReattachLinkFits(ShareBytes(), opt.patience, DownlinkRate(q, now)) &&
      !(opt.detach_speedup > 0 && TeamRate(&q, nullptr, now) < TeamRate(nullptr, nullptr, now));
  if (!HeldFor(fits, now, &q.reattach_ok_since)) return false;
  // Everything it computed is folded (the global rows hold its clock in
  // every row): raising its versions to the team's clock then claims
  // nothing that is still in its accumulator or in flight.
  for (RowId row = 0; row < layout->num_rows(); ++row) {
    if (state->versions().Get(row, q.index) < q.clock) return false;
  }
  // Local steps: only once it has taken them all (no step under way).
  return opt.detached_local_steps == 0 || q.clock >= q.detached_clock + opt.detached_local_steps;
}

// Tells every connected worker (but `except`) which versions its replica
// holds, row by row, over the attached workers now: after the team changed,
// what earlier batches said is stale (too high once a worker rejoins the
// bound). Sent after the batches already queued, so it overrides them.
void Engine::Impl::SendKnownVersions(const WorkerRec* except) {
  const AttachedSet attached = AttachedWorkers();
  for (auto& w : workers) {
    if (w.get() == except || w->state != WState::kConnected || !w->outbox) continue;
    if (w->resync_next < layout->num_rows()) continue;  // the resync reports them
    SendDirective(*w, [&](pb::Directive* d) {
      pb::KnownVersions* k = d->mutable_known_versions();
      for (RowId row = 0; row < layout->num_rows(); ++row) {
        k->add_version(ReportedVersion(*w, row, attached));
      }
    });
  }
}

void Engine::Impl::SendDetached(WorkerRec& q) {
  // What is left of this detachment's local steps: a worker that reconnects
  // while detached must not get a fresh budget.
  const uint64_t taken = q.clock - std::min(q.clock, q.detached_clock);
  const uint64_t left =
      opt.detached_local_steps - std::min<uint64_t>(taken, opt.detached_local_steps);
  SendDirective(q, [&](pb::Directive* d) {
    d->mutable_detached()->set_reason(q.detach_reason);
    d->mutable_detached()->set_local_steps(static_cast<uint32_t>(left));
  });
}

void Engine::Impl::Detach(WorkerRec& q, const std::string& reason) {
  const double now = Now();
  q.detached = true;
  q.detached_at = now;
  q.detached_clock = q.clock;
  q.reattach_ok_since = -1;
  q.probes = 0;
  ++q.detaches;
  q.detach_reason = reason;
  JudgeStall(q, -1);
  q.stalled = q.stall_announced = false;
  q.transmitting = false;
  q.deadline = kInf;
  spdlog::info("detached worker {} at iteration {}: {}; it {} until its link recovers", q.id,
               q.clock, reason,
               opt.detached_local_steps > 0
                   ? absl::StrCat("may train ", opt.detached_local_steps, " iterations on its own")
                   : std::string("pauses"));
  SendDetached(q);
}

void Engine::Impl::Reattach(WorkerRec& q, const std::string& reason) {
  const double now = Now();
  const uint64_t team_min = MinAttachedClock(&q);
  const uint64_t clock =
      team_min == std::numeric_limits<uint64_t>::max() ? q.clock : std::max(q.clock, team_min);
  q.detached = false;
  q.reattached_at = now;
  q.detached_total += now - q.detached_at;
  ++q.reattaches;
  q.detach_reason = reason;
  q.reattach_ok_since = -1;
  JudgeStall(q, -1);
  q.stalled = q.stall_announced = false;
  // Joins the bound at the slowest attached clock: nobody waits for the
  // iterations it skipped, and everything it computed is folded already
  // (MayReattach), so the raised versions claim nothing still unpushed.
  q.clock = clock;
  state->RaiseVersion(q.index, clock);
  q.raised_to = clock;
  spdlog::info("reattached worker {} at iteration {} after {:.1f} s detached: {}", q.id, clock,
               now - q.detached_at, reason);
  SendDirective(q, [&](pb::Directive* d) {
    d->mutable_reattached()->set_iteration(clock);
    d->mutable_reattached()->set_reason(reason);
  });
  SendKnownVersions(&q);
  ReplanStalls();
  PumpAll();
}

absl::StatusOr<pb::CheckpointReply> Engine::Impl::WriteCheckpointNow() {
  last_checkpoint_time = Now();
  if (opt.checkpoint_path.empty()) {
    return absl::FailedPreconditionError(
        "rogd runs without --checkpoint_dir; restart it with one to write checkpoints");
  }
  if (!state) return absl::FailedPreconditionError("no model yet: nothing to checkpoint");
  const double t0 = Now();
  pb::Checkpoint c;
  c.set_unix_time(UnixNow());
  *c.mutable_layout() = LayoutToProto(*layout);
  c.set_sync(static_cast<pb::SyncPolicy>(opt.policy));
  c.set_staleness(opt.staleness);
  c.set_codec(static_cast<pb::Codec>(opt.codec));
  c.set_team_ready(team_ready);
  const ServerState::Parts parts = state->Export();
  c.set_global(FloatsToBytes(parts.global));
  c.set_workers(static_cast<uint32_t>(parts.versions.num_workers()));
  for (uint64_t v : parts.versions.raw()) c.add_versions(v);
  for (const auto& r : workers) {
    pb::CheckpointWorker* w = c.add_worker();
    w->set_worker_id(r->id);
    w->set_resume_token(r->token);
    w->set_index(static_cast<uint32_t>(r->index));
    w->set_clock(r->clock);
    w->set_last_applied_uplink_seq(r->last_applied);
    w->set_evicted(r->state == WState::kEvicted);
    w->set_pending(FloatsToBytes(parts.pending[r->index]));
    for (uint64_t v : parts.copies[r->index].raw()) w->add_copy_versions(v);
    w->set_sdk_version(r->sdk_version);
  }
  absl::StatusOr<uint64_t> bytes = WriteCheckpoint(opt.checkpoint_path, c);
  if (!bytes.ok()) return bytes.status();
  for (auto& r : workers) r->durable = r->last_applied;
  last_checkpoint_unix = c.unix_time();
  last_checkpoint_path = opt.checkpoint_path;
  pb::CheckpointReply reply;
  reply.set_path(opt.checkpoint_path);
  reply.set_bytes(*bytes);
  reply.set_seconds(Now() - t0);
  spdlog::info("checkpoint written: {} ({} bytes, {:.3f} s)", reply.path(), reply.bytes(),
               reply.seconds());
  return reply;
}

absl::Status Engine::Impl::Restore(const std::string& path) {
  absl::StatusOr<pb::Checkpoint> read = ReadCheckpoint(path);
  if (!read.ok()) return read.status();
  const pb::Checkpoint& c = *read;
  const auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path, " does not fit together: ", why,
                                            ". Restore a good copy, or move it away."));
  };
  absl::StatusOr<Layout> parsed = LayoutFromProto(c.layout());
  if (!parsed.ok()) return bad(absl::StrCat("bad layout: ", parsed.status().message()));
  auto restored_layout = std::make_shared<const Layout>(*std::move(parsed));
  const size_t rows = restored_layout->num_rows();
  const size_t n = c.workers();
  ServerState::Parts parts;
  if (!BytesToFloats(c.global(), &parts.global)) return bad("global rows are not fp32");
  // Every size is checked against what the file holds before anything is
  // allocated for it: rows × n in 64 bits (rows < 2^24, n < 2^32), never
  // cast to int, so a small file cannot ask for gigabytes.
  const uint64_t cells = static_cast<uint64_t>(rows) * n;
  if (static_cast<uint64_t>(c.versions_size()) != cells) {
    return bad(absl::StrCat("version storage holds ", c.versions_size(), " entries, ", rows,
                            " rows × ", n, " workers need ", cells));
  }
  if (static_cast<uint64_t>(c.worker_size()) != n) {
    return bad("worker records and team size differ");
  }
  for (const pb::CheckpointWorker& cw : c.worker()) {
    if (static_cast<uint64_t>(cw.copy_versions_size()) != cells) {
      return bad(absl::StrCat("worker '", cw.worker_id(), "' copy versions"));
    }
  }
  parts.versions = VersionStore(rows, n);
  for (RowId row = 0; row < rows; ++row) {
    for (size_t w = 0; w < n; ++w) parts.versions.Set(row, w, c.versions(row * n + w));
  }
  parts.pending.resize(n);
  parts.copies.assign(n, VersionStore(rows, n));
  std::vector<std::unique_ptr<WorkerRec>> recs(n);
  for (const pb::CheckpointWorker& cw : c.worker()) {
    const size_t w = cw.index();
    if (w >= n || recs[w]) return bad(absl::StrCat("worker '", cw.worker_id(), "' index"));
    if (!BytesToFloats(cw.pending(), &parts.pending[w])) return bad("pending copy");
    for (RowId row = 0; row < rows; ++row) {
      for (size_t q = 0; q < n; ++q) parts.copies[w].Set(row, q, cw.copy_versions(row * n + q));
    }
    auto rec = std::make_unique<WorkerRec>();
    rec->id = cw.worker_id();
    rec->index = w;
    rec->token = cw.resume_token();
    rec->clock = rec->join_clock = cw.clock();
    rec->last_applied = rec->durable = cw.last_applied_uplink_seq();
    rec->state = cw.evicted() ? WState::kEvicted : WState::kDisconnected;
    if (rec->clock > kMaxClock) return bad(absl::StrCat("worker '", rec->id, "' clock"));
    rec->disconnected_at = Now();
    rec->sdk_version = cw.sdk_version();
    rec->requested.assign(rows, 0);
    recs[w] = std::move(rec);
  }
  absl::StatusOr<std::unique_ptr<ServerState>> s =
      ServerState::Restore(*restored_layout, std::move(parts));
  if (!s.ok()) return bad(std::string(s.status().message()));
  layout = restored_layout;
  state = *std::move(s);
  model_wire_bytes = 0;
  for (RowId row = 0; row < rows; ++row) model_wire_bytes += RowWireBytes(row);
  workers = std::move(recs);
  for (const auto& r : workers) by_id[r->id] = r->index;
  team_ready = c.team_ready();
  last_checkpoint_unix = c.unix_time();
  last_checkpoint_path = path;
  spdlog::info("restored checkpoint {}: {} rows, {} workers (they have {} s to reconnect)", path,
               rows, n, opt.lease_seconds);
  if (c.sync() != static_cast<pb::SyncPolicy>(opt.policy) || c.staleness() != opt.staleness ||
      c.codec() != static_cast<pb::Codec>(opt.codec)) {
    spdlog::warn(
        "checkpoint {} was written under sync={} S={} codec={}; continuing under this "
        "rogd's flags (sync={} S={} codec={})",
        path, pb::SyncPolicy_Name(c.sync()), c.staleness(), pb::Codec_Name(c.codec()),
        std::string(SyncPolicyName(opt.policy)), opt.staleness, std::string(CodecName(opt.codec)));
  }
  return absl::OkStatus();
}

// --- Engine ----------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  if (impl_->thread.joinable()) impl_->thread.join();
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Start(EngineOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  if (impl->opt.clock == nullptr) impl->opt.clock = DefaultClock();
  impl->start_time = impl->last_checkpoint_time = impl->Now();
  impl->bound = EffectiveBound(impl->opt.policy, impl->opt.staleness);
  impl->mta =
      impl->opt.policy == SyncPolicy::kRog ? MinimumTransmissionAmount(impl->opt.staleness) : 1.0;
  if (!impl->opt.init_path.empty()) {
    absl::Status s = impl->Restore(impl->opt.init_path);
    if (!s.ok()) return s;
  } else if (!impl->opt.checkpoint_path.empty()) {
    absl::Status s = impl->Restore(impl->opt.checkpoint_path);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

absl::StatusOr<Admission> Engine::Hello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                        std::string peer, Rejection* reason) {
  Rejection ignored = Rejection::kNone;
  if (reason == nullptr) reason = &ignored;
  return impl_->Call<absl::StatusOr<Admission>>(
      [&] { return impl_->OnHello(std::move(outbox), hello, peer, reason); });
}

void Engine::Batch(uint64_t session, UplinkBatch batch) {
  auto shared = std::make_shared<UplinkBatch>(std::move(batch));
  impl_->Post([this, session, shared] { impl_->OnBatch(session, *shared); });
}

void Engine::Ack(uint64_t session, const pb::Ack& ack, std::shared_ptr<const void> hold) {
  impl_->Post([this, session, ack, hold] { impl_->OnAck(session, ack); });
}

void Engine::Progress(uint64_t session, const pb::Progress& progress,
                      std::shared_ptr<const void> hold) {
  impl_->Post([this, session, progress, hold] { impl_->OnProgress(session, progress); });
}

void Engine::Goodbye(uint64_t session, std::string reason) {
  impl_->Call<bool>([this, session, reason] {
    WorkerRec* r = impl_->Live(session);
    if (r == nullptr || !impl_->state) return true;
    impl_->Evict(*r, absl::StrCat("said goodbye (", reason, ")"), /*left=*/true);
    return true;
  });
}

void Engine::EndStreams(const std::string& why) {
  impl_->Call<bool>([this, why] {
    for (auto& r : impl_->workers) {
      if (r->outbox) r->outbox->End(absl::AbortedError(why));
    }
    return true;
  });
}

void Engine::Closed(uint64_t session) {
  impl_->Post([this, session] { impl_->OnClosed(session); });
}

void Engine::CountRejection(Rejection reason, const std::string& who, const std::string& message) {
  impl_->Post([this, label = std::string(RejectionLabel(reason)), who, message] {
    ++impl_->rejected[label];
    impl_->LogRefusal(label, who, message);
  });
}

pb::StatusReply Engine::Impl::StatusReport() const {
  const Impl& m = *this;
  pb::StatusReply s;
  s.set_sync(static_cast<pb::SyncPolicy>(m.opt.policy));
  s.set_staleness(m.opt.staleness);
  s.set_mta(m.mta);
  s.set_codec(static_cast<pb::Codec>(m.opt.codec));
  s.set_has_model(m.state != nullptr);
  if (m.state) {
    *s.mutable_layout() = LayoutToProto(*m.layout);
    s.set_tensors(m.layout->tensors().size());
    s.set_rows(m.layout->num_rows());
    s.set_model_bytes(m.layout->total_numel() * 4);
    s.set_worker_copy_bytes(m.state->copy_bytes());
  }
  s.set_uptime_seconds(Now() - m.start_time);
  const uint64_t max = m.MaxAttachedClock();
  uint64_t min = m.MinAttachedClock();
  for (const auto& r : m.workers) {
    if (r->state == WState::kConnected) s.set_workers_connected(s.workers_connected() + 1);
    if (r->state == WState::kEvicted) s.set_workers_evicted(s.workers_evicted() + 1);
    if (m.Attached(*r) && m.opt.staleness > 0 && r->clock + m.opt.staleness <= max) {
      s.set_workers_lagging(s.workers_lagging() + 1);
    }
  }
  s.set_min_iteration(min == std::numeric_limits<uint64_t>::max() ? 0 : min);
  s.set_max_iteration(max);
  s.set_last_checkpoint_unix(m.last_checkpoint_unix);
  s.set_last_checkpoint_path(m.last_checkpoint_path);
  s.set_version(kRogVersion);
  for (const auto& [reason, count] : m.rejected) (*s.mutable_rejected())[reason] = count;
  s.set_team_ready(m.team_ready);
  s.set_patience(m.opt.patience);
  s.set_detached_local_steps(m.opt.detached_local_steps);
  s.set_detach_speedup(m.opt.patience > 0 ? m.opt.detach_speedup : 0);
  for (const auto& r : m.workers) {
    if (r->detached) s.set_workers_detached(s.workers_detached() + 1);
  }
  return s;
}

pb::StatusReply Engine::Status() {
  return impl_->Call<pb::StatusReply>([this] { return impl_->StatusReport(); });
}

pb::WorkersReply Engine::Impl::WorkersReport() const {
  const Impl& m = *this;
  pb::WorkersReply reply;
  const uint64_t max = m.MaxAttachedClock();
  const double now = Now();
  for (const auto& r : m.workers) {
    pb::WorkerInfo* w = reply.add_workers();
    w->set_worker_id(r->id);
    w->set_state(StateName(r->state));
    w->set_iteration(r->clock);
    w->set_lag(max > r->clock ? max - r->clock : 0);
    w->set_uplink_goodput(r->progress.uplink_goodput());
    w->set_downlink_goodput(r->down_goodput.rate());
    const double busy = r->progress.compute_seconds() + r->progress.transmit_seconds() +
                        r->progress.stall_seconds();
    w->set_stall_share(busy > 0 ? r->progress.stall_seconds() / busy : 0);
    w->set_stalls(r->progress.stalls());
    const double its = static_cast<double>(std::max<uint64_t>(1, r->clock - r->join_clock));
    w->set_rows_pushed_per_iteration(r->rows_up / its);
    w->set_rows_pulled_per_iteration(r->rows_down / its);
    w->set_bytes_pushed_per_iteration(r->bytes_up / its);
    w->set_bytes_pulled_per_iteration(r->bytes_down / its);
    w->set_window_overshoot(r->progress.window_overshoot());
    w->set_last_seen_seconds(now - r->last_seen);
    w->set_sdk_version(r->sdk_version);
    w->set_peer(r->peer);
    w->set_rows_pushed(r->rows_up);
    w->set_rows_pulled(r->rows_down);
    w->set_bytes_pushed(r->bytes_up);
    w->set_bytes_pulled(r->bytes_down);
    w->set_compute_seconds(r->progress.compute_seconds());
    w->set_transmit_seconds(r->progress.transmit_seconds());
    w->set_stall_seconds(r->progress.stall_seconds());
    w->set_detached(r->detached);
    w->set_detached_for_seconds(r->detached ? now - r->detached_at : 0);
    w->set_detaches(r->detaches);
    w->set_reattaches(r->reattaches);
    w->set_detached_seconds(r->detached_total + (r->detached ? now - r->detached_at : 0));
    w->set_late_rows(r->late_rows);
    w->set_detach_reason(r->detach_reason);
    double cause[kStallCauses];
    for (int c = 0; c < kStallCauses; ++c) cause[c] = r->stall_cause_seconds[c];
    if (r->stall_cause >= 0) cause[r->stall_cause] += now - r->stall_cause_since;
    w->set_stall_peer_compute_seconds(cause[kStallPeerCompute]);
    w->set_stall_peer_uplink_seconds(cause[kStallPeerUplink]);
    w->set_stall_downlink_seconds(cause[kStallDownlink]);
  }
  return reply;
}

pb::WorkersReply Engine::Workers() {
  return impl_->Call<pb::WorkersReply>([this] { return impl_->WorkersReport(); });
}

std::map<uint64_t, uint64_t> Engine::Impl::StalenessCounts() const {
  std::map<uint64_t, uint64_t> counts;
  if (!state) return counts;
  const AttachedSet attached = AttachedWorkers();
  for (const auto& r : workers) {
    if (!Attached(*r)) continue;
    const VersionStore& copy = state->copy_versions(r->index);
    for (RowId row = 0; row < layout->num_rows(); ++row) {
      ++counts[CopyStaleness(state->versions(), copy, row, r->index, attached)];
    }
  }
  return counts;
}

absl::Status Engine::CheckInvariants() {
  return impl_->Call<absl::Status>([this]() -> absl::Status {
    const Impl& m = *impl_;
    for (const auto& r : m.workers) {
      if (r->clock > kMaxClock) {
        return absl::InternalError(absl::StrCat("worker ", r->id, " clock ", r->clock));
      }
    }
    if (!m.state) return absl::OkStatus();
    const VersionStore& v = m.state->versions();
    for (const auto& r : m.workers) {
      for (RowId row = 0; row < m.layout->num_rows(); ++row) {
        if (v.Get(row, r->index) > r->clock) {
          return absl::InternalError(absl::StrCat("row ", row, " holds ", v.Get(row, r->index),
                                                  " iterations of worker ", r->id,
                                                  " whose clock is ", r->clock));
        }
        for (const auto& q : m.workers) {
          if (m.state->copy_versions(q->index).Get(row, r->index) > v.Get(row, r->index)) {
            return absl::InternalError(absl::StrCat("worker ", q->id, "'s copy of row ", row,
                                                    " holds more of ", r->id,
                                                    " than the global row"));
          }
        }
      }
    }
    for (float x : m.state->global()) {
      if (!std::isfinite(x)) return absl::InternalError("a global value is not finite");
    }
    return absl::OkStatus();
  });
}

MetricsSnapshot Engine::Metrics() {
  return impl_->Call<MetricsSnapshot>([this] {
    MetricsSnapshot s;
    s.status = impl_->StatusReport();
    s.workers = impl_->WorkersReport();
    s.staleness_bound = impl_->bound;
    s.staleness = impl_->StalenessCounts();
    return s;
  });
}

absl::StatusOr<pb::StalenessReply> Engine::Staleness(const pb::StalenessRequest& request) {
  return impl_->Call<absl::StatusOr<pb::StalenessReply>>(
      [&]() -> absl::StatusOr<pb::StalenessReply> {
        Impl& m = *impl_;
        if (!m.state) {
          return absl::FailedPreconditionError(
              "no model yet: it arrives with the first worker's hello");
        }
        const Layout& layout = *m.layout;
        RowId first = 0, end = static_cast<RowId>(layout.num_rows());
        if (!request.tensor().empty()) {
          absl::StatusOr<size_t> t = layout.FindTensor(request.tensor());
          if (!t.ok()) return t.status();
          first = layout.tensor_first_row(*t);
          end = first + layout.tensor_rows(*t);
        }
        // Detached workers too: how far behind a detached copy is matters.
        std::vector<const WorkerRec*> cols;
        for (const auto& r : m.workers) {
          if (!m.Member(*r)) continue;
          if (!request.worker_id().empty() && r->id != request.worker_id()) continue;
          cols.push_back(r.get());
        }
        if (!request.worker_id().empty() && cols.empty()) {
          return absl::NotFoundError(
              absl::StrCat("no worker '", request.worker_id(),
                           "' in the team (evicted or unknown); see `rogctl workers`"));
        }
        const AttachedSet attached = m.AttachedWorkers();
        pb::StalenessReply reply;
        reply.set_staleness_bound(m.bound);
        for (const WorkerRec* c : cols) reply.add_workers(c->id);
        std::vector<pb::RowStaleness> rows;
        for (RowId row = first; row < end; ++row) {
          pb::RowStaleness rs;
          rs.set_row(row);
          const RowInfo& info = layout.row(row);
          rs.set_tensor(layout.tensors()[info.tensor].name);
          rs.set_index_in_tensor(info.index_in_tensor);
          for (const WorkerRec* c : cols) {
            rs.add_staleness(CopyStaleness(m.state->versions(), m.state->copy_versions(c->index),
                                           row, c->index, attached));
          }
          uint64_t oldest = 0;
          for (const auto& r : m.workers) {
            if (!m.Attached(*r)) continue;
            const uint64_t v = m.state->versions().Get(row, r->index);
            const uint64_t age = r->clock > v ? r->clock - v : 0;
            if (age > oldest) {
              oldest = age;
              rs.set_oldest_unpushed_worker(r->id);
            }
          }
          rs.set_oldest_unpushed_age(oldest);
          rows.push_back(std::move(rs));
        }
        if (request.top() > 0) {
          const auto worst = [](const pb::RowStaleness& r) {
            uint64_t w = 0;
            for (uint64_t s : r.staleness()) w = std::max(w, s);
            return w;
          };
          std::stable_sort(rows.begin(), rows.end(),
                           [&](const auto& a, const auto& b) { return worst(a) > worst(b); });
          if (rows.size() > request.top()) rows.resize(request.top());
        }
        for (pb::RowStaleness& rs : rows) *reply.add_rows() = std::move(rs);
        return reply;
      });
}

absl::StatusOr<pb::CheckpointReply> Engine::CheckpointNow() {
  return impl_->Call<absl::StatusOr<pb::CheckpointReply>>(
      [this] { return impl_->WriteCheckpointNow(); });
}

absl::StatusOr<ModelSnapshot> Engine::Export() {
  return impl_->Call<absl::StatusOr<ModelSnapshot>>([this]() -> absl::StatusOr<ModelSnapshot> {
    if (!impl_->state) {
      return absl::FailedPreconditionError(
          "no model yet: it arrives with the first worker's hello");
    }
    return ModelSnapshot{impl_->layout, impl_->state->global()};
  });
}

absl::Status Engine::Shutdown() {
  absl::Status result = impl_->Call<absl::Status>([this] {
    Impl& m = *impl_;
    for (auto& r : m.workers) {
      if (r->outbox) r->outbox->End(absl::AbortedError("rogd is shutting down"));
      r->outbox.reset();
      if (r->state == WState::kConnected) r->state = WState::kDisconnected;
    }
    if (m.opt.checkpoint_path.empty() || !m.state) return absl::OkStatus();
    return m.WriteCheckpointNow().status();
  });
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  if (impl_->thread.joinable()) impl_->thread.join();
  return result;
}

}  // namespace rog
