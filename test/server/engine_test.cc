// rogd's engine in-process against hostile and out-of-order input: every
// message type with out-of-range, absurd, non-finite, contradictory and
// out-of-order fields, before and after the model exists. After each the
// engine answers, the refusal is counted under its reason, the stream ends
// with a code and a message a person can act on, and the model is exactly
// the ledger of what the engine acknowledged. Time is a FakeClock: nothing
// here depends on the machine's speed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "common/row_digest.h"
#include "common/staleness.h"
#include "common/uplink_rules.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "test/server/engine_fixtures.h"
#include "test/testing/engine_testing.h"

namespace rog {
namespace {

// The stream ended with `code`, saying `says`, counted under `reason`, and
// the model is still the ledger of what the engine acknowledged.
void RequireRefused(EngineHarness& h, const EngineHarness::Stream& s, absl::StatusCode code,
                    const std::string& reason, const std::string& says) {
  h.Settle();
  INFO("ended: " << s.outbox->end_status().ToString());
  REQUIRE(s.outbox->ended());
  CHECK(s.outbox->end_status().code() == code);
  CHECK(absl::StrContains(s.outbox->end_status().message(), says));
  CHECK(s.outbox->end_reason() == reason);
  CHECK(h.Rejected(reason) == 1);
  // Nothing of the refused message was applied.
  h.Account(s);
  CHECK(h.CheckLedger() == "");
  CHECK(h.engine().CheckInvariants().ToString() == "OK");
}

TEST_CASE("a hello whose layout is too large is refused before anything is allocated",
          "[engine][hostile]") {
  EngineHarness h(Options());
  pb::Hello hello = h.MakeHello("a");
  // One tensor of 2^24 x 2^30 elements: 64 PiB.
  hello.mutable_layout()->Clear();
  pb::TensorSpec* t = hello.mutable_layout()->add_tensors();
  t->set_name("huge");
  t->add_shape(16777216);
  t->add_shape(1073741824);
  // Within the hard limits of a layout (2^24 rows of 2^30), so it has a
  // fingerprint; rogd's own limit refuses it before the row table exists.
  hello.set_layout_fingerprint(LayoutFromProto(hello.layout())->fingerprint());
  std::string reason;
  absl::StatusOr<EngineHarness::Stream> s = h.Hello(hello, &reason);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(reason == "model_too_large");
  CHECK(absl::StrContains(s.status().message(), "--max_model_bytes"));

  // Within the hard limits but over rogd's: 2 GiB of fp32.
  hello.mutable_layout()->Clear();
  t = hello.mutable_layout()->add_tensors();
  t->set_name("big");
  t->add_shape(1 << 19);
  t->add_shape(1 << 10);
  hello.set_layout_fingerprint(LayoutFromProto(hello.layout())->fingerprint());
  s = h.Hello(hello, &reason);
  REQUIRE_FALSE(s.ok());
  CHECK(reason == "model_too_large");
  CHECK(absl::StrContains(s.status().message(), "more than 1073741824 bytes"));

  // Many one-row tensors: over --max_rows before one of them is copied.
  EngineOptions few = Options();
  few.layout_limits.max_rows = 4;
  EngineHarness small(few);
  hello = small.MakeHello("a");
  for (int k = 0; k < 5; ++k) {
    pb::TensorSpec* extra = hello.mutable_layout()->add_tensors();
    extra->set_name("extra" + std::to_string(k));
  }
  s = small.Hello(hello, &reason);
  REQUIRE_FALSE(s.ok());
  CHECK(reason == "model_too_large");
  CHECK(absl::StrContains(s.status().message(), "--max_rows=4"));
  CHECK_FALSE(small.engine().Status().has_model());
  // SmallLayout's 9 rows are over --max_rows=4 too; the first engine, with
  // the default limits, admits it after all the refusals.
  CHECK(small.Hello(small.MakeHello("a")).status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(h.Hello(h.MakeHello("a")).ok());
}

TEST_CASE("the model state is bounded: a copy per worker, versions per row and worker",
          "[engine][hostile]") {
  // SmallLayout (140 bytes, 9 rows) takes 424 bytes of state with one
  // worker record, 852 with two and 1,424 with three.
  EngineOptions o = Options();
  o.max_state_bytes = 900;
  EngineHarness h(o);
  std::string reason;
  // A first model of 100,000 one-element rows (400 KB) with its versions.
  pb::Hello rows = h.MakeHello("a");
  rows.mutable_layout()->Clear();
  pb::TensorSpec* t = rows.mutable_layout()->add_tensors();
  t->set_name("w");
  t->add_shape(100000);
  t->add_shape(1);
  rows.mutable_layout()->set_min_split_numel(1);
  rows.set_layout_fingerprint(LayoutFromProto(rows.layout())->fingerprint());
  absl::StatusOr<EngineHarness::Stream> s = h.Hello(rows, &reason);
  REQUIRE_FALSE(s.ok());
  CHECK(reason == "model_too_large");
  CHECK(absl::StrContains(s.status().message(), "--max_state_bytes"));
  EngineHarness::Stream a = *h.Hello(h.MakeHello("a"));
  // The first worker saying hello again before its model arrived starts
  // the model over: the new layout is bounded as the first was (rogd once
  // checked only while it had no worker at all).
  s = h.Hello(rows, &reason);
  REQUIRE_FALSE(s.ok());
  CHECK(reason == "model_too_large");
  CHECK(absl::StrContains(s.status().message(), "--max_state_bytes"));
  a = *h.Hello(h.MakeHello("a"));
  h.SendValues(a, Ones(h.layout()));
  h.Settle();
  CHECK(h.Hello(h.MakeHello("b")).ok());
  // rogctl status shows the state by the same formula: 140 bytes of global
  // rows, then per worker record its 140-byte copy, its copy's versions
  // (9 rows x 2 records) and its column of the global versions (9), 8
  // bytes each; two records fit 900 bytes, three would not.
  const pb::StatusReply status = h.engine().Status();
  CHECK(status.state_bytes() == 852);
  CHECK(status.state_bytes_per_worker() == 140 + 9 * 3 * 8);
  CHECK(status.model_bytes() + 2 * status.state_bytes_per_worker() == status.state_bytes());
  CHECK(status.worker_records() == 2);
  CHECK(status.max_state_bytes() == 900);
  CHECK(status.workers_within_limit() == 2);
  s = h.Hello(h.MakeHello("c"), &reason);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(reason == "too_many_workers");
  CHECK(absl::StrContains(s.status().message(), "need 1424 bytes"));
  CHECK(absl::StrContains(s.status().message(), "--max_state_bytes"));
}

TEST_CASE("hello clocks are bounded and never collide with 'no worker'", "[engine][hostile]") {
  EngineHarness h(Options());
  std::string reason;
  for (uint64_t clock : {std::numeric_limits<uint64_t>::max(), kMaxHelloClock + 1}) {
    absl::StatusOr<EngineHarness::Stream> s = h.Hello(h.MakeHello("a", clock), &reason);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(s.status().message(), "at most 281474976710656 are possible"));
    CHECK(reason == "bad_clock");
  }
  // The highest clock a hello may name works, and status reports it as it is.
  EngineHarness::Stream a = *h.Hello(h.MakeHello("a", kMaxHelloClock));
  h.SendValues(a, Ones(h.layout()));
  h.Settle();
  pb::StatusReply status = h.engine().Status();
  CHECK(status.min_iteration() == kMaxHelloClock);
  CHECK(status.max_iteration() == kMaxHelloClock);
  // Such a hello cannot stop the team: a worker joining later starts at its
  // clock, and both count on past it (until 2^48 ended every progress).
  EngineHarness::Stream b = *h.Hello(h.MakeHello("b"));
  h.Settle();
  h.Progress(a, kMaxHelloClock + 1);
  h.Progress(b, kMaxHelloClock + 1);
  h.Progress(a, kMaxHelloClock + 2);
  h.Settle();
  CHECK_FALSE(a.outbox->ended());
  CHECK_FALSE(b.outbox->ended());
  status = h.engine().Status();
  CHECK(status.min_iteration() == kMaxHelloClock + 1);
  CHECK(status.max_iteration() == kMaxHelloClock + 2);
  // A worker rogd holds there reconnects with the progress a lost stream
  // may have carried, but a hello cannot move it further.
  EngineHarness::Stream b2 = *h.Hello(h.MakeHello("b", kMaxHelloClock + 40, b.token));
  h.Settle();
  CHECK(h.engine().Status().max_iteration() == kMaxHelloClock + 40);
  absl::StatusOr<EngineHarness::Stream> far =
      h.Hello(h.MakeHello("b", kMaxHelloClock + 40 + kHelloClockLead + 1, b2.token), &reason);
  REQUIRE_FALSE(far.ok());
  CHECK(absl::StrContains(far.status().message(), "rogd holds this worker id at iteration"));
  CHECK(reason == "bad_clock");
  CHECK(h.engine().CheckInvariants().ok());
}

TEST_CASE("counting stops at 2^52", "[engine][hostile]") {
  WithModel m;
  // A progress beyond the last clock counting may reach is refused; no
  // hello or honest run comes near it (CheckHelloClock).
  m.h.Progress(m.a, kMaxClock + 1);
  RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "bad_clock",
                 "at most 4503599627370496 are possible");
}

TEST_CASE("a progress report moves the clock by at most one", "[engine][hostile]") {
  WithModel m;
  m.h.Progress(m.a, 1);
  m.h.Progress(m.a, 1);  // repeated (a stall report): fine
  m.h.Progress(m.a, 0);  // behind: ignored
  m.h.Settle();
  CHECK_FALSE(m.a.outbox->ended());
  m.h.Progress(m.a, 13);
  RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "bad_clock",
                 "rises by at most 1 per report");
  CHECK(m.h.engine().Status().max_iteration() == 1);
}

