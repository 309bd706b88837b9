// An outsider's client against a real rogd: messages written from
// proto/rog.proto alone (no rog::Worker), each out of range, absurd,
// non-finite, contradictory or out of order, before and after the model
// exists, on the first worker's stream and on others. After each: rogd
// still serves, the refusal reached the client with a code and a message
// and is counted under its reason, and the model is exactly what the
// well-behaved worker and the acknowledged batches made it; rogd restarts
// from the checkpoint it wrote. docs/operations.md "What is refused, and how" lists
// the same refusals.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "common/uplink_rules.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "rog.grpc.pb.h"
#include "test/testing/raw_stream.h"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"
#include "test/testing/team_checks.h"

namespace rog {
namespace {

uint64_t Rejected(const std::string& address, const std::string& reason) {
  absl::StatusOr<pb::StatusReply> s = AdminStatus(address);
  if (!s.ok()) return ~0ull;
  const auto it = s->rejected().find(reason);
  return it == s->rejected().end() ? 0 : it->second;
}

// Frames of raw bytes on Trainer.Session, through gRPC's generic stub: what
// a client that does not speak the proto sends. Returns rogd's status.
RawResult RawBytes(const std::string& address, const std::vector<std::string>& frames) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(&ctx, "/rog.v1.Trainer/Session", &cq);
  void* tag = nullptr;
  bool ok = false;
  const auto wait = [&] { return cq.Next(&tag, &ok) && ok; };
  call->StartCall(reinterpret_cast<void*>(1));
  bool open = wait();
  for (const std::string& f : frames) {
    if (!open) break;
    grpc::Slice slice(f);
    grpc::ByteBuffer buffer(&slice, 1);
    call->Write(buffer, reinterpret_cast<void*>(2));
    open = wait();
  }
  if (open) {
    call->WritesDone(reinterpret_cast<void*>(3));
    wait();
  }
  grpc::ByteBuffer reply;
  for (;;) {
    call->Read(&reply, reinterpret_cast<void*>(4));
    if (!wait()) break;
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return RawResult{status.error_code(), status.error_message()};
}

std::string Serialized(const pb::WorkerMessage& m) { return m.SerializeAsString(); }

pb::WorkerMessage HelloAt(const std::string& id, const Layout& layout, uint64_t iteration,
                          uint64_t token = 0) {
  pb::WorkerMessage m = HelloFor(id, layout);
  m.mutable_hello()->set_iteration(iteration);
  m.mutable_hello()->set_resume_token(token);
  return m;
}

pb::WorkerMessage ProgressAt(uint64_t iteration) {
  pb::WorkerMessage m;
  m.mutable_progress()->set_iteration(iteration);
  return m;
}

// An update of rows [first, first + n) of `layout`, every element `value`,
// with `count` per row, formed at `iteration`.
pb::WorkerMessage Update(const Layout& layout, uint64_t seq, RowId first, int n, float value,
                         uint32_t count, uint64_t iteration = 0,
                         pb::BatchKind kind = pb::BATCH_KIND_UPDATE) {
  pb::WorkerMessage m;
  pb::RowBatch* b = m.mutable_batch();
  b->set_seq(seq);
  b->set_iteration(iteration);
  b->set_kind(kind);
  b->set_codec(pb::CODEC_FP32);
  std::vector<float> values;
  for (int k = 0; k < n; ++k) {
    b->add_row_delta(k == 0 ? first : 1);
    b->add_count(kind == pb::BATCH_KIND_VALUES ? 0 : count);
    b->add_version_lag(0);
    values.insert(values.end(), layout.row(first + k).numel, value);
  }
  b->set_payload(FloatsToBytes(values));
  return m;
}

// rogd with a team of one that trained two iterations: the model exists.
struct Served {
  Served() {
    auto started = RogdProcess::Start({"--workers=1"});
    REQUIRE(started.ok());
    rogd = std::move(*started);
    address = rogd->address();
    team = std::make_unique<Team>(address, 2);
    Member& a = team->Add("a", 0);
    team->Train(a, 2, 0);
    team->JoinAll();
  }
  std::unique_ptr<RogdProcess> rogd;
  std::string address;
  std::unique_ptr<Team> team;
};

void CheckFinite(const std::vector<float>& model) {
  for (float v : model) {
    if (!std::isfinite(v)) FAIL("a model value is not finite: " << v);
  }
}

TEST_CASE("before the model exists: absurd layouts, clocks, bytes and order are refused",
          "[hostile]") {
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  const Layout layout = TestLayout();

  // One small hello describing 2^24 x 2^30 floats: refused before anything
  // is allocated for it.
  {
    pb::WorkerMessage h;
    h.mutable_hello()->set_worker_id("huge");
    pb::TensorSpec* t = h.mutable_hello()->mutable_layout()->add_tensors();
    t->set_name("w");
    t->add_shape(16777216);
    t->add_shape(1073741824);
    h.mutable_hello()->set_layout_fingerprint(LayoutFromProto(h.hello().layout())->fingerprint());
    const RawResult r = Raw(address, {h});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(absl::StrContains(r.message, "--max_model_bytes"));
    CHECK(Rejected(address, "model_too_large") == 1);
  }
  // A first message that is not a WorkerMessage at all.
  {
    const RawResult r = RawBytes(address, {std::string("\xff\xff\xff\xff garbage", 13)});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "rog.v1.WorkerMessage"));
    CHECK(Rejected(address, "unparseable") == 1);
  }
  // A clock beyond any run, and the "no worker" value itself.
  for (uint64_t clock : {kMaxHelloClock + 1, std::numeric_limits<uint64_t>::max()}) {
    const RawResult r = Raw(address, {HelloAt("a", layout, clock)});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "iterations"));
  }
  CHECK(Rejected(address, "bad_clock") == 2);
  // The first worker sends an update before its initial values are complete.
  {
    const RawResult r = Raw(address, {HelloFor("first", layout),
                                      Update(layout, 1, 0, 1, 1, 0, 0, pb::BATCH_KIND_VALUES),
                                      Update(layout, 2, 0, 1, 1, 0)});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "before the initial model was complete"));
    CHECK(Rejected(address, "update_before_model") == 1);
  }
  absl::StatusOr<pb::StatusReply> status = AdminStatus(address);
  REQUIRE(status.ok());
  CHECK_FALSE(status->has_model());
  // A well-behaved team forms and conserves.
  Team team(address, 2);
  Member& a = team.Add("a", 0);
  team.Train(a, 5, 0);
  team.JoinAll();
  RequireClean(team);
  RequireConserved(team, **rogd);
}

