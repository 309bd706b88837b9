#include "tools/scale/synthetic_worker.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "proto/convert.h"

namespace rog {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

std::string Repeated(float value, size_t bytes) {
  std::vector<float> v(bytes / sizeof(float), value);
  return FloatsToBytes(v);
}

// How many uplink batches may wait for the stream at once (about 0.5 MB).
constexpr size_t kQueuedBatches = 32;

}  // namespace

SyntheticModel::SyntheticModel(const Layout& l, size_t batch_bytes)
    : layout(l), layout_proto(LayoutToProto(l)) {
  size_t largest = 0;
  for (RowId first = 0; first < layout.num_rows();) {
    RowId end = first;
    size_t bytes = 0;
    while (end < layout.num_rows() &&
           (end == first || bytes + layout.row(end).numel * sizeof(float) <= batch_bytes)) {
      bytes += layout.row(end).numel * sizeof(float);
      ++end;
    }
    batches.emplace_back(first, end);
    largest = std::max(largest, bytes);
    first = end;
  }
  update_payload = Repeated(1.0f / (1 << 20), largest);
  value_payload = Repeated(1.0f / (1 << 10), largest);
}

SyntheticWorker::SyntheticWorker(std::shared_ptr<grpc::Channel> channel,
                                 const SyntheticModel& model, std::string id, uint32_t staleness,
                                 double compute_seconds)
    : channel_(std::move(channel)),
      model_(model),
      id_(std::move(id)),
      staleness_(staleness),
      compute_seconds_(compute_seconds),
      stub_(pb::Trainer::NewStub(channel_)),
      versions_(model.layout.num_rows(), 0) {}

SyntheticWorker::~SyntheticWorker() {
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    closing_ = true;
  }
  q_cv_.notify_all();
  if (ctx_ != nullptr) ctx_->TryCancel();
  if (writer_.joinable()) writer_.join();
  if (reader_.joinable()) reader_.join();
}

std::vector<double> SyntheticWorker::iteration_times() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return iteration_times_;
}

absl::Status SyntheticWorker::Hello() {
  if (reader_.joinable()) reader_.join();
  if (writer_.joinable()) writer_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    welcomed_ = ended_ = false;
  }
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    out_.clear();
    closing_ = writer_failed_ = ack_pending_ = false;
    ack_seq_ = ack_bytes_ = 0;
  }
  ctx_ = std::make_unique<grpc::ClientContext>();
  stream_ = stub_->Session(ctx_.get());
  pb::WorkerMessage m;
  pb::Hello* h = m.mutable_hello();
  h->set_worker_id(id_);
  h->set_layout_fingerprint(model_.layout.fingerprint());
  *h->mutable_layout() = model_.layout_proto;
  h->set_sdk_version("rog-scale-study");
  hello_at_ = SteadySeconds();
  if (!stream_->Write(m)) return absl::UnavailableError(id_ + ": the hello did not go out");
  reader_ = std::thread([this] { ReadLoop(); });
  writer_ = std::thread([this] { WriteLoop(); });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return welcomed_ || ended_; });
  if (welcomed_) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(end_status_.error_code()),
                      absl::StrCat(id_, ": ", end_status_.error_message(), " ", end_message_));
}

absl::Status SyntheticWorker::Join(double* resync_seconds, double timeout_seconds) {
  for (int attempt = 0;; ++attempt) {
    absl::Status s = Hello();
    if (s.ok()) break;
    if (s.code() != absl::StatusCode::kUnavailable || attempt > 600) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (welcome_.send_initial_values()) return Upload();
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                    [&] { return resync_rows_left_ == 0 || ended_; })) {
    return absl::DeadlineExceededError(
        absl::StrCat(id_, ": resync not complete after ", timeout_seconds, " s"));
  }
  if (ended_) return absl::AbortedError(absl::StrCat(id_, ": stream ended during the resync"));
  if (resync_seconds != nullptr) *resync_seconds = resync_done_at_ - hello_at_;
  return absl::OkStatus();
}

absl::Status SyntheticWorker::Upload() {
  uint64_t last = 0;
  for (const auto& [first, end] : model_.batches) {
    pb::WorkerMessage m;
    pb::RowBatch* b = m.mutable_batch();
    b->set_seq(last = next_seq_++);
    b->set_kind(pb::BATCH_KIND_VALUES);
    b->set_codec(pb::CODEC_FP32);
    size_t bytes = 0;
    for (RowId r = first; r < end; ++r) {
      b->add_row_delta(r == first ? r : 1);
      b->add_count(0);
      b->add_version_lag(0);
      bytes += model_.layout.row(r).numel * sizeof(float);
    }
    b->set_payload(model_.value_payload.data(), bytes);
    if (!Enqueue(std::move(m))) return absl::AbortedError(id_ + ": stream broke in the upload");
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return uplink_acked_ >= last || ended_; });
  return ended_ ? absl::AbortedError(id_ + ": stream ended in the upload") : absl::OkStatus();
}

