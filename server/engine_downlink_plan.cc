// Which rows go next on one worker's downlink
// (server/engine_downlink_plan.h).
#include "server/engine_downlink_plan.h"

#include <utility>

namespace rog {
namespace engine_internal {

void DownlinkPlan::StartResync(std::vector<bool> in_sync) {
  resync_next_ = 0;
  in_sync_ = std::move(in_sync);
  SkipInSync();
}

void DownlinkPlan::SkipResync() {
  resync_next_ = static_cast<RowId>(rows_);
  std::vector<bool>().swap(in_sync_);
}

void DownlinkPlan::FillResync(BatchFill* fill) {
  while (resyncing() && fill->Fits(resync_next_)) {
    fill->Add(resync_next_++);
    SkipInSync();
  }
}

// Moves the resync past the rows the worker holds already.
void DownlinkPlan::SkipInSync() {
  while (resync_next_ < in_sync_.size() && in_sync_[resync_next_]) ++resync_next_;
  if (!resyncing()) std::vector<bool>().swap(in_sync_);
}

void DownlinkPlan::Reset() {
  plan_ = Plan();
  stale_ = sends_whole_ = flush_ = false;
}

void DownlinkPlan::Replan(Selection selection) {
  plan_.Reset(std::move(selection));
  stale_ = false;
}

void DownlinkPlan::SetSendsWhole(bool whole) { sends_whole_ = whole; }

void DownlinkPlan::MarkStale() { stale_ = true; }

void DownlinkPlan::Fill(bool open, bool speculate, BatchFill* fill,
                        absl::FunctionRef<bool(RowId)> skip) {
  FillFromPlan(&plan_, open, speculate, fill, skip);
}

void DownlinkPlan::RequestFlush() { flush_ = true; }

bool DownlinkPlan::EndFlush() {
  const bool was = flush_;
  flush_ = false;
  return was;
}

}  // namespace engine_internal
}  // namespace rog
