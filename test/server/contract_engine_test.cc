// The statements proto/rog.proto's comments make about what rogd sends or
// refuses, checked on the engine in-process (FakeOutbox, FakeClock): one
// TEST_CASE per statement, named by the message and field it is about and
// quoting the statement. Exact values wherever the code defines them;
// nothing here depends on the machine's speed. Where the engine does
// something other than the proto said, the proto was reworded to what the
// code does (2026-12-03) and a comment says so.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "common/codec.h"
#include "common/layout.h"
#include "common/mta.h"
#include "common/protocol_rules.h"
#include "common/row_index.h"
#include "test/server/engine_fixtures.h"
#include "test/testing/engine_testing.h"

namespace rog {
namespace {

using Stream = EngineHarness::Stream;

// The team `ids` joined: the first brought the model (all ones); training
// has started.
std::vector<Stream> JoinTeam(EngineHarness& h, const std::vector<std::string>& ids) {
  std::vector<Stream> w;
  for (const std::string& id : ids) {
    w.push_back(*h.Hello(h.MakeHello(id)));
    if (w.size() == 1) h.SendValues(w[0], Ones(h.layout()));
  }
  h.Settle();
  REQUIRE(h.engine().Status().team_ready());
  return w;
}

// `rows`, each row's elements set to `value`, as a batch of `count` per row.
void Push(EngineHarness& h, Stream& s, const std::vector<RowId>& rows, uint32_t count,
          float value = 1) {
  std::vector<float> values;
  for (RowId row : rows) values.insert(values.end(), h.layout().row(row).numel, value);
  h.Batch(s, pb::BATCH_KIND_UPDATE, rows, std::vector<uint32_t>(rows.size(), count), values);
}

std::vector<RowId> Range(RowId first, RowId end) {
  std::vector<RowId> rows;
  for (RowId row = first; row < end; ++row) rows.push_back(row);
  return rows;
}

// The row ids a batch carries.
std::vector<RowId> RowsOf(const pb::RowBatch& b) {
  absl::StatusOr<std::vector<RowId>> rows =
      DecodeRowIds(absl::MakeConstSpan(b.row_delta().data(), b.row_delta_size()),
                   std::numeric_limits<uint32_t>::max());
  REQUIRE(rows.ok());
  return *rows;
}

// The row batches stream `s` received after its first `from` messages, of
// `kind` (UNSPECIFIED: any).
std::vector<pb::RowBatch> BatchesTo(const Stream& s,
                                    pb::BatchKind kind = pb::BATCH_KIND_UNSPECIFIED,
                                    size_t from = 0) {
  std::vector<pb::RowBatch> out;
  const std::vector<pb::ServerMessage> sent = s.outbox->messages();
  for (size_t k = from; k < sent.size(); ++k) {
    if (!sent[k].has_batch()) continue;
    if (kind == pb::BATCH_KIND_UNSPECIFIED || sent[k].batch().kind() == kind) {
      out.push_back(sent[k].batch());
    }
  }
  return out;
}

// Every row the UPDATE batches to `s` carried (after its first `from`
// messages), in the order sent.
std::vector<RowId> UpdateRowsTo(const Stream& s, size_t from = 0) {
  std::vector<RowId> rows;
  for (const pb::RowBatch& b : BatchesTo(s, pb::BATCH_KIND_UPDATE, from)) {
    for (RowId row : RowsOf(b)) rows.push_back(row);
  }
  return rows;
}

// The directives of one kind stream `s` received, in order, e.g.
// DirectivesTo(s, &pb::Directive::has_window, &pb::Directive::window).
template <typename T>
std::vector<T> DirectivesTo(const Stream& s, bool (pb::Directive::*has)() const,
                            const T& (pb::Directive::*get)() const) {
  std::vector<T> out;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_directive() && (m.directive().*has)()) out.push_back((m.directive().*get)());
  }
  return out;
}

std::vector<pb::Window> Windows(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_window, &pb::Directive::window);
}
std::vector<pb::Stall> Stalls(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_stall, &pb::Directive::stall);
}
std::vector<pb::Release> Releases(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_release, &pb::Directive::release);
}
std::vector<pb::PushNow> PushNows(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_push_now, &pb::Directive::push_now);
}
std::vector<pb::KnownVersions> Known(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_known_versions, &pb::Directive::known_versions);
}
std::vector<pb::Detached> DetachedTo(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_detached, &pb::Directive::detached);
}
std::vector<pb::Reattached> ReattachedTo(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_reattached, &pb::Directive::reattached);
}
std::vector<pb::Evicted> EvictedTo(const Stream& s) {
  return DirectivesTo(s, &pb::Directive::has_evicted, &pb::Directive::evicted);
}

const pb::Welcome& WelcomeOf(const std::vector<pb::ServerMessage>& sent) {
  REQUIRE(!sent.empty());
  REQUIRE(sent[0].has_welcome());
  return sent[0].welcome();
}

// The acks stream `s` received, in order.
std::vector<pb::Ack> AcksTo(const Stream& s) {
  std::vector<pb::Ack> out;
  for (const pb::ServerMessage& m : s.outbox->messages()) {
    if (m.has_ack()) out.push_back(m.ack());
  }
  return out;
}

pb::WorkerInfo InfoOf(EngineHarness& h, const std::string& id) {
  const pb::WorkersReply reply = h.engine().Workers();
  for (const pb::WorkerInfo& w : reply.workers()) {
    if (w.worker_id() == id) return w;
  }
  FAIL("no worker " << id);
  return pb::WorkerInfo();
}