TEST_CASE("update counts are bounded by the worker's clock", "[engine][hostile]") {
  for (uint32_t count : {2u, 1000u, std::numeric_limits<uint32_t>::max()}) {
    DYNAMIC_SECTION("count " << count) {
      WithModel m;
      m.h.Progress(m.a, 1);
      m.h.UpdateAll(m.a, 2, count);
      RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "bad_count",
                     "formed at iteration 1, so at most 1 iterations can be new");
    }
  }
  SECTION("the count of the iteration just reported is fine, and not twice") {
    WithModel m;
    m.h.Progress(m.a, 1);
    m.h.UpdateAll(m.a, 2, 1);
    m.h.Settle();
    CHECK_FALSE(m.a.outbox->ended());
    m.h.Account(m.a);
    m.h.UpdateAll(m.a, 2, 1);  // iteration 1 again
    RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "bad_count",
                   "at most 0 iterations can be new");
  }
  SECTION("an update formed beyond the worker's clock is refused") {
    WithModel m;
    m.a.clock = 1;  // no Progress of iteration 1 was sent
    m.h.UpdateAll(m.a, 2, 1);
    RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "bad_clock",
                   "send the Progress of an iteration before the batches that carry it");
  }
}

TEST_CASE("finite updates that would make the model non-finite are refused whole",
          "[engine][hostile]") {
  EngineOptions options = Options();
  char dir[] = "/tmp/rog_engine_test.XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  options.checkpoint_path = std::string(dir) + "/rogd.ckpt";
  {
    WithModel m(options);
    m.h.Progress(m.a, 1);
    m.h.UpdateAll(m.a, 3e38f, 1);
    m.h.Settle();
    CHECK_FALSE(m.a.outbox->ended());
    m.h.Account(m.a);
    // The first eight rows are fine, the last (the bias) overflows: nothing
    // of the batch applies, the first rows included (the ledger says so).
    m.h.Progress(m.a, 2);
    std::vector<float> values(m.h.layout().total_numel(), -1);
    for (RowId r = 0; r < 8; ++r) values[m.h.layout().row(r).offset] = -3e38f;
    for (uint32_t j = 0; j < 3; ++j) values[m.h.layout().row(8).offset + j] = 3e38f;
    m.h.Batch(m.a, pb::BATCH_KIND_UPDATE, {0, 1, 2, 3, 4, 5, 6, 7, 8}, std::vector<uint32_t>(9, 1),
              values);
    RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "non_finite_fold",
                   "would make the global value non-finite");
    // Events the refused stream had queued after it are dropped.
    m.h.Progress(m.a, 3);
    m.h.UpdateAll(m.a, 1, 1);
    m.h.Settle();
    CHECK(m.h.engine().Status().max_iteration() == 2);
    CHECK(m.h.CheckLedger() == "");
    REQUIRE(m.h.engine().CheckpointNow().ok());
    // Its time is the engine's clock's, not the machine's.
    CHECK(m.h.engine().Status().last_checkpoint_unix() == m.h.clock().UnixNow());
  }
  // rogd loads the checkpoint it wrote.
  EngineOptions restart = Options();
  restart.checkpoint_path = options.checkpoint_path;
  absl::StatusOr<std::unique_ptr<Engine>> again = Engine::Start(restart);
  INFO(again.status().ToString());
  REQUIRE(again.ok());
  CHECK((*again)->Status().has_model());
  REQUIRE((*again)->Shutdown().ok());
}

TEST_CASE("the pending copy of another worker cannot overflow either", "[engine][hostile]") {
  WithModel m(Options(SyncPolicy::kSsp, 1));
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  // a pushes -3e38 twice and +3e38 twice: the global value stays finite
  // (1 - 3e38 + 3e38 ...), but b's pending copy, which had none of it,
  // would reach -6e38 after the second push.
  m.h.Progress(m.a, 1);
  m.h.UpdateAll(m.a, -3e38f, 1);
  m.h.Settle();
  m.h.Account(m.a);
  m.h.Progress(m.a, 2);
  m.h.UpdateAll(m.a, -3e38f, 1);
  RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "non_finite_fold", "non-finite");
  CHECK_FALSE(b.outbox->ended());
}

TEST_CASE("the first worker's stream: values and updates in the wrong order are refused",
          "[engine][hostile]") {
  SECTION("an update before the model is complete") {
    EngineHarness h(Options());
    EngineHarness::Stream a = *h.Hello(h.MakeHello("a"));
    h.Batch(a, pb::BATCH_KIND_VALUES, {0}, {0}, std::vector<float>(4, 1));
    h.UpdateAll(a, 1, 0);
    RequireRefused(h, a, absl::StatusCode::kInvalidArgument, "update_before_model",
                   "1 of 9 rows have arrived");
    // Nothing after it on that stream counts; the model is still missing.
    CHECK_FALSE(h.engine().Status().has_model());
    CHECK(a.outbox->acked() == 1);
  }
  SECTION("values after the model is complete") {
    WithModel m;
    m.h.SendValues(m.a, std::vector<float>(m.h.layout().total_numel(), 5));
    RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "unexpected_values",
                   "after the model was complete");
    CHECK(m.h.CheckLedger() == "");
  }
}

TEST_CASE("an ack of a batch never sent is refused", "[engine][hostile]") {
  WithModel m;
  pb::Ack ack;
  ack.set_seq(1000);
  m.h.engine().Ack(m.a.session, ack);
  RequireRefused(m.h, m.a, absl::StatusCode::kInvalidArgument, "bad_ack", "has sent up to seq");
}

TEST_CASE("a stream replaced by the same worker ends ABORTED, saying why", "[engine]") {
  WithModel m;
  EngineHarness::Stream again = *m.h.Hello(m.h.MakeHello("a", 0, m.a.token));
  m.h.Settle();
  REQUIRE(m.a.outbox->ended());
  CHECK(m.a.outbox->end_status().code() == absl::StatusCode::kAborted);
  CHECK(absl::StrContains(m.a.outbox->end_status().message(), "replaced by a newer stream"));
  CHECK_FALSE(again.outbox->ended());
}

// rogd moved b's clock when it rejoined; a batch b formed before it heard
// (its iteration at or below the move) counts no iteration, while its
// values are folded. After that the usual bound applies.
TEST_CASE("a batch formed before the worker heard its clock moved counts nothing",
          "[engine][rejoin]") {
  WithModel m(Options(SyncPolicy::kSsp, 1));
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  m.h.engine().Goodbye(b.session, "test");
  m.h.Settle();
  for (uint64_t k = 1; k <= 5; ++k) m.h.Progress(m.a, k);
  b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  REQUIRE(b.clock == 5);  // the team's clock
  b.clock = 2;            // formed on its old clock
  m.h.UpdateAll(b, 1, 2);
  m.h.Settle();
  REQUIRE_FALSE(b.outbox->ended());
  m.h.Account(b);
  CHECK(m.h.CheckLedger() == "");
  m.h.Progress(b, 6);
  m.h.UpdateAll(b, 1, 2);  // 5 + 2 > 6
  RequireRefused(m.h, b, absl::StatusCode::kInvalidArgument, "bad_count",
                 "at most 1 iterations can be new");
}

