// The wire contract, as an outsider reads it: a client written from
// proto/rog.proto and docs/protocol.md alone (no rog::Worker, no
// common/row_digest.h) against real rogd processes on loopback. Each case
// names the message and field whose comment it checks; the engine's side
// of the same comments is in test/server/contract_engine_test.cc, and the
// refusals of hostile input in hostile_test and limits_test.
#include <signal.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "common/codec.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"
#include "test/testing/raw_stream.h"
#include "test/testing/rogd_harness.h"

namespace rog {
namespace {

// --- a client written from the contract --------------------------------------

// One Trainer.Session stream: writes what the test says; a thread reads
// everything rogd sends into a queue the test inspects.
class Client {
 public:
  explicit Client(const std::string& address)
      : stub_(pb::Trainer::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    stream_ = stub_->Session(&ctx_);
    reader_ = std::thread([this] { ReadLoop(); });
  }
  ~Client() {
    ctx_.TryCancel();
    reader_.join();
  }

  bool Write(const pb::WorkerMessage& m) { return stream_->Write(m); }
  void WritesDone() { stream_->WritesDone(); }

  // The first message from rogd matching `pred` not taken yet, waiting up
  // to 10 s; false if none came (or the stream ended first).
  bool Next(const std::function<bool(const pb::ServerMessage&)>& pred, pb::ServerMessage* out) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool found = cv_.wait_for(lock, std::chrono::seconds(10), [&] {
      for (; taken_ < received_.size(); ++taken_) {
        if (pred(received_[taken_])) return true;
      }
      return done_;
    });
    if (!found || taken_ >= received_.size()) return false;
    *out = received_[taken_++];
    return true;
  }
  pb::Welcome Welcome() {
    pb::ServerMessage m;
    return Next([](const pb::ServerMessage& s) { return s.has_welcome(); }, &m) ? m.welcome()
                                                                                : pb::Welcome();
  }
  // Waits for the stream's end: every message rogd sent, and its status.
  grpc::Status Finish(std::vector<pb::ServerMessage>* all = nullptr) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(15), [&] { return done_; });
    if (all != nullptr) *all = received_;
    return status_;
  }
  // When the stream's status arrived, and when its StreamEnd did (0: none).
  double finished_at() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_at_;
  }
  double end_at() {
    std::lock_guard<std::mutex> lock(mu_);
    return end_at_;
  }

 private:
  void ReadLoop() {
    pb::ServerMessage m;
    while (stream_->Read(&m)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (m.has_end()) end_at_ = MonotonicSeconds();
      received_.push_back(m);
      cv_.notify_all();
    }
    const grpc::Status s = stream_->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    status_ = s;
    done_ = true;
    finished_at_ = MonotonicSeconds();
    cv_.notify_all();
  }

  std::unique_ptr<pb::Trainer::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::ServerMessage>> stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pb::ServerMessage> received_;
  size_t taken_ = 0;
  bool done_ = false;
  grpc::Status status_;
  double end_at_ = 0, finished_at_ = 0;
  std::thread reader_;
};

pb::WorkerMessage Progress(uint64_t iteration) {
  pb::WorkerMessage m;
  m.mutable_progress()->set_iteration(iteration);
  return m;
}

pb::WorkerMessage Goodbye(const std::string& reason = "contract test") {
  pb::WorkerMessage m;
  m.mutable_goodbye()->set_reason(reason);
  return m;
}

// A batch of `rows` (ascending) whose payload is `payload`, as the proto
// describes it: delta-coded ids, one count and one version lag per row.
pb::WorkerMessage Batch(uint64_t seq, uint64_t iteration, pb::BatchKind kind, pb::Codec codec,
                        const std::vector<RowId>& rows, std::string payload, uint32_t count = 0) {
  pb::WorkerMessage m;
  pb::RowBatch* b = m.mutable_batch();
  b->set_seq(seq);
  b->set_iteration(iteration);
  b->set_kind(kind);
  b->set_codec(codec);
  RowId previous = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    b->add_row_delta(k == 0 ? rows[k] : rows[k] - previous);
    previous = rows[k];
    b->add_count(count);
    b->add_version_lag(0);
  }
  b->set_payload(std::move(payload));
  return m;
}

