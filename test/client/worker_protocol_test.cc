// The worker's protocol state machine (client/worker_protocol.h) alone: rogd's
// messages are written by the test, time is a FakeClock, no stream.
#include "client/worker_protocol.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "catch2/catch.hpp"
#include "common/clock.h"
#include "common/codec.h"
#include "common/layout.h"

namespace rog {
namespace {

// The options the tests start from: worker "w1" on `clock`, batches of at
// most `batch_bytes` (`batch_seconds` of goodput; 0: always the whole),
// no replay buffer, EndIteration returning once its push has ended.
ProtocolOptions TestOptions(std::shared_ptr<const Clock> clock, size_t batch_bytes,
                            double batch_seconds) {
  ProtocolOptions o;
  o.worker_id = "w1";
  o.batch_bytes = batch_bytes;
  o.batch_seconds = batch_seconds;
  o.inflight_lead = 0.05;
  o.replay_buffer_bytes = 0;
  o.return_after_share = false;
  o.share_in_background = false;
  o.clock = std::move(clock);
  return o;
}

// A welcome to a worker that joins a team under way (SSP, S=2, or ROG,
// S=2 with a 10 s window), the model in sync already (every row listed as
// held).
pb::Welcome InSyncWelcome(const Layout& layout, bool rog) {
  pb::Welcome w;
  w.set_sync(rog ? pb::SYNC_ROG : pb::SYNC_SSP);
  w.set_staleness(2);
  w.set_mta(rog ? 0.5 : 1);
  if (rog) w.mutable_window()->set_seconds(10);
  w.set_codec(pb::CODEC_FP32);
  w.set_stream(1);
  w.set_team_ready(true);
  w.set_full_resync(true);
  for (RowId r = 0; r < layout.num_rows(); ++r) {
    w.add_in_sync_row_delta(r == 0 ? 0 : 1);
    w.add_in_sync_version_lag(0);
  }
  return w;
}

struct Fixture {
  explicit Fixture(bool return_after_share = false, bool share_in_background = false)
      : proto(Options(clock, return_after_share, share_in_background), layout,
              std::vector<float>(kNumel, 0.0f)) {}
  static ProtocolOptions Options(std::shared_ptr<const Clock> clock, bool return_after_share,
                                 bool share_in_background) {
    ProtocolOptions o = TestOptions(std::move(clock), 64, 0.005);
    o.return_after_share = return_after_share;
    o.share_in_background = share_in_background;
    return o;
  }
  // Four rows of 64 bytes: with 64-byte batches, one row per batch.
  static constexpr size_t kNumel = 64;
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  Layout layout = *Layout::Create({{"w", {4, 16}}}, 16);
  WorkerProtocol proto;
  std::vector<float> params = std::vector<float>(kNumel, 0.0f);

