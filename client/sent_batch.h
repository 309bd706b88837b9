// An uplink row batch as the worker keeps it after sending: enough to undo
// it (return its updates to the accumulators) or to send it again.
#ifndef ROG_CLIENT_SENT_BATCH_H_
#define ROG_CLIENT_SENT_BATCH_H_

#include <cstdint>
#include <vector>

#include "common/layout.h"
#include "proto/convert.h"

namespace rog {

struct SentBatch {
  uint64_t seq = 0;
  pb::BatchKind kind = pb::BATCH_KIND_UPDATE;
  std::vector<RowId> rows;
  std::vector<uint32_t> counts;
  std::vector<float> decoded;  // UPDATE: what the server folds, concatenated
  uint64_t bytes = 0;
  uint64_t phase = 0;    // the transmission phase that sent it
  bool in_push = false;  // formed inside EndIteration: part of that phase's push
  double sent_at = 0;
};

}  // namespace rog

#endif  // ROG_CLIENT_SENT_BATCH_H_