// Little-endian fp32, 4 bytes a value (the fp32 codec).
std::string Fp32(const std::vector<float>& values) { return FloatsToBytes(values); }

std::vector<RowId> Range(RowId first, RowId end) {
  std::vector<RowId> rows;
  for (RowId r = first; r < end; ++r) rows.push_back(r);
  return rows;
}

// The first worker's hello and its initial values (row r: every element r).
std::vector<float> InitialValues(const Layout& layout) {
  std::vector<float> v(layout.total_numel());
  for (RowId r = 0; r < layout.num_rows(); ++r) {
    std::fill_n(v.begin() + layout.row(r).offset, layout.row(r).numel, static_cast<float>(r));
  }
  return v;
}

// `client` (the first worker) uploads `values` as the initial model, in
// batches of `per_batch` rows; returns the next uplink seq.
uint64_t Upload(Client& client, const Layout& layout, const std::vector<float>& values,
                RowId per_batch) {
  uint64_t seq = 1;
  for (RowId first = 0; first < layout.num_rows(); first += per_batch) {
    const RowId end = std::min<RowId>(layout.num_rows(), first + per_batch);
    const uint64_t begin = layout.row(first).offset;
    const uint64_t stop = layout.row(end - 1).offset + layout.row(end - 1).numel;
    const std::vector<float> part(values.begin() + begin, values.begin() + stop);
    REQUIRE(client.Write(
        Batch(seq++, 0, pb::BATCH_KIND_VALUES, pb::CODEC_FP32, Range(first, end), Fp32(part))));
  }
  return seq;
}

bool IsAck(const pb::ServerMessage& m) { return m.has_ack(); }

// Waits until rogd acknowledged uplink seq `seq`; the ack's bytes summed.
uint64_t AwaitAck(Client& client, uint64_t seq) {
  pb::ServerMessage m;
  uint64_t bytes = 0;
  while (client.Next(IsAck, &m)) {
    bytes += m.ack().bytes();
    if (m.ack().seq() >= seq) return bytes;
  }
  FAIL("no ack of seq " << seq);
  return 0;
}

// `client`, the first worker of a fresh rogd, says hello as `id` and
// uploads the initial model (row r: every element r), `per_batch` rows a
// batch; returns the next uplink seq once rogd acknowledged them all.
uint64_t BringModel(Client& client, const std::string& id, const Layout& layout,
                    RowId per_batch = 4) {
  REQUIRE(client.Write(HelloFor(id, layout)));
  REQUIRE(client.Welcome().send_initial_values());
  const uint64_t seq = Upload(client, layout, InitialValues(layout), per_batch);
  AwaitAck(client, seq - 1);
  return seq;
}

uint64_t Rejected(const std::string& address, const std::string& reason) {
  absl::StatusOr<pb::StatusReply> s = AdminStatus(address);
  if (!s.ok()) return ~0ull;
  const auto it = s->rejected().find(reason);
  return it == s->rejected().end() ? 0 : it->second;
}

std::unique_ptr<RogdProcess> StartRogd(std::vector<std::string> flags) {
  auto rogd = RogdProcess::Start(std::move(flags));
  REQUIRE(rogd.ok());
  return *std::move(rogd);
}

// --- row digests, from docs/protocol.md "Row digests" alone -------------------

uint64_t Mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// The digest of a group's values, given as their fp32 bytes (little-endian).
uint64_t GroupDigest(const std::string& fp32) {
  const size_t n = fp32.size() / 4;
  const auto bits = [&](size_t i) {
    uint64_t v = 0;
    for (int k = 3; k >= 0; --k) v = v << 8 | static_cast<unsigned char>(fp32[i * 4 + k]);
    return v;
  };
  uint64_t h = Mix(0x524f4700ULL ^ n);
  size_t i = 0;
  for (; i + 1 < n; i += 2) h = Mix(h ^ (bits(i) | bits(i + 1) << 32)) + 0x9e3779b97f4a7c15ULL;
  if (i < n) h = Mix(h ^ bits(i)) + 0x9e3779b97f4a7c15ULL;
  h = Mix(h);
  return h == 0 ? 1 : h;
}

