#include "common/layout.h"

#include <algorithm>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rog {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void HashBytes(uint64_t* h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    *h ^= p[i];
    *h *= kFnvPrime;
  }
}

// Integers are hashed as 8 little-endian bytes, whatever the host's order.
void HashU64(uint64_t* h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  HashBytes(h, b, 8);
}

}  // namespace

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t h = kFnvOffset;
  HashBytes(&h, bytes.data(), bytes.size());
  return h;
}

bool IsSplit(const std::vector<int64_t>& shape, uint64_t min_split_numel) {
  if (shape.size() < 2) return false;
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  return numel >= min_split_numel;
}

namespace {

// One tensor of a layout to be: its name (unique in `names`), its rank,
// its dimensions and its rows' size, checked before anything is allocated
// for it; its elements and rows go to *numel_out and *rows_out.
absl::Status CheckTensorSpec(const TensorSpec& spec, size_t t, uint64_t min_split_numel,
                             std::unordered_set<std::string>* names, uint64_t* numel_out,
                             uint64_t* rows_out) {
  if (spec.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor #", t, " has an empty name"));
  }
  if (spec.name.size() > Layout::kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("tensor #", t, " has a name of ",
                                                   spec.name.size(), " characters; at most ",
                                                   Layout::kMaxNameLength, " are allowed"));
  }
  if (!names->insert(spec.name).second) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor name '", spec.name, "' appears twice; names must be unique"));
  }
  if (spec.shape.size() > Layout::kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' has ",
                                                   spec.shape.size(), " dimensions; at most ",
                                                   Layout::kMaxRank, " are allowed"));
  }
  uint64_t numel = 1;
  for (int64_t d : spec.shape) {
    if (d < 1) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' has shape [",
                                                     absl::StrJoin(spec.shape, ", "),
                                                     "]; every dimension must be at least 1"));
    }
    if (numel > Layout::kMaxRowNumel * Layout::kMaxRows / static_cast<uint64_t>(d)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tensor '", spec.name, "' of shape [", absl::StrJoin(spec.shape, ", "),
          "] is too large: more than ", Layout::kMaxRowNumel * Layout::kMaxRows, " elements"));
    }
    numel *= static_cast<uint64_t>(d);
  }
  const uint64_t rows =
      IsSplit(spec.shape, min_split_numel) ? static_cast<uint64_t>(spec.shape[0]) : 1;
  if (numel / rows > Layout::kMaxRowNumel) {
    return absl::ResourceExhaustedError(absl::StrCat("tensor '", spec.name, "' has rows of ",
                                                     numel / rows, " elements; at most ",
                                                     Layout::kMaxRowNumel, " are supported"));
  }
  *numel_out = numel;
  *rows_out = rows;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Layout> Layout::Create(std::vector<TensorSpec> tensors, uint64_t min_split_numel,
                                      const LayoutLimits& limits) {
  if (tensors.empty()) {
    return absl::InvalidArgumentError("layout has no tensors: register at least one parameter");
  }
  if (min_split_numel == 0) {
    return absl::InvalidArgumentError("min_split_numel must be at least 1");
  }
  const uint64_t max_rows = std::min(limits.max_rows, kMaxRows);
  // Every tensor is at least one row: refuse absurd tensor counts before
  // looking at any of them.
  if (tensors.size() > max_rows) {
    return absl::ResourceExhaustedError(absl::StrCat("the model has ", tensors.size(),
                                                     " tensors, so at least as many rows; at most ",
                                                     max_rows, " rows are allowed"));
  }
  // First pass: sizes only, so that nothing is allocated for a layout that
  // is too large (a hello of a few bytes can describe petabytes).
  std::unordered_set<std::string> names;
  uint64_t total_rows = 0, total_numel = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorSpec& spec = tensors[t];
    uint64_t numel = 0, rows = 0;
    if (absl::Status s = CheckTensorSpec(spec, t, min_split_numel, &names, &numel, &rows);
        !s.ok()) {
      return s;
    }
    total_rows += rows;
    total_numel += numel;
    if (total_rows > max_rows) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the model has more than ", max_rows, " rows (tensor '", spec.name,
                       "' alone has ", rows, "); at most ", max_rows, " are allowed"));
    }
    if (total_numel > limits.max_model_bytes / 4) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the model is more than ", limits.max_model_bytes, " bytes of fp32 (tensor '", spec.name,
          "' of shape [", absl::StrJoin(spec.shape, ", "), "] alone is ", numel * 4,
          " bytes); at most ", limits.max_model_bytes, " are allowed"));
    }
  }
  Layout layout;
  layout.min_split_numel_ = min_split_numel;
  layout.rows_.reserve(total_rows);
  uint64_t h = kFnvOffset;
  HashU64(&h, min_split_numel);
  HashU64(&h, tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorSpec& spec = tensors[t];
    uint64_t numel = 1;
    for (int64_t d : spec.shape) numel *= static_cast<uint64_t>(d);
    const uint64_t rows =
        IsSplit(spec.shape, min_split_numel) ? static_cast<uint64_t>(spec.shape[0]) : 1;
    const uint64_t row_numel = numel / rows;
    layout.tensor_first_row_.push_back(static_cast<RowId>(layout.rows_.size()));
    layout.tensor_numel_.push_back(numel);
    for (uint64_t r = 0; r < rows; ++r) {
      layout.rows_.push_back(RowInfo{static_cast<uint32_t>(t), static_cast<uint32_t>(r),
                                     layout.total_numel_ + r * row_numel,
                                     static_cast<uint32_t>(row_numel)});
    }
    layout.max_row_numel_ = std::max<uint32_t>(layout.max_row_numel_, row_numel);
    layout.total_numel_ += numel;
    HashU64(&h, spec.name.size());
    HashBytes(&h, spec.name.data(), spec.name.size());
    HashU64(&h, spec.shape.size());
    for (int64_t d : spec.shape) HashU64(&h, static_cast<uint64_t>(d));
  }
  layout.fingerprint_ = h;
  layout.tensors_ = std::move(tensors);
  return layout;
}

