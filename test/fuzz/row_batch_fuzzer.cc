// Fuzzes what rogd does with the bytes of a worker's message before the
// engine sees it: the protobuf parse of a pb::WorkerMessage, then for a
// RowBatch rog::ValidateUplinkBatch (seq, kind, codec, row ids, counts,
// payload size and every row's Decode) and for a Hello
// rog::LayoutFromProto within rogd's default --max_model_bytes and
// --max_rows. Input: 1 byte of options (which layout, whether
// the stream accepts initial values, the expected seq), then the
// serialized message. Whatever is accepted must be self-consistent.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/layout.h"
#include "proto/convert.h"
#include "rog.pb.h"
#include "server/engine_core.h"
#include "server/uplink_batch.h"
#include "test/fuzz/fuzz_input.h"

namespace {

const std::vector<rog::Layout>& Layouts() {
  static const std::vector<rog::Layout>* layouts = [] {
    auto* v = new std::vector<rog::Layout>;
    // Split rows of 300 elements and a one-row bias.
    v->push_back(*rog::Layout::Create({{"w", {4, 300}}, {"b", {7}}}));
    // Tiny rows, so that short inputs reach every codec's row loop.
    v->push_back(*rog::Layout::Create({{"a", {3, 5}}, {"s", {}}, {"c", {2, 1, 3}}}, 1));
    return v;
  }();
  return *layouts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rog::FuzzInput in(data, size);
  const uint8_t options = in.Byte();
  const rog::Layout& layout = Layouts()[options & 1];
  const bool accepts_values = (options & 2) != 0;
  const uint64_t expected_seq = 1 + (options >> 2);
  const std::string bytes = in.Rest();
  rog::pb::WorkerMessage m;
  if (!m.ParseFromString(bytes)) return 0;
  if (m.has_hello()) {
    // With rogd's default limits, as the engine parses a first hello: what
    // is accepted stays within them (nothing larger was allocated).
    const rog::LayoutLimits limits = rog::EngineOptions().layout_limits;
    absl::StatusOr<rog::Layout> parsed = rog::LayoutFromProto(m.hello().layout(), limits);
    if (parsed.ok() && (parsed->num_rows() == 0 || parsed->num_rows() > limits.max_rows ||
                        parsed->total_numel() > limits.max_model_bytes / 4)) {
      std::abort();
    }
    if (!parsed.ok() && parsed.status().code() != absl::StatusCode::kInvalidArgument &&
        parsed.status().code() != absl::StatusCode::kResourceExhausted) {
      std::abort();
    }
    return 0;
  }
  if (!m.has_batch()) return 0;
  rog::UplinkBatch batch;
  rog::Rejection reason = rog::Rejection::kNone;
  const absl::Status s =
      rog::ValidateUplinkBatch(m.batch(), layout, expected_seq, accepts_values, &batch, &reason);
  if (!s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument || reason == rog::Rejection::kNone) {
      std::abort();
    }
    return 0;
  }
  if (batch.seq == 0 || batch.seq > expected_seq) std::abort();
  if (batch.seq < expected_seq) return 0;  // a duplicate, not decoded
  if (batch.rows.empty() || batch.counts.size() != batch.rows.size()) std::abort();
  size_t values = 0;
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    if (batch.rows[i] >= layout.num_rows()) std::abort();
    if (i > 0 && batch.rows[i] <= batch.rows[i - 1]) std::abort();
    values += layout.row(batch.rows[i]).numel;
  }
  if (batch.values.size() != values) std::abort();
  for (float v : batch.values) {
    if (!std::isfinite(v)) std::abort();
  }
  return 0;
}
