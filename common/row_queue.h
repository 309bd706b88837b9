// A queue of rows, each at most once: the SDK's rows a stalled peer asked
// for and its rows asked for ahead of a peer's need (PushNow, forced and
// ahead), in the order they were asked for.
//
// Invariants: a row is queued (contains) exactly when it is in the queue,
// and it is there at most once; every row is below the size given at
// construction. Not thread-safe.
#ifndef ROG_COMMON_ROW_QUEUE_H_
#define ROG_COMMON_ROW_QUEUE_H_

#include <cstddef>
#include <deque>
#include <vector>

#include "common/layout.h"

namespace rog {

class RowQueue {
 public:
  // For rows 0 to num_rows - 1; empty.
  explicit RowQueue(size_t num_rows = 0) : queued_(num_rows, false) {}

  bool empty() const { return order_.empty(); }
  bool contains(RowId row) const { return queued_[row]; }
  // The row queued first; only when not empty.
  RowId front() const { return order_.front(); }

  // Queues `row` at the back unless it is queued already; true when added.
  bool Push(RowId row);
  // Takes the front row off the queue; only when not empty.
  void PopFront();
  // Empties the queue.
  void Clear();

 private:
  std::deque<RowId> order_;
  std::vector<bool> queued_;  // per row: in order_
};

}  // namespace rog

#endif  // ROG_COMMON_ROW_QUEUE_H_