// Hello.row_digests of a replica `values` (fp32, row order) of `rows` rows
// of `numel` elements each; groups listed in `withheld` are not offered.
std::string OutsiderDigests(const std::vector<float>& values, size_t rows, size_t numel,
                            const std::set<size_t>& withheld = {}) {
  const size_t per = rows <= 64 ? 1 : (rows + 63) / 64;
  const size_t groups = (rows + per - 1) / per;
  const std::string bytes = Fp32(values);
  std::string out;
  for (size_t g = 0; g < groups; ++g) {
    const size_t first = g * per, end = std::min(rows, first + per);
    const uint64_t d =
        withheld.count(g) ? 0
                          : GroupDigest(bytes.substr(first * numel * 4, (end - first) * numel * 4));
    for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>(d >> (8 * k)));
  }
  return out;
}

// Rows a joining client received as BATCH_KIND_VALUES until its resync
// was whole (every row but `in_sync`).
std::set<RowId> ResyncedRows(Client& client, size_t rows, size_t in_sync) {
  std::set<RowId> got;
  pb::ServerMessage m;
  while (got.size() + in_sync < rows &&
         client.Next([](const pb::ServerMessage& s) { return s.has_batch(); }, &m)) {
    if (m.batch().kind() != pb::BATCH_KIND_VALUES) continue;
    RowId id = 0;
    for (int k = 0; k < m.batch().row_delta_size(); ++k) {
      id = k == 0 ? m.batch().row_delta(0) : id + m.batch().row_delta(k);
      got.insert(id);
    }
  }
  return got;
}

std::set<RowId> InSyncRows(const pb::Welcome& w) {
  std::set<RowId> rows;
  RowId id = 0;
  for (int k = 0; k < w.in_sync_row_delta_size(); ++k) {
    id = k == 0 ? w.in_sync_row_delta(0) : id + w.in_sync_row_delta(k);
    rows.insert(id);
  }
  return rows;
}

TEST_CASE(
    "Hello.row_digests, computed from the docs' definition: a joining worker gets only "
    "the groups that changed",
    "[contract]") {
  auto rogd = StartRogd({"--workers=1", "--sync=ssp", "--staleness=4"});
  // 130 rows of 4: 3 rows per group, 44 groups, the last of 1 row.
  const Layout layout = *Layout::Create({{"w", {130, 4}}}, /*min_split_numel=*/8);
  const std::vector<float> initial = InitialValues(layout);
  Client a(rogd->address());
  const uint64_t seq = BringModel(a, "a", layout, 64);
  // a changes rows 4 and 100 (groups 1 and 33) by one iteration.
  REQUIRE(a.Write(Progress(1)));
  REQUIRE(a.Write(Batch(seq, 1, pb::BATCH_KIND_UPDATE, pb::CODEC_FP32, {4, 100},
                        Fp32(std::vector<float>(8, 0.5f)), 1)));
  AwaitAck(a, seq);

  SECTION("digests of the initial values: all but groups 1 and 33 are in sync") {
    Client b(rogd->address());
    pb::WorkerMessage hello = HelloFor("b", layout);
    hello.mutable_hello()->set_row_digests(OutsiderDigests(initial, 130, 4));
    REQUIRE(b.Write(hello));
    const pb::Welcome w = b.Welcome();
    CHECK(w.full_resync());
    const std::set<RowId> in_sync = InSyncRows(w);
    CHECK(in_sync.size() == 124);
    CHECK(w.in_sync_version_lag_size() == 124);
    const std::set<RowId> resynced = ResyncedRows(b, 130, in_sync.size());
    CHECK(resynced == std::set<RowId>{3, 4, 5, 99, 100, 101});
    REQUIRE(b.Write(Goodbye()));
    CHECK(b.Finish().ok());
  }
  SECTION("a group not offered (0) is resynced whole") {
    Client b(rogd->address());
    pb::WorkerMessage hello = HelloFor("b", layout);
    hello.mutable_hello()->set_row_digests(OutsiderDigests(initial, 130, 4, {43}));
    REQUIRE(b.Write(hello));
    const std::set<RowId> in_sync = InSyncRows(b.Welcome());
    CHECK(in_sync.size() == 123);
    CHECK(ResyncedRows(b, 130, in_sync.size()) == std::set<RowId>{3, 4, 5, 99, 100, 101, 129});
    REQUIRE(b.Write(Goodbye()));
  }
  SECTION("no digests: the whole model") {
    Client b(rogd->address());
    REQUIRE(b.Write(HelloFor("b", layout)));
    CHECK(b.Welcome().in_sync_row_delta_size() == 0);
    CHECK(ResyncedRows(b, 130, 0).size() == 130);
    REQUIRE(b.Write(Goodbye()));
  }
  REQUIRE(a.Write(Goodbye()));
  CHECK(a.Finish().ok());
}

