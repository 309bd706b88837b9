// Why rogd refused what a client sent: one value per reason, each with the
// label it is counted under (StatusReply.rejected, `rogctl status`, the
// metric rog_rejected_messages_total) and that docs/operations.md, "What is
// refused, and how", lists. A reason exists only here, so a refusal cannot
// be counted under a label that nothing lists.
#ifndef ROG_SERVER_REJECTION_H_
#define ROG_SERVER_REJECTION_H_

#include <string>
#include <vector>

namespace rog {

enum class Rejection {
  kNone,  // nothing refused
  // The first message of a stream.
  kNotHello,
  kBadWorkerId,
  kBadHello,
  kLayoutMismatch,
  // Row batches (ValidateUplinkBatch).
  kBadSeq,
  kUnexpectedValues,
  kBadCodec,
  kBadKind,
  kBadRowIds,
  kEmptyBatch,
  kBadIndex,
  kBadCount,
  kPayloadSize,
  kBadValues,
  // Anything else on a stream.
  kBadProgress,
  kSecondHello,
  kUnknownMessage,
  kUnparseable,
  kMessageTooLarge,
  // What rogd knows of the worker (the engine): hello clocks, progress
  // clocks, update counts, finite folds, the order of values and updates.
  kBadClock,
  kBadAck,
  kNonFiniteFold,
  kUpdateBeforeModel,
  // Resource limits (StreamLimits, EngineOptions::max_workers and
  // layout_limits).
  kTooManyRows,
  kBatchTooLarge,
  kTooManyStreams,
  kWorkerStreams,
  kNoHello,
  kDownlinkBacklog,
  kTooManyWorkers,
  kModelTooLarge,
  kEnd,  // not a reason: one past the last; new reasons go before it
};

// The label a reason is counted under, e.g. "bad_seq"; "" for kNone and
// kEnd.
const char* RejectionLabel(Rejection reason);

// Every reason's label but kNone's, in the order above: the keys of
// StatusReply.rejected, which the metrics list with 0 before the first.
const std::vector<std::string>& RejectionReasons();

}  // namespace rog

#endif  // ROG_SERVER_REJECTION_H_
