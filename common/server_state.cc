#include "common/server_state.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/float_loops.h"
#include "common/selection.h"

namespace rog {

ServerState::ServerState(Layout layout, std::vector<float> initial, size_t num_workers)
    : layout_(std::move(layout)),
      global_(std::move(initial)),
      versions_(layout_.num_rows(), num_workers),
      pending_(num_workers, std::vector<float>(layout_.total_numel(), 0.0f)),
      copy_versions_(num_workers, VersionStore(layout_.num_rows(), num_workers)),
      unversioned_(num_workers, std::vector<bool>(layout_.num_rows(), false)) {
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
  // Vectorised loops (common/float_loops.h); update is the caller's buffer.
  AddTo(global_.data() + r.offset, update.data(), r.numel);
  for (size_t q = 0; q < pending_.size(); ++q) {
    if (q == w || pending_[q].empty()) continue;
    AddTo(pending_[q].data() + r.offset, update.data(), r.numel);
    if (count == 0) unversioned_[q][row] = true;
  }
  versions_.Add(row, w, count);
  // The worker's own replica already holds what it pushed.
  copy_versions_[w].Set(row, w, versions_.Get(row, w));
}

absl::Status ServerState::CheckFold(size_t w, RowId row, absl::Span<const float> update) const {
  const RowInfo& r = layout_.row(row);
  const auto fail = [&](const char* what, const float* base) {
    size_t j = 0;
    while (j < r.numel && std::isfinite(base[j] + update[j])) ++j;
    return absl::InvalidArgumentError(absl::StrCat(
        "folding element ", j, " of row ", row, " (", layout_.RowName(row), ") would make ", what,
        " non-finite (", base[j], " + ", update[j],
        "): the batch was not applied. The worker's updates have diverged; lower the learning "
        "rate or clip gradients, and restart it"));
  };
  const float* global = global_.data() + r.offset;
  if (!SumsFinite(global, update.data(), r.numel)) return fail("the global value", global);
  for (size_t q = 0; q < pending_.size(); ++q) {
    if (q == w || pending_[q].empty()) continue;
    const float* pending = pending_[q].data() + r.offset;
    if (!SumsFinite(pending, update.data(), r.numel)) {
      return fail("the update pending for another worker", pending);
    }
  }
  return absl::OkStatus();
}

bool ServerState::HasPending(size_t w, RowId row) const {
  if (!unversioned_[w].empty() && unversioned_[w][row]) return true;
  const VersionStore& copy = copy_versions_[w];
  for (size_t q = 0; q < versions_.num_workers(); ++q) {
    if (q != w && versions_.Get(row, q) > copy.Get(row, q)) return true;
  }
  return false;
}

double ServerState::PendingMagnitude(size_t w, RowId row) const { return MeanAbs(pending(w, row)); }

namespace {

void RecordTaken(RowId row, const VersionStore& copy, bool unversioned,
                 absl::Span<const float> delta, TakenRow* taken) {
  taken->row = row;
  taken->delta.assign(delta.begin(), delta.end());
  taken->versions.resize(copy.num_workers());
  for (size_t q = 0; q < copy.num_workers(); ++q) taken->versions[q] = copy.Get(row, q);
  taken->unversioned = unversioned;
}

}  // namespace

void ServerState::Untake(size_t w, const TakenRow& taken) {
  const RowInfo& r = layout_.row(taken.row);
  float* pending = pending_[w].data() + r.offset;
  for (uint32_t j = 0; j < r.numel; ++j) pending[j] += taken.delta[j];
  VersionStore& copy = copy_versions_[w];
  const size_t n = std::min(copy.num_workers(), taken.versions.size());
  for (size_t q = 0; q < n; ++q) {
    copy.Set(taken.row, q, std::min(copy.Get(taken.row, q), taken.versions[q]));
  }
  if (taken.unversioned) unversioned_[w][taken.row] = true;
}

uint64_t ServerState::TakeDownlink(size_t w, RowId row, Codec codec, std::string* payload,
                                   absl::Span<float> decoded, TakenRow* taken) {
  const RowInfo& r = layout_.row(row);
  const bool was_unversioned = !unversioned_[w].empty() && unversioned_[w][row];
  if (!unversioned_[w].empty()) unversioned_[w][row] = false;
  EncodeWithFeedback(codec, absl::MakeSpan(pending_[w].data() + r.offset, r.numel), payload,
                     decoded);
  uint64_t included = 0;
  VersionStore& copy = copy_versions_[w];
  if (taken != nullptr) RecordTaken(row, copy, was_unversioned, decoded, taken);
  for (size_t q = 0; q < versions_.num_workers(); ++q) {
    if (q == w) continue;
    included += versions_.Get(row, q) - copy.Get(row, q);
  }
  copy.CopyRow(versions_, row);
  return included;
}

uint64_t ServerState::copy_bytes() const {
  uint64_t total = 0;
  for (const std::vector<float>& p : pending_) total += p.size() * sizeof(float);
  return total;
}

size_t ServerState::AddWorker(uint64_t version) {
  const size_t w = versions_.AddWorker(version);
  for (VersionStore& copy : copy_versions_) copy.AddWorker(version);
  copy_versions_.push_back(versions_);
  pending_.emplace_back(layout_.total_numel(), 0.0f);
  unversioned_.emplace_back(layout_.num_rows(), false);
  return w;
}

void ServerState::RaiseVersion(size_t w, uint64_t version) {
  for (RowId row = 0; row < layout_.num_rows(); ++row) {
    const uint64_t old = versions_.Get(row, w);
    if (old >= version) continue;
    versions_.Set(row, w, version);
    for (VersionStore& copy : copy_versions_) {
      if (copy.Get(row, w) == old) copy.Set(row, w, version);
    }
  }
}

void ServerState::SetActive(size_t w, bool active) {
  if (active) {
    pending_[w].assign(layout_.total_numel(), 0.0f);
    unversioned_[w].assign(layout_.num_rows(), false);
  } else {
    std::vector<float>().swap(pending_[w]);
    std::vector<bool>().swap(unversioned_[w]);
  }
}

void ServerState::TakeValues(size_t w, RowId row, std::string* payload) {
  Encode(Codec::kFp32, global_row(row), payload);
  MarkInSync(w, row);
}

void ServerState::MarkInSync(size_t w, RowId row) {
  const RowInfo& r = layout_.row(row);
  if (!pending_[w].empty()) {
    std::fill_n(pending_[w].data() + r.offset, r.numel, 0.0f);
    unversioned_[w][row] = false;
  }
  copy_versions_[w].CopyRow(versions_, row);
}

ServerState::Parts ServerState::Export() const {
  return Parts{global_, versions_, pending_, copy_versions_};
}

absl::StatusOr<std::unique_ptr<ServerState>> ServerState::Restore(Layout layout, Parts parts) {
  const size_t rows = layout.num_rows();
  const size_t n = parts.versions.num_workers();
  if (parts.global.size() != layout.total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("global model has ", parts.global.size(),
                                                   " values, the layout ", layout.total_numel()));
  }
  if (parts.versions.num_rows() != rows) {
    return absl::InvalidArgumentError("version storage does not match the layout's rows");
  }
  if (parts.pending.size() != n || parts.copies.size() != n) {
    return absl::InvalidArgumentError("per-worker copies do not match the team size");
  }
  for (size_t w = 0; w < n; ++w) {
    if (!parts.pending[w].empty() && parts.pending[w].size() != layout.total_numel()) {
      return absl::InvalidArgumentError(absl::StrCat("worker ", w, "'s copy has the wrong size"));
    }
    if (parts.copies[w].num_rows() != rows || parts.copies[w].num_workers() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker ", w, "'s versions have the wrong shape"));
    }
    // A copy never holds more of a worker than the global rows do (the
    // downlink subtracts one from the other).
    for (RowId row = 0; row < rows; ++row) {
      for (size_t q = 0; q < n; ++q) {
        if (parts.copies[w].Get(row, q) > parts.versions.Get(row, q)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "worker ", w, "'s copy of row ", row, " is ahead of the global rows for worker ", q));
        }
      }
    }
  }
  auto state =
      std::unique_ptr<ServerState>(new ServerState(std::move(layout), std::move(parts.global), 0));
  state->versions_ = std::move(parts.versions);
  state->pending_ = std::move(parts.pending);
  state->copy_versions_ = std::move(parts.copies);
  // Checkpoints do not say which pending values came from count-0 folds:
  // any non-zero pending row counts as such (at worst a lossy codec's
  // residual is sent once more).
  state->unversioned_.assign(n, std::vector<bool>());
  for (size_t w = 0; w < n; ++w) {
    if (state->pending_[w].empty()) continue;
    state->unversioned_[w].assign(rows, false);
    for (RowId row = 0; row < rows; ++row) {
      for (float v : state->pending(w, row)) {
        if (v != 0) {
          state->unversioned_[w][row] = true;
          break;
        }
      }
    }
  }
  return state;
}

}  // namespace rog
