#include "server/uplink_batch.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/row_index.h"

namespace rog {

namespace {

// A refusal of the batch for `why`: InvalidArgument with `message`.
absl::Status Refuse(Rejection why, std::string message, Rejection* reason) {
  *reason = why;
  return absl::InvalidArgumentError(std::move(message));
}

// The batch's index: row ids in range and ascending, at least one, and one
// count and one version lag per row (initial values count 0).
absl::Status CheckIndex(const pb::RowBatch& b, const Layout& layout, std::vector<RowId>* rows,
                        Rejection* reason) {
  const auto fail = [&](Rejection why, std::string message) {
    return Refuse(why, std::move(message), reason);
  };
  absl::StatusOr<std::vector<RowId>> decoded = DecodeRowIds(
      absl::MakeConstSpan(b.row_delta().data(), b.row_delta_size()), layout.num_rows());
  if (!decoded.ok()) {
    return fail(Rejection::kBadRowIds,
                absl::StrCat("row ids: ", decoded.status().message(), " (the model has ",
                             layout.num_rows(), " rows)"));
  }
  *rows = *std::move(decoded);
  if (rows->empty()) return fail(Rejection::kEmptyBatch, "a row batch must carry at least one row");
  if (b.count_size() != static_cast<int>(rows->size()) ||
      b.version_lag_size() != static_cast<int>(rows->size())) {
    return fail(
        Rejection::kBadIndex,
        absl::StrCat("a batch of ", rows->size(), " rows carries ", b.count_size(), " counts and ",
                     b.version_lag_size(), " version lags; give one of each per row"));
  }
  for (int k = 0; k < b.count_size(); ++k) {
    const uint32_t c = b.count(k);
    // An UPDATE row may carry count 0: a residual of iterations already
    // counted (a lossy codec's error feedback, or updates kept across a
    // rejoin).
    if (b.kind() == pb::BATCH_KIND_VALUES && c != 0) {
      return fail(Rejection::kBadCount,
                  absl::StrCat("initial values (pb::BATCH_KIND_VALUES) carry count ", c, " in row ",
                               k, " of the batch; they count no iteration: send count 0"));
    }
  }
  return absl::OkStatus();
}

// The payload: within the decoded-size limit, exactly the rows' encoded
// size, every row decoding to finite values, into *values.
absl::Status DecodePayload(const pb::RowBatch& b, const Layout& layout,
                           const std::vector<RowId>& rows, const BatchLimits& limits,
                           std::vector<float>* values_out, Rejection* reason) {
  const auto fail = [&](Rejection why, std::string message) {
    return Refuse(why, std::move(message), reason);
  };
  const pb::Codec codec = static_cast<pb::Codec>(b.codec());
  size_t expected_bytes = 0;
  size_t values = 0;
  for (RowId r : rows) {
    expected_bytes += EncodedSize(
        static_cast<pb::Codec>(codec) == pb::CODEC_FP32 ? Codec::kFp32 : static_cast<Codec>(codec),
        layout.row(r).numel);
    values += layout.row(r).numel;
  }
  if (values > limits.max_decoded_bytes / 4) {
    *reason = Rejection::kBatchTooLarge;
    return absl::ResourceExhaustedError(
        absl::StrCat("a row batch of ", rows.size(), " rows decodes to ", values * 4,
                     " bytes; rogd takes at most ", limits.max_decoded_bytes,
                     " per batch (--max_stream_uplink_bytes): send smaller batches "
                     "(WorkerOptions.batch_bytes)"));
  }
  if (b.payload().size() != expected_bytes) {
    return fail(
        Rejection::kPayloadSize,
        absl::StrCat("payload is ", b.payload().size(), " bytes; ", rows.size(), " rows in codec ",
                     CodecName(static_cast<Codec>(codec)), " need ", expected_bytes));
  }
  values_out->resize(values);
  size_t at = 0, offset = 0;
  for (RowId r : rows) {
    const uint32_t numel = layout.row(r).numel;
    const size_t bytes = EncodedSize(static_cast<Codec>(codec), numel);
    absl::Status s =
        Decode(static_cast<Codec>(codec), absl::string_view(b.payload()).substr(offset, bytes),
               absl::MakeSpan(values_out->data() + at, numel));
    if (!s.ok()) {
      return fail(Rejection::kBadValues,
                  absl::StrCat("row ", r, " (", layout.RowName(r), "): ", s.message()));
    }
    at += numel;
    offset += bytes;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateUplinkBatch(const pb::RowBatch& b, const Layout& layout, uint64_t expected_seq,
                                 bool accepts_values, UplinkBatch* out, Rejection* reason,
                                 const BatchLimits& limits) {
  const auto fail = [&](Rejection why, std::string message) {
    *reason = why;
    return absl::InvalidArgumentError(std::move(message));
  };
  // Before anything is decoded or allocated for the batch.
  if (static_cast<uint64_t>(b.row_delta_size()) > limits.max_rows) {
    *reason = Rejection::kTooManyRows;
    return absl::ResourceExhaustedError(absl::StrCat(
        "a row batch of ", b.row_delta_size(), " rows; rogd takes at most ", limits.max_rows,
        " per batch (--max_batch_rows): send smaller batches (WorkerOptions.batch_bytes)"));
  }
  if (b.seq() > expected_seq || b.seq() == 0) {
    return fail(Rejection::kBadSeq,
                absl::StrCat("row batch seq ", b.seq(), " where ", expected_seq,
                             " was expected: seqs start at 1 and rise by 1 per "
                             "batch; after a reconnect continue from pb::Welcome's "
                             "last_applied_uplink_seq + 1"));
  }
  out->seq = b.seq();
  out->iteration = b.iteration();
  if (b.seq() < expected_seq) return absl::OkStatus();  // a duplicate: acknowledged, not applied
  if (b.kind() == pb::BATCH_KIND_VALUES) {
    if (!accepts_values) {
      return fail(Rejection::kUnexpectedValues,
                  "pb::BATCH_KIND_VALUES is only accepted from the worker asked for the initial "
                  "model (pb::Welcome.send_initial_values); send updates as pb::BATCH_KIND_UPDATE");
    }
    if (b.codec() != pb::CODEC_FP32) {
      return fail(Rejection::kBadCodec, "initial values must be pb::CODEC_FP32");
    }
  } else if (b.kind() != pb::BATCH_KIND_UPDATE) {
    return fail(Rejection::kBadKind,
                absl::StrCat("unknown batch kind ", b.kind(),
                             "; use pb::BATCH_KIND_UPDATE or pb::BATCH_KIND_VALUES"));
  }
  if (!pb::Codec_IsValid(b.codec())) {
    return fail(Rejection::kBadCodec,
                absl::StrCat("unknown codec ", b.codec(),
                             "; encode rows with the codec the Welcome named (pb::Codec: fp32, "
                             "bf16, int8 or sign)"));
  }
  std::vector<RowId> rows;
  if (absl::Status s = CheckIndex(b, layout, &rows, reason); !s.ok()) return s;
  if (absl::Status s = DecodePayload(b, layout, rows, limits, &out->values, reason); !s.ok()) {
    return s;
  }
  out->kind = b.kind();
  out->rows = std::move(rows);
  out->counts.assign(b.count().begin(), b.count().end());
  out->payload_bytes = b.payload().size();
  out->wire_bytes = b.ByteSizeLong();
  return absl::OkStatus();
}

}  // namespace rog
