// Row digests: how a joining worker tells rogd which rows it already holds
// (docs/protocol.md, "Joining and resync").
//
// A worker's Hello may carry digests of its replica (Hello.row_digests):
// the rows are taken in groups of consecutive rows, at most kMaxRowDigests
// groups, so that the hello stays a few hundred bytes whatever the model (it
// may have to cross a link of a few KB/s); 8 bytes per group, little-endian,
// 0 for a group the worker does not offer. rogd compares them with the
// digests of its own model and leaves out of the resync every row of every
// group whose digest is equal: robots that start from the same pretrained
// weights then join without downloading the model they already hold. A
// digest is of the values' bit patterns, so equal digests mean equal bits,
// +0.0 and -0.0 differ, and it is the same on every machine. Not a
// cryptographic hash: a worker that forges one only keeps its own replica
// wrong, which it could do anyway.
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

// Groups of rows in a hello's digests, at most.
constexpr size_t kMaxRowDigests = 64;

// Rows per group for a model of `num_rows` rows (the last group may hold
// fewer), and the number of groups.
size_t RowDigestGroupRows(size_t num_rows);
size_t RowDigestGroups(size_t num_rows);

// Digest of some values (a group's rows, consecutive in the flattened
// model); never 0 (0 means "not offered").
uint64_t ValuesDigest(absl::Span<const float> values);

// Hello.row_digests for a worker's `model` (layout.total_numel() values):
// every group none of whose rows is in `withheld` (rows.size() ==
// num_rows; rows the worker changed and rogd may lack) is digested, the
// others are 0.
std::string RowDigests(const Layout& layout, absl::Span<const float> model,
                       const std::vector<bool>& withheld);

// Which rows of `model` match the worker's `packed` digests: empty
// `packed` matches none; otherwise it must hold exactly 8 bytes per group
// (InvalidArgument, saying what it holds, when it does not). A row is in
// sync when its group's digest is not 0 and equals that of `model`.
absl::StatusOr<std::vector<bool>> RowsInSync(const Layout& layout, absl::Span<const float> model,
                                             absl::string_view packed);

}  // namespace rog

#endif  // ROG_COMMON_ROW_DIGEST_H_
