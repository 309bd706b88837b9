// The model rogd holds, and its upload by the first worker
// (server/engine_model.h).
#include "server/engine_model.h"

#include <algorithm>
#include <utility>

#include "common/protocol_rules.h"

namespace rog {
namespace engine_internal {

uint64_t StateBytes(const Layout& layout, uint64_t workers) {
  return layout.total_numel() * 4 * (workers + 1) +
         static_cast<uint64_t>(layout.num_rows()) * workers * (workers + 1) * 8;
}

uint64_t WorkersWithin(const Layout& layout, uint64_t max_bytes) {
  // StateBytes grows with `workers`; search below a bound past any real team
  // (and far from overflowing it).
  uint64_t lo = 0, hi = uint64_t{1} << 20;
  if (StateBytes(layout, hi) <= max_bytes) return hi;
  while (lo + 1 < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (StateBytes(layout, mid) <= max_bytes ? lo : hi) = mid;
  }
  return lo;
}

namespace {

uint64_t ModelWireBytes(const Layout& layout, Codec codec) {
  uint64_t bytes = 0;
  for (RowId row = 0; row < layout.num_rows(); ++row) {
    bytes += RowWireBytes(codec, layout.row(row).numel);
  }
  return bytes;
}

}  // namespace

void ModelStore::Restore(std::shared_ptr<const Layout> layout, std::unique_ptr<ServerState> state) {
  layout_ = std::move(layout);
  state_ = std::move(state);
  wire_bytes_ = ModelWireBytes(*layout_, codec_);
}

void ModelStore::BeginUpload(Layout layout) {
  layout_ = std::make_shared<const Layout>(std::move(layout));
  staging_.assign(layout_->total_numel(), 0.0f);
  staged_.assign(layout_->num_rows(), false);
  staged_rows_ = 0;
}

void ModelStore::Stage(const std::vector<RowId>& rows, const std::vector<float>& values) {
  size_t at = 0;
  for (RowId row : rows) {
    const RowInfo& info = layout_->row(row);
    std::copy_n(values.data() + at, info.numel, staging_.data() + info.offset);
    at += info.numel;
    if (!staged_[row]) {
      staged_[row] = true;
      ++staged_rows_;
    }
  }
}

void ModelStore::CompleteUpload() {
  state_ = std::make_unique<ServerState>(*layout_, std::move(staging_), 1);
  staging_.clear();
  staged_.clear();
  staged_rows_ = 0;
  wire_bytes_ = ModelWireBytes(*layout_, codec_);
}

void ModelStore::DropUpload() {
  layout_.reset();
  staging_.clear();
  staged_.clear();
  staged_rows_ = 0;
}

}  // namespace engine_internal
}  // namespace rog
