// Fuzzes rog::Decode, the codecs' decoder of untrusted row payloads.
// Input: 1 byte codec (mod 4), 2 bytes numel (little-endian, mod 4097), then
// the payload. Checks that Decode never reads out of bounds, that whatever it
// accepts is finite and that re-encoding an accepted payload reproduces it
// (the formats have one encoding per decoded row, except fp32/bf16 -0.0,
// which re-encode bit-exactly too since bits are copied).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/codec.h"
#include "test/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rog::FuzzInput in(data, size);
  const rog::Codec codec = static_cast<rog::Codec>(in.Byte() % 4);
  const size_t numel = (in.Byte() | (size_t{in.Byte()} << 8)) % 4097;
  const std::string payload = in.Rest();
  std::vector<float> out(numel);
  const absl::Status s = rog::Decode(codec, payload, absl::MakeSpan(out));
  if (!s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (payload.size() != rog::EncodedSize(codec, numel)) std::abort();
  for (float v : out) {
    if (!std::isfinite(v)) std::abort();
  }
  // Lossless codecs must round-trip the bytes exactly.
  if (codec == rog::Codec::kFp32 || codec == rog::Codec::kBf16) {
    std::string again;
    rog::Encode(codec, out, &again);
    if (again != payload) std::abort();
  }
  return 0;
}
