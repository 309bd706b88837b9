// One worker's side of team patience (docs/design.md, "Team patience"):
// whether it is detached, since when and why, whether it said it pauses,
// how long its link has qualified to reattach, and its counts over every
// detachment. Part of the engine core (server/engine_core.h); not for use
// outside it. When to detach and reattach is the engine's
// (server/engine_patience.cc).
//
// Invariants: the per-detachment state (its start, clock, reason, probes,
// the reattach and not-paused holds, the note to the operator) starts
// over at Detach; paused_at() is kNotPaused unless the worker said it
// pauses at that clock since it was last told it is detached; the total
// detached seconds count each ended detachment once (EndDetachment).
#ifndef ROG_SERVER_ENGINE_DETACHMENT_H_
#define ROG_SERVER_ENGINE_DETACHMENT_H_

#include <cstdint>
#include <limits>
#include <string>

#include "proto/convert.h"

namespace rog {
namespace engine_internal {

class Detachment {
 public:
  static constexpr uint64_t kNotPaused = std::numeric_limits<uint64_t>::max();

  // Detached at `now`, at the worker's clock `clock`, for `reason`.
  void Detach(double now, uint64_t clock, const std::string& reason);
  // Reattached at `now`, for `reason`.
  void Reattach(double now, const std::string& reason);
  // Not detached from `now` on (reattached or evicted); nothing if it was not.
  void EndDetachment(double now);

  // A progress report of a detached worker, whose clock is now `clock`: a
  // paused report says it computes nothing now (at its clock; an older one
  // says nothing now), an iteration's report that it computed; a stall
  // report sent before it heard of the detachment says neither (rows that
  // reach it before the directive may let it start an iteration).
  void OnProgress(const pb::Progress& p, uint64_t clock);
  // It was told it is detached: it says again once it pauses.
  void ForgetPause();
  // Rows its uplink brought (counted while detached: nobody waited for them).
  void CountLateRows(uint64_t rows);
  // A probe of its link was sent.
  void CountProbe();

  // It pauses at its clock: whether its link has qualified to reattach
  // (`fits`) without a break for the hold, at `now` (HeldFor).
  bool ReattachHeld(bool fits, double now);
  // It has not said it pauses: whether its link has qualified (`fits`) for
  // `hold` seconds all the same, at `now`.
  bool UnpausedFitHeld(bool fits, double now, double hold);
  // True once per detachment: the operator is told it waits for the pause.
  bool NoteUnpaused();

  bool detached() const { return detached_; }
  double detached_at() const { return detached_at_; }
  // Its clock when detached (local steps count from it).
  uint64_t detached_clock() const { return detached_clock_; }
  // The clock it said it pauses at (Progress.paused), kNotPaused if none.
  uint64_t paused_at() const { return paused_at_; }
  double reattached_at() const { return reattached_at_; }
  // Since when its link qualifies to reattach; negative: it does not (yet).
  double reattach_ok_since() const { return reattach_ok_since_; }
  // Since when its link qualifies while it has not said it pauses.
  double unpaused_fit_since() const { return unpaused_fit_since_; }
  // Seconds detached over every detachment, up to `now`.
  double DetachedSeconds(double now) const;
  uint64_t detaches() const { return detaches_; }
  uint64_t reattaches() const { return reattaches_; }
  uint64_t late_rows() const { return late_rows_; }
  // Why it was last detached or reattached.
  const std::string& reason() const { return reason_; }
  // Probes sent during this detachment.
  uint64_t probes() const { return probes_; }

 private:
  bool detached_ = false;
  double detached_at_ = 0;
  uint64_t detached_clock_ = 0;
  uint64_t paused_at_ = kNotPaused;
  double detached_total_ = 0;  // seconds, over earlier detachments
  double reattached_at_ = -1e9;
  double reattach_ok_since_ = -1;
  double unpaused_fit_since_ = -1;
  bool unpaused_noted_ = false;
  uint64_t detaches_ = 0;
  uint64_t reattaches_ = 0;
  uint64_t late_rows_ = 0;
  std::string reason_;
  uint64_t probes_ = 0;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_DETACHMENT_H_
