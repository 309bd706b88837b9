// Runs tools/trace_relay as a child process, as the main job does.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace rog {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes per second

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

std::string RelayBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return absl::StrCat(srcdir, "/", workspace, "/tools/trace_relay");
  }
  return "tools/trace_relay";
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(TmpDir(), "/", name);
  std::ofstream(path) << text;
  return path;
}

// trace_relay as a child process; killed (SIGKILL) if still running when
// destroyed, and by the kernel if this test dies first.
class Relay {
 public:
  explicit Relay(std::vector<std::string> flags) {
    static int counter = 0;
    const std::string base = absl::StrCat(TmpDir(), "/relay-", getpid(), "-", counter++);
    port_file_ = base + ".port";
    log_path_ = base + ".log";
    std::remove(port_file_.c_str());
    std::vector<std::string> args = {RelayBinary()};
    args.insert(args.end(), flags.begin(), flags.end());
    if (flags.size() > 1) args.push_back("--listen_port_file=" + port_file_);
    const pid_t parent = getpid();
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      FILE* log = std::fopen(log_path_.c_str(), "w");
      if (log != nullptr) {
        dup2(fileno(log), 1);
        dup2(fileno(log), 2);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      std::fprintf(stderr, "exec %s failed\n", argv[0]);
      _exit(127);
    }
  }
  ~Relay() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  const std::string& port_file() const { return port_file_; }
  std::string log() const { return ReadFile(log_path_); }

  // Waits (polling every 2 ms) for the port file; 0 if the relay exited or
  // did not write it within `timeout` seconds. Sets start_time() to when
  // the file was seen: the relay's trace clock starts just before.
  int WaitForPort(double timeout) {
    const double end = Now() + timeout;
    while (Now() < end) {
      const std::string text = ReadFile(port_file_);
      if (!text.empty()) {
        start_time_ = Now();
        return std::atoi(text.c_str());
      }
      if (pid_ > 0 && waitpid(pid_, &status_, WNOHANG) == pid_) {
        pid_ = -1;
        return 0;
      }
      SleepFor(0.002);
    }
    return 0;
  }
  double start_time() const { return start_time_; }

  // Exit status (128 + signal if killed by one), or -1 if still running
  // after `timeout` seconds.
  int Wait(double timeout) {
    const double end = Now() + timeout;
    while (pid_ > 0) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (Now() > end) return -1;
      SleepFor(0.005);
    }
    return WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : WEXITSTATUS(status_);
  }
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  std::string port_file_;
  std::string log_path_;
  double start_time_ = 0;
};

// Runs trace_relay with `flags` and returns {exit status, output}; the
// relay is expected to refuse them at once.
std::pair<int, std::string> RunRefused(std::vector<std::string> flags) {
  Relay relay(std::move(flags));
  const int status = relay.Wait(10);
  return {status, relay.log()};
}

