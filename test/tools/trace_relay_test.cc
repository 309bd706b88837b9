// Runs tools/links/trace_relay as a child process, as the main job does.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
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
#include "test/util/link_meter.h"

namespace rog {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes per second

// trace_relay as a child process, with its port file.
class Relay {
 public:
  explicit Relay(std::vector<std::string> flags)
      : port_file_(Base() + ".port"), child_(Args(flags, port_file_), port_file_ + ".log") {
    REQUIRE(child_.started());
  }

  const std::string& port_file() const { return port_file_; }
  std::string log() const { return child_.log(); }

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
      if (!child_.running()) return 0;
      SleepFor(0.002);
    }
    return 0;
  }
  double start_time() const { return start_time_; }
  int Wait(double timeout) { return child_.Wait(timeout); }
  void Signal(int sig) { child_.Signal(sig); }

 private:
  static std::string Base() {
    static int counter = 0;
    const std::string base = absl::StrCat(TmpDir(), "/relay-", getpid(), "-", counter++);
    std::remove((base + ".port").c_str());
    return base;
  }
  static std::vector<std::string> Args(const std::vector<std::string>& flags,
                                       const std::string& port_file) {
    std::vector<std::string> args = {TestBinary("tools/links/trace_relay")};
    args.insert(args.end(), flags.begin(), flags.end());
    if (flags.size() > 1) args.push_back("--listen_port_file=" + port_file);
    return args;
  }

  std::string port_file_;
  ChildProcess child_;
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
      WriteTmpFile("alternating.tsv", "# seconds\tmbit_per_s\n0\t2\n0.5\t8\n1.0\t2\n1.5\t8\n");
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
  // 6.05 s of tools/traces/outdoors-fast-w1.tsv (from 22.0 s: a dip to
  // 7 Mbit/s, then a rise past 100), replayed at scale 0.5 so that the
  // user-space relay is not CPU-bound on a loaded 2-core machine.
  const double kMbitOf[] = {22.0321, 16.2975, 7.3662,  8.4678,  16.6639, 11.1372,
                            13.2620, 14.1422, 15.2763, 14.4992, 56.6086};
  const int kN = 11;
  const double kStep = 0.55, kScale = 0.5, kDelay = 0.005;
  std::string text = "# seconds\tmbit_per_s (outdoors-fast-w1.tsv from 22.0 s)\n";
  for (int i = 0; i < kN; ++i) absl::StrAppend(&text, i * kStep, "\t", kMbitOf[i], "\n");
  const std::string trace = WriteTmpFile("w1-segment.tsv", text);
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
  const std::string good = WriteTmpFile("good.tsv", "0\t8\n");
  const std::string up = "--upstream=127.0.0.1:7070";
  const std::string missing = TmpDir() + "/no-such-trace.tsv";
  auto r = RunRefused({up, "--trace=" + missing});
  CHECK(r.first == 2);
  CHECK(r.second.find(missing) != std::string::npos);
  CHECK(r.second.find("No such file") != std::string::npos);

  const std::string bad = WriteTmpFile("bad.tsv", "0\t8\n1\tfast\n");
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
       {"--scale=0", "--scale=x", "--delay=5", "--queue_bytes=0", "--queue_time=-1ms",
        "--queue_time=11s", "--queue_time=10", "--min_rate_bytes=-1", "--log_every=-1",
        "--listen=0.0.0.0:0", "--no_such_flag=1"}) {
    r = RunRefused({up, "--trace=" + good, flag});
    INFO(flag << ": " << r.second);
    CHECK(r.first == 2);
    CHECK(r.second.find(std::string(flag).substr(0, std::string(flag).find('='))) !=
          std::string::npos);
  }

  r = RunRefused({"--help"});
  CHECK(r.first == 0);
  for (const char* name :
       {"--upstream", "--trace", "--listen ", "--listen_port_file", "--scale", "--delay",
        "--queue_bytes", "--queue_time", "--min_rate_bytes", "--log_every"}) {
    CHECK(r.second.find(name) != std::string::npos);
  }
}

TEST_CASE("--listen takes a fixed port and refuses one in use", "[trace_relay]") {
  const std::string trace = WriteTmpFile("fixed.tsv", "0\t8\n");
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
  const std::string trace = WriteTmpFile("slow.tsv", "0\t1\n");
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
