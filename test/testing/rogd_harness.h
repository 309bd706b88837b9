// Test harness: real rogd processes on loopback, and admin calls against them.
//
// Every rogd runs with --listen=127.0.0.1:<port or 0> and --port_file, logs
// to a file under $TEST_TMPDIR, and dies with the test process
// (PR_SET_PDEATHSIG), so no process outlives a test even when it crashes.
#ifndef ROG_TEST_TESTING_ROGD_HARNESS_H_
#define ROG_TEST_TESTING_ROGD_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "client/credentials.h"
#include "common/layout.h"
#include "proto/convert.h"

namespace rog {

class RogdProcess {
 public:
  // Starts rogd with `flags` (besides --listen and --port_file) and waits
  // up to 20 s until it serves. `port` 0 picks a free port. Without a
  // --patience flag, rogd runs with --patience=0 (the paper's protocol).
  static absl::StatusOr<std::unique_ptr<RogdProcess>> Start(std::vector<std::string> flags,
                                                            int port = 0);
  ~RogdProcess();  // SIGKILL if still running

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string address() const;
  // Sends `sig` and waits up to `timeout_seconds` for the exit (then
  // SIGKILL); returns the exit status as from waitpid's WEXITSTATUS, or
  // 128 + signal when killed by one.
  int Stop(int sig = 15, double timeout_seconds = 15);
  bool running() const { return pid_ > 0; }
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

// Seconds on a monotonic clock.
double MonotonicSeconds();

// Polls `done` every 10 ms for up to `seconds`; whether it became true.
template <typename F>
bool WaitFor(double seconds, F done) {
  const double until = MonotonicSeconds() + seconds;
  while (MonotonicSeconds() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// A unique empty directory under $TEST_TMPDIR.
std::string MakeTempDir(const std::string& prefix);

// rogd's binary in the test's runfiles.
std::string RogdBinary();

// Admin calls; `security` gives TLS files and the admin token (for a rogd
// started with them), as rogctl's flags do.
absl::StatusOr<pb::StatusReply> AdminStatus(const std::string& address,
                                            const ClientSecurity& security = {});
absl::StatusOr<pb::WorkersReply> AdminWorkers(const std::string& address,
                                              const ClientSecurity& security = {});
// The entry of worker `id` in `workers`; null when it is not listed.
const pb::WorkerInfo* FindWorker(const pb::WorkersReply& workers, const std::string& id);
// Waits up to `seconds` until rogd lists exactly `workers` workers, each at
// `iteration`. A worker's clock moves when its EndIteration returns; its
// progress report may still be on the stream then, so a test that reads
// rogd's view right after its workers stop waits for it here first.
bool WaitForTeamAt(const std::string& address, int workers, uint64_t iteration,
                   double seconds = 10);
// The global model, fp32, in row order.
absl::StatusOr<std::vector<float>> AdminExport(const std::string& address,
                                               const ClientSecurity& security = {});

}  // namespace rog

#endif  // ROG_TEST_TESTING_ROGD_HARNESS_H_
