// Whether one worker is stalled at the staleness bound, since when, whether
// it was told so, and rogd's view of what it waited for (StallCause): its
// stall seconds by cause. Part of the engine core (server/engine_core.h);
// not for use outside it. The rules (when a worker stalls, what it waits
// for) are the engine's (server/engine_stalls.cc).
//
// Invariants: the judged cause is -1 (none) or a StallCause, judged since
// cause_since_; seconds_ holds the time charged to each cause before
// that. A stall is announced at most once until it is cleared or the team
// forms (AnnounceAgain).
#ifndef ROG_SERVER_ENGINE_STALL_STATE_H_
#define ROG_SERVER_ENGINE_STALL_STATE_H_

#include "common/staleness.h"

namespace rog {
namespace engine_internal {

class StallTracker {
 public:
  // The worker reports a stall at `now` (a stall that began earlier goes on).
  void Report(double now);
  // The worker is not stalled (any more), at `now`: its judged cause ends,
  // and its next stall is announced again.
  void Clear(double now);
  // Charges the time since the last judgement to the cause judged then, and
  // judges `cause` from `now` on (-1: none).
  void Judge(int cause, double now);
  // Whether to tell the worker of its stall now: true once per stall.
  bool Announce();
  // The next Announce tells it again (the team formed since).
  void AnnounceAgain();

  bool stalled() const { return stalled_; }
  // When the current stall began.
  double since() const { return since_; }
  int cause() const { return cause_; }
  // Seconds charged to `cause` (a StallCause) up to `now`.
  double CauseSeconds(int cause, double now) const;

 private:
  bool stalled_ = false;
  double since_ = 0;
  bool announced_ = false;
  double seconds_[kStallCauses] = {0, 0, 0, 0};
  int cause_ = -1;
  double cause_since_ = 0;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_STALL_STATE_H_
