// The engine core's stall handling: a worker waiting at the staleness
// bound is told why, holders are asked to push the rows it needs now
// (PushNow), and its stall time is charged to what it waited for.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/engine_impl.h"
#include "spdlog/spdlog.h"

namespace rog {

using engine_internal::kMaxStallRows;
using engine_internal::Worker;
using engine_internal::WState;

void EngineCore::Impl::CheckStalled(Worker& r) {
  if (!r.stall().stalled()) AskBeforeReport(r);
  if (!r.stall().stalled() || r.state() != WState::kConnected || r.detach().detached() ||
      !workers.team_ready() || r.plan().resyncing()) {
    // Waits for the team to form or for a resync are not stalls at the bound.
    if (r.stall().cause() >= 0) r.stall().Judge(-1, Now());
  }
  if (!r.stall().stalled() || r.state() != WState::kConnected || r.detach().detached()) return;
  if (!workers.team_ready()) {
    if (r.stall().Announce()) {
      const size_t members = workers.Members();
      SendDirective(r, [&](pb::Directive* d) {
        pb::Stall* s = d->mutable_stall();
        s->set_iteration(r.clock());
        s->add_waiting_for(
            absl::StrCat("team: ", members, " of ", opt.team_size, " workers joined"));
      });
    }
    return;
  }
  if (r.plan().resyncing()) return;  // re-checked when the resync ends
  const AttachedSet attached = workers.AttachedWorkers();
  const VersionStore& copy = model.state().copy_versions(r.index());
  if (MayStart(copy, r.index(), attached, r.clock(), bound)) {
    r.stall().Clear(Now());
    SendDirective(r, [&](pb::Directive* d) { d->mutable_release()->set_iteration(r.clock()); });
    return;
  }
  const uint64_t needed = NeededVersion(r.clock(), bound);
  const StallPlan plan = PlanStall(model.state().versions(), copy, r.index(), attached, needed);
  // Asked first, so that the stall is judged with the asks just sent.
  AskHolders(r, plan, needed, needed, /*ahead=*/false);
  r.stall().Judge(ClassifyStall(plan, workers.Clocks(), workers.UnansweredAsks(), needed), Now());
  if (r.stall().Announce()) {
    SendDirective(r, [&](pb::Directive* d) {
      pb::Stall* s = d->mutable_stall();
      s->set_iteration(r.clock());
      const std::vector<MissingUpdate> missing =
          FindMissing(copy, r.index(), attached, needed, kMaxStallRows);
      RowId last = std::numeric_limits<RowId>::max();
      for (const MissingUpdate& m : missing) {
        if (m.row != last) s->add_rows(m.row);
        last = m.row;
      }
      s->set_missing_rows(plan.missing_rows);
      for (size_t q : plan.waiting_for) {
        for (const auto& w : workers) {
          if (w->index() == q) s->add_waiting_for(w->id());
        }
      }
    });
  }
}

// Asks the holders in `plan` (for r, at version `needed`) whose clocks are
// at least `min_clock` (>= needed) to push their rows now (PushNow), each
// row of each holder once per needed version. `ahead` (r computes and will
// need them next) asks only holders that honour PushNow.ahead, and a stall
// on the same rows asks again without it.
void EngineCore::Impl::AskHolders(const Worker& r, const StallPlan& plan, uint64_t needed,
                                  uint64_t min_clock, bool ahead) {
  for (auto& holder : workers) {
    const size_t q = holder->index();
    if (q >= plan.pushes.size() || plan.pushes[q].empty()) continue;
    // A worker that has not computed the iterations yet cannot push them;
    // it is asked again after its next progress.
    if (holder->state() != WState::kConnected || holder->clock() < min_clock) continue;
    if (ahead && !holder->asks().honours_ahead()) continue;
    pb::PushNow push = holder->asks().Ask(plan.pushes[q], needed, ahead);
    if (push.rows_size() == 0) continue;
    spdlog::debug("asking {} to push {} rows {} for {} (needs version {})", holder->id(),
                  push.rows_size(), ahead ? "within its window" : "now", r.id(), needed);
    SendDirective(*holder, [&](pb::Directive* d) { *d->mutable_push_now() = std::move(push); });
  }
}

// r has finished iteration r.clock() and has not reported a stall: if the
// rows rogd has sent it cannot start the next, it will stall on them (its
// report is on its way behind its push), so the holders are asked now as
// its stall would ask them (EngineOptions::ask_before_report).
void EngineCore::Impl::AskBeforeReport(Worker& r) {
  if (!opt.ask_before_report || !model.complete() || !workers.team_ready() ||
      r.detach().detached() || r.state() != WState::kConnected || r.plan().resyncing()) {
    return;
  }
  const AttachedSet attached = workers.AttachedWorkers();
  const VersionStore& copy = model.state().copy_versions(r.index());
  if (MayStart(copy, r.index(), attached, r.clock(), bound)) return;
  const uint64_t needed = NeededVersion(r.clock(), bound);
  const StallPlan plan = PlanStall(model.state().versions(), copy, r.index(), attached, needed);
  AskHolders(r, plan, needed, needed, /*ahead=*/false);
}

uint64_t EngineCore::Impl::LookaheadVersion(const Worker& r) const {
  if (opt.policy != SyncPolicy::kRog || !model.complete() || !workers.team_ready() ||
      r.stall().stalled() || r.detach().detached() || r.state() != WState::kConnected ||
      r.plan().resyncing()) {
    return 0;
  }
  return NeededVersion(r.clock() + 1, bound);
}

// A worker computing its next iteration: the holders are asked now for the
// rows it will need to start the one after (EngineOptions::push_ahead).
void EngineCore::Impl::AskAhead(Worker& r) {
  if (!opt.push_ahead) return;
  const uint64_t needed = LookaheadVersion(r);
  if (needed == 0) return;
  const StallPlan plan = PlanStall(model.state().versions(), model.state().copy_versions(r.index()),
                                   r.index(), workers.AttachedWorkers(), needed);
  // Only holders at most one iteration behind r: one further behind would
  // be asked for nearly every row it holds, every iteration, on what is
  // then the team's slowest link; r's stall asks it when it must.
  AskHolders(r, plan, needed, std::max(needed, r.clock() > 0 ? r.clock() - 1 : 0), /*ahead=*/true);
}

void EngineCore::Impl::ReplanStalls() {
  if (!model.complete()) return;
  for (auto& r : workers) {
    CheckStalled(*r);
    AskAhead(*r);
  }
}

}  // namespace rog
