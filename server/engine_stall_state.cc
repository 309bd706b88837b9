// Whether one worker is stalled, and what it waited for
// (server/engine_stall_state.h).
#include "server/engine_stall_state.h"

namespace rog {
namespace engine_internal {

void StallTracker::Report(double now) {
  if (!stalled_) since_ = now;
  stalled_ = true;
}

void StallTracker::Clear(double now) {
  Judge(-1, now);
  stalled_ = false;
  announced_ = false;
}

void StallTracker::Judge(int cause, double now) {
  if (cause_ >= 0) seconds_[cause_] += now - cause_since_;
  cause_ = cause;
  cause_since_ = now;
}

bool StallTracker::Announce() {
  if (announced_) return false;
  announced_ = true;
  return true;
}

void StallTracker::AnnounceAgain() { announced_ = false; }

double StallTracker::CauseSeconds(int cause, double now) const {
  return cause == cause_ ? seconds_[cause] + (now - cause_since_) : seconds_[cause];
}

}  // namespace engine_internal
}  // namespace rog
