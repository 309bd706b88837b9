// What rogd asked one worker to push (server/engine_push_asks.h).
#include "server/engine_push_asks.h"

#include <algorithm>

namespace rog {
namespace engine_internal {

void PushAsks::Reset(size_t rows, bool honours_ahead) {
  requested_.assign(rows, 0);
  requested_ahead_.assign(rows, 0);
  honours_ahead_ = honours_ahead;
  unanswered_ = false;
}

pb::PushNow PushAsks::Ask(const std::vector<RowId>& rows, uint64_t needed, bool ahead) {
  std::vector<uint64_t>& asked = ahead ? requested_ahead_ : requested_;
  pb::PushNow push;
  push.set_needed_version(needed);
  push.set_ahead(ahead);
  for (RowId row : rows) {
    if (asked[row] >= needed || requested_[row] >= needed) continue;
    asked[row] = needed;
    push.add_rows(row);
  }
  if (push.rows_size() > 0 && !ahead && !unanswered_) {
    unanswered_ = true;
    unanswered_needed_ = needed;
  }
  return push;
}

// The first row asked for since the last unanswered ask answers it.
void PushAsks::OnPushed(const std::vector<RowId>& rows) {
  if (unanswered_ && std::any_of(rows.begin(), rows.end(), [&](RowId row) {
        return requested_[row] >= unanswered_needed_;
      })) {
    unanswered_ = false;
  }
}

}  // namespace engine_internal
}  // namespace rog
