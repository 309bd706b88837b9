// A child process for fault tests: started with its output in a log file,
// killed with the parent (PR_SET_PDEATHSIG), so none outlives a test, and
// reaped by the destructor.
#ifndef ROG_TEST_FAULT_CHILD_PROCESS_H_
#define ROG_TEST_FAULT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rog {

class ChildProcess {
 public:
  // Runs argv[0] (a path) with `argv`, stdout and stderr appended to `log_path`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(std::vector<std::string> argv,
                                                             const std::string& log_path);
  ~ChildProcess();  // SIGKILL if still running, and reaped

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits up to `seconds` for the exit: its status as WEXITSTATUS, 128 +
  // signal when killed by one, -1 while still running.
  int Wait(double seconds);
  bool running();
  std::string log() const;

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  int status_ = -1;
  std::string log_path_;
};

}  // namespace rog

#endif  // ROG_TEST_FAULT_CHILD_PROCESS_H_
