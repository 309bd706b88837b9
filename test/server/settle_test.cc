// The engine core's deferred settle (EngineCore::set_deferred_settle): a
// batch is folded and acknowledged at once, and what follows from it (the
// stalled worker's rows and its Release) waits for Settle.
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/clock.h"
#include "proto/convert.h"
#include "server/engine_core.h"
#include "test/testing/engine_testing.h"

namespace rog {
namespace {

struct Member {
  std::shared_ptr<FakeOutbox> outbox = std::make_shared<FakeOutbox>();
  uint64_t session = 0;
  uint64_t seq = 1;
};

Member Join(EngineCore& core, const Layout& layout, const std::string& id) {
  Member m;
  pb::Hello h;
  h.set_worker_id(id);
  *h.mutable_layout() = LayoutToProto(layout);
  h.set_layout_fingerprint(layout.fingerprint());
  Rejection why = Rejection::kNone;
  absl::StatusOr<Admission> a = core.Hello(m.outbox, h, "test", &why);
  REQUIRE(a.ok());
  m.session = a->session;
  return m;
}

void Push(EngineCore& core, const Layout& layout, Member& m, pb::BatchKind kind, uint64_t iteration,
          uint32_t count) {
  UplinkBatch b;
  b.seq = m.seq++;
  b.iteration = iteration;
  b.kind = kind;
  for (RowId r = 0; r < layout.num_rows(); ++r) b.rows.push_back(r);
  b.counts.assign(layout.num_rows(), count);
  b.values.assign(layout.total_numel(), 1.0f);
  b.wire_bytes = b.values.size() * sizeof(float);
  core.Batch(m.session, b);
}

void Progress(EngineCore& core, const Member& m, uint64_t iteration, bool stalled = false) {
  pb::Progress p;
  p.set_iteration(iteration);
  p.set_stalled(stalled);
  core.Progress(m.session, p);
}

bool Released(const Member& m, uint64_t iteration) {
  for (const pb::ServerMessage& s : m.outbox->messages()) {
    if (s.has_directive() && s.directive().has_release() &&
        s.directive().release().iteration() == iteration) {
      return true;
    }
  }
  return false;
}

TEST_CASE("a deferred settle folds and acknowledges at once and releases at Settle",
          "[engine][settle]") {
  const bool deferred = GENERATE(false, true);
  CAPTURE(deferred);
  EngineOptions o;
  o.policy = SyncPolicy::kBsp;
  o.team_size = 2;
  o.clock = std::make_shared<FakeClock>();
  std::unique_ptr<EngineCore> core = *EngineCore::Create(o);
  core->set_deferred_settle(deferred);
  const Layout layout = SmallLayout();
  Member a = Join(*core, layout, "a");
  Push(*core, layout, a, pb::BATCH_KIND_VALUES, 0, 0);
  Member b = Join(*core, layout, "b");
  core->Settle();
  REQUIRE(Released(a, 0));  // the team formed

  // a finished iteration 1 and waits (BSP) for b's.
  Progress(*core, a, 1);
  Progress(*core, a, 1, /*stalled=*/true);
  Progress(*core, b, 1);
  CHECK_FALSE(Released(a, 1));
  Push(*core, layout, b, pb::BATCH_KIND_UPDATE, 1, 1);
  CHECK(b.outbox->acked() == 1);  // acknowledged at once either way
  CHECK(Released(a, 1) == !deferred);
  core->Settle();
  CHECK(Released(a, 1));
  CHECK(core->CheckInvariants().ok());
}

}  // namespace
}  // namespace rog
