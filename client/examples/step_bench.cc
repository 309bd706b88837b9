// The SDK's own cost per step, with no compute: a robot that only calls
// BeginStep, optionally changes every parameter by a constant (what an
// optimizer step writes), and EndStep, against a rogd on loopback, and
// prints the time per step. python/bench/step_bench.py runs the same loop
// through `import rog`; python/bench/step_overhead.sh runs both in one run
// and prints the Python layer's cost per step (docs/python.md).
//
//   step_bench --server=127.0.0.1:7070 --model=convmlp --steps=300 [--update=0.001]
//
// Output: one line, "cpp steps=N median_ms=X mean_ms=Y p90_ms=Z cpu_ms=C",
// C the process's CPU time (every thread: the SDK's stream threads too) per
// timed step.
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "client/torch_adapter.h"
#include "task/fmnist/model.h"

ABSL_FLAG(std::string, server, "127.0.0.1:7070", "rogd's address, host:port");
ABSL_FLAG(std::string, id, "bench", "worker id");
ABSL_FLAG(std::string, model, "convmlp", "cnn or convmlp (task/fmnist/model.h)");
ABSL_FLAG(int, steps, 300, "steps timed");
ABSL_FLAG(int, warmup, 30, "steps before the timed ones");
ABSL_FLAG(double, update, 0, "added to every parameter per step (0: no change)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  torch::set_num_threads(1);
  rog::fmnist::Net net(absl::GetFlag(FLAGS_model) == "convmlp");
  rog::WorkerOptions options;
  options.server = absl::GetFlag(FLAGS_server);
  options.worker_id = absl::GetFlag(FLAGS_id);
  auto rog = rog::TorchWorker::Start(*net, options);
  if (!rog.ok()) {
    std::fprintf(stderr, "step_bench: %s\n", std::string(rog.status().message()).c_str());
    return 2;
  }
  const double update = absl::GetFlag(FLAGS_update);
  const int warmup = absl::GetFlag(FLAGS_warmup), steps = absl::GetFlag(FLAGS_steps);
  std::vector<double> ms;
  const auto cpu_now = [] {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec * 1e3 + u.ru_utime.tv_usec / 1e3 + u.ru_stime.tv_sec * 1e3 +
           u.ru_stime.tv_usec / 1e3;
  };
  double cpu0 = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    if (i == warmup) cpu0 = cpu_now();
    const auto t0 = std::chrono::steady_clock::now();
    absl::Status s = (*rog)->BeginStep(60);
    if (s.ok() && update != 0) {
      torch::NoGradGuard no_grad;
      for (auto& p : net->parameters()) p.add_(update);
    }
    if (s.ok()) s = (*rog)->EndStep().status();
    if (!s.ok()) {
      std::fprintf(stderr, "step_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) ms.push_back(t);
  }
  const double cpu_ms = (cpu_now() - cpu0) / steps;
  (void)(*rog)->worker().Close(30);
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double t : ms) mean += t / ms.size();
  std::printf("cpp steps=%d median_ms=%.4f mean_ms=%.4f p90_ms=%.4f cpu_ms=%.4f\n", steps,
              sorted[sorted.size() / 2], mean, sorted[sorted.size() * 9 / 10], cpu_ms);
  return 0;
}
