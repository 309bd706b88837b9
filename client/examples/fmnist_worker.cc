// A robot of the team in the paper's environment-adaptation task: a model
// first trained on clean Fashion-MNIST images (a short local pretraining,
// cached on disk), then adapted by the team to degraded images (fog-like
// blur plus noise, deterministic per seed), each robot on its own shard,
// synchronising through rogd with the LibTorch adapter. It prints how
// accuracy on degraded test images recovers over time.
//
// Two models for the same task (--model): `cnn`, a small CNN (82 KB fp32,
// 8 tensors), and `convmlp`, the same convolutions under a wide MLP head
// (3.2 MB fp32, 1,568 rows), closer to the row granularity of the paper's
// ConvMLP. --compute_time pads each iteration's compute to a fixed time, as
// a Jetson-class robot would take (the paper equalised its devices); the
// real compute time is still measured and recorded apart.
//
// Accuracy is measured off the training clock: at each evaluation time the
// training thread copies the parameters (a snapshot) and an evaluator
// thread scores it, so that evaluating never delays an iteration.
//
// Output, one line each (for tools/run.sh to parse):
//   progress id=ID t=SECONDS iter=N steps=N acc=FRACTION stall=SHARE
//   final id=ID t=SECONDS iter=N steps=N acc=FRACTION stall=SHARE detached=SHARE stalls=N
//         up_mb=X down_mb=Y real_compute_ms=Z pre_acc=FRACTION finish_unix=T finish_s=D
// pre_acc is the replica's accuracy just before the final sync (Finish),
// acc the one after it; finish_unix is when Finish was called (unix time)
// and finish_s how long Finish and Close took.
// With --evaluate=FILE[,FILE...] it joins no team: it scores each model
// FILE (rogctl export's, or a torch::save of the same module) on the
// degraded test images of --seed and prints "evaluated FILE acc=FRACTION"
// for each, in order.
// acc in a progress line is the latest score the evaluator finished, "-"
// before the first.
// iter is the robot's clock, which rogd raises past iterations a robot
// skipped (joining late, reattached after a detachment); steps counts the
// iterations this process computed.
// With --csv_dir, also ID.iters.csv, ID.acc.csv and ID.pushes.csv (columns in
// their header lines; unix_s is wall-clock time, to line up with the links'
// traces).
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/examples/security_flags.h"
#include "client/torch_adapter.h"
#include "common/clock.h"
#include "task/fmnist/model.h"

ABSL_FLAG(std::string, server, "127.0.0.1:7070", "rogd's address, host:port");
ABSL_FLAG(std::string, id, "", "this robot's worker id (required unless --pretrain_only)");
ABSL_FLAG(int, shard, 0, "this robot's shard of the training data (0-based)");
ABSL_FLAG(int, shards, 4, "number of shards (robots in the team)");
ABSL_FLAG(std::string, model, "cnn",
          "cnn: a small CNN (82 KB fp32, 8 tensors); convmlp: the same convolutions under a "
          "256-1024-512-10 MLP head (3.2 MB fp32, 1,568 rows). Every robot of a team must use "
          "the same one");
ABSL_FLAG(absl::Duration, compute_time, absl::ZeroDuration(),
          "pad each iteration's compute (BeginStep's return to EndStep) to this time, e.g. "
          "2.18s for a Jetson-class robot; 0 = no padding. The real compute time is recorded "
          "apart (real_compute_s in ID.iters.csv)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the degradation, the shards and the batches");
ABSL_FLAG(double, seconds, 120, "how long to adapt, seconds of wall time");
ABSL_FLAG(double, eval_every, 10, "seconds between accuracy evaluations");
ABSL_FLAG(double, progress_every, 2,
          "seconds between progress lines (accuracy is the latest evaluation)");
ABSL_FLAG(bool, pretrain_only, false, "pretrain (or find the cached model) and exit");
ABSL_FLAG(std::string, evaluate, "",
          "score these model files (comma-separated; rogctl export --out's, of the same --model) "
          "on the degraded test images of --seed, print \"evaluated FILE acc=FRACTION\" for "
          "each and exit; joins no team");
ABSL_FLAG(std::string, csv_dir, "",
          "if set, write ID.iters.csv (one row per iteration), ID.acc.csv (one row per "
          "evaluation) and ID.pushes.csv (one row per acknowledged push) there, for "
          "tools/bench.sh");

