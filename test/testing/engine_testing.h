// rogd's engine in-process, for tests and the engine fuzzer: streams are
// FakeOutboxes that keep what the engine sends, time is a FakeClock the
// test moves, and a Ledger of what the engine acknowledged gives the model
// the engine must hold. No sockets, no real time: every result depends on
// the messages alone.
#ifndef ROG_TEST_TESTING_ENGINE_TESTING_H_
#define ROG_TEST_TESTING_ENGINE_TESTING_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/layout.h"
#include "common/protocol_rules.h"
#include "common/row_index.h"
#include "proto/convert.h"
#include "server/engine.h"

namespace rog {

// Keeps every message the engine sends to one stream. Thread-safe (the
// engine thread sends, the test reads).
class FakeOutbox final : public Outbox {
 public:
  void Send(pb::ServerMessage message) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ended_) messages_.push_back(std::move(message));
  }
  uint64_t queued_bytes() const override { return 0; }
  void End(absl::Status status, std::string reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    end_status_ = std::move(status);
    end_reason_ = std::move(reason);
  }

  bool ended() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }
  absl::Status end_status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return end_status_;
  }
  std::string end_reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return end_reason_;
  }
  std::vector<pb::ServerMessage> messages() const {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  // The highest uplink seq the engine acknowledged (0: none).
  uint64_t acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t seq = 0;
    for (const pb::ServerMessage& m : messages_) {
      if (m.has_ack()) seq = std::max(seq, m.ack().seq());
    }
    return seq;
  }

 private:
  mutable std::mutex mu_;
  std::vector<pb::ServerMessage> messages_;
  bool ended_ = false;
  absl::Status end_status_;
  std::string end_reason_;
};

// A small model: a split tensor of 8 rows of 4 and a bias of 3 (one row).
inline Layout SmallLayout() {
  return *Layout::Create({{"w", {8, 4}}, {"b", {3}}}, /*min_split_numel=*/8);
}

// Drives an Engine as worker streams would. Not thread-safe.
class EngineHarness {
 public:
  struct Stream {
    uint64_t session = 0;
    std::shared_ptr<FakeOutbox> outbox;
    uint64_t next_seq = 1;
    uint64_t token = 0;
    // The worker's clock as it knows it: the welcome's, then every
    // Progress sent; batches carry it as their iteration.
    uint64_t clock = 0;
  };

  explicit EngineHarness(EngineOptions options, Layout layout = SmallLayout())
      : layout_(std::move(layout)), clock_(std::make_shared<FakeClock>()) {
    options.clock = clock_;
    engine_ = *Engine::Start(std::move(options));
  }
  ~EngineHarness() {
    engine_->EndStreams("test over");
    (void)engine_->Shutdown();
  }

  Engine& engine() { return *engine_; }
  FakeClock& clock() { return *clock_; }
  const Layout& layout() const { return layout_; }

  pb::Hello MakeHello(const std::string& id, uint64_t iteration = 0, uint64_t token = 0) const {
    pb::Hello h;
    h.set_worker_id(id);
    *h.mutable_layout() = LayoutToProto(layout_);
    h.set_layout_fingerprint(layout_.fingerprint());
    h.set_iteration(iteration);
    h.set_resume_token(token);
    h.set_honours_push_ahead(true);  // as the SDK does
    return h;
  }

  // Says hello; the stream (and *reason, the refusal's label) or the error.
  absl::StatusOr<Stream> Hello(const pb::Hello& hello, std::string* reason = nullptr) {
    Stream s;
    s.outbox = std::make_shared<FakeOutbox>();
    Rejection why = Rejection::kNone;
    absl::StatusOr<Admission> a = engine_->Hello(s.outbox, hello, "test", &why);
    if (reason != nullptr) *reason = RejectionLabel(why);
    if (!a.ok()) return a.status();
    s.session = a->session;
    s.next_seq = a->next_uplink_seq;
    streams_.push_back({s.session, s.outbox, false});
    for (const pb::ServerMessage& m : s.outbox->messages()) {
      if (!m.has_welcome()) continue;
      s.token = m.welcome().resume_token();
      s.clock = m.welcome().iteration();
    }
    return s;
  }

  // A batch of `rows` with `values` (the rows' elements, concatenated) and
  // one count per row, formed at the stream's clock; seq from the stream.
  // Applied values count in the ledger once the engine acknowledges them
  // (Account).
  void Batch(Stream& s, pb::BatchKind kind, const std::vector<RowId>& rows,
             const std::vector<uint32_t>& counts, const std::vector<float>& values) {
    UplinkBatch b;
    b.seq = s.next_seq++;
    b.iteration = s.clock;
    b.kind = kind;
    b.rows = rows;
    b.counts = counts;
    b.values = values;
    // What the batch costs on the wire, as with fp32 (team patience counts
    // the bytes a worker's uplink brings).
    b.wire_bytes = values.size() * sizeof(float) + rows.size() * kRowIndexBytes;
    pending_[s.session][b.seq] = Sent{kind, rows, values};
    engine_->Batch(s.session, std::move(b));
  }

  // The first worker's initial model, every row in one batch.
  void SendValues(Stream& s, const std::vector<float>& values) {
    std::vector<RowId> rows(layout_.num_rows());
    for (RowId r = 0; r < rows.size(); ++r) rows[r] = r;
    Batch(s, pb::BATCH_KIND_VALUES, rows, std::vector<uint32_t>(rows.size(), 0), values);
  }