// A new incarnation that rejoins while its old updates are ahead of the
// slowest worker starts at its old clock, not the team's: its next
// iterations must count after the ones rogd holds.
TEST_CASE("a worker rejoins at its own clock when that is ahead of the team's",
          "[engine][rejoin]") {
  WithModel m(Options(SyncPolicy::kSsp, 1));
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Progress(m.a, 1);
  for (uint64_t k = 1; k <= 2; ++k) {
    m.h.Progress(b, k);
    m.h.UpdateAll(b, 1, 1);
  }
  m.h.Settle();
  m.h.Account(b);
  m.h.engine().Goodbye(b.session, "test");
  m.h.Settle();
  b = *m.h.Hello(m.h.MakeHello("b"));  // a new process, from clock 0
  m.h.Settle();
  CHECK(b.clock == 2);  // not a's 1
  m.h.Progress(b, 3);
  m.h.UpdateAll(b, 1, 1);
  m.h.Settle();
  CHECK_FALSE(b.outbox->ended());
  m.h.Account(b);
  CHECK(m.h.CheckLedger() == "");
}

// A worker that rejoins after leaving pushes what it kept with count 0 (its
// clock moved to the team's, so those updates count no iteration): folded,
// conserved, and delivered to the other workers although no version rises.
TEST_CASE("updates a rejoining worker kept reach the others (count 0)", "[engine][rejoin]") {
  WithModel m(Options(SyncPolicy::kSsp, 1));
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  // b leaves, and comes back as a new incarnation.
  m.h.engine().Goodbye(b.session, "test");
  m.h.Settle();
  b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  // b pushes what it kept: row 8 (the bias) only, count 0.
  m.h.Batch(b, pb::BATCH_KIND_UPDATE, {8}, {0}, std::vector<float>(3, 4));
  m.h.Settle();
  REQUIRE_FALSE(b.outbox->ended());
  m.h.Account(b);
  CHECK(m.h.CheckLedger() == "");
  // a's next iteration pulls every pending row: the bias is one of them.
  const size_t before = m.a.outbox->messages().size();
  m.h.Progress(m.a, 1);
  m.h.Settle();
  bool got_bias = false;
  const std::vector<pb::ServerMessage> sent = m.a.outbox->messages();
  for (size_t k = before; k < sent.size(); ++k) {
    if (!sent[k].has_batch() || sent[k].batch().kind() != pb::BATCH_KIND_UPDATE) continue;
    uint32_t row = 0;
    for (int i = 0; i < sent[k].batch().row_delta_size(); ++i) {
      row += sent[k].batch().row_delta(i);
      got_bias |= row == 8;
    }
  }
  CHECK(got_bias);
}

// Row digests (common/row_digest.h) of `values`, withholding `withheld`.
std::string DigestsOf(const Layout& layout, const std::vector<float>& values,
                      const std::vector<RowId>& withheld = {}) {
  std::vector<bool> w(layout.num_rows(), false);
  for (RowId row : withheld) w[row] = true;
  return RowDigests(layout, values, w);
}

// The rows of the VALUES batches a stream received, in order.
std::vector<RowId> ResyncedRows(const EngineHarness::Stream& s) {
  std::vector<RowId> rows;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (!m.has_batch() || m.batch().kind() != pb::BATCH_KIND_VALUES) continue;
    RowId row = 0;
    for (uint32_t d : m.batch().row_delta()) rows.push_back(row += d);
  }
  return rows;
}

const pb::Welcome& WelcomeOf(const std::vector<pb::ServerMessage>& sent) {
  REQUIRE(!sent.empty());
  REQUIRE(sent[0].has_welcome());
  return sent[0].welcome();
}

TEST_CASE("a joining worker that holds rows already is not sent them again", "[engine][resync]") {
  WithModel m(Options(SyncPolicy::kSsp, 1));
  const Layout& layout = m.h.layout();
  const RowId rows = static_cast<RowId>(layout.num_rows());

  // Without digests: every row comes as values.
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  CHECK(ResyncedRows(b).size() == rows);
  CHECK(WelcomeOf(b.outbox->messages()).in_sync_row_delta_size() == 0);

  // Holding the whole model: nothing comes, and the welcome gives every row
  // the version a values batch would have carried.
  pb::Hello hello = m.h.MakeHello("c");
  hello.set_row_digests(DigestsOf(layout, Ones(layout)));
  EngineHarness::Stream c = *m.h.Hello(hello);
  m.h.Settle();
  CHECK(ResyncedRows(c).empty());
  const std::vector<pb::ServerMessage> to_c = c.outbox->messages();
  const pb::Welcome& wc = WelcomeOf(to_c);
  CHECK(wc.full_resync());
  CHECK(wc.in_sync_row_delta_size() == static_cast<int>(rows));
  REQUIRE(wc.in_sync_version_lag_size() == static_cast<int>(rows));
  for (const pb::ServerMessage& msg : b.outbox->messages()) {
    if (!msg.has_batch() || msg.batch().kind() != pb::BATCH_KIND_VALUES) continue;
    for (int k = 0; k < msg.batch().version_lag_size(); ++k) {
      CHECK(msg.batch().version_lag(k) == wc.in_sync_version_lag(0));
    }
  }

  // One row changed, one not offered: exactly those two come.
  std::vector<float> mine = Ones(layout);
  mine[layout.row(3).offset] = 2;
  hello = m.h.MakeHello("d");
  hello.set_row_digests(DigestsOf(layout, mine, {5}));
  EngineHarness::Stream d = *m.h.Hello(hello);
  m.h.Settle();
  CHECK(ResyncedRows(d) == std::vector<RowId>{3, 5});
  CHECK(WelcomeOf(d.outbox->messages()).in_sync_row_delta_size() == static_cast<int>(rows) - 2);

  // Once the model moved on, the old values are in sync nowhere.
  m.h.UpdateAll(m.a, 0.5f, 1);
  m.h.Settle();
  m.h.Account(m.a);
  m.h.engine().Goodbye(c.session, "test");
  m.h.Settle();
  hello = m.h.MakeHello("c");
  hello.set_row_digests(DigestsOf(layout, Ones(layout)));
  c = *m.h.Hello(hello);
  m.h.Settle();
  CHECK(ResyncedRows(c).size() == rows);
  CHECK(m.h.CheckLedger() == "");
  CHECK(m.h.engine().CheckInvariants().ToString() == "OK");
}

// The UPDATE batches a stream received: their row ids, payloads and seqs.
struct Downlink {
  std::vector<RowId> rows;
  std::string payload;
  std::vector<uint64_t> seqs;
};
Downlink UpdatesTo(const EngineHarness::Stream& s) {
  Downlink d;
  const std::vector<pb::ServerMessage> sent = s.outbox->messages();
  for (size_t k = 0; k < sent.size(); ++k) {
    if (!sent[k].has_batch() || sent[k].batch().kind() != pb::BATCH_KIND_UPDATE) continue;
    RowId row = 0;
    for (uint32_t delta : sent[k].batch().row_delta()) d.rows.push_back(row += delta);
    d.payload += sent[k].batch().payload();
    d.seqs.push_back(sent[k].batch().seq());
  }
  return d;
}

TEST_CASE("a resumed worker gets again only the downlink it never applied", "[engine][resume]") {
  WithModel m(Options(SyncPolicy::kSsp, 1));
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  const uint64_t stream = WelcomeOf(b.outbox->messages()).stream();
  REQUIRE(stream != 0);
  // b acknowledges its resync, as the SDK does.
  uint64_t resync_seq = 0;
  for (const pb::ServerMessage& msg : b.outbox->messages()) {
    if (msg.has_batch()) resync_seq = msg.batch().seq();
  }
  REQUIRE(resync_seq > 0);
  pb::Ack ack;
  ack.set_seq(resync_seq);
  m.h.engine().Ack(b.session, ack);
  m.h.Settle();
  // a updates every row; b's next iteration pulls them.
  m.h.UpdateAll(m.a, 0.5f, 1);
  m.h.Settle();
  m.h.Account(m.a);
  m.h.Progress(b, 1);
  m.h.Settle();
  const Downlink first = UpdatesTo(b);
  REQUIRE(first.rows.size() == m.h.layout().num_rows());
  // b's stream breaks before it acknowledged anything.
  m.h.engine().Closed(b.session);
  m.h.Settle();

  struct Case {
    const char* what;
    uint64_t stream, applied;
    bool resync;        // a full resync follows
    size_t rows_again;  // update rows sent again (no resync)
  };
  const uint64_t last = first.seqs.back();
  for (const Case& c :
       {Case{"it applied none of them", stream, resync_seq, false, first.rows.size()},
        Case{"it says it applied less than it acknowledged", stream, resync_seq - 1, true, 0},
        Case{"it applied them all (the ack was lost)", stream, last, false, 0},
        Case{"another stream's account", stream + 1, 0, true, 0},
        Case{"more than was sent", stream, last + 1, true, 0}, Case{"no account", 0, 0, true, 0}}) {
    SECTION(c.what) {
      pb::Hello hello = m.h.MakeHello("b", b.clock, b.token);
      hello.set_downlink_stream(c.stream);
      hello.set_last_applied_downlink_seq(c.applied);
      EngineHarness::Stream again = *m.h.Hello(hello);
      m.h.Settle();
      const std::vector<pb::ServerMessage> sent = again.outbox->messages();
      CHECK(WelcomeOf(sent).full_resync() == c.resync);
      if (!c.resync) {
        m.h.Progress(again, 2);
        m.h.Settle();
        const Downlink all = UpdatesTo(again);
        CHECK(all.rows.size() == c.rows_again);
        if (c.rows_again == first.rows.size()) {
          // The same rows with the same values: what b lacks, exactly.
          CHECK(all.rows == first.rows);
          CHECK(all.payload == first.payload);
        }
      }
      CHECK(m.h.CheckLedger() == "");
      CHECK(m.h.engine().CheckInvariants().ToString() == "OK");
    }
  }
}