// --- how streams end -----------------------------------------------------------

const pb::ServerMessage* LastEnd(const std::vector<pb::ServerMessage>& all) {
  return !all.empty() && all.back().has_end() ? &all.back() : nullptr;
}

TEST_CASE("StreamEnd on SIGTERM: ABORTED in-band, then the StreamEnd's code or CANCELLED",
          "[contract]") {
  auto rogd = StartRogd({"--workers=1"});
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  // One client closes its side on the StreamEnd, as rog::Worker does; the
  // other keeps it open.
  Client closes(rogd->address()), keeps(rogd->address());
  BringModel(closes, "closes", layout);
  REQUIRE(keeps.Write(HelloFor("keeps", layout)));
  REQUIRE(keeps.Welcome().full_resync());
  std::thread half_close([&] {
    pb::ServerMessage m;
    if (closes.Next([](const pb::ServerMessage& s) { return s.has_end(); }, &m)) {
      closes.WritesDone();
    }
  });
  CHECK(rogd->Stop(SIGTERM) == 0);
  half_close.join();
  for (Client* c : {&closes, &keeps}) {
    std::vector<pb::ServerMessage> all;
    const grpc::Status status = c->Finish(&all);
    const pb::ServerMessage* end = LastEnd(all);
    REQUIRE(end != nullptr);
    CHECK(end->end().code() == grpc::StatusCode::ABORTED);
    CHECK(absl::StrContains(end->end().message(), "rogd is shutting down"));
    CHECK(end->end().reason().empty());  // not a refusal
    INFO(status.error_code() << ": " << status.error_message());
    if (c == &closes) {
      CHECK(status.error_code() == grpc::StatusCode::ABORTED);
      CHECK(status.error_message() == end->end().message());
    } else {
      // Not UNAVAILABLE ("Socket closed"): the server shuts down only once
      // every stream has ended.
      CHECK(status.error_code() == grpc::StatusCode::CANCELLED);
      CHECK(c->finished_at() - c->end_at() < 1.5);
    }
  }
}

