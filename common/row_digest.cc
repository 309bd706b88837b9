#include "common/row_digest.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rog {
namespace {

// MurmurHash3's 64-bit finaliser: a bijection that mixes every input bit
// into every output bit.
uint64_t Mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// The values of group g's rows: consecutive in the flattened model.
absl::Span<const float> GroupValues(const Layout& layout, absl::Span<const float> model, size_t g) {
  const size_t per = RowDigestGroupRows(layout.num_rows());
  const RowId first = static_cast<RowId>(g * per);
  const RowId last = static_cast<RowId>(std::min(layout.num_rows(), (g + 1) * per) - 1);
  const uint64_t begin = layout.row(first).offset;
  const uint64_t end = layout.row(last).offset + layout.row(last).numel;
  return model.subspan(begin, end - begin);
}

}  // namespace

size_t RowDigestGroupRows(size_t num_rows) {
  return num_rows <= kMaxRowDigests ? 1 : (num_rows + kMaxRowDigests - 1) / kMaxRowDigests;
}

size_t RowDigestGroups(size_t num_rows) {
  const size_t per = RowDigestGroupRows(num_rows);
  return (num_rows + per - 1) / per;
}

uint64_t ValuesDigest(absl::Span<const float> values) {
  uint64_t h = Mix(0x524f4700ULL ^ values.size());  // "ROG", then the length
  size_t j = 0;
  for (; j + 1 < values.size(); j += 2) {
    h = Mix(h ^ (uint64_t{Bits(values[j])} | uint64_t{Bits(values[j + 1])} << 32)) +
        0x9e3779b97f4a7c15ULL;
  }
  if (j < values.size()) h = Mix(h ^ uint64_t{Bits(values[j])}) + 0x9e3779b97f4a7c15ULL;
  h = Mix(h);
  return h == 0 ? 1 : h;
}

std::string RowDigests(const Layout& layout, absl::Span<const float> model,
                       const std::vector<bool>& withheld) {
  const size_t groups = RowDigestGroups(layout.num_rows());
  const size_t per = RowDigestGroupRows(layout.num_rows());
  std::string out(groups * 8, '\0');
  for (size_t g = 0; g < groups; ++g) {
    bool offered = true;
    for (size_t row = g * per; row < std::min(layout.num_rows(), (g + 1) * per); ++row) {
      offered = offered && !withheld[row];
    }
    if (!offered) continue;
    const uint64_t d = ValuesDigest(GroupValues(layout, model, g));
    for (int b = 0; b < 8; ++b) out[g * 8 + b] = static_cast<char>(d >> (8 * b));
  }
  return out;
}

absl::StatusOr<std::vector<bool>> RowsInSync(const Layout& layout, absl::Span<const float> model,
                                             absl::string_view packed) {
  const size_t rows = layout.num_rows();
  std::vector<bool> in_sync(rows, false);
  if (packed.empty()) return in_sync;
  const size_t groups = RowDigestGroups(rows);
  if (packed.size() != groups * 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("row_digests holds ", packed.size(), " bytes; a model of ", rows,
                     " rows needs ", groups * 8, " (8 per group of ", RowDigestGroupRows(rows),
                     " rows, little-endian) or none"));
  }
  const size_t per = RowDigestGroupRows(rows);
  for (size_t g = 0; g < groups; ++g) {
    uint64_t d = 0;
    for (int b = 0; b < 8; ++b) {
      d |= uint64_t{static_cast<unsigned char>(packed[g * 8 + b])} << (8 * b);
    }
    if (d == 0 || d != ValuesDigest(GroupValues(layout, model, g))) continue;
    for (size_t row = g * per; row < std::min(rows, (g + 1) * per); ++row) in_sync[row] = true;
  }
  return in_sync;
}

}  // namespace rog
