// The engine core's downlink: which rows go to a worker in what order
// (plans, resyncs, a resumed stream's unapplied batches), formed into row
// batches within the in-flight limit.
#include <deque>
#include <utility>
#include <vector>

#include "common/protocol_rules.h"
#include "common/row_index.h"
#include "common/selection.h"
#include "server/engine_impl.h"
#include "spdlog/spdlog.h"

namespace rog {

using engine_internal::InFlight;
using engine_internal::kInf;
using engine_internal::kMaxQueued;
using engine_internal::Worker;
using engine_internal::WState;

// BSP's rows go down at the barrier only (the deliverable tier in
// FormBatch), so its plan is empty.
void EngineCore::Impl::BuildDownlinkPlan(Worker& r) {
  r.plan().Replan(
      SelectRows(DownlinkCandidates(opt.policy, bound, model.state(), r.index(), r.clock(),
                                    workers.AttachedWorkers(), opt.codec, model.layout()),
                 mta, model.wire_bytes()));
  const double now = Now();
  const double deadline = r.downlink().deadline();
  r.plan().SetSendsWhole(
      opt.send_whole_when_it_fits && opt.policy == SyncPolicy::kRog &&
      SendsWhole(r.plan().bytes_left(), DownInFlightLimit(r),
                 r.downlink().goodput().has_estimate() ? r.downlink().goodput().rate() : 0,
                 deadline < kInf ? deadline - now : 0));
}

// The rows r's downlink sends ahead of anything else, those rogd holds of
// what r waits for: while stalled, the rows it needs to start; while it
// computes (downlink_lookahead), those it will need to start its next
// iteration. Planned once per Pump: nothing else changes the versions
// while it forms batches.
std::vector<RowId> EngineCore::Impl::FirstRows(const Worker& r) const {
  if (!model.complete() || r.plan().resyncing()) return {};
  const uint64_t ahead = opt.downlink_lookahead ? LookaheadVersion(r) : 0;
  if (!r.stall().stalled() && ahead == 0) return {};
  return PlanStall(model.state().versions(), model.state().copy_versions(r.index()), r.index(),
                   workers.AttachedWorkers(),
                   r.stall().stalled() ? NeededVersion(r.clock(), bound) : ahead)
      .deliverable;
}

// Forms r's next downlink batch into *b (all but its seq: Downlink::Record
// gives it), and into *sent its rows and what undoes it, `first`
// (FirstRows) ahead of the rest; false when there is nothing to send.
bool EngineCore::Impl::FormBatch(Worker& r, const std::vector<RowId>& first, pb::RowBatch* b,
                                 SentBatch* sent) {
  const AttachedSet attached = workers.AttachedWorkers();
  std::vector<RowId> rows;
  std::string* payload = b->mutable_payload();
  if (r.plan().resyncing()) {
    BatchFill fill(model.layout(), Codec::kFp32, DownBatchBytes(r));
    r.plan().FillResync(&fill);
    rows = fill.Take();
    b->set_kind(pb::BATCH_KIND_VALUES);
    b->set_codec(pb::CODEC_FP32);
    sent->values = true;
    b->set_applied_uplink_seq(r.uplink().last_applied());
    for (RowId row : rows) model.state().TakeValues(r.index(), row, payload);
  } else {
    BatchFill fill(model.layout(), opt.codec, DownBatchBytes(r));
    for (RowId row : first) {
      if (!model.state().HasPending(r.index(), row)) continue;  // gone in an earlier batch
      if (!fill.Fits(row)) break;
      fill.Add(row);
    }
    if (!r.detach().detached()) AddReattachRows(r, &fill);
    if (r.plan().flush() || r.detach().detached()) {
      // A flush, or a detached worker: every pending row, whatever the window.
      for (RowId row = 0; row < model.layout().num_rows(); ++row) {
        if (!model.state().HasPending(r.index(), row) || fill.Has(row)) continue;
        if (!fill.Fits(row)) break;
        fill.Add(row);
      }
    }
    if (r.downlink().transmitting()) {
      const double now = Now();
      const bool open = now < r.downlink().deadline();
      const bool speculate = SpeculativeAllowed(r);
      // Time left in the window: stream what other workers pushed since.
      if (open && speculate && r.downlink().deadline() < kInf && r.plan().done() &&
          r.plan().stale()) {
        BuildDownlinkPlan(r);
      }
      r.plan().Fill(open, speculate, &fill,
                    [&](RowId row) { return !model.state().HasPending(r.index(), row); });
    }
    rows = fill.Take();
    if (rows.empty()) return false;
    b->set_kind(pb::BATCH_KIND_UPDATE);
    b->set_codec(static_cast<pb::Codec>(opt.codec));
    for (RowId row : rows) {
      const uint32_t numel = model.layout().row(row).numel;
      decoded.resize(numel);
      model.state().TakeDownlink(r.index(), row, opt.codec, payload, absl::MakeSpan(decoded),
                                 &sent->taken.emplace_back());
    }
  }
  if (rows.empty()) return false;
  b->set_iteration(r.clock());
  for (uint32_t d : EncodeRowIds(rows)) b->add_row_delta(d);
  // No `count` downlink: workers do not use it, and on the main job's
  // model it was a quarter of the index bytes.
  for (size_t k = 0; k < rows.size(); ++k) {
    const uint64_t version = ReportedVersion(r, rows[k], attached);
    b->add_version_lag(static_cast<int64_t>(r.clock()) - static_cast<int64_t>(version));
  }
  sent->rows = rows.size();
  return true;
}

// The in-flight cap's batch term is the largest batch, not DownBatchBytes:
// with the bare 50 ms lead and a round trip R above it, the goodput
// estimate settles near (lead × goodput + batch) / R, and a batch term
// that shrank with the goodput would spiral the cap down to the floor.
uint64_t EngineCore::Impl::DownInFlightLimit(const Worker& r) const {
  return r.downlink().goodput().has_estimate()
             ? InFlightLimit(r.downlink().goodput().rate(), opt.inflight_lead, opt.batch_bytes)
             : kInitialInFlight;
}

void EngineCore::Impl::Pump(Worker& r) {
  if (r.state() != WState::kConnected || !r.outbox() || !model.complete()) return;
  const bool resyncing = r.plan().resyncing();
  const uint64_t limit = DownInFlightLimit(r);
  bool exhausted = false;
  bool sent_any = false;
  const std::vector<RowId> first = FirstRows(r);
  while (r.downlink().inflight_bytes() < limit && r.outbox()->queued_bytes() < kMaxQueued) {
    pb::ServerMessage m;
    SentBatch sent;
    if (!FormBatch(r, first, m.mutable_batch(), &sent)) {
      exhausted = true;
      break;
    }
    r.downlink().Record(m.mutable_batch(), std::move(sent), Now());
    r.outbox()->Send(std::move(m));
    sent_any = true;
  }
  if (resyncing && !r.plan().resyncing()) {
    spdlog::debug("worker {}: full resync sent", r.id());
    CheckStalled(r);
  } else if (r.stall().stalled() && sent_any) {
    CheckStalled(r);  // the rows just sent may be what it waits for
  }
  if (exhausted && r.plan().EndFlush()) {
    SendDirective(r, [&](pb::Directive* d) {
      d->mutable_release()->set_iteration(r.clock());
      d->mutable_release()->set_flushed(true);
    });
  }
}

void EngineCore::Impl::PumpAll() {
  for (auto& r : workers) Pump(*r);
}

// A resuming worker's downlink: when its hello says how far it applied
// its last stream's batches (Hello.downlink_stream and
// last_applied_downlink_seq), the batches after that never reached it
// and are undone from its copy, newest first, and nothing needs
// resyncing. False (a full resync follows) when that stream's resync had
// not reached it whole, or the hello's account does not fit what rogd
// sent.
bool EngineCore::Impl::ResumeDownlink(Worker& r, const pb::Hello& hello) {
  const uint64_t applied = hello.last_applied_downlink_seq();
  if (!model.complete() || !model.state().active(r.index()) || r.plan().resyncing()) return false;
  const std::deque<InFlight>* unapplied = r.downlink().Resumable(hello.downlink_stream(), applied);
  if (unapplied == nullptr) return false;
  uint64_t rows = 0;
  for (auto it = unapplied->rbegin(); it != unapplied->rend() && it->seq > applied; ++it) {
    for (const TakenRow& t : it->taken) model.state().Untake(r.index(), t);
    rows += it->taken.size();
  }
  r.plan().MarkStale();
  spdlog::info("worker {}: resumes its downlink after seq {}; {} rows it never received go again",
               r.id(), applied, rows);
  return true;
}

// Starts r's full resync, leaving out the rows its hello showed it holds
// (in_sync, from RowsInSync): their copies are marked current and the
// welcome lists them with their versions.
void EngineCore::Impl::StartResync(Worker& r, std::vector<bool> in_sync, pb::Welcome* welcome) {
  welcome->set_full_resync(true);
  std::vector<RowId> rows;
  for (RowId row = 0; row < in_sync.size(); ++row) {
    if (in_sync[row]) rows.push_back(row);
  }
  const AttachedSet attached = workers.AttachedWorkers();
  for (RowId row : rows) {
    model.state().MarkInSync(r.index(), row);
    welcome->add_in_sync_version_lag(static_cast<int64_t>(r.clock()) -
                                     static_cast<int64_t>(ReportedVersion(r, row, attached)));
  }
  for (uint32_t d : EncodeRowIds(rows)) welcome->add_in_sync_row_delta(d);
  r.plan().StartResync(std::move(in_sync));
  if (!rows.empty()) {
    spdlog::info("worker {}: {} of {} rows already in sync (its row digests), resyncing {}", r.id(),
                 rows.size(), model.layout().num_rows(), model.layout().num_rows() - rows.size());
  }
}

// r's downlink batch budget now (BatchBudget): a few milliseconds of its
// measured goodput.
uint64_t EngineCore::Impl::DownBatchBytes(const Worker& r) const {
  return BatchBudget(r.downlink().goodput().has_estimate() ? r.downlink().goodput().rate() : 0,
                     opt.batch_seconds, opt.batch_bytes);
}

// Rows of r's copy that lack updates of a detached worker whose link
// qualifies to reattach: it reattaches once every attached worker holds
// all of them (OthersHoldAll).
void EngineCore::Impl::AddReattachRows(const Worker& r, BatchFill* fill) {
  const VersionStore& copy = model.state().copy_versions(r.index());
  for (const auto& q : workers) {
    if (!q->detach().detached() || q->detach().reattach_ok_since() < 0 || q.get() == &r) continue;
    for (RowId row = 0; row < model.layout().num_rows(); ++row) {
      if (fill->Has(row) || !model.state().HasPending(r.index(), row)) continue;
      if (copy.Get(row, q->index()) >= model.state().versions().Get(row, q->index())) continue;
      if (!fill->Fits(row)) return;
      fill->Add(row);
    }
  }
}

}  // namespace rog
