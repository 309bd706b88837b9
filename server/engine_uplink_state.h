// One worker's uplink as rogd applied it: the last row batch applied and
// the last one a checkpoint holds (uplink seqs), what its batches brought
// in all, and what they brought lately (team patience judges a holder's
// link by it: DetachHolder). Part of the engine core
// (server/engine_core.h); not for use outside it.
//
// Invariants: durable() <= last_applied(); the seqs go on across streams
// and incarnations (a worker that comes back resends what was not
// applied, exactly once).
#ifndef ROG_SERVER_ENGINE_UPLINK_STATE_H_
#define ROG_SERVER_ENGINE_UPLINK_STATE_H_

#include <cstdint>

#include "common/goodput.h"

namespace rog {
namespace engine_internal {

class Uplink {
 public:
  // A record restored from a checkpoint that holds it up to uplink seq `seq`.
  void Restore(uint64_t seq);
  // Batch `seq` was applied: `rows` rows, `bytes` wire bytes.
  void Applied(uint64_t seq, uint64_t rows, uint64_t bytes);
  // `bytes` arrived at `now`, kept for `horizon` seconds (team patience).
  void NoteArrival(double now, uint64_t bytes, double horizon);
  // A checkpoint holds everything applied.
  void MarkDurable();

  uint64_t last_applied() const { return last_applied_; }
  uint64_t durable() const { return durable_; }
  uint64_t rows() const { return rows_; }
  uint64_t bytes() const { return bytes_; }
  const ArrivalWindow& arrivals() const { return arrivals_; }

 private:
  uint64_t last_applied_ = 0;
  uint64_t durable_ = 0;
  uint64_t rows_ = 0;
  uint64_t bytes_ = 0;
  ArrivalWindow arrivals_;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_UPLINK_STATE_H_
