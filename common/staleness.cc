#include "common/staleness.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace rog {

absl::StatusOr<SyncPolicy> ParseSyncPolicy(absl::string_view name) {
  if (name == "bsp") return SyncPolicy::kBsp;
  if (name == "ssp") return SyncPolicy::kSsp;
  if (name == "rog") return SyncPolicy::kRog;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown sync policy '", name, "'; use one of: bsp, ssp, rog"));
}

absl::string_view SyncPolicyName(SyncPolicy policy) {
  switch (policy) {
    case SyncPolicy::kBsp:
      return "bsp";
    case SyncPolicy::kSsp:
      return "ssp";
    case SyncPolicy::kRog:
      return "rog";
  }
  return "?";
}

uint32_t EffectiveBound(SyncPolicy policy, uint32_t staleness) {
  return policy == SyncPolicy::kBsp ? 0 : staleness;
}

uint64_t MinOtherVersion(const VersionStore& copy, RowId row, size_t self,
                         const AttachedSet& attached) {
  uint64_t min = std::numeric_limits<uint64_t>::max();
  for (size_t w = 0; w < copy.num_workers(); ++w) {
    if (w == self || !attached[w]) continue;
    min = std::min(min, copy.Get(row, w));
  }
  return min;
}

std::vector<MissingUpdate> FindMissing(const VersionStore& copy, size_t self,
                                       const AttachedSet& attached, uint64_t needed, size_t limit) {
  std::vector<MissingUpdate> missing;
  if (needed == 0) return missing;
  for (RowId r = 0; r < copy.num_rows(); ++r) {
    for (size_t w = 0; w < copy.num_workers(); ++w) {
      if (w == self || !attached[w]) continue;
      const uint64_t have = copy.Get(r, w);
      if (have < needed) {
        missing.push_back({r, w, have});
        if (limit != 0 && missing.size() >= limit) return missing;
      }
    }
  }
  return missing;
}

bool MayStart(const VersionStore& copy, size_t self, const AttachedSet& attached,
              uint64_t iteration, uint32_t bound) {
  return FindMissing(copy, self, attached, NeededVersion(iteration, bound), 1).empty();
}

StallPlan PlanStall(const VersionStore& global, const VersionStore& copy, size_t self,
                    const AttachedSet& attached, uint64_t needed) {
  StallPlan plan;
  plan.pushes.resize(global.num_workers());
  std::vector<bool> waiting(global.num_workers(), false);
  for (RowId r = 0; r < copy.num_rows(); ++r) {
    bool copy_lacks = false;
    bool global_has_all = true;
    for (size_t w = 0; w < copy.num_workers(); ++w) {
      if (w == self || !attached[w]) continue;
      if (copy.Get(r, w) >= needed) continue;
      copy_lacks = true;
      if (global.Get(r, w) < needed) {
        global_has_all = false;
        plan.pushes[w].push_back(r);
        waiting[w] = true;
      }
    }
    if (!copy_lacks) continue;
    ++plan.missing_rows;
    if (global_has_all) plan.deliverable.push_back(r);
  }
  for (size_t w = 0; w < waiting.size(); ++w) {
    if (waiting[w]) plan.waiting_for.push_back(w);
  }
  return plan;
}

namespace {

// Depth-first: q is covered when it is blamed or passes the blame to a
// worker that ends up covered. Workers on the current path are not covered
// yet, so a wait back into the path (a cycle) does not cover anyone.
struct BlameWalk {
  size_t self;
  const std::vector<std::vector<size_t>>& waits_for;
  const std::vector<uint64_t>& clocks;
  const std::vector<uint64_t>& needed;
  const AttachedSet& attached;
  enum State { kUnvisited, kOnPath, kCovered };
  std::vector<State> state;
  std::vector<size_t> blamed;

  bool Counts(size_t q) const { return q < attached.size() && attached[q] && q != self; }

  // `need`: the version of q's updates the worker before it on the path needs.
  void Visit(size_t q, uint64_t need) {
    state[q] = kOnPath;
    bool passed = false;
    // A holder that has computed what is needed only has to push it: its
    // own wait is not why it has not. One that has not is held by its wait.
    const bool computed = q < clocks.size() && clocks[q] >= need;
    if (!computed && q < waits_for.size() && q < needed.size()) {
      for (size_t u : waits_for[q]) {
        if (!Counts(u)) continue;
        if (state[u] == kUnvisited) Visit(u, needed[q]);
        passed = passed || state[u] == kCovered;
      }
    }
    if (!passed) blamed.push_back(q);
    state[q] = kCovered;
  }
};

}  // namespace

std::vector<size_t> BlameForStall(size_t self, const std::vector<size_t>& waiting_for,
                                  const std::vector<std::vector<size_t>>& waits_for,
                                  const std::vector<uint64_t>& clocks,
                                  const std::vector<uint64_t>& needed,
                                  const AttachedSet& attached) {
  BlameWalk walk{self,     waits_for,
                 clocks,   needed,
                 attached, std::vector<BlameWalk::State>(attached.size(), BlameWalk::kUnvisited),
                 {}};
  const uint64_t need = self < needed.size() ? needed[self] : 0;
  for (size_t q : waiting_for) {
    if (walk.Counts(q) && walk.state[q] == BlameWalk::kUnvisited) walk.Visit(q, need);
  }
  return walk.blamed;
}

absl::string_view StallCauseName(StallCause cause) {
  switch (cause) {
    case kStallPeerCompute:
      return "peer_compute";
    case kStallPeerUplink:
      return "peer_uplink";
    case kStallDownlink:
      return "downlink";
    case kStallPeerAsked:
      return "peer_asked";
  }
  return "unknown";
}

StallCause ClassifyStall(const StallPlan& plan, const std::vector<uint64_t>& clocks,
                         const std::vector<bool>& unanswered, uint64_t needed) {
  if (plan.waiting_for.empty()) return kStallDownlink;
  for (size_t q : plan.waiting_for) {
    if (q < clocks.size() && clocks[q] < needed) return kStallPeerCompute;
  }
  for (size_t q : plan.waiting_for) {
    if (q < unanswered.size() && unanswered[q]) return kStallPeerAsked;
  }
  return kStallPeerUplink;
}

uint64_t CopyStaleness(const VersionStore& global, const VersionStore& copy, RowId row, size_t self,
                       const AttachedSet& attached) {
  uint64_t worst = 0;
  for (size_t w = 0; w < global.num_workers(); ++w) {
    if (w == self || !attached[w]) continue;
    const uint64_t g = global.Get(row, w);
    const uint64_t c = copy.Get(row, w);
    if (g > c) worst = std::max(worst, g - c);
  }
  return worst;
}

}  // namespace rog
