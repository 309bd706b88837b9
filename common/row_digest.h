// Row digests: how a joining worker tells rogd which rows it already holds
// (docs/protocol.md, "Joining and resync").
//
// A worker's Hello may carry one 64-bit digest per row of its replica
// (Hello.row_digests, little-endian, 8 bytes per row; 0 for a row it does
// not offer). rogd compares them with the digests of its own model and
// leaves out of the resync every row whose digest is equal: robots that
// start from the same pretrained weights then join without downloading the
// model they already hold. The digest is of the values' bit patterns, so
// equal digests mean equal bits, +0.0 and -0.0 differ, and it is the same on
// every machine. Not a cryptographic hash: a worker that forges one only
// keeps its own replica wrong, which it could do anyway.
#ifndef ROG_COMMON_ROW_DIGEST_H_
#define ROG_COMMON_ROW_DIGEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/layout.h"

namespace rog {

// Digest of one row's values; never 0 (0 means "no digest").
uint64_t RowDigest(absl::Span<const float> values);

// Digests packed for Hello.row_digests: 8 bytes per digest, little-endian.
std::string PackRowDigests(absl::Span<const uint64_t> digests);

// Which rows of `model` (layout.total_numel() values) match the worker's
// packed digests: empty `packed` matches none; otherwise it must hold
// exactly 8 bytes per row of `layout` (InvalidArgument, saying what it
// holds, when it does not). A digest of 0 matches nothing.
absl::StatusOr<std::vector<bool>> RowsInSync(const Layout& layout, absl::Span<const float> model,
                                             absl::string_view packed);

}  // namespace rog

#endif  // ROG_COMMON_ROW_DIGEST_H_