// Acknowledges every downlink batch the stream received since the last
// call, `seconds` after they left.
void AckDownlink(EngineHarness& h, const Stream& s, double seconds, uint64_t* acked_seq) {
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

// Acknowledges what the stream received, `seconds` after it left, until
// rogd sends it nothing more.
void Drain(EngineHarness& h, const Stream& s, uint64_t* acked_seq, double seconds = 0.001) {
  for (int i = 0; i < 10000; ++i) {
    const uint64_t before = *acked_seq;
    AckDownlink(h, s, seconds, acked_seq);
    h.Settle();
    if (*acked_seq == before) return;
  }
  FAIL("the downlink never drained");
}

// The bytes of the whole model on the wire in fp32, as rogd counts them.
double ModelWireBytes(const Layout& layout) {
  double bytes = 0;
  for (RowId row = 0; row < layout.num_rows(); ++row) {
    bytes += static_cast<double>(RowWireBytes(Codec::kFp32, layout.row(row).numel));
  }
  return bytes;
}

// Two workers (S=2, team patience 5 s): "a" brought the model and ran to
// the bound, pushing every row each iteration; "b" completed `b_clock`
// iterations and pushed nothing; a stalls before its 4th iteration,
// waiting for b's first.
struct HeldByB {
  explicit HeldByB(SyncPolicy policy = SyncPolicy::kSsp, uint64_t b_clock = 0,
                   uint32_t local_steps = 0, Layout layout = SmallLayout())
      : h(WithPatience(policy, local_steps), std::move(layout)) {
    std::vector<Stream> w = JoinTeam(h, {"a", "b"});
    a = w[0];
    b = w[1];
    for (uint64_t k = 1; k <= b_clock; ++k) h.Progress(b, k);
    for (uint64_t k = 1; k <= 3; ++k) {
      h.Progress(a, k);
      h.UpdateAll(a, 1, 1);
    }
    h.Progress(a, 3, /*stalled=*/true);
    h.Settle();
  }
  static EngineOptions WithPatience(SyncPolicy policy, uint32_t local_steps) {
    EngineOptions o = Options(policy, 2);
    o.patience = 5;
    o.detached_local_steps = local_steps;
    return o;
  }
  // Past the patience: b is detached.
  void DetachB() {
    h.clock().Advance(5.1);
    h.Settle();
    REQUIRE(DetachedTo(b).size() == 1);
  }
  // b says it pauses at its clock, and both links move the MTA share well
  // within half the patience until rogd reattaches b.
  void ReattachB() {
    h.Pause(b, b.clock);
    for (int i = 0; i < 100 && ReattachedTo(b).empty(); ++i) {
      AckDownlink(h, a, 0.001, &a_acked);
      AckDownlink(h, b, 0.001, &b_acked);
      h.Settle();
      h.clock().Advance(0.3);
      h.Settle();
    }
    REQUIRE(ReattachedTo(b).size() == 1);
  }
  EngineHarness h;
  Stream a, b;
  uint64_t a_acked = 0, b_acked = 0;
};

// ---------------------------------------------------------------------------
// Row batches

// "A receiver ... drops (but acknowledges) a batch whose sequence number it
// has already applied, so a batch resent after a reconnect is applied
// exactly once."
TEST_CASE("RowBatch.seq: a batch resent after a reconnect is acknowledged, not applied again",
          "[contract]") {
  WithModel m;
  m.h.Progress(m.a, 1);
  m.h.UpdateAll(m.a, 2, 1);  // seq 2
  m.h.Settle();
  REQUIRE(m.a.outbox->acked() == 2);
  m.h.Account(m.a);
  // The stream breaks; a resumes and resends seq 2, which the stream
  // handler (ValidateUplinkBatch) passes on with its seq and iteration only.
  m.h.engine().Closed(m.a.session);
  m.h.Settle();
  Stream again = *m.h.Hello(m.h.MakeHello("a", 1, m.a.token));
  m.h.Settle();
  CHECK(WelcomeOf(again.outbox->messages()).last_applied_uplink_seq() == 2);
  CHECK(again.next_seq == 3);
  UplinkBatch dup;
  dup.seq = 2;
  dup.iteration = 1;
  m.h.engine().Batch(again.session, std::move(dup));
  m.h.Settle();
  const std::vector<pb::Ack> acks = AcksTo(again);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].seq() == 2);
  CHECK(acks[0].bytes() == 0);
  CHECK_FALSE(again.outbox->ended());
  // The model holds the update once: 1 + 2.
  const ModelSnapshot model = *m.h.engine().Export();
  for (float v : model.values) CHECK(v == 3);
  CHECK(m.h.CheckLedger() == "");
  // The next batch is seq 3, applied as usual.
  m.h.Progress(again, 2);
  m.h.UpdateAll(again, 1, 1);
  m.h.Settle();
  CHECK(again.outbox->acked() == 3);
  m.h.Account(again);
  CHECK(m.h.CheckLedger() == "");
}

// "BATCH_KIND_VALUES ... Downlink: a full resync of a joining or rejoining
// worker (always fp32)."
TEST_CASE("BatchKind.VALUES: a joining worker's resync is fp32 under an int8 team codec",
          "[contract]") {
  EngineOptions o = Options();
  o.codec = Codec::kInt8;
  EngineHarness h(o);
  Stream a = *h.Hello(h.MakeHello("a"));
  // Values int8 could not carry exactly.
  std::vector<float> initial(h.layout().total_numel());
  for (size_t j = 0; j < initial.size(); ++j) initial[j] = 0.37f * static_cast<float>(j) - 3.1f;
  h.SendValues(a, initial);
  h.Settle();
  Stream b = *h.Hello(h.MakeHello("b"));
  h.Settle();
  CHECK(WelcomeOf(b.outbox->messages()).codec() == pb::CODEC_INT8);
  const std::vector<float> model = h.engine().Export()->values;
  std::vector<bool> seen(h.layout().num_rows(), false);
  const std::vector<pb::RowBatch> values = BatchesTo(b, pb::BATCH_KIND_VALUES);
  REQUIRE(!values.empty());
  for (const pb::RowBatch& batch : values) {
    CHECK(batch.codec() == pb::CODEC_FP32);
    size_t offset = 0;
    for (RowId row : RowsOf(batch)) {
      const RowInfo& info = h.layout().row(row);
      std::vector<float> got(info.numel);
      const size_t bytes = EncodedSize(Codec::kFp32, info.numel);
      REQUIRE(Decode(Codec::kFp32, absl::string_view(batch.payload()).substr(offset, bytes),
                     absl::MakeSpan(got))
                  .ok());
      offset += bytes;
      for (uint32_t j = 0; j < info.numel; ++j) CHECK(got[j] == model[info.offset + j]);
      seen[row] = true;
    }
    CHECK(offset == batch.payload().size());
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](bool s) { return s; }));
  CHECK(model == initial);
}