absl::Status SyntheticWorker::AwaitTeam() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return released_ > clock_ || ended_; });
  return ended_ ? absl::AbortedError(id_ + ": stream ended before the team formed")
                : absl::OkStatus();
}

bool SyntheticWorker::BoundMet() {
  const uint64_t need = clock_ > staleness_ ? clock_ - staleness_ : 0;
  if (need != scan_need_) {
    scan_need_ = need;
    scan_ = 0;
  }
  while (scan_ < versions_.size() && versions_[scan_] >= need) ++scan_;
  return scan_ == versions_.size();
}

absl::Status SyntheticWorker::AwaitBound() {
  std::unique_lock<std::mutex> lock(mu_);
  if (BoundMet() || released_ > clock_) return absl::OkStatus();
  pb::WorkerMessage m;
  m.mutable_progress()->set_iteration(clock_);
  m.mutable_progress()->set_stalled(true);
  lock.unlock();
  if (!Enqueue(std::move(m))) {
    return stop_ ? absl::OkStatus() : absl::AbortedError(id_ + ": stream broke");
  }
  lock.lock();
  while (!(BoundMet() || released_ > clock_ || ended_ || stop_)) {
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  return ended_ ? absl::AbortedError(id_ + ": stream ended at the bound") : absl::OkStatus();
}

absl::Status SyntheticWorker::PushAll(uint64_t iteration) {
  for (const auto& [first, end] : model_.batches) {
    pb::WorkerMessage m;
    pb::RowBatch* b = m.mutable_batch();
    b->set_seq(next_seq_++);
    b->set_iteration(iteration);
    b->set_kind(pb::BATCH_KIND_UPDATE);
    b->set_codec(pb::CODEC_FP32);
    size_t bytes = 0;
    for (RowId r = first; r < end; ++r) {
      b->add_row_delta(r == first ? r : 1);
      b->add_count(1);
      b->add_version_lag(0);
      bytes += model_.layout.row(r).numel * sizeof(float);
    }
    b->set_payload(model_.update_payload.data(), bytes);
    bytes_up_ += b->ByteSizeLong();
    if (!Enqueue(std::move(m))) {
      return stop_ ? absl::OkStatus() : absl::AbortedError(id_ + ": stream broke in a push");
    }
  }
  return absl::OkStatus();
}

absl::Status SyntheticWorker::RunIterations() {
  while (!stop_) {
    if (absl::Status s = AwaitBound(); !s.ok()) return s;
    if (stop_) break;
    if (compute_seconds_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(compute_seconds_));
    }
    uint64_t c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      c = ++clock_;
    }
    pb::WorkerMessage m;
    m.mutable_progress()->set_iteration(c);
    if (!Enqueue(std::move(m))) {
      return stop_ ? absl::OkStatus() : absl::AbortedError(id_ + ": stream broke");
    }
    if (absl::Status s = PushAll(c); !s.ok() || stop_) return s;
    std::lock_guard<std::mutex> lock(mu_);
    iteration_times_.push_back(SteadySeconds());
    ++iterations_;
  }
  return absl::OkStatus();
}

void SyntheticWorker::Stop() {
  stop_ = true;
  std::lock_guard<std::mutex> lock(q_mu_);
  q_cv_.notify_all();
}

absl::Status SyntheticWorker::Leave() {
  {
    // Batches not written yet stay unsent: the study is over.
    std::lock_guard<std::mutex> lock(q_mu_);
    out_.clear();
  }
  pb::WorkerMessage m;
  m.mutable_goodbye()->set_reason("scale study done");
  Enqueue(std::move(m));
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return ended_; })) {
    lock.unlock();
    ctx_->TryCancel();
    return absl::DeadlineExceededError(id_ + ": no end of stream 30 s after the goodbye");
  }
  return absl::OkStatus();
}

bool SyntheticWorker::Enqueue(pb::WorkerMessage m) {
  std::unique_lock<std::mutex> lock(q_mu_);
  const bool goodbye = m.has_goodbye();
  q_cv_.wait(lock, [&] {
    return out_.size() < kQueuedBatches || writer_failed_ || closing_ || (stop_ && !goodbye);
  });
  if (writer_failed_ || closing_ || (stop_ && !goodbye)) return false;
  out_.push_back(std::move(m));
  q_cv_.notify_all();
  return true;
}