TEST_CASE("after the model exists: counts, clocks, overflow, order and size are refused",
          "[hostile]") {
  const std::string dir = MakeTempDir("hostile");
  const std::vector<std::string> flags = {"--workers=1", "--sync=ssp", "--staleness=2",
                                          absl::StrCat("--checkpoint_dir=", dir),
                                          "--checkpoint_interval=0"};
  auto rogd = RogdProcess::Start(flags);
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  const Layout layout = TestLayout();
  Team team(address, 2);
  Member& a = team.Add("a", 0);
  team.Train(a, 4, 0);
  REQUIRE(team.Drain() == "");
  absl::StatusOr<std::vector<float>> before = AdminExport(address);
  REQUIRE(before.ok());
  const RowId bias = layout.tensor_first_row(*layout.FindTensor("conv.bias"));
  const int bias_rows = 1;

  // x joins at the team's clock T; every count it may send is bounded by
  // the iterations it reported since.
  uint64_t t = 0;
  for (uint32_t count : {2u, 1000u, std::numeric_limits<uint32_t>::max()}) {
    OpenStream x(address);
    REQUIRE(x.Write(HelloFor("x", layout)));
    t = x.Welcome().iteration();
    REQUIRE(x.Write(ProgressAt(t + 1)));
    REQUIRE(x.Write(Update(layout, 1, bias, bias_rows, 1, count, t + 1)));
    const RawResult r = x.Finish();
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "at most 1 iterations can be new"));
  }
  CHECK(Rejected(address, "bad_count") == 3);
  // A clock that jumps.
  {
    OpenStream x(address);
    REQUIRE(x.Write(HelloFor("x", layout)));
    t = x.Welcome().iteration();
    REQUIRE(x.Write(ProgressAt(t + 2)));
    const RawResult r = x.Finish();
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "rises by at most 1 per report"));
    CHECK(Rejected(address, "bad_clock") == 1);
  }
  // Two finite pushes of 3e38: the first is applied, the second would make
  // the model infinite and is refused whole.
  std::vector<float> expected = *before;
  {
    OpenStream x(address);
    REQUIRE(x.Write(HelloFor("x", layout)));
    const uint64_t w = x.Welcome().iteration();
    REQUIRE(x.Write(ProgressAt(w + 1)));
    REQUIRE(x.Write(Update(layout, 1, bias, bias_rows, 3e38f, 1, w + 1)));
    REQUIRE(x.Write(ProgressAt(w + 2)));
    REQUIRE(x.Write(Update(layout, 2, bias, bias_rows, 3e38f, 1, w + 2)));
    const RawResult r = x.Finish();
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "non-finite"));
    CHECK(Rejected(address, "non_finite_fold") == 1);
    const RowInfo& row = layout.row(bias);
    for (uint32_t j = 0; j < row.numel; ++j) expected[row.offset + j] += 3e38f;
  }
  // Initial values once the model exists, from a worker that was never
  // asked for them.
  {
    const RawResult r = Raw(
        address, {HelloFor("y", layout), Update(layout, 1, 0, 1, 7, 0, 0, pb::BATCH_KIND_VALUES)});
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(Rejected(address, "unexpected_values") == 1);
  }
  // Bytes that are no WorkerMessage, after a good hello.
  {
    const RawResult r = RawBytes(
        address, {Serialized(HelloFor("z", layout)), std::string("\x0a\xff\xff\xff\x0f", 5)});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(Rejected(address, "unparseable") == 1);
  }
  // An sdk_version that is no version string, and a goodbye whose reason
  // is a megabyte of lines: neither reaches a record or the log whole.
  {
    pb::WorkerMessage h = HelloFor("v", layout);
    h.mutable_hello()->set_sdk_version(std::string(1000, 'v'));
    const RawResult r = Raw(address, {h});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(r.message, "sdk_version"));
    CHECK(absl::StrContains(r.message, "at most 128 printable ASCII characters"));
    CHECK(r.message.size() < 600);
    pb::WorkerMessage bye;
    std::string reason(1 << 20, 'y');
    for (size_t i = 0; i < reason.size(); i += 100) reason[i] = '\n';
    bye.mutable_goodbye()->set_reason(reason);
    const RawResult g = Raw(address, {HelloFor("g", layout), bye});
    INFO(g.message);
    CHECK(WaitFor(10, [&] { return absl::StrContains((*rogd)->log(), "(1048576 bytes)"); }));
    size_t longest = 0;
    for (absl::string_view line : absl::StrSplit((*rogd)->log(), '\n')) {
      longest = std::max(longest, line.size());
    }
    CHECK(longest < 1000);
  }
  // A message over --max_message_bytes (4 MiB), counted as such.
  {
    pb::WorkerMessage huge = Update(layout, 1, bias, bias_rows, 0, 0);
    huge.mutable_batch()->set_payload(std::string(5 << 20, '\0'));
    const RawResult r = Raw(address, {HelloFor("z", layout), huge});
    INFO(r.message);
    CHECK(r.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(absl::StrContains(r.message, "--max_message_bytes"));
    CHECK(Rejected(address, "message_too_large") == 1);
  }
  absl::StatusOr<std::vector<float>> after = AdminExport(address);
  REQUIRE(after.ok());
  CheckFinite(*after);
  CHECK(*after == expected);

  // rogd restarts from the checkpoint it writes at shutdown.
  CHECK((*rogd)->Stop(SIGTERM) == 0);
  auto again = RogdProcess::Start(flags);
  INFO((*rogd)->log());
  REQUIRE(again.ok());
  absl::StatusOr<std::vector<float>> restored = AdminExport((*again)->address());
  REQUIRE(restored.ok());
  CHECK(*restored == expected);
}

