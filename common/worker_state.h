// A worker's side of the model (docs/design.md, "State"): its replica, one
// accumulator per row (updates not yet pushed, with their iteration count)
// and, per row, the lowest version of the other workers' updates its replica
// holds. Pure logic shared by rog::Worker and the simulator.
//
// Not thread-safe: the owner serialises access.
#ifndef ROG_COMMON_WORKER_STATE_H_
#define ROG_COMMON_WORKER_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/codec.h"
#include "common/layout.h"

namespace rog {

class WorkerState {
 public:
  // REQUIRES: initial.size() == layout.total_numel().
  WorkerState(const Layout& layout, std::vector<float> initial, uint64_t clock = 0);

  const Layout& layout() const { return *layout_; }
  // Iterations completed.
  uint64_t clock() const { return clock_; }
  const std::vector<float>& replica() const { return replica_; }
  absl::Span<const float> replica_row(RowId row) const;
  absl::Span<const float> accumulator_row(RowId row) const;

  // The spans the methods below take are the caller's buffers: they must not
  // overlap this state's replica or accumulator (replica_row() and
  // accumulator_row() views included).

  // One iteration's update (a parameter delta for the whole model): applied
  // to the replica at once and added to every row's accumulator; the clock
  // advances. REQUIRES: update.size() == total_numel.
  void ApplyLocalUpdate(absl::Span<const float> update);
  // The same with each row's part of `update` multiplied by
  // `row_weights[row]` (StaleWeight in common/protocol_rules.h): the
  // replica and the accumulator receive the weighted update alike.
  // REQUIRES: row_weights.size() == num_rows.
  void ApplyLocalUpdate(absl::Span<const float> update, absl::Span<const float> row_weights);

  // Iterations in the row's accumulator not yet pushed.
  uint64_t unpushed(RowId row) const { return clock_ - pushed_[row]; }
  // The clock up to which the row has been pushed.
  uint64_t pushed_version(RowId row) const { return pushed_[row]; }
  double AccumulatorMagnitude(RowId row) const;

  // Pushes the row's accumulator: encodes it with `codec` (appending to
  // *payload), keeps what the codec could not carry as the residual, and
  // returns the iterations it covers. `decoded` (the row's size) receives
  // what the server will fold. REQUIRES: unpushed(row) > 0 or a lossy
  // residual worth sending.
  uint32_t TakeUplink(RowId row, Codec codec, std::string* payload, absl::Span<float> decoded);

  // Applies a downlink update of `row` (other workers' updates) and records
  // the lowest version of other workers it now holds.
  void ApplyDownlink(RowId row, absl::Span<const float> decoded, uint64_t min_version);
  uint64_t known_version(RowId row) const { return known_[row]; }
  // Sets what the replica holds of the other workers' updates in `row`, as
  // the server computed it (after the team changed).
  void SetKnownVersion(RowId row, uint64_t version) { known_[row] = version; }

  // Whether every row holds the other workers' updates up to `needed`.
  bool HasAllUpTo(uint64_t needed) const;

  // A full resync of `row`: the replica becomes `values` plus what this
  // worker has not pushed yet (its accumulator).
  void ApplyValues(RowId row, absl::Span<const float> values, uint64_t min_version);
  // Undoes a TakeUplink whose batch was never applied by the server (its
  // stream broke unacknowledged): `decoded` returns to the accumulator and
  // the row's `count` iterations count as unpushed again. Undo batches in
  // reverse order of sending.
  void ReturnUplink(RowId row, absl::Span<const float> decoded, uint32_t count);
  // Restarts the clock at `clock` (a worker rejoining the team at its
  // clock): nothing counts as unpushed, but the accumulator keeps its
  // values and sends them with the row's next push.
  void Rebase(uint64_t clock);
  // The drain rule (common/protocol_rules.h, DrainKeep): keeps `keep`
  // (in (0, 1]) of what every row's accumulator holds and takes the rest
  // out of the replica as well, so that the replica holds exactly this
  // worker's pushes and the others'. The rows' unpushed counts stay.
  void KeepHeld(double keep);
  // Whether the row's accumulator holds anything non-zero.
  bool HasResidual(RowId row) const;

 private:
  const Layout* layout_;
  uint64_t clock_;
  std::vector<float> replica_;
  std::vector<float> accumulator_;
  std::vector<uint64_t> pushed_;  // per row
  std::vector<uint64_t> known_;   // per row
};

}  // namespace rog

#endif  // ROG_COMMON_WORKER_STATE_H_
