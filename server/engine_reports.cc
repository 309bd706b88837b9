// The engine core's admin answers: status, workers, staleness, the
// metrics' staleness counts, and the invariants tests check.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/uplink_rules.h"
#include "server/engine_impl.h"

namespace rog {

using engine_internal::StateName;
using engine_internal::Worker;
using engine_internal::WState;

pb::StatusReply EngineCore::Impl::StatusReport() const {
  const Impl& m = *this;
  pb::StatusReply s;
  s.set_sync(static_cast<pb::SyncPolicy>(m.opt.policy));
  s.set_staleness(m.opt.staleness);
  s.set_mta(m.mta);
  s.set_codec(static_cast<pb::Codec>(m.opt.codec));
  s.set_has_model(m.model.complete());
  if (m.model.complete()) {
    *s.mutable_layout() = LayoutToProto(m.model.layout());
    s.set_tensors(m.model.layout().tensors().size());
    s.set_rows(m.model.layout().num_rows());
    s.set_model_bytes(m.model.layout().total_numel() * 4);
    s.set_worker_copy_bytes(m.model.state().copy_bytes());
    const Layout& layout = m.model.layout();
    const uint64_t records = m.workers.size();
    s.set_state_bytes(engine_internal::StateBytes(layout, records));
    s.set_state_bytes_per_worker(layout.total_numel() * 4 +
                                 static_cast<uint64_t>(layout.num_rows()) * (records + 1) * 8);
    s.set_workers_within_limit(static_cast<uint32_t>(
        std::min<uint64_t>(engine_internal::WorkersWithin(layout, m.opt.max_state_bytes),
                           std::numeric_limits<uint32_t>::max())));
  }
  s.set_worker_records(static_cast<uint32_t>(m.workers.size()));
  s.set_max_state_bytes(m.opt.max_state_bytes);
  s.set_uptime_seconds(Now() - m.start_time);
  const uint64_t max = m.workers.MaxAttachedClock();
  uint64_t min = m.workers.MinAttachedClock();
  for (const auto& r : m.workers) {
    if (r->state() == WState::kConnected) s.set_workers_connected(s.workers_connected() + 1);
    if (r->state() == WState::kEvicted) s.set_workers_evicted(s.workers_evicted() + 1);
    if (r->attached() && m.opt.staleness > 0 && r->clock() + m.opt.staleness <= max) {
      s.set_workers_lagging(s.workers_lagging() + 1);
    }
  }
  s.set_min_iteration(min == std::numeric_limits<uint64_t>::max() ? 0 : min);
  s.set_max_iteration(max);
  s.set_last_checkpoint_unix(m.checkpoint.last_unix());
  s.set_last_checkpoint_path(m.checkpoint.last_path());
  s.set_version(kRogVersion);
  for (const auto& [reason, count] : m.rejected) (*s.mutable_rejected())[reason] = count;
  s.set_team_ready(m.workers.team_ready());
  s.set_patience(m.opt.patience);
  s.set_patience_iterations(m.opt.patience > 0 ? m.opt.patience_iterations : 0);
  s.set_patience_now(m.Patience());
  s.set_detached_local_steps(m.opt.detached_local_steps);
  s.set_detach_speedup(m.opt.patience > 0 ? m.opt.detach_speedup : 0);
  for (const auto& r : m.workers) {
    if (r->detach().detached()) s.set_workers_detached(s.workers_detached() + 1);
  }
  return s;
}

pb::WorkersReply EngineCore::Impl::WorkersReport() const {
  const Impl& m = *this;
  pb::WorkersReply reply;
  const uint64_t max = m.workers.MaxAttachedClock();
  const double now = Now();
  for (const auto& r : m.workers) {
    pb::WorkerInfo* w = reply.add_workers();
    w->set_worker_id(r->id());
    w->set_state(StateName(r->state()));
    w->set_iteration(r->clock());
    w->set_lag(max > r->clock() ? max - r->clock() : 0);
    w->set_uplink_goodput(r->progress().last().uplink_goodput());
    w->set_downlink_goodput(r->downlink().goodput().rate());
    w->set_downlink_rtt(r->downlink().rtt().min());
    w->set_downlink_in_flight(r->downlink().inflight_bytes());
    const double busy = r->progress().last().compute_seconds() +
                        r->progress().last().transmit_seconds() +
                        r->progress().last().stall_seconds();
    w->set_stall_share(busy > 0 ? r->progress().last().stall_seconds() / busy : 0);
    w->set_stalls(r->progress().last().stalls());
    const double its = static_cast<double>(std::max<uint64_t>(1, r->clock() - r->join_clock()));
    w->set_rows_pushed_per_iteration(r->uplink().rows() / its);
    w->set_rows_pulled_per_iteration(r->downlink().rows() / its);
    w->set_bytes_pushed_per_iteration(r->uplink().bytes() / its);
    w->set_bytes_pulled_per_iteration(r->downlink().bytes() / its);
    w->set_window_overshoot(r->progress().last().window_overshoot());
    w->set_last_seen_seconds(now - r->last_seen());
    w->set_sdk_version(r->sdk_version());
    w->set_peer(r->peer());
    w->set_rows_pushed(r->uplink().rows());
    w->set_rows_pulled(r->downlink().rows());
    w->set_bytes_pushed(r->uplink().bytes());
    w->set_bytes_pulled(r->downlink().bytes());
    w->set_compute_seconds(r->progress().last().compute_seconds());
    w->set_transmit_seconds(r->progress().last().transmit_seconds());
    w->set_stall_seconds(r->progress().last().stall_seconds());
    w->set_detached(r->detach().detached());
    w->set_detached_for_seconds(r->detach().detached() ? now - r->detach().detached_at() : 0);
    w->set_detaches(r->detach().detaches());
    w->set_reattaches(r->detach().reattaches());
    w->set_detached_seconds(r->detach().DetachedSeconds(now));
    w->set_late_rows(r->detach().late_rows());
    w->set_detach_reason(r->detach().reason());
    w->set_stall_peer_compute_seconds(r->stall().CauseSeconds(kStallPeerCompute, now));
    w->set_stall_peer_uplink_seconds(r->stall().CauseSeconds(kStallPeerUplink, now));
    w->set_stall_downlink_seconds(r->stall().CauseSeconds(kStallDownlink, now));
    w->set_stall_peer_asked_seconds(r->stall().CauseSeconds(kStallPeerAsked, now));
  }
  return reply;
}

std::map<uint64_t, uint64_t> EngineCore::Impl::StalenessCounts() const {
  std::map<uint64_t, uint64_t> counts;
  if (!model.complete()) return counts;
  const AttachedSet attached = workers.AttachedWorkers();
  for (const auto& r : workers) {
    if (!r->attached()) continue;
    const VersionStore& copy = model.state().copy_versions(r->index());
    for (RowId row = 0; row < model.layout().num_rows(); ++row) {
      ++counts[CopyStaleness(model.state().versions(), copy, row, r->index(), attached)];
    }
  }
  return counts;
}

absl::StatusOr<pb::StalenessReply> EngineCore::Impl::StalenessReport(
    const pb::StalenessRequest& request) const {
  const Impl& m = *this;
  if (!m.model.complete()) {
    return absl::FailedPreconditionError("no model yet: it arrives with the first worker's hello");
  }
  const Layout& layout = m.model.layout();
  RowId first = 0, end = static_cast<RowId>(layout.num_rows());
  if (!request.tensor().empty()) {
    absl::StatusOr<size_t> t = layout.FindTensor(request.tensor());
    if (!t.ok()) return t.status();
    first = layout.tensor_first_row(*t);
    end = first + layout.tensor_rows(*t);
  }
  // Detached workers too: how far behind a detached copy is matters.
  std::vector<const Worker*> cols;
  for (const auto& r : m.workers) {
    if (!r->member()) continue;
    if (!request.worker_id().empty() && r->id() != request.worker_id()) continue;
    cols.push_back(r.get());
  }
  if (!request.worker_id().empty() && cols.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no worker '", request.worker_id(),
                     "' in the team (evicted or unknown); see `rogctl workers`"));
  }
  const AttachedSet attached = m.workers.AttachedWorkers();
  pb::StalenessReply reply;
  reply.set_staleness_bound(m.bound);
  for (const Worker* c : cols) reply.add_workers(c->id());
  const auto staleness = [&](RowId row, const Worker* c) {
    return CopyStaleness(m.model.state().versions(), m.model.state().copy_versions(c->index()), row,
                         c->index(), attached);
  };
  // With --top, only the stalest rows are built (ties in row order): a
  // model may have a million rows, and the reply is made under the lock.
  std::vector<RowId> rows;
  if (request.top() > 0) {
    std::vector<std::pair<uint64_t, RowId>> worst;
    worst.reserve(end - first);
    for (RowId row = first; row < end; ++row) {
      uint64_t w = 0;
      for (const Worker* c : cols) w = std::max(w, staleness(row, c));
      worst.emplace_back(w, row);
    }
    const size_t keep = std::min<size_t>(worst.size(), request.top());
    std::partial_sort(worst.begin(), worst.begin() + keep, worst.end(),
                      [](const auto& a, const auto& b) {
                        return a.first != b.first ? a.first > b.first : a.second < b.second;
                      });
    for (size_t k = 0; k < keep; ++k) rows.push_back(worst[k].second);
  } else {
    for (RowId row = first; row < end; ++row) rows.push_back(row);
  }
  for (RowId row : rows) {
    pb::RowStaleness& rs = *reply.add_rows();
    rs.set_row(row);
    const RowInfo& info = layout.row(row);
    rs.set_tensor(layout.tensors()[info.tensor].name);
    rs.set_index_in_tensor(info.index_in_tensor);
    for (const Worker* c : cols) rs.add_staleness(staleness(row, c));
    uint64_t oldest = 0;
    for (const auto& r : m.workers) {
      if (!r->attached()) continue;
      const uint64_t v = m.model.state().versions().Get(row, r->index());
      const uint64_t age = r->clock() > v ? r->clock() - v : 0;
      if (age > oldest) {
        oldest = age;
        rs.set_oldest_unpushed_worker(r->id());
      }
    }
    rs.set_oldest_unpushed_age(oldest);
  }
  return reply;
}

