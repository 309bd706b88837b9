#include "common/row_queue.h"

#include <algorithm>

namespace rog {

bool RowQueue::Push(RowId row) {
  if (queued_[row]) return false;
  queued_[row] = true;
  order_.push_back(row);
  return true;
}

void RowQueue::PopFront() {
  queued_[order_.front()] = false;
  order_.pop_front();
}

void RowQueue::Clear() {
  order_.clear();
  std::fill(queued_.begin(), queued_.end(), false);
}

}  // namespace rog