// A listening socket on 127.0.0.1 (ephemeral port).
int Listen(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(listen(fd, 16) == 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

// Cumulative bytes received over time, from a receiving thread.
class Arrivals {
 public:
  void Add(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    total_ += n;
    points_.emplace_back(Now(), total_);
  }
  // Bytes received in [t0, t1].
  uint64_t Between(double t0, double t1) const {
    std::lock_guard<std::mutex> lock(mu_);
    return At(t1) - At(t0);
  }

 private:
  uint64_t At(double t) const {
    uint64_t bytes = 0;
    for (const auto& p : points_) {
      if (p.first > t) break;
      bytes = p.second;
    }
    return bytes;
  }
  mutable std::mutex mu_;
  uint64_t total_ = 0;
  std::vector<std::pair<double, uint64_t>> points_;
};

// Reads from `fd` until EOF, an error or `until`, counting arrivals; with
// `echo` >= 0, writes everything read to `echo`.
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

// Sends as fast as the link takes it until `until`.
void Flood(int fd, double until) {
  const std::string chunk(16384, 'x');
  while (Now() < until) {
    pollfd w{fd, POLLOUT, 0};
    if (poll(&w, 1, 10) <= 0) continue;
    const ssize_t m = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (m < 0 && errno != EAGAIN && errno != EINTR) return;
  }
}

// Connects through `relay` (its upstream listens on `listener`) and floods
// the connection until `seconds` after the relay's start, the far end
// echoing: `up` gets what reached the far end, `down` what came back.
void FloodThrough(Relay& relay, int listener, double seconds, Arrivals* up, Arrivals* down) {
  const int port = relay.WaitForPort(10);
  INFO(relay.log());
  REQUIRE(port > 0);
  const int client = Connect(port);
  pollfd p{listener, POLLIN, 0};
  REQUIRE(poll(&p, 1, 5000) == 1);
  const int server = accept(listener, nullptr, nullptr);
  REQUIRE(server >= 0);
  const double end = relay.start_time() + seconds;
  std::thread echo([&] { Receive(server, server, end, up); });
  std::thread reader([&] { Receive(client, -1, end, down); });
  Flood(client, end);
  echo.join();
  reader.join();
  close(client);
  close(server);
}

TEST_CASE("throughput follows the trace sample by sample, both ways", "[trace_relay]") {
  // 0.5 s samples alternating 2 and 8 Mbit/s; the period is 2 s, so 3 s
  // also checks the loop.
  const std::string trace =
      WriteFile("alternating.tsv", "# seconds\tmbit_per_s\n0\t2\n0.5\t8\n1.0\t2\n1.5\t8\n");
  const double kMbitOf[] = {2, 8, 2, 8, 2, 8};
  const int kSamples = 6;
  const double kSample = 0.5;
  const double kDelay = 0.005;
  // Each sample is measured without its first and last 50 ms: the relay's
  // start is known to ~3 ms, and bytes on the wire at a change (rate x
  // delay) still go at the old rate.
  const double kMargin = 0.05;
  const double kTolerance = 0.20;

  int upstream_port = 0;
  const int listener = Listen(&upstream_port);
  Relay relay({absl::StrCat("--upstream=127.0.0.1:", upstream_port), "--trace=" + trace,
               "--delay=5ms", "--log_every=0.5"});
  Arrivals up;    // at the server: client -> relay -> server
  Arrivals down;  // back at the client: the server echoes what it gets
  FloodThrough(relay, listener, kSamples * kSample + 0.1, &up, &down);
  close(listener);
  const double t0 = relay.start_time();

  for (int k = 0; k < kSamples; ++k) {
    const double expected = kMbitOf[k] * kMbit * (kSample - 2 * kMargin);
    const double from = t0 + k * kSample + kMargin;
    const double to = t0 + (k + 1) * kSample - kMargin;
    const double got_up = up.Between(from + kDelay, to + kDelay);
    const double got_down = down.Between(from + 2 * kDelay, to + 2 * kDelay);
    INFO("sample " << k << " (" << kMbitOf[k] << " Mbit/s): up " << got_up / expected << ", down "
                   << got_down / expected << " of the trace");
    CHECK(got_up == Approx(expected).epsilon(kTolerance));
    CHECK(got_down == Approx(expected).epsilon(kTolerance));
  }
  // --log_every prints the rate and the bytes of each direction.
  CHECK(relay.log().find("up ") != std::string::npos);
  CHECK(relay.log().find("Mbit/s") != std::string::npos);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(5) == 0);
}

TEST_CASE("throughput tracks a real robot trace second by second", "[trace_relay]") {
  // 6.05 s of ../shared/traces/outdoors-fast-w1.tsv (from 22.0 s: a dip to
  // 7 Mbit/s, then a rise past 100), replayed at scale 0.5 so that the
  // user-space relay is not CPU-bound on a loaded 2-core machine.
  const double kMbitOf[] = {22.0321, 16.2975, 7.3662,  8.4678,  16.6639, 11.1372,
                            13.2620, 14.1422, 15.2763, 14.4992, 56.6086};
  const int kN = 11;
  const double kStep = 0.55, kScale = 0.5, kDelay = 0.005;
  std::string text = "# seconds\tmbit_per_s (outdoors-fast-w1.tsv from 22.0 s)\n";
  for (int i = 0; i < kN; ++i) absl::StrAppend(&text, i * kStep, "\t", kMbitOf[i], "\n");
  const std::string trace = WriteFile("w1-segment.tsv", text);
  // Bytes the trace allows in [a, b] (within the first period).
  auto capacity = [&](double a, double b) {
    double bytes = 0;
    for (int i = 0; i < kN; ++i) {
      const double lo = std::max(a, i * kStep), hi = std::min(b, (i + 1) * kStep);
      if (hi > lo) bytes += (hi - lo) * kMbitOf[i] * kScale * kMbit;
    }
    return bytes;
  };

  int upstream_port = 0;
  const int listener = Listen(&upstream_port);
  Relay relay({absl::StrCat("--upstream=127.0.0.1:", upstream_port), "--trace=" + trace,
               "--delay=5ms", "--scale=0.5"});
  Arrivals up, down;
  FloodThrough(relay, listener, 6.1, &up, &down);
  close(listener);
  const double t0 = relay.start_time();

  for (int k = 0; k < 6; ++k) {
    const double expected = capacity(k, k + 1);
    const double got_up = up.Between(t0 + k + kDelay, t0 + k + 1 + kDelay);
    const double got_down = down.Between(t0 + k + 2 * kDelay, t0 + k + 1 + 2 * kDelay);
    INFO("second " << k << " (" << expected / kMbit << " Mbit/s): up " << got_up / expected
                   << ", down " << got_down / expected << " of the trace");
    CHECK(got_up == Approx(expected).epsilon(0.10));
    CHECK(got_down == Approx(expected).epsilon(0.10));
  }
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(5) == 0);
}