// "A batch whose `iteration` is at or below the clock rogd moved the worker
// to (Welcome or Reattached) was formed before the worker heard of it: its
// counts are ignored, since those iterations are credited already."
TEST_CASE("RowBatch.count: a batch formed at or below the Reattached clock counts nothing",
          "[contract]") {
  HeldByB t;
  EngineHarness& h = t.h;
  t.DetachB();
  h.Progress(t.b, 1);  // b computes one iteration on its own, pushes it
  h.UpdateAll(t.b, 1, 1);
  h.Settle();
  t.ReattachB();
  REQUIRE(ReattachedTo(t.b)[0].iteration() == 3);  // a's clock
  // b formed this batch at its old clock, 1, before it heard: counted, row
  // 2 would hold 3 + 1 iterations of b formed at iteration 1 ("bad_count").
  REQUIRE(t.b.clock == 1);
  Push(h, t.b, {2}, 1, 0.5f);
  h.Settle();
  CHECK_FALSE(t.b.outbox->ended());
  CHECK(h.Rejected("bad_count") == 0);
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
  // After it the usual bound applies: at iteration 4 one iteration is new.
  h.Progress(t.b, 4);
  Push(h, t.b, {2}, 1);
  h.Settle();
  CHECK_FALSE(t.b.outbox->ended());
  Push(h, t.b, {3}, 2);
  h.Settle();
  REQUIRE(t.b.outbox->ended());
  CHECK(t.b.outbox->end_reason() == "bad_count");
  CHECK(absl::StrContains(t.b.outbox->end_status().message(), "at most 1 iterations can be new"));
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// Three workers: "a" pushed every row at iteration 1 and rows 0-3 at 2; "b"
// row 4 at 1 and rows 0-1 (count 2) at 2; "c" pushed nothing and is at 0.
struct ThreePushers {
  ThreePushers() : h(Options(SyncPolicy::kSsp, 3)) {
    std::vector<Stream> w = JoinTeam(h, {"a", "b", "c"});
    a = w[0];
    b = w[1];
    c = w[2];
    h.Progress(a, 1);
    h.UpdateAll(a, 1, 1);
    h.Progress(a, 2);
    Push(h, a, {0, 1, 2, 3}, 1);
    h.Progress(b, 1);
    Push(h, b, {4}, 1);
    h.Progress(b, 2);
    Push(h, b, {0, 1}, 2);
    h.Settle();
  }
  EngineHarness h;
  Stream a, b, c;
};

// "Downlink: empty (workers learn versions from version_lag ...)".
TEST_CASE("RowBatch.count: downlink batches carry no counts", "[contract]") {
  ThreePushers t;
  t.h.Progress(t.c, 1);
  t.h.Settle();
  const std::vector<pb::RowBatch> values = BatchesTo(t.c, pb::BATCH_KIND_VALUES);
  const std::vector<pb::RowBatch> updates = BatchesTo(t.c, pb::BATCH_KIND_UPDATE);
  REQUIRE(!values.empty());
  REQUIRE(!updates.empty());
  for (const Stream* s : {&t.a, &t.b, &t.c}) {
    for (const pb::RowBatch& b : BatchesTo(*s)) {
      CHECK(b.count_size() == 0);
      CHECK(b.version_lag_size() == b.row_delta_size());
    }
  }
  CHECK(t.h.CheckDownlinkDecodes() == "");
}

// "Downlink: the minimum, over the other attached workers, of how many of
// their iterations the worker's copy of the row now contains".
TEST_CASE("RowBatch.version_lag: downlink, the lowest of the other workers' versions",
          "[contract]") {
  ThreePushers t;
  const size_t before = t.c.outbox->messages().size();
  t.h.Progress(t.c, 1);  // c's window: every pending row
  t.h.Settle();
  // Versions a / b per row: rows 0-1 2/2, rows 2-3 2/0, row 4 1/1, rows 5-8
  // 1/0; c's clock is 1.
  const std::vector<int64_t> want = {-1, -1, 1, 1, 0, 1, 1, 1, 1};
  std::vector<int64_t> lag(t.h.layout().num_rows(), 99);
  for (const pb::RowBatch& b : BatchesTo(t.c, pb::BATCH_KIND_UPDATE, before)) {
    CHECK(b.iteration() == 1);
    const std::vector<RowId> rows = RowsOf(b);
    REQUIRE(b.version_lag_size() == static_cast<int>(rows.size()));
    for (size_t k = 0; k < rows.size(); ++k) lag[rows[k]] = b.version_lag(static_cast<int>(k));
  }
  CHECK(lag == want);
}

// "Downlink BATCH_KIND_VALUES only: the highest uplink seq of this worker
// folded into these values."
TEST_CASE("RowBatch.applied_uplink_seq: every VALUES batch of a rejoin carries the worker's seq",
          "[contract]") {
  EngineOptions o = Options();
  o.batch_bytes = 4096;  // 16 rows of 1 KiB: several resync batches
  WithModel m(o, *Layout::Create({{"w", {16, 256}}}, 256));
  Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  for (const pb::RowBatch& v : BatchesTo(b, pb::BATCH_KIND_VALUES)) {
    CHECK(v.applied_uplink_seq() == 0);
  }
  for (uint64_t k = 1; k <= 2; ++k) {
    m.h.Progress(b, k);
    m.h.UpdateAll(b, 1, 1);  // seqs 1 and 2
  }
  m.h.Settle();
  REQUIRE(b.outbox->acked() == 2);
  m.h.engine().Goodbye(b.session, "test");
  m.h.Settle();
  b = *m.h.Hello(m.h.MakeHello("b"));  // a new incarnation
  m.h.Settle();
  CHECK(WelcomeOf(b.outbox->messages()).last_applied_uplink_seq() == 2);
  const std::vector<pb::RowBatch> values = BatchesTo(b, pb::BATCH_KIND_VALUES);
  REQUIRE(values.size() >= 2);
  size_t rows = 0;
  for (const pb::RowBatch& v : values) {
    CHECK(v.applied_uplink_seq() == 2);
    rows += RowsOf(v).size();
  }
  CHECK(rows == 16);
  // Update batches carry none.
  m.h.Progress(m.a, 1);
  m.h.Settle();
  const std::vector<pb::RowBatch> updates = BatchesTo(m.a, pb::BATCH_KIND_UPDATE);
  REQUIRE(!updates.empty());
  for (const pb::RowBatch& u : updates) CHECK(u.applied_uplink_seq() == 0);
}

// "Downlink only, in a batch without rows: filler that rogd sends to a
// detached worker whose link carries nothing else". kProbeIdle (0.25 s),
// padding of the MTA share (at most kMaxProbeBytes, 256 KiB); none while a
// batch is unacknowledged (MaybeProbe).
TEST_CASE("RowBatch.padding: a detached worker's idle downlink gets a probe of its share",
          "[contract]") {
  HeldByB t;
  EngineHarness& h = t.h;
  const auto probes = [&] {
    std::vector<pb::RowBatch> out;
    for (const pb::RowBatch& b : BatchesTo(t.b)) {
      if (!b.padding().empty()) out.push_back(b);
    }
    return out;
  };
  t.DetachB();
  AckDownlink(h, t.b, 0.01, &t.b_acked);  // the resync and a's rows
  h.Settle();
  h.clock().Advance(0.19);  // 0.2 s idle
  h.Settle();
  CHECK(probes().empty());
  h.clock().Advance(0.1);  // 0.3 s
  h.Settle();
  std::vector<pb::RowBatch> p = probes();
  REQUIRE(p.size() == 1);
  CHECK(p[0].row_delta_size() == 0);
  CHECK(p[0].payload().empty());
  CHECK(p[0].version_lag_size() == 0);
  // The MTA share at S=2: half the model.
  const double model = ModelWireBytes(h.layout());
  CHECK(p[0].padding().size() ==
        static_cast<size_t>(MembershipShareBytes(2, static_cast<uint64_t>(model))));
  CHECK(static_cast<double>(p[0].padding().size()) == Approx(0.5 * model).margin(1));
  // Unacknowledged, it is the last probe however long the link is idle.
  h.clock().Advance(2);
  h.Settle();
  CHECK(probes().size() == 1);
  AckDownlink(h, t.b, 0.01, &t.b_acked);
  h.Settle();  // the ack is in before the clock moves on
  h.clock().Advance(0.1);
  h.Settle();
  CHECK(probes().size() == 2);
}

// "Downlink only, in a batch without rows: filler" of the MTA share, at
// most kMaxProbeBytes (256 KiB).
TEST_CASE("RowBatch.padding: a probe is at most 256 KiB", "[contract]") {
  // 1024 rows of 1 KiB: the share (half the model) is over 512 KiB.
  HeldByB t(SyncPolicy::kSsp, 0, 0, *Layout::Create({{"w", {1024, 256}}}, 256));
  REQUIRE(MembershipShareBytes(2, static_cast<uint64_t>(ModelWireBytes(t.h.layout()))) >
          512 * 1024);
  Drain(t.h, t.b, &t.b_acked);  // the resync
  t.DetachB();
  Drain(t.h, t.b, &t.b_acked);  // a's rows
  t.h.clock().Advance(0.3);
  t.h.Settle();
  const std::vector<pb::RowBatch> sent = BatchesTo(t.b);
  REQUIRE(!sent.empty());
  CHECK(sent.back().row_delta_size() == 0);
  CHECK(sent.back().payload().empty());
  CHECK(sent.back().padding().size() == 256 * 1024);
}

// ---------------------------------------------------------------------------
// Acks

// "Server to worker only: every uplink batch with seq <= this is in a
// checkpoint on disk."
TEST_CASE("Ack.durable_seq: 0 before a checkpoint, then the seq the checkpoint holds",
          "[contract]") {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/durable.XXXXXX";
  REQUIRE(::mkdtemp(&dir[0]) != nullptr);
  EngineOptions o = Options();
  o.checkpoint_path = dir + "/rogd.ckpt";
  WithModel m(o);
  m.h.Progress(m.a, 1);
  m.h.UpdateAll(m.a, 1, 1);  // seq 2
  m.h.Settle();
  std::vector<pb::Ack> acks = AcksTo(m.a);
  REQUIRE(acks.size() == 2);
  for (const pb::Ack& ack : acks) CHECK(ack.durable_seq() == 0);
  REQUIRE(m.h.engine().CheckpointNow().ok());
  m.h.Progress(m.a, 2);
  m.h.UpdateAll(m.a, 1, 1);  // seq 3
  m.h.Settle();
  acks = AcksTo(m.a);
  REQUIRE(acks.size() == 3);
  CHECK(acks.back().seq() == 3);
  CHECK(acks.back().durable_seq() == 2);
}

// ---------------------------------------------------------------------------
// Hello

// "at most 128 printable ASCII characters (INVALID_ARGUMENT, "bad_hello",
// otherwise)."
TEST_CASE("Hello.sdk_version: non-printable characters are refused as bad_hello", "[contract]") {
  WithModel m;
  for (const std::string& version :
       {std::string("1.0\t"), std::string("1.0\n"), std::string("1.0\x7f"),
        std::string("r\xc3\xa9lease"), std::string("1.0\0", 4), std::string(129, 'v')}) {
    pb::Hello hello = m.h.MakeHello("b");
    hello.set_sdk_version(version);
    std::string reason;
    absl::StatusOr<Stream> b = m.h.Hello(hello, &reason);
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(b.status().message(), "printable ASCII"));
    CHECK(reason == "bad_hello");
  }
  pb::Hello hello = m.h.MakeHello("b");
  hello.set_sdk_version(std::string(127, 'v') + "~");
  REQUIRE(m.h.Hello(hello).ok());
  m.h.Settle();
  CHECK(InfoOf(m.h, "b").sdk_version() == hello.sdk_version());
}

