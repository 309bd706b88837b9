#include "server/service.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/row_index.h"
#include "common/worker_id.h"
#include "proto/convert.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

// Counts uplink batches handed to the engine; a stream's writer and reader
// each have their own thread.
class StreamOutbox final : public Outbox {
 public:
  StreamOutbox(grpc::ServerContext* context,
               grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream)
      : context_(context), stream_(stream), writer_([this] { WriterLoop(); }) {}

  ~StreamOutbox() override { Stop(/*cancel=*/true); }

  void Send(pb::ServerMessage message) override {
    const uint64_t bytes = message.ByteSizeLong();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || ending_) return;
      if (message.has_ack()) {
        // Acks have no order to keep with batches and directives; a worker's
        // window cutoff waits on them, so they go ahead of queued rows.
        auto it = queue_.begin();
        while (it != queue_.end() && it->has_ack()) ++it;
        queue_.insert(it, std::move(message));
      } else {
        queue_.push_back(std::move(message));
      }
    }
    queued_ += bytes;
    cv_.notify_all();
  }

  uint64_t queued_bytes() const override { return queued_.load(); }

  void End(std::string why) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ending_ = true;
      end_reason_ = std::move(why);
    }
    cv_.notify_all();
  }

  bool ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return ending_;
  }

  std::string end_reason() {
    std::lock_guard<std::mutex> lock(mu_);
    return end_reason_;
  }

  // Stops the writer: after the queued messages unless `cancel`, and within
  // two seconds in any case (a peer that stopped reading is cancelled).
  void Stop(bool cancel) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stop_ = true;
      if (cancel) queue_.clear();
      cv_.notify_all();
      if (!cv_.wait_for(lock, std::chrono::seconds(2), [&] { return writer_done_; })) {
        context_->TryCancel();
      }
    }
    if (writer_.joinable()) writer_.join();
  }

 private:
  void WriterLoop() {
    for (;;) {
      pb::ServerMessage m;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || stop_ || ending_; });
        if (queue_.empty()) {
          // End(): everything is written; cancel to wake the reading thread.
          if (ending_ && !stop_) context_->TryCancel();
          break;
        }
        m = std::move(queue_.front());
        queue_.pop_front();
      }
      const uint64_t bytes = m.ByteSizeLong();
      const bool ok = stream_->Write(m);
      queued_ -= bytes;
      if (!ok) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    writer_done_ = true;
    cv_.notify_all();
  }

  grpc::ServerContext* context_;
  grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<pb::ServerMessage> queue_;
  std::atomic<uint64_t> queued_{0};
  bool stop_ = false;
  bool ending_ = false;
  bool writer_done_ = false;
  std::string end_reason_;
  std::thread writer_;  // last: starts once the rest is constructed
};

