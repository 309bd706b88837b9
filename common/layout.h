// Row layout: how a model's tensors are cut into rows, the global row table
// and the layout's fingerprint.
//
// A tensor with at least 2 dimensions and at least `min_split_numel` elements
// is split along dimension 0 into size(0) rows of numel/size(0) elements; any
// other tensor is one row. Rows are numbered globally in tensor order and the
// model's values are the rows concatenated in that order (so a row is a
// contiguous slice of the flattened model).
#ifndef ROG_COMMON_LAYOUT_H_
#define ROG_COMMON_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rog {

using RowId = uint32_t;

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // each dimension >= 1; empty = scalar
};

// Bounds on what a layout may describe, checked before anything is
// allocated for it (a layout can arrive from the network). The defaults are
// the hard limits below; rogd passes its --max_model_bytes and --max_rows.
struct LayoutLimits {
  uint64_t max_model_bytes = uint64_t{1} << 56;  // fp32 bytes of all tensors
  uint64_t max_rows = uint64_t{1} << 24;
};

struct RowInfo {
  uint32_t tensor;           // index into Layout::tensors()
  uint32_t index_in_tensor;  // 0 for a tensor that is one row
  uint64_t offset;           // first element in the flattened model
  uint32_t numel;            // elements in the row
};

class Layout {
 public:
  static constexpr uint64_t kDefaultMinSplitNumel = 1024;
  static constexpr size_t kMaxNameLength = 256;
  static constexpr size_t kMaxRank = 32;
  static constexpr uint64_t kMaxRowNumel = uint64_t{1} << 30;
  static constexpr uint64_t kMaxRows = uint64_t{1} << 24;

  // Builds the row table. Errors, saying which tensor and why:
  // InvalidArgument for no tensors, an empty, duplicate or over-long name,
  // more than kMaxRank dimensions, a dimension below 1, min_split_numel of 0;
  // ResourceExhausted for a row of more than kMaxRowNumel elements, more rows
  // than kMaxRows or limits.max_rows, more fp32 bytes than
  // limits.max_model_bytes. Sizes are checked before anything is allocated for
  // the row table.
  static absl::StatusOr<Layout> Create(std::vector<TensorSpec> tensors,
                                       uint64_t min_split_numel = kDefaultMinSplitNumel,
                                       const LayoutLimits& limits = LayoutLimits());

  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  uint64_t min_split_numel() const { return min_split_numel_; }
  size_t num_rows() const { return rows_.size(); }
  const RowInfo& row(RowId id) const { return rows_[id]; }
  const std::vector<RowInfo>& rows() const { return rows_; }
  uint64_t total_numel() const { return total_numel_; }
  uint64_t tensor_numel(size_t tensor) const { return tensor_numel_[tensor]; }
  RowId tensor_first_row(size_t tensor) const { return tensor_first_row_[tensor]; }
  uint32_t tensor_rows(size_t tensor) const;
  uint32_t max_row_numel() const { return max_row_numel_; }

  // A 64-bit FNV-1a hash of min_split_numel and every tensor's name and
  // shape, in order: equal layouts have equal fingerprints on every host.
  uint64_t fingerprint() const { return fingerprint_; }

  // The tensor called `name`, or NotFound listing a few known names.
  absl::StatusOr<size_t> FindTensor(absl::string_view name) const;

  // "name[3]" for a split tensor's row 3, "name" for a one-row tensor.
  std::string RowName(RowId id) const;

 private:
  Layout() = default;

  std::vector<TensorSpec> tensors_;
  uint64_t min_split_numel_ = kDefaultMinSplitNumel;
  std::vector<RowInfo> rows_;
  std::vector<uint64_t> tensor_numel_;
  std::vector<RowId> tensor_first_row_;
  uint64_t total_numel_ = 0;
  uint32_t max_row_numel_ = 0;
  uint64_t fingerprint_ = 0;
};

// 64-bit FNV-1a of `bytes` (the hash behind Layout::fingerprint), also used
// as the checksum of checkpoint files.
uint64_t Fnv1a64(absl::string_view bytes);

// The first way `theirs` differs from `ours`, for error messages, e.g.
// "tensor 3 is 'fc1.weight' [16, 256] here but 'fc1.weight' [64, 256] in
// theirs"; empty when the fingerprints are equal.
std::string DescribeLayoutDifference(const Layout& theirs, const Layout& ours,
                                     absl::string_view theirs_name, absl::string_view ours_name);

// Whether a tensor of this shape is split into rows (docs/design.md, "Rows").
bool IsSplit(const std::vector<int64_t>& shape, uint64_t min_split_numel);

}  // namespace rog

#endif  // ROG_COMMON_LAYOUT_H_