// ---------------------------------------------------------------------------
// Progress and Release

// "Send me every pending row now, whatever the window ... The server
// answers with Release{flushed: true} after the last of those rows."
TEST_CASE("Progress.flush: every pending row, then Release.flushed", "[contract]") {
  // 256 rows of 1 KiB; a's link (acks 0.1 s after the batches leave) keeps
  // well under the 128 KiB left pending in flight, so they take several
  // round trips.
  EngineHarness h(Options(SyncPolicy::kRog, 2), *Layout::Create({{"w", {256, 256}}}, 256));
  std::vector<Stream> w = JoinTeam(h, {"a", "b"});
  h.Progress(w[1], 1);
  h.UpdateAll(w[1], 1, 1);
  h.Progress(w[0], 1);  // a at the slowest clock: its MTA share only
  h.Settle();
  uint64_t acked = 0;
  Drain(h, w[0], &acked, 0.1);
  const size_t share = UpdateRowsTo(w[0]).size();
  REQUIRE(share == 128);  // the rest is left pending
  const auto flushed = [&] {
    std::vector<size_t> at;
    const std::vector<pb::ServerMessage> sent = w[0].outbox->messages();
    for (size_t k = 0; k < sent.size(); ++k) {
      if (sent[k].has_directive() && sent[k].directive().release().flushed()) at.push_back(k);
    }
    return at;
  };
  CHECK(flushed().empty());
  pb::Progress flush;
  flush.set_iteration(1);
  flush.set_flush(true);
  h.engine().Progress(w[0].session, flush);
  h.Settle();
  REQUIRE(UpdateRowsTo(w[0]).size() < 256);  // the in-flight limit holds the rest
  CHECK(flushed().empty());
  Drain(h, w[0], &acked, 0.1);
  std::vector<RowId> rows = UpdateRowsTo(w[0]);
  std::sort(rows.begin(), rows.end());
  CHECK(rows == Range(0, 256));
  const std::vector<size_t> at = flushed();
  REQUIRE(at.size() == 1);
  const std::vector<pb::ServerMessage> sent = w[0].outbox->messages();
  CHECK(at[0] == sent.size() - 1);  // after the last batch
  CHECK(sent[at[0]].directive().release().iteration() == 1);
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// ---------------------------------------------------------------------------
// Welcome

// "True when the server has no model yet: the worker sends its initial
// values as BATCH_KIND_VALUES batches before its first update."
TEST_CASE("Welcome.send_initial_values: only while rogd has no model", "[contract]") {
  EngineHarness h(Options());
  Stream a = *h.Hello(h.MakeHello("a"));
  CHECK(WelcomeOf(a.outbox->messages()).send_initial_values());
  // Another worker waits while the model arrives.
  absl::StatusOr<Stream> early = h.Hello(h.MakeHello("b"));
  REQUIRE_FALSE(early.ok());
  CHECK(early.status().code() == absl::StatusCode::kUnavailable);
  // The first worker again, before its model arrived: asked again.
  a = *h.Hello(h.MakeHello("a", 0, a.token));
  CHECK(WelcomeOf(a.outbox->messages()).send_initial_values());
  h.SendValues(a, Ones(h.layout()));
  h.Settle();
  REQUIRE(h.engine().Status().has_model());
  Stream b = *h.Hello(h.MakeHello("b"));
  CHECK_FALSE(WelcomeOf(b.outbox->messages()).send_initial_values());
  Stream again = *h.Hello(h.MakeHello("a", 0, a.token));
  CHECK_FALSE(WelcomeOf(again.outbox->messages()).send_initial_values());
}

// "False until --workers workers have joined: the worker waits for a
// Release before its first iteration."
TEST_CASE("Welcome.team_ready: false until the team has joined, then a Release", "[contract]") {
  EngineHarness h(Options(SyncPolicy::kSsp, 3));
  Stream a = *h.Hello(h.MakeHello("a"));
  h.SendValues(a, Ones(h.layout()));
  Stream b = *h.Hello(h.MakeHello("b"));
  h.Settle();
  CHECK_FALSE(WelcomeOf(a.outbox->messages()).team_ready());
  CHECK_FALSE(WelcomeOf(b.outbox->messages()).team_ready());
  CHECK(Releases(a).empty());
  CHECK(Releases(b).empty());
  Stream c = *h.Hello(h.MakeHello("c"));
  h.Settle();
  // The worker whose hello completes the team reads false too (its welcome
  // goes before the team is counted) and gets a Release right after, as
  // the proto says since 2026-12-03.
  CHECK_FALSE(WelcomeOf(c.outbox->messages()).team_ready());
  for (const Stream* s : {&a, &b, &c}) {
    const std::vector<pb::Release> r = Releases(*s);
    REQUIRE(r.size() == 1);
    CHECK(r[0].iteration() == 0);
    CHECK_FALSE(r[0].flushed());
  }
  Stream d = *h.Hello(h.MakeHello("d"));
  h.Settle();
  CHECK(WelcomeOf(d.outbox->messages()).team_ready());
  CHECK(Releases(d).empty());
}

// "The transmission window for the worker's next iteration." Window:
// "min_iteration: The slowest attached worker's clock when the window was
// set."
TEST_CASE("Welcome.window: the window of the joining worker's next iteration", "[contract]") {
  WithModel m(Options(SyncPolicy::kRog, 1));
  Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Progress(m.a, 1);
  for (uint64_t k = 1; k <= 2; ++k) {
    m.h.Progress(b, k);
    m.h.UpdateAll(b, 1, 1);
  }
  m.h.Settle();
  m.h.engine().Goodbye(b.session, "test");
  m.h.Settle();
  // b rejoins at its own clock, 2, ahead of a's 1.
  b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  const pb::Welcome& wb = WelcomeOf(b.outbox->messages());
  CHECK(wb.iteration() == 2);
  CHECK(wb.window().iteration() == 3);
  CHECK(wb.window().min_iteration() == 1);
  CHECK(wb.window().seconds() == 0);  // no link measured yet
  // A new worker starts at the slowest clock.
  Stream c = *m.h.Hello(m.h.MakeHello("c"));
  const pb::Welcome& wc = WelcomeOf(c.outbox->messages());
  CHECK(wc.iteration() == 1);
  CHECK(wc.window().iteration() == 2);
  CHECK(wc.window().min_iteration() == 1);
}

// ---------------------------------------------------------------------------
// Directives

// "Row ids, ascending."
TEST_CASE("PushNow.rows: the rows asked for, ascending", "[contract]") {
  EngineHarness h(Options(SyncPolicy::kSsp, 2));
  std::vector<Stream> w = JoinTeam(h, {"a", "b"});
  h.Progress(w[1], 1);
  Push(h, w[1], {0, 3, 8}, 1);  // b pushes some of its first iteration
  for (uint64_t k = 1; k <= 3; ++k) {
    h.Progress(w[0], k);
    h.UpdateAll(w[0], 1, 1);
  }
  h.Progress(w[0], 3, /*stalled=*/true);  // a needs b's iteration 1 in every row
  h.Settle();
  const std::vector<pb::PushNow> asked = PushNows(w[1]);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].needed_version() == 1);
  CHECK_FALSE(asked[0].ahead());
  CHECK(std::vector<RowId>(asked[0].rows().begin(), asked[0].rows().end()) ==
        std::vector<RowId>{1, 2, 4, 5, 6, 7});
}