void SyntheticWorker::WriteLoop() {
  for (;;) {
    pb::WorkerMessage m;
    {
      std::unique_lock<std::mutex> lock(q_mu_);
      q_cv_.wait(lock, [&] { return ack_pending_ || !out_.empty() || closing_; });
      if (ack_pending_) {
        // Acks go ahead of queued batches, coalesced (they are cumulative).
        m.mutable_ack()->set_seq(ack_seq_);
        m.mutable_ack()->set_bytes(ack_bytes_);
        ack_pending_ = false;
        ack_bytes_ = 0;
      } else if (!out_.empty()) {
        m = std::move(out_.front());
        out_.pop_front();
        q_cv_.notify_all();
      } else {
        return;
      }
    }
    const bool goodbye = m.has_goodbye();
    if (!stream_->Write(m)) {
      std::lock_guard<std::mutex> lock(q_mu_);
      writer_failed_ = true;
      q_cv_.notify_all();
      return;
    }
    if (goodbye) {
      stream_->WritesDone();
      return;
    }
  }
}

void SyntheticWorker::QueueAck(uint64_t seq, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(q_mu_);
  ack_pending_ = true;
  ack_seq_ = std::max(ack_seq_, seq);
  ack_bytes_ += bytes;
  q_cv_.notify_all();
}

void SyntheticWorker::OnBatch(const pb::RowBatch& b) {
  const uint64_t wire = b.ByteSizeLong();
  bytes_down_ += wire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RowId row = 0;
    for (int k = 0; k < b.row_delta_size(); ++k) {
      row = k == 0 ? b.row_delta(0) : row + b.row_delta(k);
      if (row >= versions_.size()) continue;
      if (k < b.version_lag_size()) {
        const int64_t v = static_cast<int64_t>(b.iteration()) - b.version_lag(k);
        versions_[row] = v < 0 ? 0 : static_cast<uint64_t>(v);
      }
    }
    if (b.kind() == pb::BATCH_KIND_VALUES && resync_rows_left_ > 0) {
      resync_rows_left_ -= std::min<uint64_t>(resync_rows_left_, b.row_delta_size());
      if (resync_rows_left_ == 0) resync_done_at_ = SteadySeconds();
    }
  }
  cv_.notify_all();
  QueueAck(b.seq(), wire);
}

void SyntheticWorker::OnDirective(const pb::Directive& d) {
  std::lock_guard<std::mutex> lock(mu_);
  if (d.has_release()) {
    released_ = std::max(released_, d.release().iteration() + 1);
  } else if (d.has_known_versions()) {
    const auto& v = d.known_versions().version();
    for (int r = 0; r < v.size() && static_cast<size_t>(r) < versions_.size(); ++r) {
      versions_[r] = v[r];
    }
    scan_ = 0;
  }
  cv_.notify_all();
}

void SyntheticWorker::OnWelcome(const pb::Welcome& w) {
  std::lock_guard<std::mutex> lock(mu_);
  welcome_ = w;
  welcomed_ = true;
  clock_ = w.iteration();
  if (w.full_resync()) {
    resync_rows_left_ = model_.layout.num_rows() - w.in_sync_row_delta_size();
    if (resync_rows_left_ == 0) resync_done_at_ = SteadySeconds();
  }
  cv_.notify_all();
}

void SyntheticWorker::ReadLoop() {
  pb::ServerMessage m;
  while (stream_->Read(&m)) {
    if (m.has_welcome()) {
      OnWelcome(m.welcome());
    } else if (m.has_batch()) {
      OnBatch(m.batch());
    } else if (m.has_ack()) {
      std::lock_guard<std::mutex> lock(mu_);
      uplink_acked_ = std::max(uplink_acked_, m.ack().seq());
      cv_.notify_all();
    } else if (m.has_directive()) {
      OnDirective(m.directive());
    } else if (m.has_end()) {
      std::lock_guard<std::mutex> lock(mu_);
      end_message_ = absl::StrCat("(StreamEnd ", m.end().reason(), ": ", m.end().message(), ")");
    }
  }
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    closing_ = true;
    q_cv_.notify_all();
  }
  const grpc::Status s = stream_->Finish();
  std::lock_guard<std::mutex> lock(mu_);
  end_status_ = s;
  ended_ = true;
  cv_.notify_all();
}

}  // namespace rog