bool ValidSeconds(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

const std::vector<std::string>& RejectionReasons() {
  static const std::vector<std::string> reasons = {
      // The first message of a stream.
      "not_hello", "bad_worker_id", "bad_hello", "layout_mismatch",
      // Row batches (ValidateUplinkBatch).
      "bad_seq", "unexpected_values", "bad_codec", "bad_kind", "bad_row_ids", "empty_batch",
      "bad_index", "bad_count", "payload_size", "bad_values",
      // Anything else on a stream.
      "bad_progress", "second_hello", "unknown_message"};
  return reasons;
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status ValidateUplinkBatch(const pb::RowBatch& b, const Layout& layout, uint64_t expected_seq,
                                 bool accepts_values, UplinkBatch* out, std::string* reason) {
  const auto fail = [&](const char* why, std::string message) {
    *reason = why;
    return absl::InvalidArgumentError(std::move(message));
  };
  if (b.seq() > expected_seq || b.seq() == 0) {
    return fail("bad_seq", absl::StrCat("row batch seq ", b.seq(), " where ", expected_seq,
                                        " was expected: seqs start at 1 and rise by 1 per "
                                        "batch; after a reconnect continue from pb::Welcome's "
                                        "last_applied_uplink_seq + 1"));
  }
  out->seq = b.seq();
  out->iteration = b.iteration();
  if (b.seq() < expected_seq) return absl::OkStatus();  // a duplicate: acknowledged, not applied
  if (b.kind() == pb::BATCH_KIND_VALUES) {
    if (!accepts_values) {
      return fail("unexpected_values",
                  "pb::BATCH_KIND_VALUES is only accepted from the worker asked for the initial "
                  "model (pb::Welcome.send_initial_values); send updates as pb::BATCH_KIND_UPDATE");
    }
    if (b.codec() != pb::CODEC_FP32) {
      return fail("bad_codec", "initial values must be pb::CODEC_FP32");
    }
  } else if (b.kind() != pb::BATCH_KIND_UPDATE) {
    return fail("bad_kind", absl::StrCat("unknown batch kind ", b.kind(),
                                         "; use pb::BATCH_KIND_UPDATE or pb::BATCH_KIND_VALUES"));
  }
  if (!pb::Codec_IsValid(b.codec())) {
    return fail("bad_codec", absl::StrCat("unknown codec ", b.codec()));
  }
  const pb::Codec codec = static_cast<pb::Codec>(b.codec());
  absl::StatusOr<std::vector<RowId>> rows = DecodeRowIds(
      absl::MakeConstSpan(b.row_delta().data(), b.row_delta_size()), layout.num_rows());
  if (!rows.ok()) {
    return fail("bad_row_ids", absl::StrCat("row ids: ", rows.status().message(),
                                            " (the model has ", layout.num_rows(), " rows)"));
  }
  if (rows->empty()) return fail("empty_batch", "a row batch must carry at least one row");
  if (b.count_size() != static_cast<int>(rows->size()) ||
      b.version_lag_size() != static_cast<int>(rows->size())) {
    return fail("bad_index", absl::StrCat("a batch of ", rows->size(), " rows carries ",
                                          b.count_size(), " counts and ", b.version_lag_size(),
                                          " version lags; give one of each per row"));
  }
  for (int k = 0; k < b.count_size(); ++k) {
    const uint32_t c = b.count(k);
    // An UPDATE row may carry count 0: a residual of iterations already
    // counted (a lossy codec's error feedback, or updates kept across a
    // rejoin).
    if (b.kind() == pb::BATCH_KIND_VALUES && c != 0) {
      return fail("bad_count", "initial values carry count 0");
    }
  }
  size_t expected_bytes = 0;
  size_t values = 0;
  for (RowId r : *rows) {
    expected_bytes += EncodedSize(
        static_cast<pb::Codec>(codec) == pb::CODEC_FP32 ? Codec::kFp32 : static_cast<Codec>(codec),
        layout.row(r).numel);
    values += layout.row(r).numel;
  }
  if (b.payload().size() != expected_bytes) {
    return fail(
        "payload_size",
        absl::StrCat("payload is ", b.payload().size(), " bytes; ", rows->size(), " rows in codec ",
                     CodecName(static_cast<Codec>(codec)), " need ", expected_bytes));
  }
  out->values.resize(values);
  size_t at = 0, offset = 0;
  for (RowId r : *rows) {
    const uint32_t numel = layout.row(r).numel;
    const size_t bytes = EncodedSize(static_cast<Codec>(codec), numel);
    absl::Status s =
        Decode(static_cast<Codec>(codec), absl::string_view(b.payload()).substr(offset, bytes),
               absl::MakeSpan(out->values.data() + at, numel));
    if (!s.ok()) {
      return fail("bad_values",
                  absl::StrCat("row ", r, " (", layout.RowName(r), "): ", s.message()));
    }
    at += numel;
    offset += bytes;
  }
  out->kind = b.kind();
  out->rows = *std::move(rows);
  out->counts.assign(b.count().begin(), b.count().end());
  out->payload_bytes = b.payload().size();
  out->wire_bytes = b.ByteSizeLong();
  return absl::OkStatus();
}

grpc::Status TrainerService::Session(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<pb::ServerMessage, pb::WorkerMessage>* stream) {
  const std::string peer = context->peer();
  if (auth_ != nullptr) {
    grpc::Status allowed = auth_->Check(context->client_metadata(), Caller::kWorker, peer);
    if (!allowed.ok()) return allowed;
  }
  pb::WorkerMessage m;
  if (!stream->Read(&m)) return grpc::Status(grpc::StatusCode::CANCELLED, "no hello");
  const auto reject = [&](const std::string& reason, grpc::StatusCode code,
                          const std::string& message) {
    engine_->CountRejection(reason);
    spdlog::warn("rejected a message from {}: {}", peer, message);
    return grpc::Status(code, message);
  };
  if (m.kind_case() != pb::WorkerMessage::kHello) {
    return reject("not_hello", grpc::StatusCode::INVALID_ARGUMENT,
                  "the first message of a stream must be a Hello");
  }
  if (!ValidWorkerId(m.hello().worker_id())) {
    return reject("bad_worker_id", grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("worker id '", m.hello().worker_id().substr(0, 80),
                               "' is invalid: use 1-64 letters, digits, '.', '_' or '-'"));
  }
  auto outbox = std::make_shared<StreamOutbox>(context, stream);
  absl::StatusOr<Admission> admitted = engine_->Hello(outbox, m.hello(), peer);
  if (!admitted.ok()) {
    outbox->Stop(/*cancel=*/false);
    if (admitted.status().code() == absl::StatusCode::kUnavailable) {
      return ToGrpc(admitted.status());  // retried by the worker; not a bad message
    }
    return reject(admitted.status().code() == absl::StatusCode::kFailedPrecondition
                      ? "layout_mismatch"
                      : "bad_hello",
                  static_cast<grpc::StatusCode>(admitted.status().code()),
                  std::string(admitted.status().message()));
  }
  const uint64_t session = admitted->session;
  const Layout& layout = *admitted->layout;
  uint64_t expected_seq = admitted->next_uplink_seq;
  const bool accepts_values = admitted->accepts_values;
  grpc::Status result = grpc::Status::OK;
  bool clean = false;
  while (stream->Read(&m)) {
    if (outbox->ended()) break;
    switch (m.kind_case()) {
      case pb::WorkerMessage::kBatch: {
        UplinkBatch batch;
        std::string reason;
        absl::Status s =
            ValidateUplinkBatch(m.batch(), layout, expected_seq, accepts_values, &batch, &reason);
        if (!s.ok()) {
          result = reject(reason, grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
          break;
        }
        if (batch.seq == expected_seq) ++expected_seq;
        engine_->Batch(session, std::move(batch));
        continue;
      }
      case pb::WorkerMessage::kAck:
        engine_->Ack(session, m.ack());
        continue;
      case pb::WorkerMessage::kProgress: {
        const pb::Progress& p = m.progress();
        if (!ValidSeconds(p.compute_seconds()) || !ValidSeconds(p.transmit_seconds()) ||
            !ValidSeconds(p.stall_seconds()) || !ValidSeconds(p.uplink_goodput()) ||
            !ValidSeconds(p.window_overshoot())) {
          result = reject("bad_progress", grpc::StatusCode::INVALID_ARGUMENT,
                          "progress carries a negative or non-finite time or goodput");
          break;
        }
        engine_->Progress(session, p);
        continue;
      }
      case pb::WorkerMessage::kGoodbye:
        engine_->Goodbye(session, m.goodbye().reason());
        clean = true;
        break;
      case pb::WorkerMessage::kHello:
        result = reject("second_hello", grpc::StatusCode::INVALID_ARGUMENT,
                        "a stream carries one Hello; open a new stream to reconnect");
        break;
      default:
        result = reject("unknown_message", grpc::StatusCode::INVALID_ARGUMENT,
                        "empty or unknown pb::WorkerMessage (is the SDK newer than rogd?)");
        break;
    }
    break;
  }
  engine_->Closed(session);
  if (result.ok() && outbox->ended() && !clean) {
    const std::string why = outbox->end_reason();
    outbox->Stop(/*cancel=*/true);
    return grpc::Status(grpc::StatusCode::ABORTED, why);
  }
  outbox->Stop(/*cancel=*/!result.ok() ? false : !clean);
  return result;
}

grpc::Status AdminService::Authorize(grpc::ServerContext* context) const {
  if (auth_ == nullptr) return grpc::Status::OK;
  return auth_->Check(context->client_metadata(), Caller::kAdmin, context->peer());
}

grpc::Status AdminService::GetStatus(grpc::ServerContext* context, const pb::StatusRequest*,
                                     pb::StatusReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  *reply = engine_->Status();
  return grpc::Status::OK;
}

grpc::Status AdminService::ListWorkers(grpc::ServerContext* context, const pb::WorkersRequest*,
                                       pb::WorkersReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  *reply = engine_->Workers();
  return grpc::Status::OK;
}

grpc::Status AdminService::GetStaleness(grpc::ServerContext* context,
                                        const pb::StalenessRequest* request,
                                        pb::StalenessReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  absl::StatusOr<pb::StalenessReply> r = engine_->Staleness(*request);
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status AdminService::Checkpoint(grpc::ServerContext* context, const pb::CheckpointRequest*,
                                      pb::CheckpointReply* reply) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  absl::StatusOr<pb::CheckpointReply> r = engine_->CheckpointNow();
  if (!r.ok()) return ToGrpc(r.status());
  *reply = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status AdminService::Export(grpc::ServerContext* context, const pb::ExportRequest*,
                                  grpc::ServerWriter<pb::ExportChunk>* writer) {
  if (grpc::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  absl::StatusOr<ModelSnapshot> snap = engine_->Export();
  if (!snap.ok()) return ToGrpc(snap.status());
  const Layout& layout = *snap->layout;
  constexpr size_t kChunkBytes = 1 << 20;
  RowId row = 0;
  bool first = true;
  while (row < layout.num_rows() || first) {
    pb::ExportChunk chunk;
    if (first) *chunk.mutable_layout() = LayoutToProto(layout);
    first = false;
    const RowId begin = row;
    size_t bytes = 0;
    while (row < layout.num_rows() &&
           (row == begin || bytes + layout.row(row).numel * 4 <= kChunkBytes)) {
      bytes += layout.row(row).numel * 4;
      ++row;
    }
    chunk.set_first_row(begin);
    chunk.set_rows(row - begin);
    if (row > begin) {
      const uint64_t offset = layout.row(begin).offset;
      chunk.set_values(FloatsToBytes(absl::MakeConstSpan(snap->values.data() + offset, bytes / 4)));
    }
    if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "reader left");
  }
  return grpc::Status::OK;
}

}  // namespace rog