// "Length in seconds; 0 means no limit" -- ATP's window is ROG's: BSP and
// SSP teams get 0 on links that would give ROG a window.
TEST_CASE("Window.seconds: 0 for BSP and SSP, whatever the links", "[contract]") {
  const SyncPolicy policy = GENERATE(SyncPolicy::kBsp, SyncPolicy::kSsp, SyncPolicy::kRog);
  CAPTURE(SyncPolicyName(policy));
  EngineHarness h(Options(policy, 2));
  std::vector<Stream> w = JoinTeam(h, {"a", "b"});
  std::vector<uint64_t> acked(2, 0);
  for (uint64_t k = 1; k <= 6; ++k) {
    for (size_t i = 0; i < w.size(); ++i) {
      pb::Progress p;
      p.set_iteration(k);
      p.set_uplink_goodput(1e6);
      h.engine().Progress(w[i].session, p);
      w[i].clock = k;
      h.UpdateAll(w[i], 1, 1);
      p.set_stalled(true);  // waits for the other (BSP's rows go down now)
      h.engine().Progress(w[i].session, p);
    }
    h.Settle();
    for (size_t i = 0; i < w.size(); ++i) AckDownlink(h, w[i], 0.001, &acked[i]);
    h.Settle();
    h.clock().Advance(0.1);
    h.Settle();
  }
  // Both links are measured: ROG's rule would set a window.
  std::vector<double> links;
  for (const char* id : {"a", "b"}) {
    const pb::WorkerInfo info = InfoOf(h, id);
    REQUIRE(info.downlink_goodput() > 0);
    links.push_back(std::min(info.uplink_goodput(), info.downlink_goodput()));
  }
  const double share = MinimumTransmissionAmount(2) * ModelWireBytes(h.layout());
  REQUIRE(TeamWindow(SyncPolicy::kRog, links, share, 0) > 0);
  double longest = 0;
  size_t windows = 0;
  for (const Stream& s : w) {
    for (const pb::Window& win : Windows(s)) {
      longest = std::max(longest, win.seconds());
      ++windows;
    }
    longest = std::max(longest, WelcomeOf(s.outbox->messages()).window().seconds());
  }
  CHECK(windows >= 12);
  if (policy == SyncPolicy::kRog) {
    CHECK(longest > 0);
  } else {
    CHECK(longest == 0);
  }
}

// "Rows whose copy lacks another worker's updates up to `iteration - S` (at
// most a few hundred listed; `missing_rows` counts them all)."
TEST_CASE("Stall.rows: at most 256 rows listed, ascending; missing_rows counts them all",
          "[contract]") {
  EngineHarness h(Options(SyncPolicy::kSsp, 2), *Layout::Create({{"w", {600, 4}}}, 4));
  REQUIRE(h.layout().num_rows() == 600);
  std::vector<Stream> w = JoinTeam(h, {"a", "b"});
  for (uint64_t k = 1; k <= 3; ++k) {
    h.Progress(w[0], k);
    h.UpdateAll(w[0], 1, 1);
  }
  h.Progress(w[0], 3, /*stalled=*/true);
  h.Settle();
  const std::vector<pb::Stall> stalls = Stalls(w[0]);
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].iteration() == 3);
  CHECK(std::vector<RowId>(stalls[0].rows().begin(), stalls[0].rows().end()) == Range(0, 256));
  CHECK(stalls[0].missing_rows() == 600);
}

// "Workers whose updates are missing."
TEST_CASE("Stall.waiting_for: the workers whose updates are missing", "[contract]") {
  SECTION("exact ids") {
    EngineHarness h(Options(SyncPolicy::kSsp, 3));
    std::vector<Stream> w = JoinTeam(h, {"a", "b", "c"});
    h.Progress(w[1], 1);
    h.UpdateAll(w[1], 1, 1);  // b's iteration 1 is in; c's is not
    for (uint64_t k = 1; k <= 3; ++k) {
      h.Progress(w[0], k);
      h.UpdateAll(w[0], 1, 1);
    }
    h.Progress(w[0], 3, /*stalled=*/true);
    h.Settle();
    const std::vector<pb::Stall> stalls = Stalls(w[0]);
    REQUIRE(stalls.size() == 1);
    CHECK(std::vector<std::string>(stalls[0].waiting_for().begin(),
                                   stalls[0].waiting_for().end()) == std::vector<std::string>{"c"});
    CHECK(stalls[0].missing_rows() == h.layout().num_rows());
  }
  SECTION("before the team is ready: how many joined") {
    EngineHarness h(Options(SyncPolicy::kSsp, 3));
    Stream a = *h.Hello(h.MakeHello("a"));
    h.SendValues(a, Ones(h.layout()));
    Stream b = *h.Hello(h.MakeHello("b"));
    h.Settle();
    h.Progress(a, 0, /*stalled=*/true);
    h.Settle();
    const std::vector<pb::Stall> stalls = Stalls(a);
    REQUIRE(stalls.size() == 1);
    CHECK(stalls[0].iteration() == 0);
    CHECK(stalls[0].rows_size() == 0);
    CHECK(stalls[0].missing_rows() == 0);
    CHECK(
        std::vector<std::string>(stalls[0].waiting_for().begin(), stalls[0].waiting_for().end()) ==
        std::vector<std::string>{"team: 2 of 3 workers joined"});
  }
}