TEST_CASE("a stream replaced by a newer one of the same worker hears why", "[hostile]") {
  Served served;
  const Layout layout = TestLayout();
  OpenStream first(served.address);
  REQUIRE(first.Write(HelloFor("x", layout)));
  const pb::Welcome w = first.Welcome();
  OpenStream second(served.address);
  REQUIRE(second.Write(HelloAt("x", layout, w.iteration(), w.resume_token())));
  second.Welcome();
  const RawResult r = first.Finish();
  INFO(r.message);
  CHECK(r.code == grpc::StatusCode::ABORTED);
  CHECK(absl::StrContains(r.message, "replaced by a newer stream of the same worker"));
}

TEST_CASE("refusals are logged at most a few times per reason and client", "[hostile]") {
  Served served;
  const std::string& address = served.address;
  const Layout layout = TestLayout();
  const double start = MonotonicSeconds();
  for (int k = 0; k < 40; ++k) {
    const RawResult r = Raw(address, {HelloFor("x", layout), GoodBatch(9, 4)});
    REQUIRE(r.code == grpc::StatusCode::INVALID_ARGUMENT);
  }
  CHECK(Rejected(address, "bad_seq") == 40);
  size_t lines = 0;
  for (absl::string_view line : absl::StrSplit(served.rogd->log(), '\n')) {
    lines += absl::StrContains(line, "(bad_seq)") ? 1 : 0;
  }
  INFO(served.rogd->log());
  // 5 a 10 s period (the 40 refusals take about a second here; a slow
  // machine may span more periods).
  const double periods = 1 + std::floor((MonotonicSeconds() - start) / 10);
  CHECK(lines >= 1);
  CHECK(lines <= 5 * periods);
}

}  // namespace
}  // namespace rog