namespace {

using rog::UnixSeconds;
using rog::fmnist::Accuracy;
using rog::fmnist::Data;
using rog::fmnist::Net;

// The per-iteration and per-evaluation records tools/bench.sh reads. Rows
// are flushed as written, so a robot that dies leaves what it did.
class CsvFiles {
 public:
  absl::Status Open(const std::string& dir, const std::string& id) {
    const std::string iters = absl::StrCat(dir, "/", id, ".iters.csv");
    const std::string accs = absl::StrCat(dir, "/", id, ".acc.csv");
    const std::string pushes = absl::StrCat(dir, "/", id, ".pushes.csv");
    iters_ = std::fopen(iters.c_str(), "w");
    acc_ = std::fopen(accs.c_str(), "w");
    pushes_ = std::fopen(pushes.c_str(), "w");
    if (iters_ == nullptr || acc_ == nullptr || pushes_ == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("cannot write ", iters, ", ", accs, " or ",
                                                     pushes, ": does --csv_dir exist?"));
    }
    std::fprintf(iters_,
                 "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,"
                 "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,"
                 "detached_s,kind,real_compute_s\n");
    std::fprintf(acc_, "unix_s,elapsed_s,iteration,accuracy\n");
    std::fprintf(pushes_,
                 "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,"
                 "disconnected,late_bytes,ack_s,acked_bytes\n");
    std::fflush(iters_);
    std::fflush(acc_);
    std::fflush(pushes_);
    return absl::OkStatus();
  }
  ~CsvFiles() {
    if (iters_ != nullptr) std::fclose(iters_);
    if (acc_ != nullptr) std::fclose(acc_);
    if (pushes_ != nullptr) std::fclose(pushes_);
  }
  // kind: 0 an iteration, 1 a local step taken while detached, 2 no
  // iteration: the adaptation time ran out while BeginStep waited (its wait
  // only, so that every robot's records cover the whole time). The pushes
  // acknowledged since the last record go to ID.pushes.csv.
  // real_compute: the part of compute_seconds spent computing, before any
  // --compute_time padding.
  void Iteration(const rog::IterationStats& s, int kind, double real_compute) {
    if (iters_ == nullptr) return;
    const double now = UnixSeconds();
    std::fprintf(
        iters_, "%.6f,%lu,%.6f,%d,%.6f,%.6f,%.6f,%lu,%lu,%lu,%lu,%lu,%lu,%d,%.6f,%d,%.6f\n", now,
        static_cast<unsigned long>(s.iteration), s.stall_seconds, s.stalled ? 1 : 0,
        s.compute_seconds, s.transmit_seconds, s.window_seconds,
        static_cast<unsigned long>(s.rows_up), static_cast<unsigned long>(s.bytes_up),
        static_cast<unsigned long>(s.payload_up), static_cast<unsigned long>(s.rows_down),
        static_cast<unsigned long>(s.bytes_down), static_cast<unsigned long>(s.payload_down),
        s.disconnected ? 1 : 0, s.detached_seconds, kind, real_compute);
    std::fflush(iters_);
    for (const rog::PushStats& p : s.pushes) {
      std::fprintf(pushes_, "%.6f,%lu,%.6f,%lu,%lu,%.6f,%.6f,%d,%lu,%.6f,%lu\n",
                   now - p.age_seconds, static_cast<unsigned long>(p.iteration), p.window_seconds,
                   static_cast<unsigned long>(p.bytes), static_cast<unsigned long>(p.payload),
                   p.busy_seconds, p.overshoot_seconds, p.disconnected ? 1 : 0,
                   static_cast<unsigned long>(p.late_bytes), p.ack_seconds,
                   static_cast<unsigned long>(p.acked_bytes));
    }
    if (!s.pushes.empty()) std::fflush(pushes_);
  }
  // Called by one thread at a time (the evaluator while it runs, then the
  // training thread). unix_s: when the evaluated parameters were taken.
  void Accuracy(double unix_s, double elapsed, uint64_t iteration, double accuracy) {
    if (acc_ == nullptr) return;
    std::fprintf(acc_, "%.6f,%.3f,%lu,%.4f\n", unix_s, elapsed,
                 static_cast<unsigned long>(iteration), accuracy);
    std::fflush(acc_);
  }

