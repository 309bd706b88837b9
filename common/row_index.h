// The per-row index of a row batch and how rows are packed into batches.
//
// Index format (RowBatch in proto/rog.proto): row ids ascending and
// delta-coded (first id, then differences >= 1), a count and a version lag
// per row, each a varint on the wire. Sorting within a batch loses nothing:
// priority decides which rows go into which batch, not the order inside one.
#ifndef ROG_COMMON_ROW_INDEX_H_
#define ROG_COMMON_ROW_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/layout.h"

namespace rog {

// Delta-codes ascending row ids. REQUIRES: `rows` strictly ascending.
std::vector<uint32_t> EncodeRowIds(absl::Span<const RowId> rows);

// Inverse of EncodeRowIds for untrusted input: InvalidArgument when a
// difference is 0 (ids not strictly ascending), the sum overflows, or an id
// is >= num_rows.
absl::StatusOr<std::vector<RowId>> DecodeRowIds(absl::Span<const uint32_t> deltas, size_t num_rows);

// Bytes of a protobuf varint holding v.
size_t VarintSize(uint64_t v);

// Wire bytes of a batch's index for these (ascending) rows, each with a
// count and version lag, including the packed fields' tags and lengths.
size_t IndexBytes(absl::Span<const RowId> rows, absl::Span<const uint32_t> counts,
                  absl::Span<const uint64_t> version_lags);

// Fixed per-message bytes beyond the index and payload (seq, iteration,
// codec, kind, field tags, gRPC and HTTP/2 framing), used for accounting.
constexpr size_t kBatchHeaderBytes = 40;

}  // namespace rog

#endif  // ROG_COMMON_ROW_INDEX_H_
