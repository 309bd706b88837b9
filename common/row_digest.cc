#include "common/row_digest.h"

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

}  // namespace

uint64_t RowDigest(absl::Span<const float> values) {
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

std::string PackRowDigests(absl::Span<const uint64_t> digests) {
  std::string out(digests.size() * 8, '\0');
  for (size_t k = 0; k < digests.size(); ++k) {
    for (int b = 0; b < 8; ++b) out[k * 8 + b] = static_cast<char>(digests[k] >> (8 * b));
  }
  return out;
}

absl::StatusOr<std::vector<bool>> RowsInSync(const Layout& layout, absl::Span<const float> model,
                                             absl::string_view packed) {
  const size_t rows = layout.num_rows();
  std::vector<bool> in_sync(rows, false);
  if (packed.empty()) return in_sync;
  if (packed.size() != rows * 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("row_digests holds ", packed.size(), " bytes; a model of ", rows,
                     " rows needs ", rows * 8, " (8 per row, little-endian) or none"));
  }
  for (RowId row = 0; row < rows; ++row) {
    uint64_t d = 0;
    for (int b = 0; b < 8; ++b) {
      d |= uint64_t{static_cast<unsigned char>(packed[row * 8 + b])} << (8 * b);
    }
    if (d == 0) continue;
    const RowInfo& info = layout.row(row);
    in_sync[row] = d == RowDigest(model.subspan(info.offset, info.numel));
  }
  return in_sync;
}

}  // namespace rog