 private:
  std::FILE* iters_ = nullptr;
  std::FILE* acc_ = nullptr;
  std::FILE* pushes_ = nullptr;
};

// Scores snapshots of the parameters on another thread, in the order they
// were taken, each recorded with the time and iteration it was taken at.
// The training thread only copies the parameters (about a millisecond for
// the 3.2 MB model); it never waits for a score. torch runs the evaluation
// inline on this thread (one intra-op thread per process, see main).
class Evaluator {
 public:
  Evaluator(bool convmlp, const torch::Tensor& images, const torch::Tensor& labels, CsvFiles* csv)
      : net_(convmlp), images_(images), labels_(labels), csv_(csv) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Evaluator() { Stop(); }

  // Queues a copy of `net`'s parameters. Past kMaxQueued unscored
  // snapshots (evaluation far slower than --eval_every, for a long time)
  // the oldest is dropped and counted: the robots' accuracy rows then no
  // longer line up, and the benchmark's team curve is off (a warning says
  // so at the end).
  void Snapshot(Net& net, double elapsed, uint64_t iteration) {
    Job job;
    job.unix_s = UnixSeconds();
    job.elapsed = elapsed;
    job.iteration = iteration;
    {
      torch::NoGradGuard no_grad;
      for (const auto& p : net->parameters()) job.params.push_back(p.detach().clone());
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      queue_.pop_front();
      ++dropped_;
    }
    queue_.push_back(std::move(job));
    cv_.notify_one();
  }
  // The latest score; below 0 before the first.
  double latest() const { return latest_.load(); }
  uint64_t dropped() {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }
  // Scores what is queued, then ends the thread.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr size_t kMaxQueued = 1024;
  struct Job {
    double unix_s = 0, elapsed = 0;
    uint64_t iteration = 0;
    std::vector<torch::Tensor> params;
  };
  void Loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      {
        torch::NoGradGuard no_grad;
        auto mine = net_->parameters();
        for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(job.params[i]);
      }
      const double acc = Accuracy(net_, images_, labels_);
      latest_.store(acc);
      csv_->Accuracy(job.unix_s, job.elapsed, job.iteration, acc);
    }
  }

  Net net_;
  const torch::Tensor images_, labels_;
  CsvFiles* const csv_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  uint64_t dropped_ = 0;
  std::atomic<double> latest_{-1};
  std::thread thread_;
};

// Checks the flags that say what this robot is and does; false after saying
// what is wrong.
bool FlagsOk() {
  if (!absl::GetFlag(FLAGS_pretrain_only) && absl::GetFlag(FLAGS_evaluate).empty() &&
      absl::GetFlag(FLAGS_id).empty()) {
    std::fprintf(stderr, "fmnist_worker: --id is required (e.g. --id=robot1)\n");
    return false;
  }
  const int shard = absl::GetFlag(FLAGS_shard), shards = absl::GetFlag(FLAGS_shards);
  if (shards < 1 || shard < 0 || shard >= shards) {
    std::fprintf(stderr, "fmnist_worker: need 0 <= --shard < --shards\n");
    return false;
  }
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model != "cnn" && model != "convmlp") {
    std::fprintf(stderr, "fmnist_worker: --model must be cnn or convmlp (got '%s')\n",
                 model.c_str());
    return false;
  }
  const double compute_time = absl::ToDoubleSeconds(absl::GetFlag(FLAGS_compute_time));
  if (!(compute_time >= 0) || compute_time > 3600) {
    std::fprintf(stderr, "fmnist_worker: --compute_time must be between 0 and 1h\n");
    return false;
  }
  return true;
}

// Joins the team at --server as worker `id`, training `net`.
absl::StatusOr<std::unique_ptr<rog::TorchWorker>> JoinTeam(Net& net, const std::string& id) {
  rog::WorkerOptions options;
  options.server = absl::GetFlag(FLAGS_server);
  options.worker_id = id;
  rog::ApplySecurityFlags(options);
  return rog::TorchWorker::Start(*net, options);
}

