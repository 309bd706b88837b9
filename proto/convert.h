// Conversions between the wire contract's messages and common/ types, used
// by rogd, rog::Worker and rogctl alike.
#ifndef ROG_PROTO_CONVERT_H_
#define ROG_PROTO_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/layout.h"
#include "rog.pb.h"

namespace rog {

// The wire contract's messages (proto package rog.v1).
namespace pb = ::rog::v1;

// The release this build belongs to, for logs, Hello and `rogctl status`.
inline constexpr char kRogVersion[] = "0.1.0";

pb::Layout LayoutToProto(const Layout& layout);
// Validates as Layout::Create does (min_split_numel 0 means the default),
// within `limits`.
absl::StatusOr<Layout> LayoutFromProto(const pb::Layout& proto,
                                       const LayoutLimits& limits = LayoutLimits());

// fp32 little-endian, as checkpoints and exports carry them.
std::string FloatsToBytes(absl::Span<const float> values);
// False when the size is not a multiple of 4.
bool BytesToFloats(const std::string& bytes, std::vector<float>* values);

}  // namespace rog

#endif  // ROG_PROTO_CONVERT_H_
