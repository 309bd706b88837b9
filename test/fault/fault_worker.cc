// A worker process for fault tests and the soak: trains FaultLayout()'s
// integer updates (test/fault/fault_model.h) with rog::Worker until
// --iterations or SIGTERM, then Sync and Close.
//
// It prints "iteration K" before handing iteration K's update to the SDK,
// so the last such line bounds what a process killed with -9 computed, and
// "finished K" once Sync and Close succeeded (all K are in rogd's model).
// Exit status: 0 finished, 1 an SDK error (printed), 2 bad flags.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "client/worker.h"
#include "spdlog/spdlog.h"
#include "test/fault/fault_model.h"

ABSL_FLAG(std::string, server, "127.0.0.1:7070", "rogd (or a relay in front of it), host:port");
ABSL_FLAG(std::string, id, "", "worker id");
ABSL_FLAG(int, marker, -1, "this process's marker, 0-95, unique over the run's processes");
ABSL_FLAG(uint64_t, iterations, 0, "train until the clock reaches this; 0: until SIGTERM");
ABSL_FLAG(double, compute_ms, 5, "compute time per iteration, ms");
ABSL_FLAG(double, keepalive_timeout, 30, "WorkerOptions::keepalive_timeout, seconds");

namespace {
std::atomic<bool> stop{false};
void OnTerm(int) { stop = true; }
}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int marker = absl::GetFlag(FLAGS_marker);
  if (absl::GetFlag(FLAGS_id).empty() || marker < 0 || marker >= rog::kFaultMarkers) {
    std::fprintf(stderr, "fault_worker: --id and --marker (0-%d) are required\n",
                 rog::kFaultMarkers - 1);
    return 2;
  }
  signal(SIGTERM, OnTerm);
  const rog::Layout layout = rog::FaultLayout();
  rog::WorkerOptions options;
  options.server = absl::GetFlag(FLAGS_server);
  options.worker_id = absl::GetFlag(FLAGS_id);
  options.keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  auto worker = rog::Worker::Start(options, layout, std::vector<float>(layout.total_numel(), 0));
  if (!worker.ok()) {
    std::printf("error %s\n", std::string(worker.status().message()).c_str());
    return 1;
  }
  const uint64_t until = absl::GetFlag(FLAGS_iterations);
  const auto compute =
      std::chrono::microseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_compute_ms) * 1000));
  std::vector<float> params(layout.total_numel()), update(layout.total_numel());
  uint64_t k = 0;
  while (!stop && (until == 0 || (*worker)->clock() < until)) {
    absl::Status s = (*worker)->BeginIteration(absl::MakeSpan(params), 1);
    if (absl::IsDeadlineExceeded(s)) continue;  // stalled or reconnecting: look at `stop` again
    if (!s.ok()) {
      std::printf("error %s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::this_thread::sleep_for(compute);
    rog::FaultUpdate(layout, marker, ++k, absl::MakeSpan(update));
    std::printf("iteration %lu\n", static_cast<unsigned long>(k));
    std::fflush(stdout);
    absl::StatusOr<rog::IterationStats> st = (*worker)->EndIteration(update);
    if (!st.ok()) {
      std::printf("error %s\n", std::string(st.status().message()).c_str());
      return 1;
    }
  }
  absl::Status s = (*worker)->Sync(120);
  if (s.ok()) s = (*worker)->Close(10);
  if (!s.ok()) {
    std::printf("error %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("finished %lu\n", static_cast<unsigned long>(k));
  return 0;
}