// One robot's adaptation with its team: the training loop on its shard,
// evaluations and progress lines on schedule, and what it adds up for the
// final line. The clock starts when it is made.
class Adaptation {
 public:
  Adaptation(const std::string& id, Net net, rog::TorchWorker* rog, const Data& shard,
             uint64_t seed, int shard_index, double compute_time)
      : id_(id),
        net_(net),
        rog_(rog),
        images_(shard.images),
        labels_(shard.labels),
        compute_time_(compute_time),
        opt_(net->parameters(), torch::optim::SGDOptions(rog::fmnist::LearningRate())),
        rng_(seed * 131 + shard_index),
        t0_(std::chrono::steady_clock::now()) {}

  // Adapts until --seconds have passed: 0, or 1 after saying what failed.
  int Run(Evaluator* evaluator, CsvFiles* csv);
  // The team's final sync, the last evaluations and the final line.
  void Finish(Evaluator* evaluator, CsvFiles* csv, const torch::Tensor& test_images,
              const torch::Tensor& test_labels);

 private:
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  // Evaluations and progress lines when due; also while BeginStep waits
  // (a detached robot's model, as it stands, is evaluated on schedule).
  void Tick(Evaluator* evaluator);
  // BeginStep, waiting in slices; `waited` is the time waited while attached.
  absl::Status Begin(Evaluator* evaluator, double* waited);
  // One SGD step on a batch of the shard, padded to --compute_time; returns
  // the real compute time.
  double Compute();
  // Records an iteration EndStep returned and adds it up.
  void Record(const rog::IterationStats& st, double real_compute, CsvFiles* csv);

  const std::string id_;
  Net net_;
  rog::TorchWorker* const rog_;
  const torch::Tensor images_, labels_;
  const double compute_time_;
  torch::optim::SGD opt_;
  std::mt19937_64 rng_;
  const std::chrono::steady_clock::time_point t0_;
  double stall_ = 0, next_eval_ = 0, next_progress_ = 0, real_compute_total_ = 0;
  uint64_t stalls_ = 0, up_ = 0, down_ = 0, iter_ = 0, steps_ = 0;
  // The worker's wait totals when the last record was written.
  double stall_total_ = 0, detached_total_ = 0;
};

void Adaptation::Tick(Evaluator* evaluator) {
  if (Elapsed() >= next_eval_) {
    evaluator->Snapshot(net_, Elapsed(), iter_);
    next_eval_ += absl::GetFlag(FLAGS_eval_every);
  }
  if (Elapsed() >= next_progress_) {
    // acc: the latest score the evaluator finished ("-" before the first).
    const double acc = evaluator->latest();
    std::printf("progress id=%s t=%.1f iter=%lu steps=%lu acc=%s stall=%.3f\n", id_.c_str(),
                Elapsed(), static_cast<unsigned long>(iter_), static_cast<unsigned long>(steps_),
                acc < 0 ? "-" : absl::StrFormat("%.4f", acc).c_str(),
                stall_ / std::max(Elapsed(), 1e-9));
    std::fflush(stdout);
    next_progress_ = Elapsed() + absl::GetFlag(FLAGS_progress_every);
  }
}

absl::Status Adaptation::Begin(Evaluator* evaluator, double* waited) {
  // Wait in slices, so that the adaptation time ends on time even while
  // rogd has this robot detached (its link too slow for the team; it
  // pauses until reattached). Any other wait longer than 120 s fails.
  absl::Status s;
  while (Elapsed() < absl::GetFlag(FLAGS_seconds)) {
    const double slice = std::min(std::min(5.0, std::max(0.0, next_eval_ - Elapsed())),
                                  absl::GetFlag(FLAGS_seconds) - Elapsed());
    s = rog_->BeginStep(std::max(slice, 0.01));
    if (!absl::IsDeadlineExceeded(s)) break;
    if (!rog_->worker().detached()) *waited += slice;
    if (*waited >= 120) break;
    Tick(evaluator);
  }
  return s;
}

double Adaptation::Compute() {
  const auto compute_start = std::chrono::steady_clock::now();
  auto b = rog::fmnist::PickBatch(rng_, images_.size(0));
  opt_.zero_grad();
  auto loss =
      torch::nll_loss(net_->forward(images_.index_select(0, b)), labels_.index_select(0, b));
  loss.backward();
  opt_.step();
  const double real_compute =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compute_start).count();
  real_compute_total_ += real_compute;
  if (real_compute < compute_time_) {
    std::this_thread::sleep_until(compute_start + std::chrono::duration<double>(compute_time_));
  }
  return real_compute;
}