// "The server dropped this worker (lease expired, or the operator removed
// it)."
TEST_CASE("Evicted: sent to a worker that said goodbye; a lease that ran out has no stream",
          "[contract]") {
  WithModel m;
  Stream b = *m.h.Hello(m.h.MakeHello("b"));
  Stream c = *m.h.Hello(m.h.MakeHello("c"));
  m.h.Settle();
  // Evicted goes only to a worker that said Goodbye, whose stream then ends
  // OK (an expired lease has no stream to tell), as the proto says since
  // 2026-12-03.
  m.h.engine().Goodbye(b.session, "done");
  m.h.Settle();
  const std::vector<pb::ServerMessage> sent = b.outbox->messages();
  REQUIRE(sent.back().has_directive());
  REQUIRE(sent.back().directive().has_evicted());
  CHECK(sent.back().directive().evicted().reason() == "said goodbye (done)");
  REQUIRE(b.outbox->ended());
  CHECK(b.outbox->end_status().ok());
  CHECK(InfoOf(m.h, "b").state() == "evicted");
  // c's stream breaks; its lease (30 s) runs out with no stream to tell.
  m.h.engine().Closed(c.session);
  m.h.Settle();
  m.h.clock().Advance(30);
  m.h.Settle();
  CHECK(InfoOf(m.h, "c").state() == "evicted");
  CHECK(EvictedTo(c).empty());
  CHECK(m.h.engine().Status().workers_evicted() == 2);
}

// Detached: "it no longer counts for the bound or the window."
TEST_CASE("Detached: the window's min_iteration and seconds no longer count the worker",
          "[contract]") {
  EngineOptions o = Options(SyncPolicy::kRog, 2);
  o.patience = 5;
  EngineHarness h(o);
  std::vector<Stream> w = JoinTeam(h, {"a", "b"});
  Stream& a = w[0];
  const auto report = [&](uint64_t k, bool stalled) {
    pb::Progress p;
    p.set_iteration(k);
    p.set_stalled(stalled);
    p.set_uplink_goodput(1e6);
    h.engine().Progress(a.session, p);
    a.clock = k;
  };
  h.UpdateAll(w[1], 0, 0);  // b's rows reach a: a's link gets measured
  h.Settle();
  report(1, false);
  h.Settle();
  uint64_t acked = 0;
  AckDownlink(h, a, 0.01, &acked);
  h.Settle();
  REQUIRE(InfoOf(h, "a").downlink_goodput() > 0);
  for (uint64_t k = 1; k <= 3; ++k) {
    if (k > 1) report(k, false);
    h.UpdateAll(a, 1, 1);
  }
  report(3, true);
  h.Settle();
  // b's link is unmeasured: while b counts, no window is set (0).
  const size_t before = Windows(a).size();
  REQUIRE(before == 3);
  for (const pb::Window& win : Windows(a)) {
    CHECK(win.seconds() == 0);
    CHECK(win.min_iteration() == 0);  // b's clock
  }
  h.clock().Advance(5.1);
  h.Settle();
  REQUIRE(DetachedTo(w[1]).size() == 1);
  const std::vector<pb::Window> after = Windows(a);
  REQUIRE(after.size() == before + 1);
  const pb::WorkerInfo info = InfoOf(h, "a");
  const double share = MinimumTransmissionAmount(2) * ModelWireBytes(h.layout());
  const double want = TeamWindow(SyncPolicy::kRog, {std::min(1e6, info.downlink_goodput())}, share,
                                 h.engine().Status().patience_now());
  REQUIRE(want > 0);
  CHECK(after.back().iteration() == 4);
  CHECK(after.back().min_iteration() == 3);  // a's own clock
  CHECK(after.back().seconds() == Approx(want));
}