TEST_CASE("row digests of the wrong size are refused before the worker is admitted",
          "[engine][hostile]") {
  WithModel m;
  const uint32_t workers = m.h.engine().Status().workers_connected();
  for (const std::string& digests : {std::string(7, '\1'), std::string(8, '\1'),
                                     std::string(8 * m.h.layout().num_rows() + 8, '\1')}) {
    pb::Hello hello = m.h.MakeHello("b");
    hello.set_row_digests(digests);
    std::string reason;
    absl::StatusOr<EngineHarness::Stream> b = m.h.Hello(hello, &reason);
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(b.status().message(), "8 per group"));
    CHECK(reason == "bad_hello");
  }
  m.h.Settle();
  CHECK(m.h.engine().Status().workers_connected() == workers);
  CHECK(m.h.engine().CheckInvariants().ToString() == "OK");
}

TEST_CASE("a new id beyond --max_workers is refused before its row digests are read",
          "[engine][hostile]") {
  EngineOptions o = Options();
  o.max_workers = 2;
  WithModel m(o);
  REQUIRE(m.h.Hello(m.h.MakeHello("b")).ok());
  m.h.Settle();
  // Digests of the wrong size would be refused as a bad hello if rogd read
  // them (the test above): a new id gets the team's limit instead, without
  // a pass over the model.
  pb::Hello hello = m.h.MakeHello("c");
  hello.set_row_digests(std::string(7, '\1'));
  std::string reason;
  absl::StatusOr<EngineHarness::Stream> c = m.h.Hello(hello, &reason);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(c.status().message(), "rogd keeps 2 worker records (--max_workers)"));
  CHECK(reason == "too_many_workers");
  // A known id is still checked as before.
  hello.set_worker_id("b");
  absl::StatusOr<EngineHarness::Stream> b = m.h.Hello(hello, &reason);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(b.status().message(), "8 per group"));
  m.h.Settle();
  CHECK(m.h.engine().CheckInvariants().ToString() == "OK");
}

// Each row's worst staleness over the reply's workers.
std::vector<std::pair<uint64_t, RowId>> WorstByRow(const pb::StalenessReply& reply) {
  std::vector<std::pair<uint64_t, RowId>> out;
  for (const pb::RowStaleness& rs : reply.rows()) {
    uint64_t w = 0;
    for (uint64_t s : rs.staleness()) w = std::max(w, s);
    out.emplace_back(w, rs.row());
  }
  return out;
}

TEST_CASE("the staleness report's top rows are the stalest, ties in row order",
          "[engine][staleness]") {
  WithModel m(Options(SyncPolicy::kSsp, 2));
  EngineHarness::Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  m.h.Account(b);
  // a pushes rows 1, 3 and 5 for three iterations, row 7 for one; rogd
  // sends b some of that, so b's copy falls behind on some rows only.
  const Layout& layout = m.h.layout();
  for (uint64_t it = 1; it <= 3; ++it) {
    std::vector<RowId> rows =
        it == 1 ? std::vector<RowId>{1, 3, 5, 7} : std::vector<RowId>{1, 3, 5};
    std::vector<float> values;
    for (RowId r : rows) values.insert(values.end(), layout.row(r).numel, 0.25f);
    m.h.Batch(m.a, pb::BATCH_KIND_UPDATE, rows, std::vector<uint32_t>(rows.size(), 1), values);
    m.h.Progress(m.a, it);
    m.h.Settle();
  }
  pb::StalenessRequest all;
  const pb::StalenessReply full = *m.h.engine().Staleness(all);
  std::vector<std::pair<uint64_t, RowId>> expect = WorstByRow(full);
  REQUIRE(expect.size() == layout.num_rows());
  INFO(full.ShortDebugString());
  const std::vector<std::pair<uint64_t, RowId>> in_row_order = expect;
  std::stable_sort(expect.begin(), expect.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  // Else the cut below would say nothing about the order.
  REQUIRE(expect.front().first > 0);
  REQUIRE(expect != in_row_order);
  for (uint32_t top : {1u, 3u, 4u, static_cast<uint32_t>(layout.num_rows()) + 5}) {
    pb::StalenessRequest req;
    req.set_top(top);
    const pb::StalenessReply got = *m.h.engine().Staleness(req);
    const size_t keep = std::min<size_t>(top, expect.size());
    CHECK(WorstByRow(got) ==
          std::vector<std::pair<uint64_t, RowId>>(expect.begin(), expect.begin() + keep));
    for (const pb::RowStaleness& rs : got.rows()) {
      CHECK(rs.tensor() == full.rows(rs.row()).tensor());
      CHECK(rs.oldest_unpushed_age() == full.rows(rs.row()).oldest_unpushed_age());
    }
  }
}

// The team `ids` joined: the first brought the model (all ones); training
// has started.
std::vector<EngineHarness::Stream> JoinTeam(EngineHarness& h, const std::vector<std::string>& ids,
                                            bool honours_push_ahead = true) {
  std::vector<EngineHarness::Stream> w;
  for (const std::string& id : ids) {
    pb::Hello hello = h.MakeHello(id);
    hello.set_honours_push_ahead(honours_push_ahead);
    w.push_back(*h.Hello(hello));
    if (w.size() == 1) h.SendValues(w[0], Ones(h.layout()));
  }
  h.Settle();
  REQUIRE(h.engine().Status().team_ready());
  return w;
}

// Two SSP workers (S=2) with `patience` seconds of team patience: "a"
// brought the model and ran to the bound, where it stalls: it needs b's
// iteration 1 to start its 4th.
struct StalledAtBound {
  explicit StalledAtBound(double patience) : h(WithPatience(patience)) {
    a = *h.Hello(h.MakeHello("a"));
    h.SendValues(a, Ones(h.layout()));
    b = *h.Hello(h.MakeHello("b"));
    h.Settle();
    REQUIRE(h.engine().Status().team_ready());
    for (uint64_t k = 1; k <= 3; ++k) {
      h.Progress(a, k);
      h.UpdateAll(a, 1, 1);
    }
    h.Progress(a, 3, /*stalled=*/true);
    h.Settle();
  }
  static EngineOptions WithPatience(double patience) {
    EngineOptions o = Options(SyncPolicy::kSsp, 2);
    o.patience = patience;
    return o;
  }
  EngineHarness h;
  EngineHarness::Stream a, b;
};

// Team patience on the fake clock: a worker that keeps another waiting at
// the bound longer than the patience is detached, at the moment the clock
// passes it and not before.
TEST_CASE("patience detaches the holder once the wait passes it, on the fake clock",
          "[engine][patience]") {
  StalledAtBound t(5);
  EngineHarness& h = t.h;
  EngineHarness::Stream& b = t.b;
  const auto detached = [&] {
    for (const pb::ServerMessage& m : b.outbox->messages()) {
      if (m.has_directive() && m.directive().has_detached()) return true;
    }
    return false;
  };
  h.clock().Advance(4.9);
  h.Settle();
  CHECK_FALSE(detached());
  h.clock().Advance(0.2);
  h.Settle();
  CHECK(detached());
  const pb::WorkersReply workers = h.engine().Workers();
  for (const pb::WorkerInfo& w : workers.workers()) {
    CHECK(w.detached() == (w.worker_id() == "b"));
  }
}

// Acknowledges every downlink batch the stream received since the last
// call, `seconds` after they left: rogd's estimate of its downlink.
void AckDownlink(EngineHarness& h, const EngineHarness::Stream& s, double seconds,
                 uint64_t* acked_seq) {
  uint64_t seq = *acked_seq, bytes = 0;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_batch() && m.batch().seq() > *acked_seq) {
      seq = std::max<uint64_t>(seq, m.batch().seq());
      bytes += m.batch().ByteSizeLong();
    }
  }
  if (seq == *acked_seq) return;
  h.clock().Advance(seconds);
  pb::Ack ack;
  ack.set_seq(seq);
  ack.set_bytes(bytes);
  h.engine().Ack(s.session, ack);
  *acked_seq = seq;
}