TEST_CASE(
    "StreamEnd: what the engine refuses ends with one, what the stream's reader refuses "
    "with a status only",
    "[contract]") {
  auto rogd = StartRogd({"--workers=1"});
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  Client a(rogd->address());
  BringModel(a, "a", layout);
  SECTION("in-band: a progress report that skips an iteration (bad_clock)") {
    Client b(rogd->address());
    REQUIRE(b.Write(HelloFor("b", layout)));
    const uint64_t clock = b.Welcome().iteration();
    REQUIRE(b.Write(Progress(clock + 2)));
    // Closes its side on the StreamEnd: the status then carries its code.
    pb::ServerMessage m;
    REQUIRE(b.Next([](const pb::ServerMessage& s) { return s.has_end(); }, &m));
    b.WritesDone();
    std::vector<pb::ServerMessage> all;
    const grpc::Status status = b.Finish(&all);
    const pb::ServerMessage* end = LastEnd(all);
    REQUIRE(end != nullptr);
    CHECK(end->end().code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(end->end().reason() == "bad_clock");
    CHECK(absl::StrContains(end->end().message(), "rises by at most 1 per report"));
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(Rejected(rogd->address(), "bad_clock") == 1);
  }
  SECTION("status only: a batch whose row ids do not ascend (bad_row_ids)") {
    Client b(rogd->address());
    REQUIRE(b.Write(HelloFor("b", layout)));
    const uint64_t clock = b.Welcome().iteration();
    REQUIRE(b.Write(Progress(clock + 1)));
    pb::WorkerMessage m = Batch(1, clock + 1, pb::BATCH_KIND_UPDATE, pb::CODEC_FP32, {1, 2},
                                Fp32(std::vector<float>(16, 1)), 1);
    m.mutable_batch()->set_row_delta(1, 0);  // rows 1, 1
    REQUIRE(b.Write(m));
    std::vector<pb::ServerMessage> all;
    const grpc::Status status = b.Finish(&all);
    CHECK(LastEnd(all) == nullptr);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StartsWith(status.error_message(), "row ids: "));
    CHECK(Rejected(rogd->address(), "bad_row_ids") == 1);
  }
  SECTION("status only, and no Welcome: a refused hello (bad_worker_id)") {
    for (const std::string& id : {std::string(), std::string(65, 'x')}) {
      Client b(rogd->address());
      REQUIRE(b.Write(HelloFor(id, layout)));
      std::vector<pb::ServerMessage> all;
      const grpc::Status status = b.Finish(&all);
      CHECK(all.empty());
      CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
      CHECK(absl::StrContains(status.error_message(), "use 1-64 letters"));
    }
    CHECK(Rejected(rogd->address(), "bad_worker_id") == 2);
  }
  SECTION("Goodbye: the StreamEnd says OK, and so does the status") {
    REQUIRE(a.Write(Goodbye()));
    a.WritesDone();
    std::vector<pb::ServerMessage> all;
    const grpc::Status status = a.Finish(&all);
    REQUIRE(LastEnd(all) != nullptr);
    CHECK(LastEnd(all)->end().code() == 0);
    CHECK(status.ok());
    // Evicted goes before it, with the goodbye's reason.
    REQUIRE(all.size() >= 2);
    REQUIRE(all[all.size() - 2].has_directive());
    CHECK(absl::StrContains(all[all.size() - 2].directive().evicted().reason(), "said goodbye"));
  }
}

// --- row batches -----------------------------------------------------------------

TEST_CASE(
    "RowBatch.seq and Ack: a batch already applied is acknowledged, not applied again; "
    "Ack.bytes counts the batches' encoded bytes",
    "[contract]") {
  auto rogd = StartRogd({"--workers=1"});
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  Client a(rogd->address());
  const uint64_t seq = BringModel(a, "a", layout);
  REQUIRE(a.Write(Progress(1)));
  const pb::WorkerMessage update = Batch(seq, 1, pb::BATCH_KIND_UPDATE, pb::CODEC_FP32, {1},
                                         Fp32(std::vector<float>(8, 0.25f)), 1);
  REQUIRE(a.Write(update));
  CHECK(AwaitAck(a, seq) == update.batch().ByteSizeLong());
  REQUIRE(a.Write(update));  // again, as after a lost ack
  pb::ServerMessage ack;
  REQUIRE(a.Next(IsAck, &ack));
  CHECK(ack.ack().seq() == seq);
  // seq 0 is never valid.
  pb::WorkerMessage zero = update;
  zero.mutable_batch()->set_seq(0);
  REQUIRE(a.Write(zero));
  const grpc::Status status = a.Finish();
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(absl::StartsWith(status.error_message(), "row batch seq 0 where"));
  CHECK(Rejected(rogd->address(), "bad_seq") == 1);
  absl::StatusOr<std::vector<float>> model = AdminExport(rogd->address());
  REQUIRE(model.ok());
  std::vector<float> expected = InitialValues(layout);
  for (int k = 0; k < 8; ++k) expected[8 + k] += 0.25f;  // once
  CHECK(*model == expected);
}

// An update of row 1 (8 elements) encoded in `codec`.
pb::WorkerMessage CodedUpdate(uint64_t seq, uint64_t iteration, Codec codec,
                              const std::vector<float>& values) {
  std::string payload;
  Encode(codec, values, &payload);
  return Batch(seq, iteration, pb::BATCH_KIND_UPDATE, static_cast<pb::Codec>(codec), {1},
               std::move(payload), 1);
}