void Adaptation::Record(const rog::IterationStats& st, double real_compute, CsvFiles* csv) {
  iter_ = st.iteration;
  ++steps_;
  csv->Iteration(st, st.detached ? 1 : 0, real_compute);
  stall_total_ = rog_->worker().stall_seconds();
  detached_total_ = rog_->worker().detached_seconds();
  stall_ += st.stall_seconds;
  stalls_ += st.stalled;
  up_ += st.bytes_up;
  down_ += st.bytes_down;
}

int Adaptation::Run(Evaluator* evaluator, CsvFiles* csv) {
  while (Elapsed() < absl::GetFlag(FLAGS_seconds)) {
    Tick(evaluator);
    double waited = 0;
    absl::Status s = Begin(evaluator, &waited);
    if (absl::IsDeadlineExceeded(s) && waited < 120) {
      // The time is up while waiting: record the wait.
      rog::IterationStats tail;
      tail.iteration = iter_;
      tail.stall_seconds = rog_->worker().stall_seconds() - stall_total_;
      tail.detached_seconds = rog_->worker().detached_seconds() - detached_total_;
      csv->Iteration(tail, 2, 0);
      break;
    }
    if (!s.ok()) {
      std::fprintf(stderr, "fmnist_worker %s: %s\n", id_.c_str(), std::string(s.message()).c_str());
      return 1;
    }
    const double real_compute = Compute();
    absl::StatusOr<rog::IterationStats> st = rog_->EndStep();
    if (!st.ok()) {
      std::fprintf(stderr, "fmnist_worker %s: %s\n", id_.c_str(),
                   std::string(st.status().message()).c_str());
      return 1;
    }
    Record(*st, real_compute, csv);
  }
  return 0;
}

void Adaptation::Finish(Evaluator* evaluator, CsvFiles* csv, const torch::Tensor& test_images,
                        const torch::Tensor& test_labels) {
  // The replica as training left it, scored after the sync (off its clock).
  std::vector<torch::Tensor> before;
  {
    torch::NoGradGuard no_grad;
    for (const torch::Tensor& p : net_->parameters()) before.push_back(p.detach().clone());
  }
  // Push what is held (the drain rule: under ROG 1/N of it), take what the
  // team pushed, evaluate that, leave.
  const double finish_unix = UnixSeconds();
  absl::Status s = rog_->worker().Finish(60);
  if (s.ok()) rog_->LoadReplica();
  if (s.ok()) s = rog_->worker().Close(30);
  const double finish_s = UnixSeconds() - finish_unix;
  if (!s.ok())
    std::fprintf(stderr, "fmnist_worker %s: close: %s\n", id_.c_str(),
                 std::string(s.message()).c_str());
  const double end = Elapsed();
  // The scores still queued, then the final one (after the team's sync),
  // written last as ID.acc.csv promises.
  evaluator->Stop();
  if (evaluator->dropped() > 0) {
    std::fprintf(stderr,
                 "fmnist_worker %s: evaluation fell behind; %lu snapshots were not scored "
                 "(raise --eval_every or lower --eval_images)\n",
                 id_.c_str(), static_cast<unsigned long>(evaluator->dropped()));
  }
  const double acc = Accuracy(net_, test_images, test_labels);
  csv->Accuracy(UnixSeconds(), end, iter_, acc);
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> params = net_->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(before[i]);
  }
  const double pre_acc = Accuracy(net_, test_images, test_labels);
  std::printf(
      "final id=%s t=%.1f iter=%lu steps=%lu acc=%.4f stall=%.3f detached=%.3f stalls=%lu "
      "up_mb=%.2f down_mb=%.2f real_compute_ms=%.2f pre_acc=%.4f finish_unix=%.3f "
      "finish_s=%.3f\n",
      id_.c_str(), end, static_cast<unsigned long>(iter_), static_cast<unsigned long>(steps_), acc,
      stall_ / std::max(end, 1e-9), rog_->worker().detached_seconds() / std::max(end, 1e-9),
      static_cast<unsigned long>(stalls_), up_ / 1e6, down_ / 1e6,
      steps_ > 0 ? 1e3 * real_compute_total_ / steps_ : 0.0, pre_acc, finish_unix, finish_s);
}