absl::Status EngineCore::Impl::Invariants() const {
  const Impl& m = *this;
  for (const auto& r : m.workers) {
    if (r->clock() > kMaxClock) {
      return absl::InternalError(absl::StrCat("worker ", r->id(), " clock ", r->clock()));
    }
  }
  if (!m.model.complete()) return absl::OkStatus();
  const VersionStore& v = m.model.state().versions();
  for (const auto& r : m.workers) {
    for (RowId row = 0; row < m.model.layout().num_rows(); ++row) {
      if (v.Get(row, r->index()) > r->clock()) {
        return absl::InternalError(absl::StrCat("row ", row, " holds ", v.Get(row, r->index()),
                                                " iterations of worker ", r->id(),
                                                " whose clock is ", r->clock()));
      }
      for (const auto& q : m.workers) {
        if (m.model.state().copy_versions(q->index()).Get(row, r->index()) >
            v.Get(row, r->index())) {
          return absl::InternalError(absl::StrCat("worker ", q->id(), "'s copy of row ", row,
                                                  " holds more of ", r->id(),
                                                  " than the global row"));
        }
      }
    }
  }
  for (float x : m.model.state().global()) {
    if (!std::isfinite(x)) return absl::InternalError("a global value is not finite");
  }
  return absl::OkStatus();
}

}  // namespace rog
