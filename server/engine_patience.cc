// The engine core's team patience and pace (docs/design.md, "Team
// patience"): who is detached for keeping others waiting or slowing the
// team, probes of a detached worker's link, and reattaching.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/protocol_rules.h"
#include "server/engine_impl.h"
#include "spdlog/spdlog.h"

namespace rog {

using engine_internal::InFlight;
using engine_internal::kMaxProbeBytes;
using engine_internal::kProbeIdle;
using engine_internal::SentBatch;
using engine_internal::Worker;
using engine_internal::WState;

namespace {

// What rogd saw the holder doing when it was blamed: whether it was itself
// stalled or computing, and what rogd's downlink had on the way to it. An
// uplink that brought nothing reads as a dead link; a holder still waiting
// for rows from rogd, or computing long iterations, is another story.
std::string HolderActivity(const Worker& holder, double now) {
  const uint64_t down = holder.downlink().inflight_bytes() +
                        (holder.outbox() ? holder.outbox()->queued_bytes() : uint64_t{0});
  const std::string doing =
      holder.stall().stalled()
          ? absl::StrFormat("had been stalled at the staleness bound itself for %.1f s",
                            now - holder.stall().since())
      : holder.progress().compute_per_iteration() > 0
          ? absl::StrFormat("was not stalled (computing, %.3g s per iteration, or pushing)",
                            holder.progress().compute_per_iteration())
          : std::string("was not stalled (computing or pushing; no compute time reported yet)");
  return absl::StrFormat("; it had completed %d iteration%s and %s, with %s", holder.clock(),
                         holder.clock() == 1 ? "" : "s", doing,
                         down > 0
                             ? absl::StrFormat("%d bytes from rogd queued or in flight to it", down)
                             : std::string("nothing from rogd on the way to it"));
}

// Why `holder` is detached for keeping `waiting` at the bound (DetachHolder
// said it goes): its link too slow for its share, or a live link at twice
// the patience; then what it was doing.
std::string HolderDetachReason(const Worker& holder, const Worker& waiting, double waited,
                               const std::string& patience_text, double arrived, double share,
                               double now) {
  const std::string why =
      arrived >= share
          ? absl::StrFormat(
                "kept %s waiting %.1f s at the staleness bound before iteration %d, %g times the "
                "patience (%s), although its link brought its MTA share (%d bytes) within the "
                "patience",
                waiting.id(), waited, waiting.clock() + 1, kLiveLinkPatience, patience_text,
                static_cast<uint64_t>(share))
          : absl::StrFormat(
                "kept %s waiting %.1f s at the staleness bound before iteration %d (patience %s), "
                "and its link brought %d of its MTA share's %d bytes within the patience",
                waiting.id(), waited, waiting.clock() + 1, patience_text,
                static_cast<uint64_t>(arrived), static_cast<uint64_t>(share));
  return absl::StrCat(why, HolderActivity(holder, now));
}

}  // namespace

void EngineCore::Impl::CheckPatience(double now) {
  if (opt.patience <= 0 || !workers.team_ready()) return;
  // OnTick follows every event; a stall plan per tick is enough.
  if (now - last_patience_check < EngineCore::kTickSeconds) return;
  last_patience_check = now;
  const double patience = Patience();
  // Detach: whoever kept an attached worker waiting at the bound too long.
  std::vector<std::pair<Worker*, std::string>> detach;
  const AttachedSet attached = workers.AttachedWorkers();
  // waits_for[q]: whom stalled worker q waits for, with every worker's clock
  // and needed version; filled when first needed.
  std::vector<std::vector<size_t>> waits_for;
  std::vector<uint64_t> clocks, needed;
  for (auto& r : workers) {
    if (!r->stall().stalled() || r->state() != WState::kConnected || !r->attached()) continue;
    if (r->plan().resyncing() || now - r->stall().since() < patience) continue;
    // The blame passes along waiting holders to the robot on the slow link.
    if (waits_for.empty()) {
      waits_for.resize(workers.size());
      clocks = workers.Clocks();
      needed.assign(workers.size(), 0);
      for (auto& q : workers) {
        needed[q->index()] = NeededVersion(q->clock(), bound);
        if (!q->stall().stalled() || q->state() != WState::kConnected || !q->attached()) continue;
        waits_for[q->index()] =
            PlanStall(model.state().versions(), model.state().copy_versions(q->index()), q->index(),
                      attached, needed[q->index()])
                .waiting_for;
      }
    }
    const double waited = now - r->stall().since();
    for (size_t q :
         BlameForStall(r->index(), waits_for[r->index()], waits_for, clocks, needed, attached)) {
      Worker* holder = &workers.at(q);
      bool listed = false;
      for (const auto& d : detach) listed |= d.first == holder;
      if (listed) continue;
      const double arrived = static_cast<double>(holder->uplink().arrivals().Since(now - patience));
      if (!DetachHolder(waited, patience, arrived, MembershipShare())) continue;
      detach.emplace_back(holder, HolderDetachReason(*holder, *r, waited, PatienceText(patience),
                                                     arrived, MembershipShare(), now));
    }
  }
  if (detach.empty() && opt.detach_speedup > 0) {
    std::string reason = PaceDetachReason(now);
    if (!reason.empty()) detach.emplace_back(pace_candidate, std::move(reason));
  }
  const uint64_t min_before = workers.MinAttachedClock();
  for (auto& [q, reason] : detach) Detach(*q, reason);
  if (!detach.empty()) SendFreshWindows(min_before, nullptr);
  // Reattach: a detached worker whose link moves its share well within the
  // patience again, for long enough. The downlink estimate decides: rogd
  // streams every pending row to a detached worker, so it stays fresh.
  for (auto& q : workers) {
    if (!q->detach().detached() || q->state() != WState::kConnected) continue;
    MaybeProbe(*q, now);
    if (!MayReattach(*q, now, patience)) continue;
    const double rate = q->downlink().CappedRate(now);
    Reattach(*q,
             absl::StrFormat(
                 "its link moves its MTA share (%d bytes) in %.2f s, within half the "
                 "patience (%s)%s, for %.1f s (%d probes), and what it computed is folded "
                 "and held by every attached worker",
                 static_cast<uint64_t>(MembershipShare()), MembershipShare() / rate,
                 PatienceText(patience), opt.detach_speedup > 0 ? " and with the team's pace" : "",
                 now - q->detach().reattach_ok_since(), q->detach().probes()));
  }
  if (!detach.empty()) {
    SendKnownVersions(nullptr);
    ReplanStalls();
    PumpAll();
  }
}

void EngineCore::Impl::MaybeProbe(Worker& q, double now) {
  if (!q.outbox() || q.plan().resyncing() || !q.downlink().inflight().empty()) return;
  if (q.outbox()->queued_bytes() > 0 || now - q.downlink().last_sent() < kProbeIdle) return;
  pb::ServerMessage m;
  pb::RowBatch* b = m.mutable_batch();
  b->set_iteration(q.clock());
  b->set_kind(pb::BATCH_KIND_UPDATE);
  b->set_codec(static_cast<pb::Codec>(opt.codec));
  b->mutable_padding()->assign(
      static_cast<size_t>(std::min<double>(MembershipShare(), kMaxProbeBytes)), '\0');
  const uint64_t bytes = q.downlink().Record(b, SentBatch{}, now);
  q.detach().CountProbe();
  spdlog::debug("worker {}: probe of {} bytes (detached, downlink idle)", q.id(), bytes);
  q.outbox()->Send(std::move(m));
}

// Team pace: the seconds q's link takes for its share, from the estimates
// the window uses (attached) or its downlink goodput estimate (detached);
// 0 while unknown. Both are goodput estimates, neither capped by a batch
// waiting in flight: a detached link capped (CappedRate) read slower than
// the same link attached whenever its downlink had a queue, and each dip
// restarted the reattach hold (ReattachLinkFits still judges the capped
// rate: a link that just died does not reattach on its last estimate).
double EngineCore::Impl::ShareSeconds(const Worker& q) const {
  const GoodputEstimator& down = q.downlink().goodput();
  double rate = 0;
  if (q.detach().detached()) {
    rate = down.has_estimate() ? down.rate() : 0;
  } else if (q.progress().last().uplink_goodput() > 0 && down.has_estimate()) {
    rate = std::min(q.progress().last().uplink_goodput(), down.rate());
  }
  return rate > 0 ? ShareBytes() / rate : 0;
}

// Team pace: the iterations per second the connected attached workers (plus
// `with`, minus `without`) would run together, each iteration costing the
// mean compute time plus the slowest member's share time.
double EngineCore::Impl::TeamRate(const Worker* with, const Worker* without) const {
  size_t members = 0;
  double compute = 0, slowest = 0;
  for (const auto& r : workers) {
    const bool member = r.get() == with || (r->state() == WState::kConnected && r->attached());
    if (!member || r.get() == without) continue;
    ++members;
    compute += r->progress().compute_per_iteration();
    slowest = std::max(slowest, ShareSeconds(*r));
  }
  if (members == 0) return 0;
  return rog::TeamRate(members, compute / static_cast<double>(members), slowest);
}

// Team pace: why the worker on the slowest attached link should be detached
// now (it is left in pace_candidate), or "" if it should not.
std::string EngineCore::Impl::PaceDetachReason(double now) {
  pace_candidate = nullptr;
  size_t attached = 0;
  double worst = 0;
  for (auto& r : workers) {
    if (!r->attached()) continue;
    // Someone disconnected, resyncing or not measured yet: the patience and
    // the lease judge for now.
    if (r->state() != WState::kConnected || r->plan().resyncing()) return "";
    const double t = ShareSeconds(*r);
    if (t <= 0 || r->progress().compute_per_iteration() <= 0) return "";
    ++attached;
    if (t > worst) {
      worst = t;
      pace_candidate = r.get();
    }
  }
  const double grace = PaceGrace(TeamCompute());
  if (attached < 2 || pace_candidate == nullptr || now - workers.team_ready_at() < grace ||
      now - pace_candidate->joined_at() < grace ||
      now - pace_candidate->detach().reattached_at() < grace) {
    pace_candidate = nullptr;
    return "";
  }
  const double with = TeamRate(nullptr, nullptr);
  const double without = TeamRate(nullptr, pace_candidate);
  if (!(with > 0) || without < opt.detach_speedup * with) {
    pace_candidate = nullptr;
    return "";
  }
  return absl::StrFormat(
      "its link moves its share (%d bytes) in %.3f s; the team would run %.2fx the iterations "
      "per second without it (--detach_speedup=%g)",
      static_cast<uint64_t>(ShareBytes()), worst, without / with, opt.detach_speedup);
}

// What the patience is now and where it comes from, for log lines and reasons.
std::string EngineCore::Impl::PatienceText(double patience) const {
  if (patience > opt.patience) {
    return absl::StrFormat(
        "%.3g s: --patience_iterations=%g times the team's compute time per "
        "iteration, above --patience=%gs",
        patience, opt.patience_iterations, opt.patience);
  }
  return absl::StrFormat("%.3g s: --patience=%gs", patience, opt.patience);
}

bool EngineCore::Impl::MayReattach(Worker& q, double now, double patience) {
  if (q.plan().resyncing() || !q.downlink().goodput().has_estimate()) return false;
  const bool fits = ReattachLinkFits(MembershipShare(), patience, q.downlink().CappedRate(now)) &&
                    !(opt.detach_speedup > 0 && TeamRate(&q, nullptr) < TeamRate(nullptr, nullptr));
  // Not while it may compute: the move to the team's clock would credit an
  // iteration whose updates are not in the global rows.
  if (q.detach().paused_at() != q.clock()) {
    NoteNotPaused(q, fits, now, patience);
    return false;
  }
  if (!q.detach().ReattachHeld(fits, now)) return false;
  // Everything it computed is folded (the global rows hold its clock in
  // every row): raising its versions to the team's clock then claims
  // nothing that is still in its accumulator or in flight.
  for (RowId row = 0; row < model.layout().num_rows(); ++row) {
    if (model.state().versions().Get(row, q.index()) < q.clock()) return false;
  }
  // Local steps: only once it has taken them all (no step under way).
  if (opt.detached_local_steps > 0 &&
      q.clock() < q.detach().detached_clock() + opt.detached_local_steps) {
    return false;
  }
  return OthersHoldAll(q);
}

// The operator's sign that a detached worker waits for its word that it
// pauses: once per detachment, when its link has qualified to reattach for
// a patience (a pause is due within the iteration it computes, once its
// local steps are taken) without it. A robot whose iterations take longer,
// or an SDK that never says it (one built before Progress.paused), stays
// detached until then, or for good.
void EngineCore::Impl::NoteNotPaused(Worker& q, bool fits, double now, double patience) {
  const bool stepping = q.clock() < q.detach().detached_clock() + opt.detached_local_steps;
  if (!q.detach().UnpausedFitHeld(fits && !stepping, now, std::max(patience, kReattachHold)))
    return;
  if (!q.detach().NoteUnpaused()) return;
  spdlog::warn(
      "worker {} stays detached at iteration {}: its link has qualified to reattach for {:.1f} s "
      "but it has not said it pauses (Progress.paused), which rogd needs before it moves the "
      "worker to the team's clock; either its iteration takes longer than that, or its SDK "
      "is older than rogd and never says so: build robots and rogd from one release",
      q.id(), q.clock(), now - q.detach().unpaused_fit_since());
}

// Whether every other connected attached worker's replica holds all of q's
// folded updates (its downlink brings them first: AddReattachRows): sent,
// and acknowledged, not on their way. A worker learns of a reattach only
// when the directive reaches it, and may start iterations on what it knew
// before; from the reattach on the bound counts q's iterations, so none of
// them may be missing then.
bool EngineCore::Impl::OthersHoldAll(const Worker& q) const {
  const VersionStore& global = model.state().versions();
  for (const auto& w : workers) {
    if (w.get() == &q || w->state() != WState::kConnected || !w->attached()) continue;
    const VersionStore& copy = model.state().copy_versions(w->index());
    for (RowId row = 0; row < model.layout().num_rows(); ++row) {
      if (copy.Get(row, q.index()) < global.Get(row, q.index())) return false;
    }
    // A batch in flight that carries some of them: not held yet.
    for (const InFlight& b : w->downlink().inflight()) {
      for (const TakenRow& t : b.taken) {
        if (q.index() < t.versions.size() && t.versions[q.index()] < global.Get(t.row, q.index())) {
          return false;
        }
      }
    }
  }
  return true;
}

// Tells every connected worker (but `except`) which versions its replica
// holds, row by row, over the attached workers now: after the team changed,
// what earlier batches said is stale (too high once a worker rejoins the
// bound). Sent after the batches already queued, so it overrides them.
void EngineCore::Impl::SendKnownVersions(const Worker* except) {
  const AttachedSet attached = workers.AttachedWorkers();
  for (auto& w : workers) {
    if (w.get() == except || w->state() != WState::kConnected || !w->outbox()) continue;
    if (w->plan().resyncing()) continue;  // the resync reports them
    SendDirective(*w, [&](pb::Directive* d) {
      pb::KnownVersions* k = d->mutable_known_versions();
      for (RowId row = 0; row < model.layout().num_rows(); ++row) {
        k->add_version(ReportedVersion(*w, row, attached));
      }
    });
  }
}

void EngineCore::Impl::SendDetached(Worker& q) {
  q.detach().ForgetPause();  // the worker says it again once it pauses
  // What is left of this detachment's local steps: a worker that reconnects
  // while detached must not get a fresh budget.
  const uint64_t taken = q.clock() - std::min(q.clock(), q.detach().detached_clock());
  const uint64_t left =
      opt.detached_local_steps - std::min<uint64_t>(taken, opt.detached_local_steps);
  SendDirective(q, [&](pb::Directive* d) {
    d->mutable_detached()->set_reason(q.detach().reason());
    d->mutable_detached()->set_local_steps(static_cast<uint32_t>(left));
    d->mutable_detached()->set_iteration(q.clock());
  });
}

void EngineCore::Impl::Detach(Worker& q, const std::string& reason) {
  const double now = Now();
  q.detach().Detach(now, q.clock(), reason);
  q.stall().Clear(now);
  q.downlink().CloseWindow();
  spdlog::info("detached worker {} at iteration {}: {}; it {} until its link recovers", q.id(),
               q.clock(), reason,
               opt.detached_local_steps > 0
                   ? absl::StrCat("may train ", opt.detached_local_steps, " iterations on its own")
                   : std::string("pauses"));
  SendDetached(q);
}

void EngineCore::Impl::Reattach(Worker& q, const std::string& reason) {
  const double now = Now();
  const uint64_t team_min = workers.MinAttachedClock(&q);
  const uint64_t clock =
      team_min == std::numeric_limits<uint64_t>::max() ? q.clock() : std::max(q.clock(), team_min);
  q.detach().Reattach(now, reason);
  q.stall().Clear(now);
  // Joins the bound at the slowest attached clock: nobody waits for the
  // iterations it skipped, and everything it computed is folded already
  // (MayReattach), so the raised versions claim nothing still unpushed.
  q.RaiseClock(clock, &model.state());
  spdlog::info("reattached worker {} at iteration {} after {:.1f} s detached: {}", q.id(), clock,
               now - q.detach().detached_at(), reason);
  SendDirective(q, [&](pb::Directive* d) {
    d->mutable_reattached()->set_iteration(clock);
    d->mutable_reattached()->set_reason(reason);
  });
  SendKnownVersions(&q);
  ReplanStalls();
  PumpAll();
}

}  // namespace rog
