// The engine core's events (row batches, acks, progress, ticks), the team's
// window and refusals, and the core's public face (server/engine_core.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/mta.h"
#include "common/protocol_rules.h"
#include "common/staleness.h"
#include "common/uplink_rules.h"
#include "server/engine_impl.h"
#include "spdlog/spdlog.h"

namespace rog {

using engine_internal::Worker;
using engine_internal::WState;

// One line per refusal, at most a few per reason and client every 10 s
// (a client can cause them as fast as it can send).
void EngineCore::Impl::LogRefusal(const std::string& reason, const std::string& who,
                                  absl::string_view message) {
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
void EngineCore::Impl::Refuse(Worker& r, Rejection reason, const absl::Status& status) {
  const std::string label = RejectionLabel(reason);
  ++rejected[label];
  LogRefusal(label, absl::StrCat("worker ", r.id(), " at ", r.peer()), status.message());
  r.Refuse(status, label);
}

// The team's window (TeamWindow) over the connected attached workers'
// links: the uplink as the worker measured it, the downlink as rogd did.
double EngineCore::Impl::ComputeWindow() const {
  if (opt.policy != SyncPolicy::kRog) return 0;
  std::vector<double> goodputs;
  for (const auto& r : workers) {
    if (r->state() != WState::kConnected || !r->attached()) continue;
    const double up = r->progress().last().uplink_goodput();
    const GoodputEstimator& down = r->downlink().goodput();
    goodputs.push_back(up > 0 && down.has_estimate() ? std::min(up, down.rate()) : 0.0);
  }
  return TeamWindow(opt.policy, goodputs, ShareBytes(), Patience());
}

double EngineCore::Impl::TeamCompute() const {
  std::vector<double> compute;
  for (const auto& r : workers) {
    if (r->state() == WState::kConnected && r->attached()) {
      compute.push_back(r->progress().compute_per_iteration());
    }
  }
  return TeamComputeSeconds(std::move(compute));
}

double EngineCore::Impl::Patience() const {
  if (!(opt.patience > 0)) return 0;
  return TeamPatience(opt.patience, opt.patience_iterations, TeamCompute());
}

pb::Window EngineCore::Impl::CurrentWindow(uint64_t iteration) const {
  pb::Window w;
  w.set_iteration(iteration);
  w.set_seconds(ComputeWindow());
  const uint64_t min = workers.MinAttachedClock();
  w.set_min_iteration(min == std::numeric_limits<uint64_t>::max() ? 0 : min);
  return w;
}

void EngineCore::Impl::OnBatch(uint64_t session, UplinkBatch& b) {
  Worker* r = workers.Live(session);
  if (r == nullptr) return;  // a stream already replaced, closed or refused
  r->Touch(Now());
  if (b.seq <= r->uplink().last_applied()) {
    // Resent after a reconnect: applied already.
    pb::ServerMessage ack;
    ack.mutable_ack()->set_seq(r->uplink().last_applied());
    ack.mutable_ack()->set_durable_seq(r->uplink().durable());
    r->outbox()->Send(std::move(ack));
    return;
  }
  if (b.seq != r->uplink().last_applied() + 1) {
    // The stream handler checks seqs; this is the engine's own guard, never
    // a silent drop.
    Refuse(*r, Rejection::kBadSeq,
           absl::InvalidArgumentError(
               absl::StrCat("row batch seq ", b.seq, " after ", r->uplink().last_applied(),
                            ": seqs rise by 1 per batch; after a reconnect continue from "
                            "Welcome.last_applied_uplink_seq + 1")));
    return;
  }
  if (!CheckBatch(*r, b)) return;
  ApplyBatch(*r, b);
}

// Everything is checked before anything is applied: a batch is folded whole
// or not at all. False when it was refused.
bool EngineCore::Impl::CheckBatch(Worker& r, UplinkBatch& b) {
  if (b.kind == pb::BATCH_KIND_VALUES && model.complete()) {
    Refuse(r, Rejection::kUnexpectedValues,
           absl::InvalidArgumentError(absl::StrCat(
               "initial values (BATCH_KIND_VALUES, seq ", b.seq,
               ") after the model was complete: every row's values had arrived; send updates "
               "as BATCH_KIND_UPDATE")));
    return false;
  }
  if (b.kind != pb::BATCH_KIND_VALUES && !model.complete()) {
    Refuse(r, Rejection::kUpdateBeforeModel,
           absl::InvalidArgumentError(absl::StrCat(
               "an update (seq ", b.seq, ") before the initial model was complete: ",
               model.staged_rows(), " of ", model.layout().num_rows(),
               " rows have arrived. Send every row's values as BATCH_KIND_VALUES first "
               "(Welcome.send_initial_values), then updates")));
    return false;
  }
  if (b.kind != pb::BATCH_KIND_VALUES) {
    if (b.iteration > r.clock()) {
      Refuse(r, Rejection::kBadClock,
             absl::InvalidArgumentError(absl::StrCat(
                 "row batch formed at iteration ", b.iteration,
                 " but rogd holds this worker at iteration ", r.clock(),
                 ": send the Progress of an iteration before the batches that carry it")));
      return false;
    }
    if (b.iteration <= r.raised_to()) {
      // Formed before the worker heard that rogd moved its clock (a
      // reattach or rejoin while the batch was on its way): rogd credits
      // every iteration up to the move already, so the batch counts none.
      // Its values are folded like any other.
      std::fill(b.counts.begin(), b.counts.end(), 0);
    }
    absl::Status s = CheckUpdateCounts(model.state().versions(), r.index(), model.layout(), b.rows,
                                       b.counts, b.iteration);
    if (!s.ok()) {
      Refuse(r, Rejection::kBadCount, s);
      return false;
    }
    size_t at = 0;
    for (size_t k = 0; k < b.rows.size(); ++k) {
      const uint32_t numel = model.layout().row(b.rows[k]).numel;
      s = model.state().CheckFold(r.index(), b.rows[k],
                                  absl::MakeConstSpan(b.values.data() + at, numel));
      if (!s.ok()) {
        Refuse(r, Rejection::kNonFiniteFold, s);
        return false;
      }
      at += numel;
    }
  }
  return true;
}

// Folds a checked batch (or stages the first worker's initial values) and
// acknowledges it.
void EngineCore::Impl::ApplyBatch(Worker& r, const UplinkBatch& b) {
  if (b.kind == pb::BATCH_KIND_VALUES) {
    model.Stage(b.rows, b.values);
  } else {
    size_t at = 0;
    for (size_t k = 0; k < b.rows.size(); ++k) {
      const uint32_t numel = model.layout().row(b.rows[k]).numel;
      model.state().Fold(r.index(), b.rows[k], absl::MakeConstSpan(b.values.data() + at, numel),
                         b.counts[k]);
      at += numel;
    }
    // Folded as usual; counted apart because nobody waited for them.
    r.detach().CountLateRows(b.rows.size());
    // The first row asked for since the last unanswered PushNow answers it.
    r.asks().OnPushed(b.rows);
    for (auto& q : workers) q->plan().MarkStale();
  }
  r.uplink().Applied(b.seq, b.rows.size(), b.wire_bytes);
  if (opt.patience > 0) r.uplink().NoteArrival(Now(), b.wire_bytes, kLiveLinkPatience * Patience());
  pb::ServerMessage ack;
  ack.mutable_ack()->set_seq(b.seq);
  ack.mutable_ack()->set_bytes(b.wire_bytes);
  ack.mutable_ack()->set_durable_seq(r.uplink().durable());
  r.outbox()->Send(std::move(ack));
  if (!model.complete() && model.uploaded()) ModelComplete();
  if (defer_settle && model.complete()) {
    unsettled = true;
    return;
  }
  ReplanStalls();
  PumpAll();
}

void EngineCore::Impl::OnAck(uint64_t session, const pb::Ack& ack) {
  Worker* r = workers.Live(session);
  if (r == nullptr) return;
  if (ack.seq() >= r->downlink().next_seq()) {
    Refuse(*r, Rejection::kBadAck,
           absl::InvalidArgumentError(absl::StrCat(
               "ack of downlink seq ", ack.seq(), " but rogd has sent up to seq ",
               r->downlink().next_seq() - 1,
               " on this stream: acknowledge only batches received (seqs restart at 1 on every "
               "stream)")));
    return;
  }
  r->Touch(Now());
  r->downlink().OnAck(ack.seq(), ack.bytes(), Now());
  if (defer_settle) {
    unsettled = true;
    return;
  }
  Pump(*r);
}

void EngineCore::Impl::OnProgress(uint64_t session, const pb::Progress& p) {
  Worker* r = workers.Live(session);
  if (r == nullptr) return;
  if (absl::Status s = CheckReportedClock(r->clock(), p.iteration()); !s.ok()) {
    Refuse(*r, Rejection::kBadClock, s);
    return;
  }
  r->Touch(Now());
  r->progress().Note(p);
  const uint64_t before = r->clock();
  const uint64_t min_before = workers.MinAttachedClock();
  r->AdvanceClock(p.iteration());
  if (p.flush()) r->plan().RequestFlush();
  if (r->detach().detached()) {
    // Outside the bound and the window: no stall handling, no window; its
    // rows stream as fast as its link allows (FormBatch). What it says of
    // pausing counts (Detachment::OnProgress).
    r->detach().OnProgress(p, r->clock());
  } else if (model.complete() && p.stalled()) {
    r->stall().Report(Now());
    CheckStalled(*r);
  } else if (model.complete() && !p.flush()) {
    // The worker finished computing an iteration: its transmission window.
    r->stall().Clear(Now());
    const pb::Window window = CurrentWindow(r->clock() + 1);
    r->downlink().OpenWindow(Now(), window.seconds());
    BuildDownlinkPlan(*r);
    SendDirective(*r, [&](pb::Directive* d) { *d->mutable_window() = window; });
    spdlog::debug("worker {} iteration {}: window {:.3f} s", r->id(), r->clock(), window.seconds());
  }
  if (r->clock() != before) {
    SendFreshWindows(min_before, r);
    ReplanStalls();
  }
  PumpAll();
}

// The slowest attached clock moved past `min_before`: every other attached
// worker gets a fresh window now, not at its next iteration, so that its
// next push decides whether to speculate (MaySpeculate) on the slowest
// clock as it is, as the simulator's workers do, not as it was when the
// worker's last iteration ended.
void EngineCore::Impl::SendFreshWindows(uint64_t min_before, const Worker* except) {
  if (opt.policy != SyncPolicy::kRog || !model.complete()) return;
  const uint64_t min = workers.MinAttachedClock();
  if (min == std::numeric_limits<uint64_t>::max() || min <= min_before) return;
  for (auto& w : workers) {
    if (w.get() == except || w->state() != WState::kConnected || !w->attached()) continue;
    const pb::Window window = CurrentWindow(w->clock() + 1);
    SendDirective(*w, [&](pb::Directive* d) { *d->mutable_window() = window; });
  }
}

void EngineCore::Impl::OnTick() {
  if (!model.complete()) return;
  const double now = Now();
  for (auto& r : workers) {
    if (r->state() == WState::kDisconnected && now - r->disconnected_at() >= opt.lease_seconds) {
      Evict(*r, absl::StrCat("no connection for ", opt.lease_seconds, " s (--lease)"));
    }
  }
  if (checkpoint.Due(now)) {
    absl::StatusOr<pb::CheckpointReply> c = WriteCheckpointNow();
    if (!c.ok()) spdlog::error("checkpoint failed: {}", std::string(c.status().message()));
  }
  CheckPatience(now);
  // Windows end and open with time alone: let the senders form batches.
  PumpAll();
}

namespace {

EngineOptions WithClock(EngineOptions options) {
  if (options.clock == nullptr) options.clock = DefaultClock();
  return options;
}

}  // namespace

EngineCore::Impl::Impl(EngineOptions options)
    : opt(WithClock(std::move(options))),
      bound(EffectiveBound(opt.policy, opt.staleness)),
      mta(opt.policy == SyncPolicy::kRog ? MinimumTransmissionAmount(opt.staleness) : 1.0),
      start_time(Now()),
      model(opt.codec),
      checkpoint(opt, start_time) {}

// --- EngineCore ------------------------------------------------------------------

EngineCore::EngineCore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EngineCore::~EngineCore() = default;

absl::StatusOr<std::unique_ptr<EngineCore>> EngineCore::Create(EngineOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (!impl->opt.init_path.empty()) {
    absl::Status s = impl->checkpoint.Restore(impl->opt.init_path, &impl->model, &impl->workers);
    if (!s.ok()) return s;
  } else if (!impl->opt.checkpoint_path.empty()) {
    absl::Status s =
        impl->checkpoint.Restore(impl->opt.checkpoint_path, &impl->model, &impl->workers);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return std::unique_ptr<EngineCore>(new EngineCore(std::move(impl)));
}

absl::StatusOr<Admission> EngineCore::Hello(std::shared_ptr<Outbox> outbox, const pb::Hello& hello,
                                            const std::string& peer, Rejection* reason) {
  Rejection ignored = Rejection::kNone;
  return impl_->OnHello(std::move(outbox), hello, peer, reason != nullptr ? reason : &ignored);
}

void EngineCore::Batch(uint64_t session, UplinkBatch& batch) { impl_->OnBatch(session, batch); }

void EngineCore::Ack(uint64_t session, const pb::Ack& ack) { impl_->OnAck(session, ack); }

void EngineCore::Progress(uint64_t session, const pb::Progress& progress) {
  impl_->OnProgress(session, progress);
}

void EngineCore::Goodbye(uint64_t session, const std::string& reason) {
  Worker* r = impl_->workers.Live(session);
  if (r == nullptr || !impl_->model.complete()) return;
  impl_->Evict(*r, absl::StrCat("said goodbye (", reason, ")"), /*left=*/true);
}

void EngineCore::Closed(uint64_t session) { impl_->OnClosed(session); }

void EngineCore::CountRejection(Rejection reason, const std::string& who,
                                const std::string& message) {
  const std::string label = RejectionLabel(reason);
  ++impl_->rejected[label];
  impl_->LogRefusal(label, who, message);
}

void EngineCore::Tick() { impl_->OnTick(); }

void EngineCore::set_deferred_settle(bool on) { impl_->defer_settle = on; }

void EngineCore::Settle() {
  if (!impl_->unsettled) return;
  impl_->unsettled = false;
  impl_->ReplanStalls();
  impl_->PumpAll();
}

void EngineCore::EndStreams(const std::string& why) {
  for (auto& r : impl_->workers) {
    if (r->outbox()) r->outbox()->End(absl::AbortedError(why));
  }
}

absl::Status EngineCore::Shutdown() {
  Impl& m = *impl_;
  m.workers.Shutdown(absl::AbortedError("rogd is shutting down"));
  if (m.opt.checkpoint_path.empty() || !m.model.complete()) return absl::OkStatus();
  return m.WriteCheckpointNow().status();
}

pb::StatusReply EngineCore::Status() const { return impl_->StatusReport(); }

pb::WorkersReply EngineCore::Workers() const { return impl_->WorkersReport(); }

absl::StatusOr<pb::StalenessReply> EngineCore::Staleness(
    const pb::StalenessRequest& request) const {
  return impl_->StalenessReport(request);
}

absl::StatusOr<pb::CheckpointReply> EngineCore::CheckpointNow() {
  return impl_->WriteCheckpointNow();
}

absl::StatusOr<ModelSnapshot> EngineCore::Export() const {
  if (!impl_->model.complete()) {
    return absl::FailedPreconditionError("no model yet: it arrives with the first worker's hello");
  }
  return ModelSnapshot{impl_->model.shared_layout(), impl_->model.state().global()};
}

MetricsSnapshot EngineCore::Metrics() const {
  MetricsSnapshot s;
  s.status = impl_->StatusReport();
  s.workers = impl_->WorkersReport();
  s.staleness_bound = impl_->bound;
  s.staleness = impl_->StalenessCounts();
  return s;
}

absl::Status EngineCore::CheckInvariants() const { return impl_->Invariants(); }

}  // namespace rog