TEST_CASE("bad flags and traces exit 2 and say what is wrong", "[trace_relay]") {
  const std::string good = WriteFile("good.tsv", "0\t8\n");
  const std::string up = "--upstream=127.0.0.1:7070";
  const std::string missing = TmpDir() + "/no-such-trace.tsv";
  auto r = RunRefused({up, "--trace=" + missing});
  CHECK(r.first == 2);
  CHECK(r.second.find(missing) != std::string::npos);
  CHECK(r.second.find("No such file") != std::string::npos);

  const std::string bad = WriteFile("bad.tsv", "0\t8\n1\tfast\n");
  r = RunRefused({up, "--trace=" + bad});
  CHECK(r.first == 2);
  CHECK(r.second.find(bad + ":2") != std::string::npos);

  r = RunRefused({"--upstream=10.1.2.3:7070", "--trace=" + good});
  CHECK(r.first == 2);
  CHECK(r.second.find("not on loopback") != std::string::npos);

  r = RunRefused({"--trace=" + good});
  CHECK(r.first == 2);
  CHECK(r.second.find("--upstream is required") != std::string::npos);

  for (const char* flag :
       {"--scale=0", "--scale=x", "--delay=5", "--queue_bytes=0", "--min_rate_bytes=-1",
        "--log_every=-1", "--listen=0.0.0.0:0", "--no_such_flag=1"}) {
    r = RunRefused({up, "--trace=" + good, flag});
    INFO(flag << ": " << r.second);
    CHECK(r.first == 2);
    CHECK(r.second.find(std::string(flag).substr(0, std::string(flag).find('='))) !=
          std::string::npos);
  }

  r = RunRefused({"--help"});
  CHECK(r.first == 0);
  for (const char* name : {"--upstream", "--trace", "--listen ", "--listen_port_file", "--scale",
                           "--delay", "--queue_bytes", "--min_rate_bytes", "--log_every"}) {
    CHECK(r.second.find(name) != std::string::npos);
  }
}

TEST_CASE("--listen takes a fixed port and refuses one in use", "[trace_relay]") {
  const std::string trace = WriteFile("fixed.tsv", "0\t8\n");
  int taken = 0;
  const int holder = Listen(&taken);
  auto r = RunRefused({"--upstream=127.0.0.1:7070", "--trace=" + trace,
                       absl::StrCat("--listen=127.0.0.1:", taken)});
  CHECK(r.first == 2);
  CHECK(r.second.find(absl::StrCat("127.0.0.1:", taken)) != std::string::npos);
  close(holder);  // now free (nothing connected, so no TIME_WAIT)

  Relay relay({"--upstream=127.0.0.1:7070", "--trace=" + trace,
               absl::StrCat("--listen=127.0.0.1:", taken)});
  INFO(relay.log());
  CHECK(relay.WaitForPort(10) == taken);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(5) == 0);
}

TEST_CASE("SIGTERM and SIGINT stop the relay at once, connections open", "[trace_relay]") {
  const std::string trace = WriteFile("slow.tsv", "0\t1\n");
  for (int sig : {SIGTERM, SIGINT}) {
    int upstream_port = 0;
    const int listener = Listen(&upstream_port);
    Relay relay({absl::StrCat("--upstream=127.0.0.1:", upstream_port), "--trace=" + trace});
    const int port = relay.WaitForPort(10);
    INFO(relay.log());
    REQUIRE(port > 0);
    const int client = Connect(port);
    pollfd p{listener, POLLIN, 0};
    REQUIRE(poll(&p, 1, 5000) == 1);
    const int server = accept(listener, nullptr, nullptr);
    // Bytes queued in the link when the signal comes.
    const std::string data(64 * 1024, 'x');
    send(client, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    SleepFor(0.1);
    const double signalled = Now();
    relay.Signal(sig);
    CHECK(relay.Wait(1.0) == 0);
    CHECK(Now() - signalled < 1.0);
    // Its connections are closed: the client sees EOF or a reset.
    pollfd c{client, POLLIN, 0};
    CHECK(poll(&c, 1, 1000) == 1);
    close(client);
    close(server);
    close(listener);
  }
}

}  // namespace
}  // namespace rog
