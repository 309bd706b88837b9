// Streaming a prioritised row selection into byte-budgeted row batches,
// the way ATP sends: mandatory rows whatever the window, then the rest in
// priority order while the window is open. Shared by the simulator, rogd's
// downlink and rog::Worker's uplink.
#ifndef ROG_COMMON_BATCH_PLAN_H_
#define ROG_COMMON_BATCH_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/codec.h"
#include "common/layout.h"
#include "common/selection.h"

namespace rog {

// One direction's rows for the current iteration, in selection order, and
// how far the sender has got.
struct Plan {
  std::vector<RowCandidate> order;
  size_t mandatory = 0;  // order[0, mandatory) go whatever the window
  size_t mta_end = 0;    // order[0, mta_end) is the MTA share
  size_t next = 0;

  void Reset(Selection s) {
    order = std::move(s.order);
    mandatory = s.mandatory;
    mta_end = s.mta_end;
    next = 0;
  }
  bool done() const { return next >= order.size(); }
  // Wire bytes of the rows not sent yet.
  uint64_t bytes_left() const {
    uint64_t bytes = 0;
    for (size_t i = next; i < order.size(); ++i) bytes += order[i].wire_bytes;
    return bytes;
  }
};

// The rows of one batch, kept within the payload budget (a row larger than
// the budget travels alone).
class BatchFill {
 public:
  BatchFill(const Layout& layout, Codec codec, size_t budget)
      : layout_(layout), codec_(codec), budget_(budget) {}
  bool Fits(RowId r) const { return rows_.empty() || payload_ + Bytes(r) <= budget_; }
  void Add(RowId r) {
    rows_.push_back(r);
    payload_ += Bytes(r);
  }
  bool Has(RowId r) const { return std::find(rows_.begin(), rows_.end(), r) != rows_.end(); }
  // The rows, ascending (the wire's order).
  std::vector<RowId> Take() {
    std::sort(rows_.begin(), rows_.end());
    return std::move(rows_);
  }
  bool empty() const { return rows_.empty(); }

 private:
  uint64_t Bytes(RowId r) const { return EncodedSize(codec_, layout_.row(r).numel); }
  const Layout& layout_;
  Codec codec_;
  size_t budget_;
  std::vector<RowId> rows_;
  uint64_t payload_ = 0;
};

// Streams `plan` into `fill`: mandatory rows whatever the window, other rows
// while the window is `open` and up to the MTA share unless `speculate`;
// rows `skip` says need no sending (sent already) are passed over. Once the
// window has closed the rest of the plan is dropped: it stays accumulated.
template <typename Skip>
void FillFromPlan(Plan* plan, bool open, bool speculate, BatchFill* fill, Skip skip) {
  const size_t end = speculate ? plan->order.size() : plan->mta_end;
  while (!plan->done()) {
    const RowId row = plan->order[plan->next].row;
    if ((plan->next >= plan->mandatory && !open) || plan->next >= end) {
      plan->next = plan->order.size();
      return;
    }
    if (skip(row) || fill->Has(row)) {
      ++plan->next;
      continue;
    }
    if (!fill->Fits(row)) return;
    fill->Add(row);
    ++plan->next;
  }
}

}  // namespace rog

#endif  // ROG_COMMON_BATCH_PLAN_H_
