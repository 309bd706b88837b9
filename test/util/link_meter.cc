#include "test/util/link_meter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace rog {

double Now() {
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point epoch = Clock::now();
  return std::chrono::duration<double>(Clock::now() - epoch).count();
}

void SleepFor(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TmpDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

std::string WriteTmpFile(const std::string& name, const std::string& text) {
  const std::string path = TmpDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string TestBinary(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return std::string(srcdir) + "/" + workspace + "/" + path;
  }
  return path;
}

ChildProcess::ChildProcess(std::vector<std::string> argv, std::string log_path)
    : log_path_(std::move(log_path)) {
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) return;
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s failed\n", args[0]);
    _exit(127);
  }
  started_ = true;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool ChildProcess::running() {
  if (pid_ > 0 && waitpid(pid_, &status_, WNOHANG) == pid_) pid_ = -1;
  return pid_ > 0;
}

int ChildProcess::Wait(double timeout) {
  const double end = Now() + timeout;
  while (running()) {
    if (Now() > end) return -1;
    SleepFor(0.005);
  }
  return WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : WEXITSTATUS(status_);
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

void Arrivals::Add(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ += n;
  points_.emplace_back(Now(), total_);
}

uint64_t Arrivals::Between(double t0, double t1) const {
  std::lock_guard<std::mutex> lock(mu_);
  return At(t1) - At(t0);
}

uint64_t Arrivals::At(double t) const {
  uint64_t bytes = 0;
  for (const auto& p : points_) {
    if (p.first > t) break;
    bytes = p.second;
  }
  return bytes;
}

void Receive(int fd, int echo, double until, Arrivals* arrivals) {
  char buf[16384];
  while (Now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
    if (n < 0) continue;
    arrivals->Add(n);
    for (ssize_t sent = 0; echo >= 0 && sent < n;) {
      pollfd w{echo, POLLOUT, 0};
      if (Now() >= until) return;
      if (poll(&w, 1, 10) <= 0) continue;
      const ssize_t m = send(echo, buf + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (m < 0 && errno != EAGAIN && errno != EINTR) return;
      if (m > 0) sent += m;
    }
  }
}

void Flood(int fd, double until) {
  const std::string chunk(16384, 'x');
  while (Now() < until) {
    pollfd w{fd, POLLOUT, 0};
    if (poll(&w, 1, 10) <= 0) continue;
    const ssize_t m = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (m < 0 && errno != EAGAIN && errno != EINTR) return;
  }
}

}  // namespace rog
