#include "common/worker_state.h"

#include <algorithm>
#include <cassert>

#include "common/float_loops.h"
#include "common/selection.h"

namespace rog {

WorkerState::WorkerState(const Layout& layout, std::vector<float> initial, uint64_t clock)
    : layout_(&layout),
      clock_(clock),
      replica_(std::move(initial)),
      accumulator_(layout.total_numel(), 0.0f),
      pushed_(layout.num_rows(), clock),
      known_(layout.num_rows(), clock) {
  assert(replica_.size() == layout.total_numel());
}

absl::Span<const float> WorkerState::replica_row(RowId row) const {
  const RowInfo& r = layout_->row(row);
  return absl::MakeConstSpan(replica_.data() + r.offset, r.numel);
}

absl::Span<const float> WorkerState::accumulator_row(RowId row) const {
  const RowInfo& r = layout_->row(row);
  return absl::MakeConstSpan(accumulator_.data() + r.offset, r.numel);
}

void WorkerState::ApplyLocalUpdate(absl::Span<const float> update) {
  assert(update.size() == replica_.size());
  // Vectorised loops (common/float_loops.h) here and below; the inputs are
  // the caller's buffers, never this state's.
  AddToBoth(replica_.data(), accumulator_.data(), update.data(), update.size());
  ++clock_;
}

void WorkerState::ApplyLocalUpdate(absl::Span<const float> update,
                                   absl::Span<const float> row_weights) {
  assert(update.size() == replica_.size() && row_weights.size() == layout_->num_rows());
  for (RowId row = 0; row < layout_->num_rows(); ++row) {
    const RowInfo& r = layout_->row(row);
    const float w = row_weights[row];
    for (size_t j = r.offset; j < r.offset + r.numel; ++j) {
      const float v = update[j] * w;
      replica_[j] += v;
      accumulator_[j] += v;
    }
  }
  ++clock_;
}

double WorkerState::AccumulatorMagnitude(RowId row) const { return MeanAbs(accumulator_row(row)); }

uint32_t WorkerState::TakeUplink(RowId row, Codec codec, std::string* payload,
                                 absl::Span<float> decoded) {
  const RowInfo& r = layout_->row(row);
  EncodeWithFeedback(codec, absl::MakeSpan(accumulator_.data() + r.offset, r.numel), payload,
                     decoded);
  const uint64_t count = clock_ - pushed_[row];
  pushed_[row] = clock_;
  return static_cast<uint32_t>(count);
}

void WorkerState::ApplyDownlink(RowId row, absl::Span<const float> decoded, uint64_t min_version) {
  const RowInfo& r = layout_->row(row);
  assert(decoded.size() == r.numel);
  AddTo(replica_.data() + r.offset, decoded.data(), r.numel);
  known_[row] = min_version;
}

bool WorkerState::HasAllUpTo(uint64_t needed) const {
  for (uint64_t k : known_) {
    if (k < needed) return false;
  }
  return true;
}

void WorkerState::ApplyValues(RowId row, absl::Span<const float> values, uint64_t min_version) {
  const RowInfo& r = layout_->row(row);
  assert(values.size() == r.numel);
  Sum(replica_.data() + r.offset, values.data(), accumulator_.data() + r.offset, r.numel);
  known_[row] = min_version;
}

void WorkerState::ReturnUplink(RowId row, absl::Span<const float> decoded, uint32_t count) {
  const RowInfo& r = layout_->row(row);
  assert(decoded.size() == r.numel && pushed_[row] >= count);
  AddTo(accumulator_.data() + r.offset, decoded.data(), r.numel);
  pushed_[row] -= count;
}

void WorkerState::Rebase(uint64_t clock) {
  clock_ = clock;
  std::fill(pushed_.begin(), pushed_.end(), clock);
}

void WorkerState::KeepHeld(double keep) {
  assert(keep > 0 && keep <= 1);
  if (keep >= 1) return;
  const float k = static_cast<float>(keep);
  for (size_t j = 0; j < accumulator_.size(); ++j) {
    const float kept = accumulator_[j] * k;
    replica_[j] -= accumulator_[j] - kept;
    accumulator_[j] = kept;
  }
}

bool WorkerState::HasResidual(RowId row) const {
  for (float v : accumulator_row(row)) {
    if (v != 0.0f) return true;
  }
  return false;
}

}  // namespace rog
