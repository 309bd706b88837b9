// Row payload formats. Every multi-byte value is little-endian, written and
// read byte by byte, so the format is the same on every host.
//
//   fp32  numel × 4 bytes: the IEEE-754 bits of each element.
//   bf16  numel × 2 bytes: the upper 16 bits of each element's fp32 bits,
//         rounded to nearest, ties to even; what would round to Inf is the
//         largest finite bf16 of its sign.
//   int8  4-byte fp32 scale s = min(max|x| / 127, FLT_MAX / 128) (0 for an
//         all-zero row), then numel signed bytes
//         q = clamp(round(x / s), -127, 127); x' = q × s.
//   sign  4-byte fp32 scale s = mean|x|, then ceil(numel / 8) bytes: bit j of
//         byte k is element 8k + j, 1 for x >= 0 (x' = +s), 0 for x < 0
//         (x' = -s); unused high bits of the last byte are 0.
#include "common/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace rog {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void PutU32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint16_t ToBf16(float f) {
  const uint32_t u = FloatBits(f);
  // Round to nearest even on the 16 dropped bits (inputs are finite).
  const uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
  const uint16_t b = static_cast<uint16_t>((u + rounding) >> 16);
  // Finite values from about 3.3961e38 up round to Inf, which no receiver
  // decodes: saturate at the largest finite bf16 of the same sign.
  if ((b & 0x7F80) == 0x7F80) return static_cast<uint16_t>((b & 0x8000) | 0x7F7F);
  return b;
}

float FromBf16(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

// The largest scale Decode accepts: 127 × it stays finite.
constexpr float kMaxInt8Scale = std::numeric_limits<float>::max() / 128;

float Int8Scale(absl::Span<const float> v) {
  float max = 0;
  for (float x : v) max = std::max(max, std::fabs(x));
  // Past max|x| of about 3.376e38 the scale saturates (the extremes then
  // decode to ±127 × kMaxInt8Scale; error feedback keeps the rest).
  return std::min(max / 127.0f, kMaxInt8Scale);
}

int8_t Quantize(float x, float scale) {
  if (scale == 0) return 0;
  const float q = std::nearbyint(x / scale);
  return static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, q)));
}

float SignScale(absl::Span<const float> v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (float x : v) sum += std::fabs(x);
  return static_cast<float>(sum / static_cast<double>(v.size()));
}

absl::Status SizeError(Codec codec, size_t numel, size_t got) {
  return absl::InvalidArgumentError(absl::StrCat(CodecName(codec), " payload for a row of ", numel,
                                                 " elements must be ", EncodedSize(codec, numel),
                                                 " bytes, got ", got));
}

absl::Status ScaleError(Codec codec, float scale) {
  return absl::InvalidArgumentError(
      absl::StrCat(CodecName(codec), " row scale is ", scale,
                   "; it must be finite, >= 0 and small enough that no element overflows"));
}

absl::Status ElementError(Codec codec, size_t i) {
  return absl::InvalidArgumentError(
      absl::StrCat(CodecName(codec), " element ", i, " is not finite (NaN or Inf)"));
}

}  // namespace

absl::StatusOr<Codec> ParseCodec(absl::string_view name) {
  if (name == "fp32") return Codec::kFp32;
  if (name == "bf16") return Codec::kBf16;
  if (name == "int8") return Codec::kInt8;
  if (name == "sign") return Codec::kSign;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown codec '", name, "'; use one of: fp32, bf16, int8, sign"));
}

absl::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kFp32:
      return "fp32";
    case Codec::kBf16:
      return "bf16";
    case Codec::kInt8:
      return "int8";
    case Codec::kSign:
      return "sign";
  }
  return "unknown";
}

bool IsLossless(Codec codec) { return codec == Codec::kFp32; }

size_t EncodedSize(Codec codec, size_t numel) {
  switch (codec) {
    case Codec::kFp32:
      return 4 * numel;
    case Codec::kBf16:
      return 2 * numel;
    case Codec::kInt8:
      return 4 + numel;
    case Codec::kSign:
      return 4 + (numel + 7) / 8;
  }
  return 0;
}

