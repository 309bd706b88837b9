// One synthetic worker of the scale study: a real Trainer.Session stream to
// rogd, written from proto/rog.proto and docs/protocol.md, that trains
// nothing and keeps no replica. Each iteration it reports its progress and
// pushes an update of every row (fp32, one iteration counted per row: what
// SSP moves), acknowledges every downlink batch, and starts the next
// iteration when the versions rogd reports (version_lag) meet the
// staleness bound, or when rogd releases it. It keeps only a version per
// row (8 bytes a row), so 64 of them fit beside a 400 MB model.
//
// Thread-safety: Run* are called from one thread per worker; the reader
// thread is the worker's own; Stop and the counters are thread-safe.
#ifndef ROG_TOOLS_SCALE_SYNTHETIC_WORKER_H_
#define ROG_TOOLS_SCALE_SYNTHETIC_WORKER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/layout.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"

namespace rog {

// What every worker of a run shares: the model's layout and its rows cut
// into uplink batches of at most `batch_bytes` payload (the SDK's default
// on a fast link, 16 KiB; a row larger than that goes alone).
struct SyntheticModel {
  SyntheticModel(const Layout& layout, size_t batch_bytes);
  const Layout& layout;
  pb::Layout layout_proto;
  // Row ranges [first, end) of each uplink batch.
  std::vector<std::pair<RowId, RowId>> batches;
  // Payload bytes of the largest batch: every value 2^-20 (updates) or
  // 2^-10 (initial values), so that sums stay finite and exact.
  std::string update_payload, value_payload;
};

class SyntheticWorker {
 public:
  // `compute_seconds`: a sleep standing for each iteration's compute (0:
  // none, the team runs as fast as rogd lets it).
  SyntheticWorker(std::shared_ptr<grpc::Channel> channel, const SyntheticModel& model,
                  std::string id, uint32_t staleness, double compute_seconds = 0);
  ~SyntheticWorker();

  // Opens the stream and says hello; when rogd asks for the model, uploads
  // it and waits until it is acknowledged; otherwise waits until the full
  // resync has arrived. Retries while rogd says UNAVAILABLE (another worker
  // brings the model). `resync_seconds` (if not null): hello to the last
  // row of the resync; DeadlineExceeded if that takes `timeout_seconds`.
  absl::Status Join(double* resync_seconds, double timeout_seconds = 3600);
  // Waits until the team has formed (a Release).
  absl::Status AwaitTeam();
  // Runs iterations until Stop(); returns at once then, leaving the rest
  // of a push unsent.
  absl::Status RunIterations();
  void Stop();
  // Says goodbye and waits for the stream's end.
  absl::Status Leave();

  // Completed iterations, and when each completed (seconds on the steady
  // clock; the tool's own time base).
  uint64_t iterations() const { return iterations_; }
  std::vector<double> iteration_times() const;
  uint64_t bytes_up() const { return bytes_up_; }
  uint64_t bytes_down() const { return bytes_down_; }

 private:
  absl::Status Hello();
  absl::Status Upload();
  void ReadLoop();
  // Queues `m` for the writer thread, waiting while kQueuedBatches wait;
  // false once the stream broke or closes.
  bool Enqueue(pb::WorkerMessage m);
  void WriteLoop();
  void QueueAck(uint64_t seq, uint64_t bytes);
  void OnWelcome(const pb::Welcome& w);
  void OnBatch(const pb::RowBatch& b);
  void OnDirective(const pb::Directive& d);
  // Waits until the staleness bound lets iteration clock_ + 1 start; reports
  // a stall to rogd once if it does not at once.
  absl::Status AwaitBound();
  bool BoundMet();  // REQUIRES: mu_
  absl::Status PushAll(uint64_t iteration);

  std::shared_ptr<grpc::Channel> channel_;
  const SyntheticModel& model_;
  const std::string id_;
  const uint32_t staleness_;
  const double compute_seconds_;
  std::unique_ptr<pb::Trainer::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::ServerMessage>> stream_;
  std::thread reader_, writer_;

  // The writer's queue; acks are coalesced and go first.
  std::mutex q_mu_;
  std::condition_variable q_cv_;
  std::deque<pb::WorkerMessage> out_;
  bool closing_ = false, writer_failed_ = false, ack_pending_ = false;
  uint64_t ack_seq_ = 0, ack_bytes_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool welcomed_ = false, ended_ = false, team_ready_ = false;
  pb::Welcome welcome_;
  grpc::Status end_status_;
  std::string end_message_;
  uint64_t clock_ = 0;              // iterations completed
  uint64_t released_ = 0;           // last Release's iteration + 1 (0: none)
  uint64_t uplink_acked_ = 0;       // highest uplink seq acknowledged
  uint64_t resync_rows_left_ = 0;   // rows of the resync not yet received
  std::vector<uint64_t> versions_;  // per row: lowest version of the others held
  uint64_t scan_need_ = 0;          // the version scan_ was checked against
  size_t scan_ = 0;                 // rows below it meet scan_need_
  std::vector<double> iteration_times_;
  double hello_at_ = 0, resync_done_at_ = 0;

  uint64_t next_seq_ = 1;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> iterations_{0}, bytes_up_{0}, bytes_down_{0};
};

// Seconds on the steady clock.
double SteadySeconds();

}  // namespace rog

#endif  // ROG_TOOLS_SCALE_SYNTHETIC_WORKER_H_