// --evaluate: one model file scored on this seed's degraded test images.
int EvaluateOne(Net& net, const std::string& path, const torch::Tensor& images,
                const torch::Tensor& labels) {
  const std::string model = absl::GetFlag(FLAGS_model);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::fprintf(stderr,
                 "fmnist_worker: --evaluate=%s: no such file (write one with rogctl export "
                 "--out=FILE)\n",
                 path.c_str());
    return 2;
  }
  try {
    torch::load(net, path);
  } catch (const c10::Error& e) {
    std::fprintf(stderr,
                 "fmnist_worker: cannot load %s as the %s model: %s\n(is it rogctl export's "
                 "output for a team training --model=%s?)\n",
                 path.c_str(), model.c_str(), e.what_without_backtrace(), model.c_str());
    return 1;
  }
  std::printf("evaluated %s acc=%.4f\n", path.c_str(), Accuracy(net, images, labels));
  return 0;
}

// --evaluate's files in order: 0, or the first failure's exit code after
// scoring the others.
int Evaluate(Net& net, const std::string& paths, const torch::Tensor& images,
             const torch::Tensor& labels) {
  int code = 0;
  for (absl::string_view path : absl::StrSplit(paths, ',', absl::SkipEmpty())) {
    const int c = EvaluateOne(net, std::string(path), images, labels);
    if (code == 0) code = c;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "A ROG robot adapting a Fashion-MNIST model to degraded images with its team.\n"
      "Usage: fmnist_worker --id=NAME --shard=K --shards=N [--server=HOST:PORT] [--seconds=S]\n"
      "                     [--model=cnn|convmlp] [--compute_time=DURATION]\n"
      "       fmnist_worker --evaluate=FILE[,FILE...] [--model=cnn|convmlp] [--seed=N]");
  rog::ListExampleFlagsInHelp();
  absl::ParseCommandLine(argc, argv);
  torch::set_num_threads(1);
  if (!FlagsOk()) return 2;
  const std::string id = absl::GetFlag(FLAGS_id);
  const int shard = absl::GetFlag(FLAGS_shard), shards = absl::GetFlag(FLAGS_shards);
  const bool convmlp = absl::GetFlag(FLAGS_model) == "convmlp";
  const double compute_time = absl::ToDoubleSeconds(absl::GetFlag(FLAGS_compute_time));
  const Data train = rog::fmnist::Load("train"), test = rog::fmnist::Load("t10k");
  Net net(convmlp);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  rog::fmnist::Pretrained(net, absl::GetFlag(FLAGS_model), seed, train, test);
  const Data degraded_test = rog::fmnist::DegradedTest(test, seed);
  const auto& test_images = degraded_test.images;
  const auto& test_labels = degraded_test.labels;
  if (!absl::GetFlag(FLAGS_evaluate).empty()) {
    return Evaluate(net, absl::GetFlag(FLAGS_evaluate), test_images, test_labels);
  }
  if (absl::GetFlag(FLAGS_pretrain_only)) {
    std::printf("degraded test accuracy of the clean model: %.3f\n",
                Accuracy(net, test_images, test_labels));
    return 0;
  }

  const Data mine = rog::fmnist::DegradedShard(train, shard, shards, seed);
  auto rog = JoinTeam(net, id);
  if (!rog.ok()) {
    std::fprintf(stderr, "fmnist_worker: %s\n", std::string(rog.status().message()).c_str());
    return 2;
  }
  Adaptation adaptation(id, net, rog->get(), mine, seed, shard, compute_time);
  CsvFiles csv;
  if (!absl::GetFlag(FLAGS_csv_dir).empty()) {
    absl::Status s = csv.Open(absl::GetFlag(FLAGS_csv_dir), id);
    if (!s.ok()) {
      std::fprintf(stderr, "fmnist_worker: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  Evaluator evaluator(convmlp, test_images, test_labels, &csv);
  if (const int code = adaptation.Run(&evaluator, &csv); code != 0) return code;
  adaptation.Finish(&evaluator, &csv, test_images, test_labels);
  return 0;
}