void Encode(Codec codec, absl::Span<const float> values, std::string* out) {
  const size_t at = out->size();
  out->resize(at + EncodedSize(codec, values.size()));
  char* p = &(*out)[at];
  switch (codec) {
    case Codec::kFp32:
      for (size_t i = 0; i < values.size(); ++i) PutU32(FloatBits(values[i]), p + 4 * i);
      return;
    case Codec::kBf16:
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t b = ToBf16(values[i]);
        p[2 * i] = static_cast<char>(b);
        p[2 * i + 1] = static_cast<char>(b >> 8);
      }
      return;
    case Codec::kInt8: {
      const float scale = Int8Scale(values);
      PutU32(FloatBits(scale), p);
      for (size_t i = 0; i < values.size(); ++i) {
        p[4 + i] = static_cast<char>(Quantize(values[i], scale));
      }
      return;
    }
    case Codec::kSign: {
      PutU32(FloatBits(SignScale(values)), p);
      char* bits = p + 4;
      std::memset(bits, 0, (values.size() + 7) / 8);
      for (size_t i = 0; i < values.size(); ++i) {
        if (values[i] >= 0) bits[i / 8] = static_cast<char>(bits[i / 8] | (1u << (i % 8)));
      }
      return;
    }
  }
}

absl::Status Decode(Codec codec, absl::string_view bytes, absl::Span<float> out) {
  const size_t n = out.size();
  if (bytes.size() != EncodedSize(codec, n)) return SizeError(codec, n, bytes.size());
  const char* p = bytes.data();
  switch (codec) {
    case Codec::kFp32:
      for (size_t i = 0; i < n; ++i) {
        const float v = BitsFloat(GetU32(p + 4 * i));
        if (!std::isfinite(v)) return ElementError(codec, i);
        out[i] = v;
      }
      return absl::OkStatus();
    case Codec::kBf16:
      for (size_t i = 0; i < n; ++i) {
        const uint16_t b = static_cast<uint16_t>(static_cast<unsigned char>(p[2 * i]) |
                                                 static_cast<unsigned char>(p[2 * i + 1]) << 8);
        const float v = FromBf16(b);
        if (!std::isfinite(v)) return ElementError(codec, i);
        out[i] = v;
      }
      return absl::OkStatus();
    case Codec::kInt8: {
      const float scale = BitsFloat(GetU32(p));
      // A scale beyond FLT_MAX / 128 would turn q × scale into Inf.
      if (!std::isfinite(scale) || scale < 0 || scale > kMaxInt8Scale) {
        return ScaleError(codec, scale);
      }
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(p[4 + i]) * scale;
      return absl::OkStatus();
    }
    case Codec::kSign: {
      const float scale = BitsFloat(GetU32(p));
      if (!std::isfinite(scale) || scale < 0) return ScaleError(codec, scale);
      const unsigned char* bits = reinterpret_cast<const unsigned char*>(p + 4);
      if (n % 8 != 0 && (bits[n / 8] >> (n % 8)) != 0) {
        return absl::InvalidArgumentError(
            "sign payload has nonzero padding bits after the last element");
      }
      for (size_t i = 0; i < n; ++i) out[i] = (bits[i / 8] >> (i % 8)) & 1 ? scale : -scale;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown codec ", static_cast<int>(codec), "; use fp32, bf16, int8 or sign"));
}

void EncodeWithFeedback(Codec codec, absl::Span<float> residual, std::string* out,
                        absl::Span<float> decoded) {
  const size_t at = out->size();
  Encode(codec, residual, out);
  // Decode exactly what was written, with the receiver's arithmetic. Encode
  // saturates, so the encoding of finite values always decodes (codec_test
  // checks the extremes of every codec) and the status is ignored
  // deliberately; scratch keeps `decoded` optional.
  const absl::string_view written(out->data() + at, out->size() - at);
  if (decoded.empty()) {
    std::vector<float> scratch(residual.size());
    (void)Decode(codec, written, absl::MakeSpan(scratch));
    for (size_t i = 0; i < residual.size(); ++i) residual[i] -= scratch[i];
    return;
  }
  (void)Decode(codec, written, decoded);
  for (size_t i = 0; i < residual.size(); ++i) residual[i] -= decoded[i];
}

}  // namespace rog