bool Detached(const EngineHarness::Stream& s, std::string* reason = nullptr) {
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_directive() && m.directive().has_detached()) {
      if (reason != nullptr) *reason = m.directive().detached().reason();
      return true;
    }
  }
  return false;
}

// Acknowledges every downlink batch the stream received since the last
// call as if its link moved `rate` bytes/s: the clock advances by their
// bytes / rate first.
void AckDownlinkAt(EngineHarness& h, const EngineHarness::Stream& s, double rate,
                   uint64_t* acked_seq) {
  uint64_t bytes = 0;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_batch() && m.batch().seq() > *acked_seq) bytes += m.batch().ByteSizeLong();
  }
  AckDownlink(h, s, static_cast<double>(bytes) / rate, acked_seq);
}

bool Reattached(const EngineHarness::Stream& s) {
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_directive() && m.directive().has_reattached()) return true;
  }
  return false;
}

// Team patience judges detach and reattach by the same quantity: a holder
// whose uplink keeps bringing its MTA share within the patience (here rows
// that carry no iteration, which the waiting worker cannot use) is on a
// live link, and is detached only at twice the patience; once its link
// brings less, at the patience.
TEST_CASE("a holder on a live link is detached at twice the patience, not at the patience",
          "[engine][patience]") {
  StalledAtBound t(5);
  EngineHarness& h = t.h;
  EngineHarness::Stream& b = t.b;
  std::string reason;
  // b's uplink brings the whole model (its share at S=2 is half of it),
  // counting no iteration, 3 s into a's wait.
  h.clock().Advance(3);
  h.UpdateAll(b, 0, 0);
  h.Settle();
  h.clock().Advance(2.1);
  h.Settle();
  REQUIRE_FALSE(Detached(b));  // 5.1 s: past the patience, but the link is live
  SECTION("it goes at twice the patience") {
    for (int i = 0; i < 4; ++i) {
      h.clock().Advance(1.2);
      h.UpdateAll(b, 0, 0);
      h.Settle();
      REQUIRE_FALSE(Detached(b));  // up to 9.9 s
    }
    h.clock().Advance(0.2);
    h.Settle();
    REQUIRE(Detached(b, &reason));  // 10.1 s
    CHECK(absl::StrContains(reason, "2 times the patience"));
  }
  SECTION("it goes at the patience once its link brings less than its share") {
    h.clock().Advance(2.8);  // 7.9 s: the batch at 3 s is within the last 5 s
    h.Settle();
    REQUIRE_FALSE(Detached(b));
    h.clock().Advance(0.3);  // 8.2 s: nothing in the last 5 s
    h.Settle();
    REQUIRE(Detached(b, &reason));
    CHECK(absl::StrContains(reason, "its link brought 0 of its MTA share's"));
  }
  CHECK(h.engine().CheckInvariants().ToString() == "OK");
}

// A detach reason says what rogd saw the holder doing, so that an uplink
// that brought nothing is not read as a dead link when the holder was
// still computing or receiving: b has either reported nothing and has a's
// rows on their way to it, or finished the iteration a needs (1 s of
// compute: the patience stays at its 5 s floor) with its downlink drained
// and not pushed.
TEST_CASE("a holder's detach reason says what it was doing", "[engine][patience]") {
  for (const bool reported : {false, true}) {
    INFO("b reported its iteration: " << reported);
    StalledAtBound t(5);
    EngineHarness& h = t.h;
    EngineHarness::Stream& b = t.b;
    if (reported) {
      pb::Progress p;
      p.set_iteration(1);
      p.set_compute_seconds(1);
      p.set_last_compute_seconds(1);
      h.engine().Progress(b.session, p);
      b.clock = 1;
      h.Settle();
      uint64_t acked = 0;
      AckDownlink(h, b, 0.01, &acked);
      h.Settle();
    }
    h.clock().Advance(5.1);
    h.Settle();
    std::string reason;
    REQUIRE(Detached(b, &reason));
    INFO(reason);
    CHECK(absl::StrContains(reason, "its link brought 0 of its MTA share's"));
    if (reported) {
      CHECK(absl::StrContains(reason,
                              "; it had completed 1 iteration and was not stalled (computing, 1 "
                              "s per iteration, or pushing), with nothing from rogd on the way"));
    } else {
      CHECK(absl::StrContains(reason,
                              "; it had completed 0 iterations and was not stalled (computing or "
                              "pushing; no compute time reported yet), with "));
      CHECK(absl::StrContains(reason, " bytes from rogd queued or in flight to it"));
    }
    CHECK(h.engine().CheckInvariants().ToString() == "OK");
  }
}

// rogctl workers shows rogd's downlink to each worker: the bytes in flight
// and the round trip of its batches (here 0.25 s from send to ack).
TEST_CASE("the workers report shows the downlink's round trip and bytes in flight",
          "[engine][goodput]") {
  EngineHarness h(Options(SyncPolicy::kSsp, 2));
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
  const auto info = [&]() {
    const pb::WorkersReply reply = h.engine().Workers();
    for (const pb::WorkerInfo& i : reply.workers()) {
      if (i.worker_id() == "a") return i;
    }
    FAIL("no worker a");
    return pb::WorkerInfo();
  };
  CHECK(info().downlink_rtt() == 0);
  h.UpdateAll(w[1], 1, 1);  // b pushes every row; a's next window carries them
  h.Progress(w[1], 1);
  h.Progress(w[0], 1);
  h.Settle();
  uint64_t sent = 0;
  for (const pb::ServerMessage& m : w[0].outbox->messages()) {
    if (m.has_batch()) sent += m.batch().ByteSizeLong();
  }
  REQUIRE(sent > 0);
  CHECK(info().downlink_in_flight() == sent);
  uint64_t acked = 0;
  AckDownlink(h, w[0], 0.25, &acked);
  h.Settle();
  CHECK(info().downlink_in_flight() == 0);
  CHECK(info().downlink_rtt() == Approx(0.25));
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// Rows per UPDATE batch that `s` received after downlink seq `after`.
std::vector<int> RowsPerUpdateBatch(const EngineHarness::Stream& s, uint64_t after) {
  std::vector<int> rows;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_batch() && m.batch().kind() == pb::BATCH_KIND_UPDATE && m.batch().seq() > after) {
      rows.push_back(m.batch().row_delta_size());
    }
  }
  return rows;
}