  // An update of every row by `delta` per element, `count` iterations each.
  void UpdateAll(Stream& s, float delta, uint32_t count) {
    std::vector<RowId> rows(layout_.num_rows());
    for (RowId r = 0; r < rows.size(); ++r) rows[r] = r;
    Batch(s, pb::BATCH_KIND_UPDATE, rows, std::vector<uint32_t>(rows.size(), count),
          std::vector<float>(layout_.total_numel(), delta));
  }

  void Progress(Stream& s, uint64_t iteration, bool stalled = false) {
    pb::Progress p;
    p.set_iteration(iteration);
    p.set_stalled(stalled);
    if (iteration > s.clock) s.clock = iteration;
    engine_->Progress(s.session, p);
  }

  // A detached worker's word that it pauses at `iteration` (the SDK's
  // ReportWait while detached).
  void Pause(Stream& s, uint64_t iteration) {
    pb::Progress p;
    p.set_iteration(iteration);
    p.set_stalled(true);
    p.set_paused(true);
    engine_->Progress(s.session, p);
  }

  // Waits until the engine has run everything queued so far, and the tick
  // after it (the engine checks timers after every event).
  void Settle() {
    engine_->Status();
    // As the stream handler does: a stream the engine ended is closed.
    for (Open& o : streams_) {
      if (!o.closed && o.outbox->ended()) {
        o.closed = true;
        engine_->Closed(o.session);
      }
    }
    engine_->Status();
  }

  // Records that stream `s`'s acknowledged batches are applied: call after
  // Settle for every stream the test wants in the ledger.
  void Account(const Stream& s) { Account(s.session, *s.outbox); }

  // Account for every stream, oldest first (a newer first worker's initial
  // values replace an older one's).
  void AccountAll() {
    for (const Open& o : streams_) Account(o.session, *o.outbox);
  }

 private:
  void Account(uint64_t session, const FakeOutbox& outbox) {
    const uint64_t acked = outbox.acked();
    auto& sent = pending_[session];
    for (auto it = sent.begin(); it != sent.end() && it->first <= acked;) {
      const Sent& b = it->second;
      size_t at = 0;
      for (RowId row : b.rows) {
        const RowInfo& info = layout_.row(row);
        for (uint32_t j = 0; j < info.numel; ++j) {
          double& v = ledger_[info.offset + j];
          v = b.kind == pb::BATCH_KIND_VALUES ? b.values[at + j] : v + b.values[at + j];
        }
        at += info.numel;
      }
      it = sent.erase(it);
    }
  }

 public:
  // "" when the engine's model equals the ledger (values as first sent plus
  // every acknowledged update) element for element, and is finite.
  std::string CheckLedger() {
    absl::StatusOr<ModelSnapshot> snap = engine_->Export();
    if (!snap.ok()) {
      // No model yet (initial values acknowledged, then their worker left).
      return engine_->Status().has_model() ? std::string(snap.status().message()) : "";
    }
    for (size_t j = 0; j < snap->values.size(); ++j) {
      if (!std::isfinite(snap->values[j])) return "non-finite model value at " + std::to_string(j);
      const auto it = ledger_.find(j);
      const double want = it == ledger_.end() ? 0 : it->second;
      if (static_cast<double>(snap->values[j]) != static_cast<float>(want)) {
        return "model[" + std::to_string(j) + "] = " + std::to_string(snap->values[j]) +
               " but the ledger says " + std::to_string(want);
      }
    }
    return "";
  }

  // "" when every row batch the engine sent decodes as a worker decodes it
  // (its row ids, then each row's payload in the batch's codec, the whole
  // payload used): nothing rogd sends may be refused by an honest worker.
  std::string CheckDownlinkDecodes() const {
    for (const Open& o : streams_) {
      for (const pb::ServerMessage& m : o.outbox->messages()) {
        if (!m.has_batch()) continue;
        const pb::RowBatch& b = m.batch();
        const std::string which =
            absl::StrCat("downlink batch ", b.seq(), " of session ", o.session);
        absl::StatusOr<std::vector<RowId>> rows = DecodeRowIds(
            absl::MakeConstSpan(b.row_delta().data(), b.row_delta_size()), layout_.num_rows());
        if (!rows.ok()) return absl::StrCat(which, ": ", rows.status().message());
        const Codec codec = static_cast<Codec>(b.codec());
        size_t offset = 0;
        std::vector<float> values;
        for (RowId row : *rows) {
          const uint32_t numel = layout_.row(row).numel;
          const size_t bytes = EncodedSize(codec, numel);
          if (offset + bytes > b.payload().size()) return which + ": short payload";
          values.resize(numel);
          const absl::Status s = Decode(codec, absl::string_view(b.payload()).substr(offset, bytes),
                                        absl::MakeSpan(values));
          if (!s.ok()) return absl::StrCat(which, ", row ", row, ": ", s.message());
          offset += bytes;
        }
        if (offset != b.payload().size()) return which + ": payload longer than its rows";
      }
    }
    return "";
  }

  uint64_t Rejected(const std::string& reason) {
    const pb::StatusReply s = engine_->Status();
    const auto it = s.rejected().find(reason);
    return it == s.rejected().end() ? 0 : it->second;
  }

 private:
  struct Sent {
    pb::BatchKind kind;
    std::vector<RowId> rows;
    std::vector<float> values;
  };
  Layout layout_;
  std::shared_ptr<FakeClock> clock_;
  std::unique_ptr<Engine> engine_;
  struct Open {
    uint64_t session;
    std::shared_ptr<FakeOutbox> outbox;
    bool closed;
  };
  std::vector<Open> streams_;
  std::map<uint64_t, std::map<uint64_t, Sent>> pending_;  // by session, by seq
  std::map<size_t, double> ledger_;
};

}  // namespace rog

#endif  // ROG_TEST_TESTING_ENGINE_TESTING_H_
