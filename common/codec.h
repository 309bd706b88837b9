// Row codecs: how a row's float32 values travel in a row batch's payload.
//
// fp32 is lossless and the default. bf16, int8 (per-row scale) and sign
// (1 bit per element plus a per-row scale) trade accuracy for bytes; with
// EncodeWithFeedback the sender keeps what the receiver will not see in its
// accumulator (error feedback), so nothing is lost, only delayed.
#ifndef ROG_COMMON_CODEC_H_
#define ROG_COMMON_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rog {

// Values match proto/rog.proto's enum Codec.
enum class Codec : uint8_t { kFp32 = 0, kBf16 = 1, kInt8 = 2, kSign = 3 };

// "fp32", "bf16", "int8", "sign"; anything else is InvalidArgument listing them.
absl::StatusOr<Codec> ParseCodec(absl::string_view name);
absl::string_view CodecName(Codec codec);
// True only for fp32.
bool IsLossless(Codec codec);

// Exact number of bytes Encode() writes for a row of `numel` elements.
size_t EncodedSize(Codec codec, size_t numel);

// Appends the encoding of `values` to *out; it always decodes. Values
// beyond what a codec carries saturate: bf16 at ±3.3895e38 (its largest
// finite value), int8's scale at FLT_MAX / 128; with EncodeWithFeedback the
// rest stays in the residual. REQUIRES: every value finite.
void Encode(Codec codec, absl::Span<const float> values, std::string* out);

// Decodes one row of out.size() elements from untrusted `bytes`, which must
// be exactly EncodedSize(codec, out.size()) bytes. A wrong size, a
// non-finite or negative scale, a non-finite element or nonzero padding bits
// give InvalidArgument saying what was wrong; nothing is read out of bounds.
// On error `out` may be partly written: decode into scratch.
absl::Status Decode(Codec codec, absl::string_view bytes, absl::Span<float> out);

// Error feedback: encodes `residual` (appending to *out) and subtracts from it
// exactly what the receiver will decode, so what was not carried stays in
// the residual. `decoded`, when not empty (then the same size), receives the
// decoded values.
void EncodeWithFeedback(Codec codec, absl::Span<float> residual, std::string* out,
                        absl::Span<float> decoded = {});

}  // namespace rog

#endif  // ROG_COMMON_CODEC_H_