TEST_CASE("downlink row batches carry a few milliseconds of the worker's measured goodput",
          "[engine][goodput]") {
  const bool sized = GENERATE(true, false);
  CAPTURE(sized);
  EngineOptions o = Options(SyncPolicy::kSsp, 2);
  o.batch_bytes = 16 * 1024;
  o.batch_seconds = sized ? 0.005 : 0;
  // 256 rows of 1 KiB in fp32: 16 to a 16 KiB batch, 2 to the 2 KiB floor.
  EngineHarness h(o, *Layout::Create({{"w", {256, 256}}}, 256));
  REQUIRE(h.layout().num_rows() == 256);
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
  h.UpdateAll(w[1], 1, 1);  // b pushes every row; a's next iteration pulls them
  h.Progress(w[1], 1);
  h.Progress(w[0], 1);
  h.Settle();
  // No estimate yet: batches of the whole budget, up to 64 KiB in flight.
  std::vector<int> rows = RowsPerUpdateBatch(w[0], 0);
  REQUIRE(!rows.empty());
  CHECK(rows.front() == 16);
  // a's link carries 40 KB/s: 5 ms of it is 200 bytes, so the floor.
  uint64_t acked = 0;
  AckDownlinkAt(h, w[0], 40e3, &acked);
  h.Settle();
  rows = RowsPerUpdateBatch(w[0], acked);
  REQUIRE(!rows.empty());
  for (int n : rows) CHECK(n == (sized ? 2 : 16));
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// The bytes of the whole model on the wire, as rogd counts them.
double ModelWireBytes(const Layout& layout, Codec codec) {
  double bytes = 0;
  for (RowId row = 0; row < layout.num_rows(); ++row) {
    bytes += static_cast<double>(RowWireBytes(codec, layout.row(row).numel));
  }
  return bytes;
}

// Patience in the team's units: with workers reporting 1 s of compute per
// iteration, the patience is 4 of them (kPatienceIterations), not the 0.5 s
// floor; a wait of 3.9 s detaches nobody, one of 4.1 s does.
TEST_CASE("patience is four compute times per iteration when that is above --patience",
          "[engine][patience]") {
  EngineOptions o = Options(SyncPolicy::kSsp, 2);
  o.patience = 0.5;
  EngineHarness h(o);
  EngineHarness::Stream a = *h.Hello(h.MakeHello("a"));
  h.SendValues(a, Ones(h.layout()));
  EngineHarness::Stream b = *h.Hello(h.MakeHello("b"));
  h.Settle();
  REQUIRE(h.engine().Status().team_ready());
  CHECK(h.engine().Status().patience_now() == 0.5);  // nothing measured yet
  for (uint64_t k = 1; k <= 3; ++k) {
    pb::Progress p;
    p.set_iteration(k);
    p.set_compute_seconds(1.0 * static_cast<double>(k));
    p.set_stalled(k == 3);
    h.engine().Progress(a.session, p);
    a.clock = k;
    if (k < 3) h.UpdateAll(a, 1, 1);
  }
  h.Settle();
  CHECK(h.engine().Status().patience_now() == Approx(4.0));
  CHECK(h.engine().Status().patience_iterations() == kPatienceIterations);
  h.clock().Advance(3.9);
  h.Settle();
  CHECK_FALSE(Detached(b));
  h.clock().Advance(0.2);
  h.Settle();
  std::string reason;
  REQUIRE(Detached(b, &reason));
  INFO(reason);
  CHECK(absl::StrContains(reason, "kept a waiting 4.1 s"));
  CHECK(absl::StrContains(reason, "--patience_iterations=4"));
}

// Patience is in the team's units from the first iteration on: a worker's
// own figure for the iteration it finished (Progress.last_compute_seconds)
// counts at once. From the cumulative total alone (an older SDK) the first
// report is only the baseline, and until a second one the --patience floor
// alone counts: at 5 s iterations that detached robots 0.5 s into the
// team's first wait at the bound (found in the simulator, BSP at 5 s
// iterations). Here SSP at S=2: "a" runs to the bound at iteration 3.
TEST_CASE("patience takes a worker's compute time from its first iteration on",
          "[engine][patience]") {
  EngineOptions o = Options(SyncPolicy::kSsp, 2);
  o.patience = 0.5;
  EngineHarness h(o);
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
  REQUIRE(h.engine().Status().patience_now() == 0.5);
  // a reports iteration k, `total` seconds of compute so far, `last` in k.
  const auto report = [&](uint64_t k, double total, double last) {
    pb::Progress p;
    p.set_iteration(k);
    p.set_compute_seconds(total);
    p.set_last_compute_seconds(last);
    h.engine().Progress(w[0].session, p);
    w[0].clock = k;
  };
  SECTION("with the worker's own figure") {
    report(1, 5, 5);
    CHECK(h.engine().Status().patience_now() == Approx(20.0));
    for (uint64_t k = 1; k <= 3; ++k) {
      if (k > 1) report(k, 5.0 * static_cast<double>(k), 5);
      h.UpdateAll(w[0], 1, 1);
    }
    h.Progress(w[0], 3, /*stalled=*/true);  // a needs b's iteration 1
    h.Settle();
    h.clock().Advance(19.9);
    h.Settle();
    CHECK_FALSE(Detached(w[1]));
    h.clock().Advance(0.2);
    h.Settle();
    std::string reason;
    REQUIRE(Detached(w[1], &reason));
    CHECK(absl::StrContains(reason, "kept a waiting 20.1 s"));
  }
  SECTION("from the cumulative total alone, from the second report on") {
    report(1, 5, 0);
    CHECK(h.engine().Status().patience_now() == 0.5);
    report(2, 10, 0);
    CHECK(h.engine().Status().patience_now() == Approx(20.0));
  }
  SECTION("an absurd figure is no sample, and a later honest one counts") {
    report(1, 5, 2e9);
    CHECK(h.engine().Status().patience_now() == 0.5);
    report(2, 10, 5);
    CHECK(h.engine().Status().patience_now() == Approx(20.0));
  }
  CHECK(h.engine().CheckInvariants().ToString() == "OK");
}

// A worker that reports absurd compute times (hostile or broken) cannot
// stretch the team's patience: rogd takes the lower median over the
// attached workers and ignores totals that are not finite or beyond 1e9 s.
TEST_CASE("absurd compute times do not stretch the patience", "[engine][patience][hostile]") {
  EngineOptions o = Options(SyncPolicy::kRog, 3);
  o.patience = 0.5;
  EngineHarness h(o);
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b", "c"});
  const double inf = std::numeric_limits<double>::infinity();
  const double totals[3][2] = {{1, 2}, {1e8, 9e8}, {1, 2}};  // b: 8e8 s per iteration
  for (uint64_t k = 1; k <= 2; ++k) {
    for (size_t i = 0; i < w.size(); ++i) {
      pb::Progress p;
      p.set_iteration(k);
      p.set_compute_seconds(totals[i][k - 1]);
      h.engine().Progress(w[i].session, p);
      w[i].clock = k;
    }
  }
  h.Settle();
  CHECK(h.engine().Status().patience_now() == Approx(4.0));
  // A report past 1e9 s, or infinite, is no sample at all.
  for (double total : {2e9, inf, std::nan("")}) {
    pb::Progress p;
    p.set_iteration(3);
    p.set_compute_seconds(total);
    h.engine().Progress(w[0].session, p);
    h.engine().Progress(w[2].session, p);
    h.Settle();
    CHECK(h.engine().Status().patience_now() == Approx(4.0));
  }
}

// One membership rule for every policy: a detached SSP worker reattaches
// once its link moves the MTA share (half the model at S=2) within half the
// patience, though the whole model, which SSP sends, takes longer.
TEST_CASE("a detached SSP worker reattaches on the MTA share, not the whole model",
          "[engine][patience]") {
  StalledAtBound t(5);
  EngineHarness& h = t.h;
  EngineHarness::Stream& b = t.b;
  h.clock().Advance(5.1);
  h.Settle();
  REQUIRE(Detached(b));
  h.Pause(b, 0);
  // The MTA share at S=2 is half the model: at 0.3 models/s it takes
  // 1.67 s, within half the patience (2.5 s); the model takes 3.3 s.
  const double model = ModelWireBytes(h.layout(), Codec::kFp32);
  REQUIRE(MembershipShareBytes(2, static_cast<uint64_t>(model)) == Approx(0.5 * model));
  const double rate = 0.3 * model;
  uint64_t acked = 0;
  for (int i = 0; i < 100 && !Reattached(b); ++i) {
    AckDownlinkAt(h, b, rate, &acked);
    h.clock().Advance(0.3);  // the downlink idles: a probe follows
    h.Settle();
  }
  CHECK(Reattached(b));
}

// rogd detached b while b computed its first iteration (a's wait passed the
// patience, and b's link brought nothing). Reattaching moves b's clock to
// the team's (3) and credits b's iterations up to it, so rogd waits until
// b says it pauses: until then b may still be computing iteration 1, whose
// updates would be credited without being in the global rows.
TEST_CASE("a detached worker is reattached only once it says it pauses", "[engine][patience]") {
  std::ostringstream log;
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  struct Restore {
    std::shared_ptr<spdlog::logger> logger;
    ~Restore() { spdlog::set_default_logger(logger); }
  } restore{previous};
  const auto signs = [&] {
    const std::string text = log.str();
    size_t n = 0;
    for (size_t at = text.find("has not said it pauses"); at != std::string::npos;
         at = text.find("has not said it pauses", at + 1)) {
      ++n;
    }
    return n;
  };
  StalledAtBound t(5);
  EngineHarness& h = t.h;
  EngineHarness::Stream& b = t.b;
  EngineHarness::Stream& a = t.a;
  h.clock().Advance(5.1);
  h.Settle();
  REQUIRE(Detached(b));
  const double rate = 0.3 * ModelWireBytes(h.layout(), Codec::kFp32);  // fits, as above
  uint64_t acked = 0, a_acked = 0;
  const auto link_fits_for = [&](double seconds) {
    for (double t = 0; t < seconds && !Reattached(b); t += 0.3) {
      AckDownlinkAt(h, a, rate, &a_acked);  // a holds what b pushed
      AckDownlinkAt(h, b, rate, &acked);
      h.clock().Advance(0.3);
      h.Settle();
    }
  };
  link_fits_for(0.3);
  CHECK(signs() == 0);  // the rest of an iteration is no news
  link_fits_for(10);
  CHECK_FALSE(Reattached(b));  // its link fits, but it may be computing
  CHECK(signs() == 1);         // a patience (5 s) of it is: the operator hears once
  // A stall report it sent before it heard of the detachment says nothing:
  // rows that reached it before the directive may have let it start.
  h.Progress(b, 0, /*stalled=*/true);
  link_fits_for(10);
  CHECK_FALSE(Reattached(b));
  h.Progress(b, 1);  // it was computing: iteration 1 is done
  h.UpdateAll(b, 1, 1);
  h.Pause(b, 0);  // an old pause (below its clock) says nothing now
  link_fits_for(10);
  CHECK_FALSE(Reattached(b));
  h.Pause(b, 1);  // now it pauses
  link_fits_for(10);
  REQUIRE(Reattached(b));
  CHECK(signs() == 1);
  for (const pb::ServerMessage& m : b.outbox->messages()) {
    if (m.has_directive() && m.directive().has_reattached()) {
      CHECK(m.directive().reattached().iteration() == 3);  // a's clock
    }
  }
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
  CHECK(h.engine().CheckInvariants().ToString() == "OK");
}

// Team pace on the fake clock: b's uplink moves 5 bytes/s, so its share
// takes seconds; the team would run far faster without it, so with
// --detach_speedup it is detached, but not within the pace's grace of the
// team's start (links not yet measured by attached traffic): 2 s for short
// iterations, four compute times for long ones (the team's units).
TEST_CASE("the team pace detaches the slowest link, not within its grace of the start",
          "[engine][patience]") {
  for (const double compute : {0.01, 1.5}) {
    const double grace = compute < 0.5 ? 2.0 : 4 * compute;
    INFO("compute " << compute << " s per iteration, grace " << grace << " s");
    EngineOptions o = Options(SyncPolicy::kRog, 3);
    o.patience = 10;
    o.detach_speedup = 1.5;
    EngineHarness h(o);
    std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b", "c"});
    std::vector<uint64_t> acked(3, 0);
    const double uplink[3] = {1e6, 5, 1e6};  // bytes/s, as each worker measures
    const auto iteration = [&](uint64_t k) {
      for (size_t i = 0; i < w.size(); ++i) {
        pb::Progress p;
        p.set_iteration(k);
        p.set_compute_seconds(compute * static_cast<double>(k));
        p.set_last_compute_seconds(compute);
        p.set_uplink_goodput(uplink[i]);
        h.engine().Progress(w[i].session, p);
        w[i].clock = k;
        h.UpdateAll(w[i], 1, 1);
      }
      h.Settle();
      for (size_t i = 0; i < w.size(); ++i) AckDownlink(h, w[i], 0.001, &acked[i]);
      h.clock().Advance(0.1);
      h.Settle();
    };
    const double ready = h.clock().Now();
    // Every link is measured and every compute time known after a few
    // iterations; the pace still waits for its grace.
    double detached_at = -1;
    for (uint64_t k = 1; k <= 100 && detached_at < 0; ++k) {
      iteration(k);
      if (Detached(w[1])) detached_at = h.clock().Now();
    }
    std::string reason;
    REQUIRE(Detached(w[1], &reason));
    INFO("detached " << detached_at - ready << " s after the start");
    CHECK(detached_at - ready >= grace);
    CHECK(detached_at - ready < grace + 0.3);
    CHECK(reason.find("--detach_speedup=1.5") != std::string::npos);
    CHECK_FALSE(Detached(w[0]));
    CHECK_FALSE(Detached(w[2]));
  }
}

// The PushNow directives stream `s` received: rows and needed versions.
std::vector<pb::PushNow> PushNows(const EngineHarness::Stream& s) {
  std::vector<pb::PushNow> out;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_directive() && m.directive().has_push_now()) out.push_back(m.directive().push_now());
  }
  return out;
}

