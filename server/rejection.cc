#include "server/rejection.h"

namespace rog {

const char* RejectionLabel(Rejection reason) {
  switch (reason) {
    case Rejection::kNone:
      return "";
    case Rejection::kNotHello:
      return "not_hello";
    case Rejection::kBadWorkerId:
      return "bad_worker_id";
    case Rejection::kBadHello:
      return "bad_hello";
    case Rejection::kLayoutMismatch:
      return "layout_mismatch";
    case Rejection::kBadSeq:
      return "bad_seq";
    case Rejection::kUnexpectedValues:
      return "unexpected_values";
    case Rejection::kBadCodec:
      return "bad_codec";
    case Rejection::kBadKind:
      return "bad_kind";
    case Rejection::kBadRowIds:
      return "bad_row_ids";
    case Rejection::kEmptyBatch:
      return "empty_batch";
    case Rejection::kBadIndex:
      return "bad_index";
    case Rejection::kBadCount:
      return "bad_count";
    case Rejection::kPayloadSize:
      return "payload_size";
    case Rejection::kBadValues:
      return "bad_values";
    case Rejection::kBadProgress:
      return "bad_progress";
    case Rejection::kSecondHello:
      return "second_hello";
    case Rejection::kUnknownMessage:
      return "unknown_message";
    case Rejection::kUnparseable:
      return "unparseable";
    case Rejection::kMessageTooLarge:
      return "message_too_large";
    case Rejection::kBadClock:
      return "bad_clock";
    case Rejection::kBadAck:
      return "bad_ack";
    case Rejection::kNonFiniteFold:
      return "non_finite_fold";
    case Rejection::kUpdateBeforeModel:
      return "update_before_model";
    case Rejection::kTooManyRows:
      return "too_many_rows";
    case Rejection::kBatchTooLarge:
      return "batch_too_large";
    case Rejection::kTooManyStreams:
      return "too_many_streams";
    case Rejection::kWorkerStreams:
      return "worker_streams";
    case Rejection::kNoHello:
      return "no_hello";
    case Rejection::kDownlinkBacklog:
      return "downlink_backlog";
    case Rejection::kTooManyWorkers:
      return "too_many_workers";
    case Rejection::kModelTooLarge:
      return "model_too_large";
    case Rejection::kEnd:
      return "";
  }
  return "";
}

const std::vector<std::string>& RejectionReasons() {
  static const std::vector<std::string> reasons = [] {
    std::vector<std::string> all;
    for (int r = static_cast<int>(Rejection::kNone) + 1; r < static_cast<int>(Rejection::kEnd);
         ++r) {
      all.push_back(RejectionLabel(static_cast<Rejection>(r)));
    }
    return all;
  }();
  return reasons;
}

}  // namespace rog
