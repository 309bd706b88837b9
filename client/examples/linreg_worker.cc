// A torch-free example worker: a team fits one linear model y = W x + b to
// data it holds in shards (each robot its own), synchronising through rogd
// with rog::Worker. It shows the whole training loop the SDK expects:
//
//   worker = rog::Worker::Start(options, layout, initial);
//   loop: worker->BeginIteration(params); update = step(params);
//         worker->EndIteration(update);
//   worker->Finish(); worker->Close();
//
// Run two of these against one `rogd --workers=2` (docs/operations.md "Running rogd").
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "client/examples/security_flags.h"
#include "client/worker.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, server, "127.0.0.1:7070", "rogd's address, host:port");
ABSL_FLAG(std::string, id, "", "this worker's id, e.g. the robot's host name (required)");
ABSL_FLAG(int, iterations, 200, "iterations to train");
ABSL_FLAG(int, shard, 0, "which shard of the data this worker holds (0, 1, ...)");
ABSL_FLAG(double, lr, 0.05, "learning rate");
ABSL_FLAG(int, batch, 32, "examples per iteration");
ABSL_FLAG(double, compute_ms, 0, "extra compute time per iteration, ms (a slower robot)");
ABSL_FLAG(int, report_every, 50, "print a line every this many iterations");

namespace {

constexpr int kIn = 128;
constexpr int kOut = 16;

// The function every shard samples: fixed by seed 1, the same on every robot.
struct Truth {
  std::vector<float> w, b;
  Truth() : w(kOut * kIn), b(kOut) {
    std::mt19937 rng(1);
    std::normal_distribution<float> n(0, 1.0f / std::sqrt(static_cast<float>(kIn)));
    for (float& v : w) v = n(rng);
    for (float& v : b) v = n(rng);
  }
};

// Mean squared error of params (W then b) on a batch, and its gradient.
double Step(const std::vector<float>& params, const Truth& truth, std::mt19937& rng, int batch,
            std::vector<float>* grad) {
  std::normal_distribution<float> n(0, 1);
  grad->assign(params.size(), 0.0f);
  double loss = 0;
  std::vector<float> x(kIn);
  for (int e = 0; e < batch; ++e) {
    for (float& v : x) v = n(rng);
    for (int o = 0; o < kOut; ++o) {
      double y = truth.b[o], p = params[kOut * kIn + o];
      for (int i = 0; i < kIn; ++i) {
        y += truth.w[o * kIn + i] * x[i];
        p += params[o * kIn + i] * x[i];
      }
      const double err = p - (y + 0.01 * n(rng));
      loss += err * err / (batch * kOut);
      const float g = static_cast<float>(2 * err / (batch * kOut));
      for (int i = 0; i < kIn; ++i) (*grad)[o * kIn + i] += g * x[i];
      (*grad)[kOut * kIn + o] += g;
    }
  }
  return loss;
}

// The training loop's settings, buffers and running totals.
struct Training {
  double lr = 0;
  std::chrono::microseconds compute{0};  // extra time per iteration (--compute_ms)
  std::vector<float> params, grad, update;
  double stall = 0, transmit = 0, loss = 0;
  uint64_t stalls = 0, bytes_up = 0, bytes_down = 0;
};

// One iteration: waits for rogd's go, takes a step on a batch and pushes the
// update; a line every --report_every. False (having said why) on an error.
bool Iterate(rog::Worker& worker, const std::string& id, const Truth& truth, std::mt19937& rng,
             Training* t) {
  // Blocks while rogd's policy says so; says why after 120 s.
  absl::Status s = worker.BeginIteration(absl::MakeSpan(t->params), 120);
  if (!s.ok()) {
    std::fprintf(stderr, "linreg_worker %s: %s\n", id.c_str(), std::string(s.message()).c_str());
    return false;
  }
  t->loss = Step(t->params, truth, rng, absl::GetFlag(FLAGS_batch), &t->grad);
  for (size_t j = 0; j < t->grad.size(); ++j) {
    t->update[j] = static_cast<float>(-t->lr * t->grad[j]);
  }
  std::this_thread::sleep_for(t->compute);
  absl::StatusOr<rog::IterationStats> st = worker.EndIteration(t->update);
  if (!st.ok()) {
    std::fprintf(stderr, "linreg_worker %s: %s\n", id.c_str(),
                 std::string(st.status().message()).c_str());
    return false;
  }
  t->stall += st->stall_seconds;
  t->stalls += st->stalled;
  t->transmit += st->transmit_seconds;
  t->bytes_up += st->bytes_up;
  t->bytes_down += st->bytes_down;
  if (st->iteration % absl::GetFlag(FLAGS_report_every) == 0) {
    std::printf("%s: iteration %lu  loss %.5f  stalled %.2f s (%lu times)  up %lu B  down %lu B\n",
                id.c_str(), static_cast<unsigned long>(st->iteration), t->loss, t->stall,
                static_cast<unsigned long>(t->stalls), static_cast<unsigned long>(t->bytes_up),
                static_cast<unsigned long>(t->bytes_down));
    std::fflush(stdout);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Example ROG worker (no LibTorch): fits a linear model on its data shard with a team.\n"
      "Usage: linreg_worker --id=NAME [--server=HOST:PORT] [--iterations=N] [--shard=K]");
  rog::ListExampleFlagsInHelp();
  absl::ParseCommandLine(argc, argv);
  const std::string id = absl::GetFlag(FLAGS_id);
  if (id.empty()) {
    std::fprintf(stderr, "linreg_worker: --id is required (e.g. --id=robot1)\n");
    return 2;
  }
  const int iterations = absl::GetFlag(FLAGS_iterations);
  if (iterations < 1) {
    std::fprintf(stderr, "linreg_worker: --iterations must be at least 1\n");
    return 2;
  }

  absl::StatusOr<rog::Layout> layout =
      rog::Layout::Create({{"linear.weight", {kOut, kIn}}, {"linear.bias", {kOut}}});
  if (!layout.ok()) return 1;
  std::vector<float> initial(layout->total_numel(), 0.0f);
  rog::WorkerOptions options;
  options.server = absl::GetFlag(FLAGS_server);
  options.worker_id = id;
  rog::ApplySecurityFlags(options);
  auto worker = rog::Worker::Start(options, *layout, initial);
  if (!worker.ok()) {
    std::fprintf(stderr, "linreg_worker: %s\n", std::string(worker.status().message()).c_str());
    return 2;
  }

  const Truth truth;
  std::mt19937 rng(1000 + absl::GetFlag(FLAGS_shard));
  Training t;
  t.params.resize(layout->total_numel());
  t.update.resize(layout->total_numel());
  t.lr = absl::GetFlag(FLAGS_lr);
  t.compute =
      std::chrono::microseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_compute_ms) * 1000));
  const auto t0 = std::chrono::steady_clock::now();
  while ((*worker)->clock() < static_cast<uint64_t>(iterations)) {
    if (!Iterate(**worker, id, truth, rng, &t)) return 1;
  }
  // Push what is held (the drain rule), receive everything, leave the team.
  absl::Status s = (*worker)->Finish(60);
  if (s.ok()) s = (*worker)->Close(10);
  if (!s.ok()) {
    std::fprintf(stderr, "linreg_worker %s: %s\n", id.c_str(), std::string(s.message()).c_str());
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%s: done, %d iterations in %.2f s, last loss %.5f, stalled %.2f s, transmit %.2f s\n",
      id.c_str(), iterations, seconds, t.loss, t.stall, t.transmit);
  return 0;
}
