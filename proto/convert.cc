#include "proto/convert.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/codec.h"

namespace rog {

pb::Layout LayoutToProto(const Layout& layout) {
  pb::Layout proto;
  for (const TensorSpec& t : layout.tensors()) {
    pb::TensorSpec* spec = proto.add_tensors();
    spec->set_name(t.name);
    for (int64_t d : t.shape) spec->add_shape(d);
  }
  proto.set_min_split_numel(layout.min_split_numel());
  return proto;
}

absl::StatusOr<Layout> LayoutFromProto(const pb::Layout& proto, const LayoutLimits& limits) {
  // Every tensor is at least one row: bound the copy below first.
  if (static_cast<uint64_t>(proto.tensors_size()) > limits.max_rows) {
    return absl::ResourceExhaustedError(absl::StrCat("the model has ", proto.tensors_size(),
                                                     " tensors, so at least as many rows; at most ",
                                                     limits.max_rows, " rows are allowed"));
  }
  std::vector<TensorSpec> tensors;
  tensors.reserve(proto.tensors_size());
  for (const pb::TensorSpec& t : proto.tensors()) {
    tensors.push_back(TensorSpec{t.name(), {t.shape().begin(), t.shape().end()}});
  }
  return Layout::Create(
      std::move(tensors),
      proto.min_split_numel() == 0 ? Layout::kDefaultMinSplitNumel : proto.min_split_numel(),
      limits);
}

std::string FloatsToBytes(absl::Span<const float> values) {
  std::string out;
  Encode(Codec::kFp32, values, &out);
  return out;
}

bool BytesToFloats(const std::string& bytes, std::vector<float>* values) {
  if (bytes.size() % 4 != 0) return false;
  values->resize(bytes.size() / 4);
  return Decode(Codec::kFp32, bytes, absl::MakeSpan(*values)).ok() || values->empty();
}

}  // namespace rog