  void Welcome(bool rog = false) { REQUIRE(proto.OnWelcome(InSyncWelcome(layout, rog)).ok()); }
  void Directive(const pb::Directive& d) {
    pb::ServerMessage m;
    *m.mutable_directive() = d;
    REQUIRE(proto.OnMessage(m).ok());
  }
  // Begins an iteration and starts its push at once (every element's
  // update 1).
  void ComputeAndPush() {
    REQUIRE(proto.MayBegin());
    proto.Begin(clock->Now(), clock->Now(), false, 0, absl::MakeSpan(params));
    proto.StartPush(std::vector<float>(Fixture::kNumel, 1.0f));
  }
  // One iteration, begun and ended at once.
  void Iterate() {
    ComputeAndPush();
    proto.FinishPush();
  }
  // rogd's window for the next iteration: `seconds` long, the slowest
  // attached worker at `min_iteration`.
  void Window(double seconds, uint64_t min_iteration) {
    pb::Directive d;
    d.mutable_window()->set_seconds(seconds);
    d.mutable_window()->set_min_iteration(min_iteration);
    Directive(d);
  }
};

TEST_CASE("local steps count from the clock rogd detached the worker at", "[worker][protocol]") {
  Fixture f;
  f.Welcome();
  f.Iterate();  // clock 1
  // The worker is computing iteration 2 when rogd, which saw it at 1,
  // detaches it with 3 local steps: it pauses once its clock reaches 4.
  REQUIRE(f.proto.MayBegin());
  f.proto.Begin(f.clock->Now(), f.clock->Now(), false, 0, absl::MakeSpan(f.params));
  pb::Directive d;
  d.mutable_detached()->set_reason("test");
  d.mutable_detached()->set_local_steps(3);
  d.mutable_detached()->set_iteration(1);
  f.Directive(d);
  f.proto.StartPush(std::vector<float>(Fixture::kNumel, 1.0f));
  f.proto.FinishPush();
  CHECK(f.proto.clock() == 2);
  f.Iterate();
  f.Iterate();
  CHECK(f.proto.clock() == 4);
  CHECK_FALSE(f.proto.MayBegin());
  CHECK(f.proto.detached());
}

TEST_CASE("a Detached without a clock counts local steps from the worker's", "[worker][protocol]") {
  Fixture f;
  f.Welcome();
  f.Iterate();
  pb::Directive d;
  d.mutable_detached()->set_local_steps(2);
  f.Directive(d);
  f.Iterate();
  f.Iterate();
  CHECK(f.proto.clock() == 3);
  CHECK_FALSE(f.proto.MayBegin());
}

TEST_CASE("a push: progress first, then its rows; it ends once every row is on its way",
          "[worker][protocol]") {
  Fixture f;
  f.Welcome();
  f.ComputeAndPush();
  CHECK_FALSE(f.proto.PushEnds(f.clock->Now()));
  std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing();
  REQUIRE(out.size() == 2);
  CHECK(out[0].has_progress());
  CHECK(out[0].progress().iteration() == 1);
  REQUIRE(out[1].has_batch());
  CHECK(out[1].batch().seq() == 1);
  CHECK(out[1].batch().row_delta_size() == 1);  // 64-byte batches: one row each
  // SSP: every row is mandatory; the push ends once all are on their way.
  CHECK_FALSE(f.proto.PushEnds(f.clock->Now()));
  for (int k = 0; k < 3; ++k) {
    out = f.proto.TakeOutgoing();
    REQUIRE(out.size() == 1);
    CHECK(out[0].has_batch());
  }
  CHECK(f.proto.PushEnds(f.clock->Now()));
  const IterationStats stats = f.proto.FinishPush();
  CHECK(stats.iteration == 1);
  CHECK(stats.rows_up == 4);
  CHECK(stats.rows_kept == 0);
}

// Acknowledges every row batch in `out` at once, as rogd would on a fast link.
void AckAll(WorkerProtocol& proto, const std::vector<pb::WorkerMessage>& out) {
  for (const pb::WorkerMessage& m : out) {
    if (!m.has_batch()) continue;
    pb::ServerMessage ack;
    ack.mutable_ack()->set_seq(m.batch().seq());
    ack.mutable_ack()->set_bytes(m.ByteSizeLong());
    REQUIRE(proto.OnMessage(ack).ok());
  }
}

// Row batches among `out`.
int Batches(const std::vector<pb::WorkerMessage>& out) {
  int n = 0;
  for (const pb::WorkerMessage& m : out) n += m.has_batch() ? 1 : 0;
  return n;
}

TEST_CASE("uplink row batches carry a few milliseconds of the measured goodput",
          "[worker][protocol][goodput]") {
  const bool sized = GENERATE(true, false);
  CAPTURE(sized);
  auto clock = std::make_shared<FakeClock>();
  // 256 rows of 1 KiB in fp32: 16 to a 16 KiB batch, 2 to the 2 KiB floor.
  const Layout layout = *Layout::Create({{"w", {256, 256}}}, 256);
  REQUIRE(layout.num_rows() == 256);
  const size_t numel = layout.total_numel();
  WorkerProtocol proto(TestOptions(clock, 16 * 1024, sized ? 0.005 : 0), layout,
                       std::vector<float>(numel, 0.0f));
  REQUIRE(proto.OnWelcome(InSyncWelcome(layout, /*rog=*/false)).ok());
  std::vector<float> params(numel, 0.0f);
  REQUIRE(proto.MayBegin());
  proto.Begin(clock->Now(), clock->Now(), false, 0, absl::MakeSpan(params));
  proto.StartPush(std::vector<float>(numel, 1.0f));
  // No estimate yet: batches of the whole budget, up to 64 KiB in flight.
  std::vector<pb::WorkerMessage> out = proto.TakeOutgoing();
  REQUIRE(Batches(out) >= 1);
  for (const pb::WorkerMessage& m : out) {
    if (m.has_batch()) CHECK(m.batch().row_delta_size() == 16);
  }
  // The link carried them at 40 KB/s: 5 ms of it is 200 bytes, so the floor.
  uint64_t bytes = 0;
  for (const pb::WorkerMessage& m : out) bytes += m.has_batch() ? m.ByteSizeLong() : 0;
  clock->Advance(static_cast<double>(bytes) / 40e3);
  AckAll(proto, out);
  out = proto.TakeOutgoing();
  REQUIRE(Batches(out) >= 1);
  for (const pb::WorkerMessage& m : out) {
    if (m.has_batch()) CHECK(m.batch().row_delta_size() == (sized ? 2 : 16));
  }
}

TEST_CASE(
    "return_after_share: EndIteration may return once the MTA share is on its way; the "
    "window's other rows stream on until it closes",
    "[worker][protocol]") {
  const bool early = GENERATE(false, true);
  Fixture f(early, /*share_in_background=*/false);
  f.Welcome(/*rog=*/true);
  f.ComputeAndPush();
  // One-row batches: MTA 0.5 of four rows is two of them.
  int sent = 0;
  std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing();
  sent += Batches(out);
  AckAll(f.proto, out);
  CHECK_FALSE(f.proto.PushEnds(f.clock->Now()));
  out = f.proto.TakeOutgoing();
  sent += Batches(out);
  AckAll(f.proto, out);
  REQUIRE(sent == 2);
  CAPTURE(early);
  // The share is on its way and the window is open for 10 s more.
  CHECK(f.proto.PushEnds(f.clock->Now()) == early);
  if (!early) return;
  const IterationStats stats = f.proto.FinishPush();
  CHECK(stats.rows_up == 2);
  // The next iteration computes; the rest of the window's rows go meanwhile.
  out = f.proto.TakeOutgoing();
  CHECK(Batches(out) == 1);
  AckAll(f.proto, out);
  // Once the window has closed, nothing more of that push goes.
  f.clock->Advance(11);
  CHECK(Batches(f.proto.TakeOutgoing()) == 0);
}

TEST_CASE(
    "share_in_background: EndIteration waits for the mandatory rows alone; the MTA share "
    "streams while the next iteration computes",
    "[worker][protocol]") {
  Fixture f(/*return_after_share=*/true, /*share_in_background=*/true);
  f.Welcome(/*rog=*/true);
  // Iteration 1: nothing is mandatory yet (S=2), so EndIteration may return
  // before a single row is on its way.
  f.ComputeAndPush();
  CHECK(f.proto.PushEnds(f.clock->Now()));
  IterationStats stats = f.proto.FinishPush();
  CHECK(stats.rows_up == 0);
  // The share goes in the background, while the window is open: progress
  // first, then one row per batch.
  std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing();
  REQUIRE(!out.empty());
  CHECK(out[0].has_progress());
  int sent = Batches(out);
  AckAll(f.proto, out);
  out = f.proto.TakeOutgoing();
  sent += Batches(out);
  AckAll(f.proto, out);
  CHECK(sent == 2);
  // The window closes: the other two rows stay accumulated, one iteration
  // each. Iteration 2 makes them mandatory (two unpushed iterations at
  // S=2): EndIteration waits for them.
  f.clock->Advance(11);
  CHECK(Batches(f.proto.TakeOutgoing()) == 0);
  // The team keeps up (no pacing hold): the slowest is at this clock too.
  f.Window(10, 1);
  f.ComputeAndPush();
  CHECK_FALSE(f.proto.PushEnds(f.clock->Now()));
  sent = 0;
  while (!f.proto.PushEnds(f.clock->Now())) {
    out = f.proto.TakeOutgoing();
    REQUIRE(Batches(out) == 1);
    sent += 1;
    AckAll(f.proto, out);
  }
  CHECK(sent == 2);
  stats = f.proto.FinishPush();
  // Its stats count the rows that went in the background during it too.
  CHECK(stats.rows_up == 4);
}

TEST_CASE(
    "no pacing hold: a worker two iterations ahead of the slowest returns with its window open "
    "while its speculative rows stream",
    "[worker][protocol]") {
  Fixture f(/*return_after_share=*/true, /*share_in_background=*/true);
  f.Welcome(/*rog=*/true);  // the slowest attached worker at iteration 0
  // Batches the worker sends until it has nothing more, each acknowledged.
  const auto send_all = [&f] {
    int batches = 0;
    for (std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing(); !out.empty();
         out = f.proto.TakeOutgoing()) {
      batches += Batches(out);
      AckAll(f.proto, out);
    }
    return batches;
  };
  // Iteration 1 (one ahead): every row goes within the window, acknowledged.
  f.ComputeAndPush();
  REQUIRE(f.proto.PushEnds(f.clock->Now()));
  f.proto.FinishPush();
  REQUIRE(send_all() == 4);
  // Iteration 2, two ahead of the slowest, nothing mandatory: EndIteration
  // may return at once, 10 s before its window closes (until 2026-11-27 it
  // held the link until then), and the rows go while iteration 3 computes.
  f.clock->Advance(1);
  f.ComputeAndPush();
  CHECK(f.proto.PushEnds(f.clock->Now()));
  const IterationStats stats = f.proto.FinishPush();
  CHECK(stats.window_seconds == Approx(10));
  REQUIRE(f.proto.MayBegin());
  f.proto.Begin(f.clock->Now(), f.clock->Now(), false, 0, absl::MakeSpan(f.params));
  CHECK(send_all() == 4);
}

// The row of a one-row batch.
RowId RowOf(const pb::WorkerMessage& m) { return m.batch().row_delta(0); }

TEST_CASE(
    "PushNow.ahead: the rows go first while the window is open and never past it; a stall's "
    "PushNow goes whatever the window",
    "[worker][protocol]") {
  Fixture f(/*return_after_share=*/true, /*share_in_background=*/true);
  f.Welcome(/*rog=*/true);
  // The SDK tells rogd it honours PushNow.ahead.
  CHECK(f.proto.MakeHello().honours_push_ahead());
  // Iteration 1: two rows (the MTA share) go in the background, the window
  // closes with the other two accumulated.
  f.ComputeAndPush();
  REQUIRE(f.proto.PushEnds(f.clock->Now()));
  f.proto.FinishPush();
  std::vector<RowId> shared;
  for (int k = 0; k < 2; ++k) {
    const std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing();
    for (const pb::WorkerMessage& m : out) {
      if (m.has_batch()) shared.push_back(RowOf(m));
    }
    AckAll(f.proto, out);
  }
  REQUIRE(shared.size() == 2);
  f.clock->Advance(11);
  f.Window(10, 1);
  // Iteration 2: the two rows kept are mandatory now and would go first; a
  // peer will need one of the shared rows (one iteration unpushed) next.
  f.ComputeAndPush();
  pb::Directive ahead;
  ahead.mutable_push_now()->add_rows(shared[0]);
  ahead.mutable_push_now()->set_needed_version(1);
  ahead.mutable_push_now()->set_ahead(true);
  f.Directive(ahead);
  std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing();
  REQUIRE(Batches(out) == 1);
  CHECK(RowOf(out.back()) == shared[0]);
  AckAll(f.proto, out);
  // The window closes: asked ahead for the other shared row, the worker
  // sends only its mandatory rows; a stall's PushNow for it goes at once.
  f.clock->Advance(11);
  ahead.mutable_push_now()->set_rows(0, shared[1]);
  f.Directive(ahead);
  std::vector<RowId> late;
  while (!f.proto.PushEnds(f.clock->Now())) {
    out = f.proto.TakeOutgoing();
    REQUIRE(Batches(out) == 1);
    late.push_back(RowOf(out.back()));
    AckAll(f.proto, out);
  }
  CHECK(late.size() == 2);
  CHECK(std::find(late.begin(), late.end(), shared[1]) == late.end());
  f.proto.FinishPush();
  CHECK(Batches(f.proto.TakeOutgoing()) == 0);
  pb::Directive now = ahead;
  now.mutable_push_now()->set_ahead(false);
  f.Directive(now);
  out = f.proto.TakeOutgoing();
  REQUIRE(Batches(out) == 1);
  CHECK(RowOf(out.back()) == shared[1]);
}

// ATP's degenerate case. 16 rows of 64 bytes, one to a 64-byte batch, over
// a link that carries 1 KB/s: the worker's plan is about 1.2 KB on the
// wire, its MTA share (0.5) half of it, its in-flight cap after the first
// push about 150 bytes. At the slowest clock the worker sends its share
// only, unless the option is on and the whole plan crosses within the
// window: a 3 s window carries it, a 0.8 s one does not (though the taper
// would let about ten rows go in it).
TEST_CASE("send_whole_when_it_fits: the slowest worker sends every row when they fit its window",
          "[worker][protocol]") {
  struct Case {
    bool whole;
    double window;
    int rows;
  };
  const Case c = GENERATE(Case{false, 3, 8}, Case{true, 3, 16}, Case{true, 0.8, 8});
  CAPTURE(c.whole, c.window);
  auto clock = std::make_shared<FakeClock>();
  const Layout layout = *Layout::Create({{"w", {16, 16}}}, 16);
  const size_t numel = layout.total_numel();
  ProtocolOptions options = TestOptions(clock, 64, 0);
  options.return_after_share = true;
  options.share_in_background = true;
  options.send_whole_when_it_fits = c.whole;
  WorkerProtocol proto(std::move(options), layout, std::vector<float>(numel, 0.0f));
  REQUIRE(proto.OnWelcome(InSyncWelcome(layout, /*rog=*/true)).ok());
  std::vector<float> params(numel, 0.0f);
  // Everything the worker sends, each batch acknowledged once a 1 KB/s
  // link has carried it: the row batches sent.
  const auto send = [&] {
    int batches = 0;
    for (std::vector<pb::WorkerMessage> out = proto.TakeOutgoing(); !out.empty();
         out = proto.TakeOutgoing()) {
      for (const pb::WorkerMessage& m : out) {
        if (!m.has_batch()) continue;
        clock->Advance(static_cast<double>(m.ByteSizeLong()) / 1000);
        AckAll(proto, {m});
        ++batches;
      }
    }
    return batches;
  };
  const auto iterate = [&] {
    REQUIRE(proto.MayBegin());
    proto.Begin(clock->Now(), clock->Now(), false, 0, absl::MakeSpan(params));
    proto.StartPush(std::vector<float>(numel, 1.0f));
    REQUIRE(proto.PushEnds(clock->Now()));
    proto.FinishPush();
  };
  // Iteration 1, ahead of the slowest (at 0) with a 10 s window: every row
  // goes, and the link is measured.
  iterate();
  REQUIRE(send() == 16);
  // Iteration 2 at the slowest clock.
  pb::Directive d;
  d.mutable_window()->set_seconds(c.window);
  d.mutable_window()->set_min_iteration(2);
  pb::ServerMessage m;
  *m.mutable_directive() = d;
  REQUIRE(proto.OnMessage(m).ok());
  iterate();
  CHECK(send() == c.rows);
}

TEST_CASE("the final flush under ROG pushes 1/team_size of what the worker holds",
          "[worker][protocol][drain]") {
  Fixture f;
  pb::Welcome w = InSyncWelcome(f.layout, /*rog=*/true);
  const uint32_t team = GENERATE(0u, 4u);
  w.set_team_size(team);
  REQUIRE(f.proto.OnWelcome(w).ok());
  // One iteration (every element +1), nothing of it sent yet.
  f.ComputeAndPush();
  f.proto.FinishPush();
  CHECK(f.proto.replica()[0] == 1.0f);
  const double keep = f.proto.StartDrain();
  CAPTURE(team, keep);
  // An older rogd (no team size): the drain is summed.
  CHECK(keep == (team == 4 ? 0.25 : 1.0));
  CHECK(f.proto.replica()[0] == static_cast<float>(keep));
  // The flush pushes what is kept.
  REQUIRE_FALSE(f.proto.FlushStep());
  float pushed = 0;
  for (int k = 0; k < 64; ++k) {
    const std::vector<pb::WorkerMessage> out = f.proto.TakeOutgoing();
    if (out.empty()) break;
    for (const pb::WorkerMessage& m : out) {
      if (!m.has_batch()) continue;
      std::vector<float> row(16);
      REQUIRE(Decode(Codec::kFp32, m.batch().payload(), absl::MakeSpan(row)).ok());
      pushed = std::max(pushed, row[0]);
    }
    AckAll(f.proto, out);
  }
  CHECK(pushed == static_cast<float>(keep));
  CHECK(f.proto.FlushStep());
}

TEST_CASE("stale_weight: each row's update weighted by its staleness when the iteration began",
          "[worker][protocol]") {
  auto clock = std::make_shared<FakeClock>();
  ProtocolOptions o = TestOptions(clock, 64, 0.005);
  o.stale_weight = true;
  const Layout layout = *Layout::Create({{"w", {4, 16}}}, 16);
  WorkerProtocol proto(o, layout, std::vector<float>(64, 0.0f));
  REQUIRE(proto.OnWelcome(InSyncWelcome(layout, /*rog=*/false)).ok());
  std::vector<float> params(64);
  // No downlink comes: every row holds the team's updates up to 0, so the
  // iteration begun at clock k lacks k of them (S = 2 lets three begin).
  float expected = 0;
  for (uint64_t k = 0; k < 3; ++k) {
    REQUIRE(proto.MayBegin());
    proto.Begin(clock->Now(), clock->Now(), false, 0, absl::MakeSpan(params));
    CHECK(params[0] == expected);
    const float weight = 1.0f / static_cast<float>(1 + k);
    CHECK(proto.update_weight(0) == weight);
    CHECK(proto.update_weight(3) == weight);
    proto.StartPush(std::vector<float>(64, 1.0f));
    proto.FinishPush();
    expected += weight;
    CHECK(proto.replica()[63] == expected);
  }
  CHECK_FALSE(proto.MayBegin());  // at the bound
}

TEST_CASE("without stale_weight every row's update counts whole", "[worker][protocol]") {
  Fixture f;
  f.Welcome();
  f.Iterate();
  f.Iterate();
  CHECK(f.proto.update_weight(0) == 1.0f);
  CHECK(f.proto.replica()[0] == 2.0f);
}

}  // namespace
}  // namespace rog
