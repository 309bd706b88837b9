// An uplink row batch from the wire, checked and decoded for the engine:
// what rogd's stream handlers do with every batch before the engine sees
// it, and what the simulator does with its workers' batches. Free of gRPC.
#ifndef ROG_SERVER_UPLINK_BATCH_H_
#define ROG_SERVER_UPLINK_BATCH_H_

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "common/layout.h"
#include "proto/convert.h"
#include "server/engine_core.h"
#include "server/rejection.h"

namespace rog {

// What one uplink batch may cost rogd, checked before anything is allocated
// for it (RESOURCE_EXHAUSTED beyond).
struct BatchLimits {
  // Rows listed in the batch.
  uint64_t max_rows = std::numeric_limits<uint64_t>::max();
  // Bytes the batch decodes to (4 per value): a sign-coded payload decodes
  // to 32 times its size.
  uint64_t max_decoded_bytes = std::numeric_limits<uint64_t>::max();
};

// Validates an uplink batch against the model layout and the stream's
// expected sequence number, decoding its payload into *out. On failure
// *reason says why (counted per reason, server/rejection.h) and the
// status says what was wrong and what to do. Pure: no state changes.
absl::Status ValidateUplinkBatch(const pb::RowBatch& batch, const Layout& layout,
                                 uint64_t expected_seq, bool accepts_values, UplinkBatch* out,
                                 Rejection* reason, const BatchLimits& limits = {});

}  // namespace rog

#endif  // ROG_SERVER_UPLINK_BATCH_H_
