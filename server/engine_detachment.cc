// One worker's side of team patience (server/engine_detachment.h).
#include "server/engine_detachment.h"

#include "common/protocol_rules.h"

namespace rog {
namespace engine_internal {

void Detachment::Detach(double now, uint64_t clock, const std::string& reason) {
  detached_ = true;
  detached_at_ = now;
  detached_clock_ = clock;
  reattach_ok_since_ = unpaused_fit_since_ = -1;
  unpaused_noted_ = false;
  probes_ = 0;
  ++detaches_;
  reason_ = reason;
}

void Detachment::Reattach(double now, const std::string& reason) {
  EndDetachment(now);
  paused_at_ = kNotPaused;
  reattached_at_ = now;
  ++reattaches_;
  reason_ = reason;
  reattach_ok_since_ = -1;
}

void Detachment::EndDetachment(double now) {
  if (!detached_) return;
  detached_ = false;
  detached_total_ += now - detached_at_;
}

void Detachment::OnProgress(const pb::Progress& p, uint64_t clock) {
  if (p.paused()) {
    if (p.iteration() == clock) paused_at_ = clock;
  } else if (!p.stalled()) {
    paused_at_ = kNotPaused;
  }
}

void Detachment::ForgetPause() { paused_at_ = kNotPaused; }

void Detachment::CountLateRows(uint64_t rows) {
  if (detached_) late_rows_ += rows;
}

void Detachment::CountProbe() { ++probes_; }

bool Detachment::ReattachHeld(bool fits, double now) {
  unpaused_fit_since_ = -1;
  return HeldFor(fits, now, &reattach_ok_since_);
}

bool Detachment::UnpausedFitHeld(bool fits, double now, double hold) {
  return HeldFor(fits, now, &unpaused_fit_since_, hold);
}

bool Detachment::NoteUnpaused() {
  if (unpaused_noted_) return false;
  unpaused_noted_ = true;
  return true;
}

double Detachment::DetachedSeconds(double now) const {
  return detached_total_ + (detached_ ? now - detached_at_ : 0);
}

}  // namespace engine_internal
}  // namespace rog