// The windows stream `s` received as directives, in order.
std::vector<pb::Window> Windows(const EngineHarness::Stream& s) {
  std::vector<pb::Window> out;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_directive() && m.directive().has_window()) out.push_back(m.directive().window());
  }
  return out;
}

// What a worker's next push reads to decide whether it may speculate
// (MaySpeculate): the slowest attached clock, current when the slowest
// moves, not as of the worker's own last report.
TEST_CASE("when the slowest clock moves, every other attached worker gets a fresh window",
          "[engine][window]") {
  EngineHarness h(Options(SyncPolicy::kRog, 2));
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
  h.Progress(w[0], 1);  // a at 1, b at 0: the slowest is at 0
  h.Settle();
  const std::vector<pb::Window> before = Windows(w[0]);
  REQUIRE(!before.empty());
  CHECK(before.back().min_iteration() == 0);
  h.Progress(w[1], 1);  // b reaches 1: a reports nothing, yet hears of it
  h.Settle();
  const std::vector<pb::Window> after = Windows(w[0]);
  REQUIRE(after.size() == before.size() + 1);
  CHECK(after.back().min_iteration() == 1);
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// Rows of update batches stream `s` received after its first `from` messages.
size_t UpdateRowsAfter(const EngineHarness::Stream& s, size_t from) {
  size_t rows = 0;
  const std::vector<pb::ServerMessage> messages = s.outbox->messages();
  for (size_t k = from; k < messages.size(); ++k) {
    const pb::ServerMessage& m = messages[k];
    if (m.has_batch() && m.batch().kind() == pb::BATCH_KIND_UPDATE) {
      rows += static_cast<size_t>(m.batch().row_delta_size());
    }
  }
  return rows;
}

// Workers w[0] ("a") and w[1] ("b") both complete iteration k; only a
// pushes its rows (every row, +1).
void BothComputeOnlyAPushes(EngineHarness& h, std::vector<EngineHarness::Stream>& w, uint64_t k) {
  h.Progress(w[1], k);
  h.Progress(w[0], k);
  h.UpdateAll(w[0], 1, 1);
  h.Settle();
}

// ROG at S = 2: "a" computes its 4th iteration (clock 3) and will need b's
// rows up to version 2 to start its 5th. b has computed 3 iterations and
// pushed none. With push_ahead rogd asks b for them now, within b's window
// (PushNow.ahead), if b's SDK said it honours that; otherwise only once a
// stalls, and then a's stall asks again without `ahead`.
TEST_CASE("push_ahead asks holders for what a computing worker will need next", "[engine][stall]") {
  for (const bool honours : {false, true}) {
    for (const bool ahead : {false, true}) {
      INFO("push_ahead " << ahead << ", b honours it " << honours);
      EngineOptions o = Options(SyncPolicy::kRog, 2);
      o.push_ahead = ahead;
      EngineHarness h(o);
      std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"}, honours);
      // a pushes every iteration; b pushes nothing.
      const auto iteration = [&](uint64_t k) { BothComputeOnlyAPushes(h, w, k); };
      iteration(1);
      iteration(2);
      // At clock 2 a needs version 1 next; b (at 2) has it and has not pushed.
      const size_t asked_at_2 = PushNows(w[1]).size();
      iteration(3);
      const std::vector<pb::PushNow> asked = PushNows(w[1]);
      if (!ahead || !honours) {
        CHECK(asked.empty());
      } else {
        REQUIRE(asked.size() >= 1);
        CHECK(asked_at_2 >= 1);
        CHECK(asked.front().needed_version() == 1);
        CHECK(asked.back().needed_version() == 2);
        CHECK(static_cast<size_t>(asked.back().rows_size()) == h.layout().num_rows());
        for (const pb::PushNow& p : asked) CHECK(p.ahead());
        // a, whose pushes are current, is asked for nothing; b is asked for
        // each row once per needed version (a batch makes rogd look again).
        CHECK(PushNows(w[0]).empty());
        h.UpdateAll(w[0], 0, 0);
        h.Settle();
        CHECK(PushNows(w[1]).size() == asked.size());
      }
      // a finishes its 4th iteration and stalls before its 5th on b's rows
      // up to version 2: asked now (without `ahead`) in every case, each
      // row once.
      h.Progress(w[0], 4);
      h.Progress(w[0], 4, /*stalled=*/true);
      h.Settle();
      size_t now_rows = 0;
      for (const pb::PushNow& p : PushNows(w[1])) {
        if (p.ahead()) continue;
        CHECK(p.needed_version() == 2);
        now_rows += static_cast<size_t>(p.rows_size());
      }
      CHECK(now_rows == h.layout().num_rows());
      h.AccountAll();
      CHECK(h.CheckLedger() == "");
    }
  }
}

// ROG at S = 3: a computes at clock 5 and will need version 3 next; b (at
// 4) and c (at 3) have computed it and pushed nothing. Only b, one
// iteration behind a, is asked for a: c, two behind, would be asked for
// nearly every row every iteration on what is then the slowest link (a's
// stall asks it if it must).
TEST_CASE("push_ahead asks no holder more than one iteration behind", "[engine][stall]") {
  EngineOptions o = Options(SyncPolicy::kRog, 3);
  o.staleness = 3;
  o.push_ahead = true;
  EngineHarness h(o);
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b", "c"});
  for (uint64_t k = 1; k <= 5; ++k) {
    if (k <= 3) h.Progress(w[2], k);
    if (k <= 4) h.Progress(w[1], k);
    h.Progress(w[0], k);
    h.UpdateAll(w[0], 1, 1);
    h.Settle();
  }
  const auto asked_for = [&](const EngineHarness::Stream& s, uint64_t version) {
    size_t n = 0;
    for (const pb::PushNow& p : PushNows(s)) n += p.needed_version() == version ? 1 : 0;
    return n;
  };
  CHECK(asked_for(w[1], 3) == 1);
  CHECK(asked_for(w[2], 3) == 0);
  // For version 2 (what a at clock 4, and b at 4, needed next) c was one
  // iteration behind: asked, once.
  CHECK(asked_for(w[2], 2) == 1);
}

// ROG at S = 2: a pushes every iteration, b (as far as a) pushes nothing.
// Once a has finished its 3rd iteration it cannot start its 4th without
// b's rows up to version 1. With ask_before_report rogd asks b for them
// as a's progress arrives (PushNow without `ahead`, every row once), and
// a's stall report then asks nothing more; without it, only the report
// asks.
TEST_CASE("ask_before_report asks holders once a worker finishes an iteration it cannot follow",
          "[engine][stall]") {
  const bool early = GENERATE(false, true);
  INFO("ask_before_report " << early);
  EngineOptions o = Options(SyncPolicy::kRog, 2);
  o.ask_before_report = early;
  EngineHarness h(o);
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
  const auto iteration = [&](uint64_t k) { BothComputeOnlyAPushes(h, w, k); };
  iteration(1);
  iteration(2);
  // a may start its 3rd (version 0 needed): nobody is asked.
  CHECK(PushNows(w[1]).empty());
  iteration(3);
  const std::vector<pb::PushNow> before_report = PushNows(w[1]);
  h.Progress(w[0], 3, /*stalled=*/true);
  h.Settle();
  const std::vector<pb::PushNow> all = PushNows(w[1]);
  CHECK(before_report.size() == (early ? 1u : 0u));
  REQUIRE(all.size() == 1);
  CHECK(all.front().needed_version() == 1);
  CHECK_FALSE(all.front().ahead());
  CHECK(static_cast<size_t>(all.front().rows_size()) == h.layout().num_rows());
  CHECK(PushNows(w[0]).empty());
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// The stall path on the fake clock: a waits at the bound for b's iteration
// 1. rogd charges the wait to b's compute until b completes it, then to the
// ask (PushNow) until b's first asked row arrives, then to b's uplink until
// the last arrives; rogd delivers at once here, so its downlink takes none.
TEST_CASE("rogd splits a stall along its path: compute, ask, push, delivery", "[engine][stall]") {
  StalledAtBound t(0);
  EngineHarness& h = t.h;
  const auto seconds = [&](StallCause cause) {
    const pb::WorkersReply reply = h.engine().Workers();
    for (const pb::WorkerInfo& w : reply.workers()) {
      if (w.worker_id() != "a") continue;
      switch (cause) {
        case kStallPeerCompute:
          return w.stall_peer_compute_seconds();
        case kStallPeerAsked:
          return w.stall_peer_asked_seconds();
        case kStallPeerUplink:
          return w.stall_peer_uplink_seconds();
        case kStallDownlink:
          return w.stall_downlink_seconds();
      }
    }
    return -1.0;
  };
  const auto released = [&] {  // a's release to start its 4th iteration
    for (const pb::ServerMessage& m : t.a.outbox->messages()) {
      if (m.has_directive() && m.directive().has_release() &&
          m.directive().release().iteration() == 3) {
        return true;
      }
    }
    return false;
  };
  REQUIRE_FALSE(released());
  h.clock().Advance(1.0);  // b computes its first iteration
  h.Settle();
  h.Progress(t.b, 1);
  h.Settle();
  REQUIRE(PushNows(t.b).size() == 1);
  h.clock().Advance(0.5);  // the ask on its way to b and b's queue
  h.Settle();
  CHECK(seconds(kStallPeerAsked) == Approx(0.5));
  // b's first batch holds one of the rows asked: the rest are on their way.
  const RowId last = static_cast<RowId>(h.layout().num_rows() - 1);
  h.Batch(t.b, pb::BATCH_KIND_UPDATE, {0}, {1}, std::vector<float>(h.layout().row(0).numel, 1));
  h.Settle();
  h.clock().Advance(0.25);
  h.Settle();
  CHECK_FALSE(released());
  std::vector<RowId> rest;
  size_t numel = 0;
  for (RowId row = 1; row <= last; ++row) {
    rest.push_back(row);
    numel += h.layout().row(row).numel;
  }
  h.Batch(t.b, pb::BATCH_KIND_UPDATE, rest, std::vector<uint32_t>(rest.size(), 1),
          std::vector<float>(numel, 1));
  h.Settle();
  CHECK(released());
  CHECK(seconds(kStallPeerCompute) == Approx(1.0));
  CHECK(seconds(kStallPeerAsked) == Approx(0.5));
  CHECK(seconds(kStallPeerUplink) == Approx(0.25));
  CHECK(seconds(kStallDownlink) == 0);
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// ROG at S = 2, both at clock 3 (so a may not speculate): b's push of its
// three iterations arrives after a's plan for the iteration was made. With
// downlink_lookahead a gets the rows now, since it needs version 2 to start
// its next iteration; without it they wait for a's next progress or stall.
TEST_CASE("downlink_lookahead sends a computing worker what it will need next", "[engine][stall]") {
  for (const bool ahead : {false, true}) {
    INFO("downlink_lookahead " << ahead);
    EngineOptions o = Options(SyncPolicy::kRog, 2);
    o.downlink_lookahead = ahead;
    EngineHarness h(o);
    std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
    for (uint64_t k = 1; k <= 3; ++k) {
      h.Progress(w[1], k);
      h.Progress(w[0], k);
    }
    h.Settle();
    const size_t before = w[0].outbox->messages().size();
    h.UpdateAll(w[1], 1, 3);
    h.Settle();
    CHECK(UpdateRowsAfter(w[0], before) == (ahead ? h.layout().num_rows() : 0));
    h.AccountAll();
    CHECK(h.CheckLedger() == "");
    CHECK(h.engine().CheckInvariants().ToString() == "OK");
  }
}

// ATP's degenerate case on rogd's downlink: ROG at S = 2, a and b both at
// clock 1, so a may not speculate; b's push of every row is pending for a.
// The rows rogd sends a from then on, each batch acknowledged 10 ms after
// it went, until it sends nothing more.
size_t RowsToTheSlowest(const Layout& layout, bool whole) {
  EngineOptions o = Options(SyncPolicy::kRog, 2);
  o.send_whole_when_it_fits = whole;
  EngineHarness h(o, layout);
  std::vector<EngineHarness::Stream> w = JoinTeam(h, {"a", "b"});
  h.Progress(w[1], 1);
  h.UpdateAll(w[1], 1, 1);
  h.Settle();
  const size_t before = w[0].outbox->messages().size();
  h.Progress(w[0], 1);
  h.Settle();
  uint64_t acked = 0;
  for (size_t sent = 0; sent != w[0].outbox->messages().size();) {
    sent = w[0].outbox->messages().size();
    AckDownlink(h, w[0], 0.01, &acked);
    h.Settle();
  }
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
  CHECK(h.engine().CheckInvariants().ToString() == "OK");
  return UpdateRowsAfter(w[0], before);
}

// The small model's plan (nine rows, under 200 bytes) fits the downlink's
// first in-flight limit (64 KiB) many times over: with
// send_whole_when_it_fits a gets every row, without it its MTA share. A
// plan of 256 KiB (256 rows of 1 KiB) fits neither that limit nor a window
// (none is set yet): a gets its MTA share either way.
TEST_CASE("send_whole_when_it_fits: rogd sends the slowest worker every pending row if they fit",
          "[engine][window]") {
  const Layout small = EngineHarness(Options()).layout();
  const size_t share = RowsToTheSlowest(small, false);
  CHECK(share > 0);
  CHECK(share < small.num_rows());
  CHECK(RowsToTheSlowest(small, true) == small.num_rows());
  const Layout large = *Layout::Create({{"w", {256, 256}}}, 256);
  const size_t large_share = RowsToTheSlowest(large, false);
  CHECK(large_share == 128);
  CHECK(RowsToTheSlowest(large, true) == large_share);
}

}  // namespace
}  // namespace rog
