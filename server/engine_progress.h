// What one worker says of itself: its last progress report, and its compute
// time per iteration (a moving average of what its reports say), which team
// patience and pace judge by. Part of the engine core
// (server/engine_core.h); not for use outside it.
//
// Invariants: the compute time is 0 until a report gave a sample, and is
// positive and at most kMaxComputeSeconds from then on; the totals it
// remembers are those of the last report that counted.
#ifndef ROG_SERVER_ENGINE_PROGRESS_H_
#define ROG_SERVER_ENGINE_PROGRESS_H_

#include <cstdint>

#include "proto/convert.h"

namespace rog {
namespace engine_internal {

// The largest total compute time a progress report may claim (about 30
// years); beyond it, or not finite, the report does not count for the
// compute time per iteration.
constexpr double kMaxComputeSeconds = 1e9;

class WorkerProgress {
 public:
  // The worker's progress report `p` (its clock checked already).
  void Note(const pb::Progress& p);
  // The last report (empty before the first).
  const pb::Progress& last() const { return last_; }
  // Seconds per iteration; 0 while unmeasured.
  double compute_per_iteration() const { return compute_per_iteration_; }

 private:
  void NoteComputeTime(const pb::Progress& p);

  pb::Progress last_;
  double compute_per_iteration_ = 0;
  double compute_total_seen_ = 0;
  uint64_t compute_iteration_seen_ = 0;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_PROGRESS_H_
