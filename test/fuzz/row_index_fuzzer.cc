// Fuzzes rog::DecodeRowIds, the decoder of a row batch's delta-coded row
// ids. Input: 4 bytes num_rows (mod 2^25, beyond Layout::kMaxRows), then
// the deltas, 4 bytes each. Accepted ids must be strictly ascending, in
// range, and re-encode to the same deltas.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/row_index.h"
#include "test/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rog::FuzzInput in(data, size);
  const size_t num_rows = in.U32() % (uint32_t{1} << 25);
  std::vector<uint32_t> deltas;
  for (size_t i = 4; i + 4 <= size; i += 4) deltas.push_back(in.U32());
  const absl::StatusOr<std::vector<rog::RowId>> rows = rog::DecodeRowIds(deltas, num_rows);
  if (!rows.ok()) {
    if (rows.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (rows->size() != deltas.size()) std::abort();
  for (size_t i = 0; i < rows->size(); ++i) {
    if ((*rows)[i] >= num_rows) std::abort();
    if (i > 0 && (*rows)[i] <= (*rows)[i - 1]) std::abort();
  }
  if (rog::EncodeRowIds(*rows) != deltas) std::abort();
  return 0;
}
