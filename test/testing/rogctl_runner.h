// Runs the rogctl binary of the test's runfiles, bounded in time, and
// collects its exit code, stdout and stderr.
#ifndef ROG_TEST_TESTING_ROGCTL_RUNNER_H_
#define ROG_TEST_TESTING_ROGCTL_RUNNER_H_

#include <string>
#include <vector>

namespace rog {

struct RogctlRun {
  int code = -1;  // exit code, or 128 + signal
  std::string out;
  std::string err;
};

// rogctl with `args`, killed after 30 s at most; `timeout_args` replace
// those of timeout(1).
RogctlRun Rogctl(const std::vector<std::string>& args, const std::string& timeout_args = "-k 5 30");

// A loopback port nobody listens on (bound, then released).
int FreePort();

}  // namespace rog

#endif  // ROG_TEST_TESTING_ROGCTL_RUNNER_H_
