// What rogd asked one worker to push now (PushNow), for the stalls of
// others: per row the needed version asked for, within its window
// (PushNow.ahead) or at once, and whether its last ask at once is still
// unanswered. Part of the engine core (server/engine_core.h); not for use
// outside it. Whom to ask for what is the engine's (server/engine_stalls.cc).
//
// Invariants: each row is asked for each needed version at most once at
// once and once ahead (an ask at once covers ahead too). unanswered() from
// an ask at once until a batch brings a row asked for its needed version
// or later. Everything restarts with the worker's stream (Reset).
#ifndef ROG_SERVER_ENGINE_PUSH_ASKS_H_
#define ROG_SERVER_ENGINE_PUSH_ASKS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/layout.h"
#include "proto/convert.h"

namespace rog {
namespace engine_internal {

class PushAsks {
 public:
  // A new stream, for a model of `rows` rows: nothing asked yet.
  // `honours_ahead`: Hello.honours_push_ahead.
  void Reset(size_t rows, bool honours_ahead);
  bool honours_ahead() const { return honours_ahead_; }
  // Asks for the rows of `rows` not asked for version `needed` yet (`ahead`:
  // within the worker's window) and returns the PushNow that says so; one
  // without rows asks nothing.
  pb::PushNow Ask(const std::vector<RowId>& rows, uint64_t needed, bool ahead);
  // A batch of the worker brought `rows`.
  void OnPushed(const std::vector<RowId>& rows);
  // Whether its last ask at once is unanswered (a stall waiting for it is
  // judged kStallPeerAsked).
  bool unanswered() const { return unanswered_; }

 private:
  std::vector<uint64_t> requested_;
  std::vector<uint64_t> requested_ahead_;
  bool honours_ahead_ = false;
  bool unanswered_ = false;
  uint64_t unanswered_needed_ = 0;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_PUSH_ASKS_H_
