#include "common/server_state.h"

#include <cassert>

#include "common/selection.h"

namespace rog {

ServerState::ServerState(Layout layout, std::vector<float> initial, size_t num_workers)
    : layout_(std::move(layout)),
      global_(std::move(initial)),
      versions_(layout_.num_rows(), num_workers),
      pending_(num_workers, std::vector<float>(layout_.total_numel(), 0.0f)),
      copy_versions_(num_workers, VersionStore(layout_.num_rows(), num_workers)) {
  assert(global_.size() == layout_.total_numel());
}

absl::Span<const float> ServerState::global_row(RowId row) const {
  const RowInfo& r = layout_.row(row);
  return absl::MakeConstSpan(global_.data() + r.offset, r.numel);
}

absl::Span<const float> ServerState::pending(size_t w, RowId row) const {
  const RowInfo& r = layout_.row(row);
  return absl::MakeConstSpan(pending_[w].data() + r.offset, r.numel);
}

void ServerState::Fold(size_t w, RowId row, absl::Span<const float> update, uint32_t count) {
  const RowInfo& r = layout_.row(row);
  assert(update.size() == r.numel);
  float* g = global_.data() + r.offset;
  for (uint32_t j = 0; j < r.numel; ++j) g[j] += update[j];
  for (size_t q = 0; q < pending_.size(); ++q) {
    if (q == w) continue;
    float* p = pending_[q].data() + r.offset;
    for (uint32_t j = 0; j < r.numel; ++j) p[j] += update[j];
  }
  versions_.Add(row, w, count);
  // The worker's own replica already holds what it pushed.
  copy_versions_[w].Set(row, w, versions_.Get(row, w));
}

bool ServerState::HasPending(size_t w, RowId row) const {
  const VersionStore& copy = copy_versions_[w];
  for (size_t q = 0; q < versions_.num_workers(); ++q) {
    if (q != w && versions_.Get(row, q) > copy.Get(row, q)) return true;
  }
  return false;
}

double ServerState::PendingMagnitude(size_t w, RowId row) const { return MeanAbs(pending(w, row)); }

uint64_t ServerState::TakeDownlink(size_t w, RowId row, Codec codec, std::string* payload,
                                   absl::Span<float> decoded) {
  const RowInfo& r = layout_.row(row);
  EncodeWithFeedback(codec, absl::MakeSpan(pending_[w].data() + r.offset, r.numel), payload,
                     decoded);
  uint64_t included = 0;
  VersionStore& copy = copy_versions_[w];
  for (size_t q = 0; q < versions_.num_workers(); ++q) {
    if (q == w) continue;
    included += versions_.Get(row, q) - copy.Get(row, q);
  }
  copy.CopyRow(versions_, row);
  return included;
}

uint64_t ServerState::copy_bytes() const {
  return static_cast<uint64_t>(pending_.size()) * layout_.total_numel() * sizeof(float);
}

}  // namespace rog
