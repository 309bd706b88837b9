// What one worker says of itself (server/engine_progress.h).
#include "server/engine_progress.h"

namespace rog {
namespace engine_internal {

void WorkerProgress::Note(const pb::Progress& p) {
  last_ = p;
  NoteComputeTime(p);
}

// One sample per iteration the worker finished: its own figure for the last
// one (from its first iteration on), or, from an SDK that does not send it,
// the cumulative compute since its previous report over the iterations in
// between (from its second report on: the first is the baseline, as the
// SDK's totals run across sessions). Figures past kMaxComputeSeconds, or a
// total that runs backwards, are no sample.
void WorkerProgress::NoteComputeTime(const pb::Progress& p) {
  if (p.iteration() <= compute_iteration_seen_) return;
  const bool total_ok =
      p.compute_seconds() >= compute_total_seen_ && p.compute_seconds() <= kMaxComputeSeconds;
  double sample = p.last_compute_seconds();
  if (!(sample > 0) && total_ok && compute_iteration_seen_ > 0) {
    sample = (p.compute_seconds() - compute_total_seen_) /
             static_cast<double>(p.iteration() - compute_iteration_seen_);
  }
  const bool sampled = sample > 0 && sample <= kMaxComputeSeconds;
  if (sampled) {
    compute_per_iteration_ =
        compute_per_iteration_ > 0 ? 0.9 * compute_per_iteration_ + 0.1 * sample : sample;
  }
  if (total_ok) compute_total_seen_ = p.compute_seconds();
  if (total_ok || sampled) compute_iteration_seen_ = p.iteration();
}

}  // namespace engine_internal
}  // namespace rog