// Detached: "The stream stays: the worker ... receives every pending row."
TEST_CASE("Detached: the stream stays and brings every pending row, whatever the window",
          "[contract]") {
  HeldByB t;
  EngineHarness& h = t.h;
  CHECK(UpdateRowsTo(t.b).empty());  // b computes nothing: no window, no rows
  const size_t before = t.b.outbox->messages().size();
  t.DetachB();
  std::vector<RowId> rows = UpdateRowsTo(t.b, before);
  std::sort(rows.begin(), rows.end());
  CHECK(rows == Range(0, static_cast<RowId>(h.layout().num_rows())));
  // a goes on; its rows reach b at once, though b reports nothing.
  const size_t later = t.b.outbox->messages().size();
  h.Progress(t.a, 4);
  Push(h, t.a, {2, 5}, 1);
  h.Settle();
  CHECK(UpdateRowsTo(t.b, later) == std::vector<RowId>{2, 5});
  CHECK_FALSE(t.b.outbox->ended());
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// "The worker's clock as rogd knew it when it sent this".
TEST_CASE("Detached.iteration: the worker's clock as rogd knew it", "[contract]") {
  // b completed 2 iterations and pushed none: a waits for its first.
  HeldByB t(SyncPolicy::kSsp, /*b_clock=*/2, /*local_steps=*/2);
  t.DetachB();
  const pb::Detached d = DetachedTo(t.b)[0];
  CHECK(d.iteration() == 2);
  CHECK(d.local_steps() == 2);
  CHECK(InfoOf(t.h, "b").iteration() == 2);
}

// "from clock `iteration` (the slowest attached worker's, or its own if
// that is higher)."
TEST_CASE("Reattached.iteration: the worker's own clock when it is above the team's",
          "[contract]") {
  HeldByB t(SyncPolicy::kSsp, /*b_clock=*/0, /*local_steps=*/4);
  EngineHarness& h = t.h;
  t.DetachB();
  for (uint64_t k = 1; k <= 4; ++k) {  // its local steps, past a's 3
    h.Progress(t.b, k);
    h.UpdateAll(t.b, 1, 1);
  }
  h.Settle();
  t.ReattachB();
  CHECK(ReattachedTo(t.b)[0].iteration() == 4);
  CHECK(InfoOf(h, "a").iteration() == 3);
  CHECK(InfoOf(h, "b").iteration() == 4);
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
  CHECK(h.engine().CheckInvariants().ToString() == "OK");
}

// "After the team changed (a worker detached or reattached): per row, in
// row order, the lowest version of the attached other workers' updates the
// worker's replica holds".
TEST_CASE("KnownVersions: after a detach, each worker's versions over the attached others",
          "[contract]") {
  EngineOptions o = Options(SyncPolicy::kSsp, 3);
  o.patience = 5;
  EngineHarness h(o);
  std::vector<Stream> w = JoinTeam(h, {"a", "b", "c"});
  Stream &a = w[0], &b = w[1], &c = w[2];
  h.Progress(c, 1);
  Push(h, c, Range(4, 9), 1);
  h.Progress(c, 2);
  Push(h, c, Range(0, 4), 2);  // c: rows 0-3 at 2, rows 4-8 at 1
  h.Progress(a, 1);            // a's window brings c's rows
  h.UpdateAll(a, 1, 1);
  for (uint64_t k = 2; k <= 3; ++k) {
    h.Progress(a, k);
    Push(h, a, Range(0, 4), 1);  // a: rows 0-3 at 3, rows 4-8 at 1
  }
  h.Progress(c, 3);  // c's window brings a's rows
  h.Progress(a, 3, /*stalled=*/true);
  h.Settle();
  CHECK(Known(a).empty());
  h.clock().Advance(5.1);  // b, which pushed nothing, is detached
  h.Settle();
  REQUIRE(DetachedTo(b).size() == 1);
  const auto versions = [](const Stream& s) {
    const std::vector<pb::KnownVersions> k = Known(s);
    REQUIRE(k.size() == 1);
    return std::vector<uint64_t>(k[0].version().begin(), k[0].version().end());
  };
  CHECK(versions(a) == std::vector<uint64_t>{2, 2, 2, 2, 1, 1, 1, 1, 1});  // c's
  CHECK(versions(c) == std::vector<uint64_t>{3, 3, 3, 3, 1, 1, 1, 1, 1});  // a's
  // The detached worker hears its own: it has received nothing yet.
  CHECK(versions(b) == std::vector<uint64_t>(9, 0));
}

// ---------------------------------------------------------------------------
// Admin: status and workers

// "Connected but at least S iterations behind the fastest."
TEST_CASE("StatusReply.workers_lagging: attached workers at least S behind the fastest",
          "[contract]") {
  WithModel m;  // SSP, S=2, team of 1
  std::vector<Stream> w = {m.a};
  for (const char* id : {"b", "c", "d", "e"}) w.push_back(*m.h.Hello(m.h.MakeHello(id)));
  m.h.Settle();
  const uint64_t clocks[] = {4, 2, 3, 1, 0};
  for (size_t i = 0; i < w.size(); ++i) {
    for (uint64_t k = 1; k <= clocks[i]; ++k) m.h.Progress(w[i], k);
  }
  m.h.Settle();
  CHECK(m.h.engine().Status().workers_lagging() == 3);  // b, d and e
  m.h.engine().Closed(w[3].session);                    // d disconnects
  m.h.engine().Goodbye(w[4].session, "test");           // e leaves
  m.h.Settle();
  const pb::StatusReply s = m.h.engine().Status();
  CHECK(s.workers_connected() == 3);
  // Attached workers: a disconnected one within its lease (d) too, an
  // evicted one (e) not (the proto said "connected" until 2026-12-03).
  CHECK(s.workers_lagging() == 2);  // b and d
  CHECK(s.max_iteration() == 4);
}

// "Connected or disconnected workers currently detached by the patience."
TEST_CASE("StatusReply.workers_detached: detached workers, connected or disconnected",
          "[contract]") {
  HeldByB t;
  EngineHarness& h = t.h;
  CHECK(h.engine().Status().workers_detached() == 0);
  t.DetachB();
  CHECK(h.engine().Status().workers_detached() == 1);
  h.engine().Closed(t.b.session);
  h.Settle();
  const pb::WorkerInfo b = InfoOf(h, "b");
  CHECK(b.state() == "disconnected");
  CHECK(b.detached());
  CHECK(h.engine().Status().workers_detached() == 1);
  h.clock().Advance(30.1);  // the lease
  h.Settle();
  CHECK(InfoOf(h, "b").state() == "evicted");
  CHECK(h.engine().Status().workers_detached() == 0);
}

// "--detach_speedup (0: off)"; "--patience_iterations (0 with patience
// off)".
TEST_CASE("StatusReply.detach_speedup and patience_iterations: 0 with patience off", "[contract]") {
  EngineOptions o = Options();
  o.detach_speedup = 1.5;
  o.patience_iterations = 6;
  {
    o.patience = 0;
    EngineHarness h(o);
    const pb::StatusReply s = h.engine().Status();
    CHECK(s.patience() == 0);
    CHECK(s.patience_now() == 0);
    CHECK(s.detach_speedup() == 0);
    CHECK(s.patience_iterations() == 0);
  }
  {
    o.patience = 0.5;
    EngineHarness h(o);
    const pb::StatusReply s = h.engine().Status();
    CHECK(s.patience() == 0.5);
    CHECK(s.detach_speedup() == 1.5);
    CHECK(s.patience_iterations() == 6);
  }
}

// ""connected", "disconnected" (within its lease), "evicted"."
TEST_CASE("WorkerInfo.state: connected, disconnected within the lease, then evicted",
          "[contract]") {
  WithModel m;
  Stream b = *m.h.Hello(m.h.MakeHello("b"));
  m.h.Settle();
  CHECK(InfoOf(m.h, "b").state() == "connected");
  m.h.engine().Closed(b.session);
  m.h.Settle();
  CHECK(InfoOf(m.h, "b").state() == "disconnected");
  m.h.clock().Advance(29.9);
  m.h.Settle();
  CHECK(InfoOf(m.h, "b").state() == "disconnected");
  m.h.clock().Advance(0.2);
  m.h.Settle();
  CHECK(InfoOf(m.h, "b").state() == "evicted");
  CHECK(InfoOf(m.h, "a").state() == "connected");
}

// "the rows it pushed while detached (late rows)."
TEST_CASE("WorkerInfo.late_rows: rows pushed while detached", "[contract]") {
  HeldByB t;
  EngineHarness& h = t.h;
  Push(h, t.b, {0}, 0);  // attached: not late
  h.Settle();
  t.DetachB();
  CHECK(InfoOf(h, "b").late_rows() == 0);
  Push(h, t.b, {1, 4, 7}, 0);
  h.Settle();
  CHECK(InfoOf(h, "b").late_rows() == 3);
  Push(h, t.b, {8}, 0);
  h.Settle();
  const pb::WorkerInfo b = InfoOf(h, "b");
  CHECK(b.late_rows() == 4);
  CHECK(b.rows_pushed() == 5);
  h.AccountAll();
  CHECK(h.CheckLedger() == "");
}

// "Why it was last detached or reattached."
TEST_CASE("WorkerInfo.detach_reason: why it was detached, then why reattached", "[contract]") {
  HeldByB t;
  EngineHarness& h = t.h;
  CHECK(InfoOf(h, "b").detach_reason().empty());
  t.DetachB();
  const std::string detached = DetachedTo(t.b)[0].reason();
  CHECK(absl::StrContains(detached, "kept a waiting 5.1 s"));
  CHECK(InfoOf(h, "b").detach_reason() == detached);
  t.ReattachB();
  const std::string reattached = ReattachedTo(t.b)[0].reason();
  CHECK(absl::StrContains(reattached, "its link moves its MTA share"));
  const pb::WorkerInfo b = InfoOf(h, "b");
  CHECK(b.detach_reason() == reattached);
  CHECK_FALSE(b.detached());
  CHECK(b.detaches() == 1);
  CHECK(b.reattaches() == 1);
}

// ---------------------------------------------------------------------------
// Admin: staleness

// "Only rows of this tensor (empty: all). Unknown names are NOT_FOUND."
TEST_CASE("StalenessRequest.tensor: an unknown name is NOT_FOUND", "[contract]") {
  WithModel m;
  pb::StalenessRequest req;
  req.set_tensor("nope");
  absl::StatusOr<pb::StalenessReply> reply = m.h.engine().Staleness(req);
  REQUIRE_FALSE(reply.ok());
  CHECK(reply.status().code() == absl::StatusCode::kNotFound);
  CHECK(absl::StrContains(reply.status().message(), "no tensor named 'nope'"));
  req.set_tensor("b");
  reply = m.h.engine().Staleness(req);
  REQUIRE(reply.ok());
  REQUIRE(reply->rows_size() == 1);
  CHECK(reply->rows(0).row() == 8);
}

// Two workers of S=2: a at clock 3 holds its rows 0-3 at 3, 4-5 at 1 and
// 6-8 at 0; b at clock 2 its rows 0-1 at 2, 2-5 at 1, 6-7 at 1, 8 at 0. b
// pushed before a's first window (a's copy holds it) except rows 6-7; b's
// copy holds nothing of a.
struct Stale {
  Stale() : h(Options(SyncPolicy::kSsp, 2)) {
    std::vector<Stream> w = JoinTeam(h, {"a", "b"});
    a = w[0];
    b = w[1];
    h.Progress(b, 1);
    Push(h, b, Range(0, 6), 1);
    h.Progress(b, 2);
    Push(h, b, {0, 1}, 1);
    h.Progress(a, 1);
    Push(h, a, Range(0, 6), 1);
    for (uint64_t k = 2; k <= 3; ++k) {
      h.Progress(a, k);
      Push(h, a, Range(0, 4), 1);
    }
    Push(h, b, {6, 7}, 1);
    h.Settle();
    reply = *h.engine().Staleness(pb::StalenessRequest());
    REQUIRE(reply.rows_size() == 9);
  }
  EngineHarness h;
  Stream a, b;
  pb::StalenessReply reply;
};

// "The worker holding the oldest unpushed update of this row, and its age
// in iterations (empty / 0 when nobody holds one back)."
TEST_CASE("RowStaleness.oldest_unpushed_worker and age: the oldest holder, or none", "[contract]") {
  Stale t;
  // Ages a / b per row: 0/0 0/0 0/1 0/1 2/1 2/1 3/1 3/1 3/2.
  const std::vector<std::string> who = {"", "", "b", "b", "a", "a", "a", "a", "a"};
  const std::vector<uint64_t> age = {0, 0, 1, 1, 2, 2, 3, 3, 3};
  for (int r = 0; r < 9; ++r) {
    INFO("row " << r);
    CHECK(t.reply.rows(r).row() == static_cast<uint32_t>(r));
    CHECK(t.reply.rows(r).oldest_unpushed_worker() == who[r]);
    CHECK(t.reply.rows(r).oldest_unpushed_age() == age[r]);
  }
}

// "Per worker, in the order of StalenessReply.workers: how many iterations
// that worker's copy of the row is behind the freshest contribution."
TEST_CASE("RowStaleness.staleness: per worker, iterations behind the freshest contribution",
          "[contract]") {
  Stale t;
  CHECK(std::vector<std::string>(t.reply.workers().begin(), t.reply.workers().end()) ==
        std::vector<std::string>{"a", "b"});
  // a's copy lacks b's rows 6-7 (1 iteration); b's copy lacks all of a's.
  const std::vector<uint64_t> of_a = {0, 0, 0, 0, 0, 0, 1, 1, 0};
  const std::vector<uint64_t> of_b = {3, 3, 3, 3, 1, 1, 0, 0, 0};
  for (int r = 0; r < 9; ++r) {
    INFO("row " << r);
    REQUIRE(t.reply.rows(r).staleness_size() == 2);
    CHECK(t.reply.rows(r).staleness(0) == of_a[r]);
    CHECK(t.reply.rows(r).staleness(1) == of_b[r]);
  }
  CHECK(t.reply.staleness_bound() == 2);
}

// "Index of the row within its tensor."
TEST_CASE("RowStaleness.index_in_tensor: the row's index within its tensor", "[contract]") {
  // w: rows 0-7, v: rows 8-11, b: row 12.
  WithModel m(Options(), *Layout::Create({{"w", {8, 4}}, {"v", {4, 4}}, {"b", {3}}}, 8));
  const pb::StalenessReply all = *m.h.engine().Staleness(pb::StalenessRequest());
  REQUIRE(all.rows_size() == 13);
  const std::vector<std::string> tensor = {"w", "w", "w", "w", "w", "w", "w",
                                           "w", "v", "v", "v", "v", "b"};
  const std::vector<uint32_t> index = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 0};
  for (int r = 0; r < 13; ++r) {
    CHECK(all.rows(r).tensor() == tensor[r]);
    CHECK(all.rows(r).index_in_tensor() == index[r]);
  }
  pb::StalenessRequest req;
  req.set_tensor("v");
  const pb::StalenessReply v = *m.h.engine().Staleness(req);
  REQUIRE(v.rows_size() == 4);
  for (int k = 0; k < 4; ++k) {
    CHECK(v.rows(k).row() == static_cast<uint32_t>(8 + k));
    CHECK(v.rows(k).index_in_tensor() == static_cast<uint32_t>(k));
  }
}

