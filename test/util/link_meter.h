// What the link emulators' accuracy tests share (trace_relay_test,
// tc_link_test): a clock, files in the test's temporary folder, a child
// process bounded in time, and a meter of bytes arriving over a socket.
#ifndef ROG_TEST_UTIL_LINK_METER_H_
#define ROG_TEST_UTIL_LINK_METER_H_

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace rog {

// Seconds on a monotonic clock, from the first call.
double Now();
void SleepFor(double seconds);
std::string ReadFile(const std::string& path);
// The test's temporary folder (TEST_TMPDIR, else /tmp), and a file written
// there; returns its path.
std::string TmpDir();
std::string WriteTmpFile(const std::string& name, const std::string& text);
// A binary of the workspace, e.g. "tools/links/trace_relay", from a test's data.
std::string TestBinary(const std::string& path);

// A child process with its output in a log file; killed (SIGKILL) if still
// running when destroyed, and by the kernel if the test dies first.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> argv, std::string log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return started_; }
  const std::string& log_path() const { return log_path_; }
  std::string log() const { return ReadFile(log_path_); }
  bool running();
  // Exit status (128 + signal if killed by one), or -1 if still running
  // after `timeout` seconds.
  int Wait(double timeout);
  void Signal(int sig);

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool started_ = false;
  std::string log_path_;
};

// Cumulative bytes received over time, from a receiving thread.
class Arrivals {
 public:
  void Add(size_t n);
  // Bytes received in [t0, t1] (Now() times).
  uint64_t Between(double t0, double t1) const;

 private:
  uint64_t At(double t) const;
  mutable std::mutex mu_;
  uint64_t total_ = 0;
  std::vector<std::pair<double, uint64_t>> points_;
};

// Reads from `fd` until EOF, an error or `until` (Now() time), counting
// arrivals; with `echo` >= 0, writes everything read to `echo`.
void Receive(int fd, int echo, double until, Arrivals* arrivals);
// Sends as fast as the socket takes it until `until`.
void Flood(int fd, double until);

}  // namespace rog

#endif  // ROG_TEST_UTIL_LINK_METER_H_
