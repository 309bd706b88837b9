#include "common/row_index.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rog {

std::vector<uint32_t> EncodeRowIds(absl::Span<const RowId> rows) {
  std::vector<uint32_t> deltas;
  deltas.reserve(rows.size());
  RowId prev = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    deltas.push_back(i == 0 ? rows[i] : rows[i] - prev);
    prev = rows[i];
  }
  return deltas;
}

absl::StatusOr<std::vector<RowId>> DecodeRowIds(absl::Span<const uint32_t> deltas,
                                                size_t num_rows) {
  std::vector<RowId> rows;
  rows.reserve(deltas.size());
  uint64_t id = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    if (i > 0 && deltas[i] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "row index entry ", i, " repeats row ", id,
          "; row ids in a batch must be strictly ascending (delta-coded, each delta >= 1)"));
    }
    id = (i == 0 ? 0 : id) + deltas[i];
    if (id >= num_rows) {
      return absl::InvalidArgumentError(absl::StrCat("row index entry ", i, " names row ", id,
                                                     " but the model has ", num_rows, " rows"));
    }
    rows.push_back(static_cast<RowId>(id));
  }
  return rows;
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

size_t IndexBytes(absl::Span<const RowId> rows, absl::Span<const uint32_t> counts,
                  absl::Span<const uint64_t> version_lags) {
  auto packed = [](size_t body) { return body == 0 ? 0 : 1 + VarintSize(body) + body; };
  size_t ids = 0;
  RowId prev = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ids += VarintSize(i == 0 ? rows[i] : rows[i] - prev);
    prev = rows[i];
  }
  size_t cs = 0;
  for (uint32_t c : counts) cs += VarintSize(c);
  size_t vs = 0;
  for (uint64_t v : version_lags) vs += VarintSize(v);
  return packed(ids) + packed(cs) + packed(vs);
}

}  // namespace rog
