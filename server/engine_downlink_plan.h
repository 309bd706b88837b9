// Which rows go next on one worker's downlink, besides those it waits for
// (the engine's FirstRows): its resync, the plan of its transmission
// window, and a flush. Part of the engine core (server/engine_core.h); not
// for use outside it. The engine decides the rules (server/engine_downlink.cc);
// this keeps how far they have got.
//
// Invariants: rows [0, resync_next_) of the model's rows_ have been
// resynced (or held already: in_sync_), and the worker is resyncing()
// until every row has; in_sync_ is empty once it is done. A new record
// needs a resync (StartResync), unless it brought the model (SkipResync).
// The plan is that of the worker's last window (Replan), stale once rows
// it could carry changed (MarkStale).
#ifndef ROG_SERVER_ENGINE_DOWNLINK_PLAN_H_
#define ROG_SERVER_ENGINE_DOWNLINK_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/batch_plan.h"
#include "common/layout.h"
#include "common/selection.h"

namespace rog {
namespace engine_internal {

class DownlinkPlan {
 public:
  // For a model of `rows` rows.
  explicit DownlinkPlan(size_t rows) : rows_(rows) {}

  // --- the resync: every row's values ---------------------------------------
  // Starts it over, leaving out the rows `in_sync` marks (empty: none).
  void StartResync(std::vector<bool> in_sync);
  // The worker brought the model: nothing to resync.
  void SkipResync();
  bool resyncing() const { return resync_next_ < rows_; }
  // Adds the next rows of the resync to *fill, as many as fit.
  void FillResync(BatchFill* fill);

  // --- the window's plan -----------------------------------------------------
  // A new stream: no plan, no flush (the resync is the hello's).
  void Reset();
  // The plan of a window that opens now.
  void Replan(Selection selection);
  // Whether the plan's rows all fit what costs nothing (SendsWhole): they go
  // whole although the worker may not speculate.
  void SetSendsWhole(bool whole);
  bool sends_whole() const { return sends_whole_; }
  uint64_t bytes_left() const { return plan_.bytes_left(); }
  bool done() const { return plan_.done(); }
  // Rows the plan could carry changed since it was made (other workers
  // pushed): a window with time left replans.
  void MarkStale();
  bool stale() const { return stale_; }
  // Streams the plan into *fill (FillFromPlan).
  void Fill(bool open, bool speculate, BatchFill* fill, absl::FunctionRef<bool(RowId)> skip);

  // --- a flush: every pending row, then a Release(flushed) -------------------
  void RequestFlush();
  bool flush() const { return flush_; }
  // Ends the flush; false if none was on.
  bool EndFlush();

 private:
  void SkipInSync();

  size_t rows_;
  RowId resync_next_ = 0;
  std::vector<bool> in_sync_;
  Plan plan_;
  bool stale_ = false;
  bool sends_whole_ = false;
  bool flush_ = false;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_DOWNLINK_PLAN_H_