uint32_t Layout::tensor_rows(size_t tensor) const {
  const RowId end = tensor + 1 < tensors_.size() ? tensor_first_row_[tensor + 1]
                                                 : static_cast<RowId>(rows_.size());
  return end - tensor_first_row_[tensor];
}

absl::StatusOr<size_t> Layout::FindTensor(absl::string_view name) const {
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (tensors_[t].name == name) return t;
  }
  std::vector<std::string> known;
  for (size_t t = 0; t < tensors_.size() && t < 8; ++t) known.push_back(tensors_[t].name);
  return absl::NotFoundError(absl::StrCat("no tensor named '", name, "'; the model has ",
                                          tensors_.size(), " tensors: ", absl::StrJoin(known, ", "),
                                          tensors_.size() > 8 ? ", ..." : ""));
}

std::string Layout::RowName(RowId id) const {
  const RowInfo& r = rows_[id];
  const TensorSpec& t = tensors_[r.tensor];
  if (tensor_rows(r.tensor) == 1) return t.name;
  return absl::StrCat(t.name, "[", r.index_in_tensor, "]");
}

namespace {

std::string Describe(const TensorSpec& t) {
  return absl::StrCat("'", t.name, "' [", absl::StrJoin(t.shape, ", "), "]");
}

}  // namespace

std::string DescribeLayoutDifference(const Layout& theirs, const Layout& ours,
                                     absl::string_view theirs_name, absl::string_view ours_name) {
  if (theirs.fingerprint() == ours.fingerprint()) return "";
  const auto& a = theirs.tensors();
  const auto& b = ours.tensors();
  for (size_t t = 0; t < a.size() && t < b.size(); ++t) {
    if (a[t].name != b[t].name || a[t].shape != b[t].shape) {
      return absl::StrCat("tensor ", t, " is ", Describe(a[t]), " in ", theirs_name, " but ",
                          Describe(b[t]), " in ", ours_name);
    }
  }
  if (a.size() != b.size()) {
    const bool more = a.size() > b.size();
    return absl::StrCat(theirs_name, " has ", a.size(), " tensors and ", ours_name, " ", b.size(),
                        "; the first extra one is ", Describe(more ? a[b.size()] : b[a.size()]),
                        " in ", more ? theirs_name : ours_name);
  }
  return absl::StrCat("the tensors match but min_split_numel is ", theirs.min_split_numel(), " in ",
                      theirs_name, " and ", ours.min_split_numel(), " in ", ours_name);
}

}  // namespace rog