// ---------------------------------------------------------------------------
// Layout

// "Tensors with fewer elements than this stay one row (default 1024)."
TEST_CASE("Layout.min_split_numel: 0 in a hello is the default, 1024", "[contract]") {
  // 8 x 256: 2048 elements, split at 1024 into 8 rows; at 4096 one row.
  const Layout layout = *Layout::Create({{"w", {8, 256}}}, 1024);
  REQUIRE(layout.num_rows() == 8);
  EngineHarness h(Options(), layout);
  pb::Hello zero = h.MakeHello("a");
  zero.mutable_layout()->set_min_split_numel(0);
  REQUIRE(zero.layout_fingerprint() == layout.fingerprint());
  Stream a = *h.Hello(zero);
  h.SendValues(a, Ones(layout));
  h.Settle();
  const pb::StatusReply s = h.engine().Status();
  REQUIRE(s.has_model());
  CHECK(s.rows() == 8);
  CHECK(s.layout().min_split_numel() == 1024);
  // The same model, said with 1024 or with 0 again.
  CHECK(h.Hello(h.MakeHello("b")).ok());
  zero.set_worker_id("c");
  CHECK(h.Hello(zero).ok());
  // Not any value: at 4096 it is another model.
  pb::Hello other = h.MakeHello("d");
  other.mutable_layout()->set_min_split_numel(4096);
  other.set_layout_fingerprint(LayoutFromProto(other.layout())->fingerprint());
  std::string reason;
  absl::StatusOr<Stream> d = h.Hello(other, &reason);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(reason == "layout_mismatch");
}

}  // namespace
}  // namespace rog
