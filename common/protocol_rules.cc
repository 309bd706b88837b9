#include "common/protocol_rules.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "common/goodput.h"
#include "common/mta.h"

namespace rog {

double TeamPatience(double floor_seconds, double iterations, double team_compute_seconds) {
  if (!(floor_seconds > 0)) return 0;
  if (!(iterations > 0) || !(team_compute_seconds > 0)) return floor_seconds;
  return std::max(floor_seconds, std::min(kMaxPatience, iterations * team_compute_seconds));
}

double TeamComputeSeconds(std::vector<double> compute_per_iteration) {
  std::vector<double>& c = compute_per_iteration;
  c.erase(std::remove_if(c.begin(), c.end(), [](double s) { return !(s > 0); }), c.end());
  if (c.empty()) return 0;
  const auto mid = c.begin() + static_cast<std::ptrdiff_t>((c.size() - 1) / 2);
  std::nth_element(c.begin(), mid, c.end());
  return *mid;
}

double MembershipShareBytes(uint32_t staleness, uint64_t model_bytes) {
  return MinimumTransmissionAmount(staleness) * static_cast<double>(model_bytes);
}

double TeamWindow(SyncPolicy policy, absl::Span<const double> goodputs, double share_bytes,
                  double patience) {
  if (policy != SyncPolicy::kRog || goodputs.empty()) return 0;
  std::vector<double> setting;
  setting.reserve(goodputs.size());
  for (double g : goodputs) {
    if (!(g > 0)) return 0;  // unmeasured: no window, so this iteration measures it
    if (patience > 0 && share_bytes / g > patience) continue;
    setting.push_back(g);
  }
  if (setting.empty()) return patience;
  return TransmissionWindow(setting, share_bytes, 0, patience);
}

bool MaySpeculate(SyncPolicy policy, uint64_t clock, uint64_t min_attached_clock) {
  return policy != SyncPolicy::kRog || clock > min_attached_clock;
}

bool SendsWhole(uint64_t plan_bytes, uint64_t inflight_limit, double goodput,
                double window_seconds) {
  if (plan_bytes <= inflight_limit) return true;
  return goodput > 0 && window_seconds > 0 && std::isfinite(window_seconds) &&
         static_cast<double>(plan_bytes) <= goodput * window_seconds;
}

double DrainKeep(SyncPolicy policy, DrainRule rule, uint64_t team_size) {
  if (policy != SyncPolicy::kRog || rule != DrainRule::kAverage || team_size == 0) return 1;
  return 1.0 / static_cast<double>(team_size);
}

double StaleWeight(uint64_t clock, uint64_t known) {
  const uint64_t lacked = clock > known ? clock - known : 0;
  return 1.0 / (1.0 + static_cast<double>(lacked));
}

double TeamRate(size_t members, double compute_seconds, double slowest_share_seconds) {
  if (members == 0) return 0;
  return static_cast<double>(members) / (compute_seconds + slowest_share_seconds);
}

bool ReattachLinkFits(double share_bytes, double patience, double link_rate) {
  return link_rate > 0 && share_bytes / link_rate <= kReattachFraction * patience;
}

bool DetachHolder(double waited, double patience, double arrived_bytes, double share_bytes) {
  if (!(patience > 0) || !(waited >= patience)) return false;
  return waited >= kLiveLinkPatience * patience || arrived_bytes < share_bytes;
}

bool HeldFor(bool holds, double now, double* since, double hold) {
  if (!holds) {
    *since = -1;
    return false;
  }
  if (*since < 0) *since = now;
  return now - *since >= hold;
}

std::vector<RowCandidate> DownlinkCandidates(SyncPolicy policy, uint32_t bound,
                                             const ServerState& state, size_t worker,
                                             uint64_t clock, const AttachedSet& attached,
                                             Codec codec, const Layout& layout) {
  std::vector<RowCandidate> down;
  if (policy == SyncPolicy::kBsp) return down;
  const bool rog = policy == SyncPolicy::kRog;
  const VersionStore& copy = state.copy_versions(worker);
  for (RowId row = 0; row < layout.num_rows(); ++row) {
    if (!state.HasPending(worker, row)) continue;
    const uint64_t copy_min = MinOtherVersion(copy, row, worker, attached);
    const bool mandatory = !rog || DownlinkMandatory(copy_min, clock, bound);
    const double importance =
        rog ? Importance(CopyStaleness(state.versions(), copy, row, worker, attached),
                         state.PendingMagnitude(worker, row))
            : 0;
    down.push_back(
        RowCandidate{row, mandatory, importance, RowWireBytes(codec, layout.row(row).numel)});
  }
  return down;
}

std::vector<RowCandidate> UplinkCandidates(SyncPolicy policy, uint32_t bound,
                                           const WorkerState& state, Codec codec,
                                           const Layout& layout) {
  const bool rog = policy == SyncPolicy::kRog;
  std::vector<RowCandidate> up;
  for (RowId row = 0; row < layout.num_rows(); ++row) {
    const uint64_t unpushed = state.unpushed(row);
    if (unpushed == 0 && !state.HasResidual(row)) continue;
    // A residual-only row ranks as one iteration old.
    up.push_back(RowCandidate{
        row, !rog || UplinkMandatory(unpushed, bound),
        rog ? Importance(std::max<uint64_t>(unpushed, 1), state.AccumulatorMagnitude(row)) : 0,
        RowWireBytes(codec, layout.row(row).numel)});
  }
  return up;
}

}  // namespace rog