TEST_CASE("RowBatch.codec: an update in a codec other than the Welcome's is decoded and folded",
          "[contract]") {
  // The Welcome names bf16; the worker sends fp32, int8 and sign.
  auto rogd = StartRogd({"--workers=1", "--codec=bf16"});
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  Client a(rogd->address());
  REQUIRE(a.Write(HelloFor("a", layout)));
  const pb::Welcome w = a.Welcome();
  REQUIRE(w.codec() == pb::CODEC_BF16);
  uint64_t seq = Upload(a, layout, InitialValues(layout), 4);
  std::vector<float> expected = InitialValues(layout);
  uint64_t iteration = 0;
  for (Codec codec : {Codec::kFp32, Codec::kInt8, Codec::kSign}) {
    const std::vector<float> delta = {0.125f, -0.5f, 1.0f, 0.75f, -1.0f, 0.0f, 0.5f, 0.25f};
    std::string payload;
    Encode(codec, delta, &payload);
    std::vector<float> decoded(8);
    REQUIRE(Decode(codec, payload, absl::MakeSpan(decoded)).ok());
    REQUIRE(a.Write(Progress(++iteration)));
    REQUIRE(a.Write(CodedUpdate(seq, iteration, codec, delta)));
    AwaitAck(a, seq++);
    for (int k = 0; k < 8; ++k) expected[8 + k] += decoded[k];
  }
  absl::StatusOr<std::vector<float>> model = AdminExport(rogd->address());
  REQUIRE(model.ok());
  CHECK(*model == expected);
  REQUIRE(a.Write(Goodbye()));
}

TEST_CASE("RowBatch payloads a codec cannot carry are refused as bad_values", "[contract]") {
  // An int8 scale past FLT_MAX / 128 (127 x it would be infinite), in a row
  // of 8 elements; a sign row of 3 elements whose padding bit 3 is set.
  const auto int8_row = [] {
    std::string p(4 + 8, '\1');
    const float scale = FLT_MAX / 2;
    std::memcpy(&p[0], &scale, 4);
    return p;
  };
  struct Case {
    const char* what;
    pb::Codec codec;
    std::string payload;
    const char* says;
  };
  const Case cases[] = {
      {"int8 scale", pb::CODEC_INT8, int8_row(), "int8 row scale is"},
      {"sign padding", pb::CODEC_SIGN, std::string("\0\0\x80?\x09", 5), "nonzero padding bits"},
  };
  int refused = 0;
  for (const Case& c : cases) {
    INFO(c.what);
    const Layout l = c.codec == pb::CODEC_SIGN ? *Layout::Create({{"v", {3}}})
                                               : *Layout::Create({{"w", {4, 8}}}, 8);
    auto fresh = StartRogd({"--workers=1"});
    Client x(fresh->address());
    BringModel(x, "x", l);
    REQUIRE(x.Write(Progress(1)));
    const RowId row = c.codec == pb::CODEC_SIGN ? 0 : 1;
    REQUIRE(x.Write(Batch(2, 1, pb::BATCH_KIND_UPDATE, c.codec, {row}, c.payload, 1)));
    const grpc::Status status = x.Finish();
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(status.error_message(), c.says));
    CHECK(Rejected(fresh->address(), "bad_values") == 1);
    ++refused;
  }
  CHECK(refused == 2);
}

TEST_CASE("BatchKind.VALUES: initial values other than fp32 are refused (bad_codec)",
          "[contract]") {
  auto rogd = StartRogd({"--workers=1"});
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  Client a(rogd->address());
  REQUIRE(a.Write(HelloFor("a", layout)));
  REQUIRE(a.Welcome().send_initial_values());
  std::string payload;
  Encode(Codec::kBf16, std::vector<float>(8, 1), &payload);
  REQUIRE(a.Write(Batch(1, 0, pb::BATCH_KIND_VALUES, pb::CODEC_BF16, {0}, payload)));
  const grpc::Status status = a.Finish();
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message() == "initial values must be pb::CODEC_FP32");
  CHECK(Rejected(rogd->address(), "bad_codec") == 1);
  absl::StatusOr<pb::StatusReply> s = AdminStatus(rogd->address());
  REQUIRE(s.ok());
  CHECK_FALSE(s->has_model());
}

// --- hello, goodbye, welcome -------------------------------------------------------

TEST_CASE("Hello.layout: a duplicate tensor name is refused (bad_hello)", "[contract]") {
  auto rogd = StartRogd({"--workers=1"});
  pb::WorkerMessage hello = HelloFor("a", *Layout::Create({{"w", {4}}, {"v", {4}}}));
  hello.mutable_hello()->mutable_layout()->mutable_tensors(1)->set_name("w");
  Client a(rogd->address());
  REQUIRE(a.Write(hello));
  const grpc::Status status = a.Finish();
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(absl::StrContains(status.error_message(), "bad layout"));
  CHECK(Rejected(rogd->address(), "bad_hello") == 1);
}

TEST_CASE(
    "Goodbye: a stream closed without one is refused as unparseable; its reason is logged "
    "cut to 200 bytes, other bytes as '?'",
    "[contract]") {
  const Layout layout = *Layout::Create({{"w", {4, 8}}}, 8);
  {
    auto rogd = StartRogd({"--workers=1"});
    Client a(rogd->address());
    REQUIRE(a.Write(HelloFor("a", layout)));
    REQUIRE(a.Welcome().send_initial_values());
    a.WritesDone();
    const grpc::Status status = a.Finish();
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(status.error_message(), "send a Goodbye before closing the stream"));
    CHECK(Rejected(rogd->address(), "unparseable") == 1);
  }
  auto rogd = StartRogd({"--workers=1"});
  Client a(rogd->address());
  BringModel(a, "a", layout);
  const std::string reason = "\x01" + std::string(299, 'x');
  REQUIRE(a.Write(Goodbye(reason)));
  a.WritesDone();
  CHECK(a.Finish().ok());
  REQUIRE(WaitFor(5, [&] { return absl::StrContains(rogd->log(), "left at iteration"); }));
  const std::string log = rogd->log();
  CHECK(absl::StrContains(log, "?" + std::string(199, 'x')));
  CHECK_FALSE(absl::StrContains(log, std::string(200, 'x')));
}

TEST_CASE("Welcome.max_message_bytes is rogd's --max_message_bytes", "[contract]") {
  auto rogd = StartRogd({"--workers=1", "--max_message_bytes=1048576"});
  Client a(rogd->address());
  REQUIRE(a.Write(HelloFor("a", *Layout::Create({{"w", {4, 8}}}, 8))));
  CHECK(a.Welcome().max_message_bytes() == 1048576);
  REQUIRE(a.Write(Goodbye()));
}

// --- admin -------------------------------------------------------------------------

TEST_CASE("ExportChunk: the layout in the first chunk only, then consecutive rows of about 1 MiB",
          "[contract]") {
  auto rogd = StartRogd({"--workers=1"});
  // 2.5 MiB of fp32 in 640 rows of 1 KiB.
  const Layout layout = *Layout::Create({{"w", {640, 1024}}});
  Client a(rogd->address());
  BringModel(a, "a", layout, 256);
  auto admin =
      pb::Admin::NewStub(grpc::CreateChannel(rogd->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto reader = admin->Export(&ctx, pb::ExportRequest());
  pb::ExportChunk chunk;
  std::vector<pb::ExportChunk> chunks;
  while (reader->Read(&chunk)) chunks.push_back(chunk);
  REQUIRE(reader->Finish().ok());
  REQUIRE(chunks.size() == 3);  // 256, 256 and 128 rows
  uint32_t next = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    CHECK(chunks[k].has_layout() == (k == 0));
    CHECK(chunks[k].first_row() == next);
    CHECK(chunks[k].values().size() == chunks[k].rows() * 1024 * 4);
    CHECK(chunks[k].values().size() <= (1u << 20));
    next += chunks[k].rows();
  }
  CHECK(next == 640);
  CHECK(LayoutFromProto(chunks[0].layout())->fingerprint() == layout.fingerprint());
  REQUIRE(a.Write(Goodbye()));
}

}  // namespace
}  // namespace rog
