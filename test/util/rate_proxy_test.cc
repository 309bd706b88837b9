#include "tools/links/rate_proxy.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace rog {
namespace {

using Dir = RateProxy::Direction;

constexpr double kMbit = 1e6 / 8;  // bytes per second
// Throughput measurements: settle first, then count over a window.
constexpr double kWarmup = 0.3;
constexpr double kWindow = 1.5;
constexpr double kTolerance = 0.15;

double Now() {
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point epoch = Clock::now();
  return std::chrono::duration<double>(Clock::now() - epoch).count();
}

void SleepFor(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

bool WaitUntil(const std::function<bool()>& done, double timeout) {
  const double end = Now() + timeout;
  while (!done()) {
    if (Now() > end) return false;
    SleepFor(0.002);
  }
  return true;
}

// Byte `i` of stream `seed`: neighbouring bytes and streams differ.
char PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return static_cast<char>(x >> 56);
}

// Index of the first byte of `data` that is not stream `seed`, or -1.
int64_t FirstMismatch(const std::string& data, uint64_t seed) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != PatternByte(seed, i)) return i;
  }
  return -1;
}

int CountEntries(const char* dir) {
  int n = 0;
  DIR* d = opendir(dir);
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;  // in /proc/self/fd, with the descriptor of the listing itself
}

// A port with nothing listening on it (for a while).
int UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A blocking client socket connected to 127.0.0.1:port; `sndbuf` > 0 sets
// SO_SNDBUF before connecting.
int Connect(int port, int sndbuf = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  if (sndbuf > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += n;
  }
  return true;
}

// Reads exactly n bytes within `timeout` seconds; shorter on EOF or timeout.
std::string RecvFor(int fd, size_t n, double timeout) {
  std::string out;
  const double end = Now() + timeout;
  char buf[16384];
  while (out.size() < n && Now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    const ssize_t got = recv(fd, buf, std::min(sizeof(buf), n - out.size()), MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) break;
    if (got > 0) out.append(buf, got);
  }
  return out;
}

// Whether the peer closed `fd` (EOF or reset) within `timeout` seconds,
// discarding data that arrives meanwhile.
bool PeerClosed(int fd, double timeout) {
  const double end = Now() + timeout;
  char buf[16384];
  while (Now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    const ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

// Whether `fd` has nothing to read and is not closed.
bool QuietAndOpen(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

// The upstream of the tests: one thread per connection, on loopback.
class TestServer {
 public:
  enum class Mode {
    kEcho,        // sends back what it reads; shuts down its side on EOF
    kSourceSink,  // sends stream 0 as fast as it can, discards what it reads
  };

  explicit TestServer(Mode mode) : mode_(mode) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(listen_fd_, 16) == 0);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~TestServer() {
    shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    CloseConnections();
    for (auto& t : threads_) t.join();
    for (int fd : fds_) close(fd);
    close(listen_fd_);
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  uint64_t received() const { return received_.load(); }
  // Connections whose handler is still running.
  int open() const { return open_.load(); }

  // Shuts down every accepted connection (the peer sees EOF).
  void CloseConnections() {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }

 private:
  void AcceptLoop() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      open_.fetch_add(1);
      threads_.emplace_back([this, fd] {
        Serve(fd);
        open_.fetch_sub(1);
      });
    }
  }

  void Serve(int fd) {
    char buf[16384];
    if (mode_ == Mode::kEcho) {
      while (true) {
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        received_.fetch_add(n);
        if (!SendAll(fd, std::string(buf, n))) break;
      }
      shutdown(fd, SHUT_WR);
      return;
    }
    std::thread source([fd] {
      std::string chunk(16384, 0);
      for (uint64_t offset = 0;; offset += chunk.size()) {
        for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = PatternByte(0, offset + i);
        if (!SendAll(fd, chunk)) return;
      }
    });
    while (true) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      received_.fetch_add(n);
    }
    shutdown(fd, SHUT_RDWR);  // stops the source
    source.join();
  }

  const Mode mode_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;  // closed in the destructor only, so never reused early
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> received_{0};
  std::atomic<int> open_{0};
};

// Writes stream `seed` to a socket from a thread, up to `limit` bytes or
// until stopped.
class Writer {
 public:
  Writer(int fd, uint64_t seed, uint64_t limit = std::numeric_limits<uint64_t>::max())
      : thread_([this, fd, seed, limit] { Run(fd, seed, limit); }) {}
  ~Writer() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t written() const { return written_.load(); }

 private:
  void Run(int fd, uint64_t seed, uint64_t limit) {
    std::string chunk(16384, 0);
    uint64_t written = 0;
    while (!stop_.load() && written < limit) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 10) <= 0) continue;
      const size_t n = std::min<uint64_t>(chunk.size(), limit - written);
      for (size_t i = 0; i < n; ++i) chunk[i] = PatternByte(seed, written + i);
      const ssize_t sent = send(fd, chunk.data(), n, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (sent <= 0) return;
      written += sent;
      written_ = written;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> written_{0};
  std::thread thread_;
};

// Reads a socket from a thread until EOF, counting bytes and, if `keep`,
// keeping them.
class Reader {
 public:
  Reader(int fd, bool keep) : thread_([this, fd, keep] { Run(fd, keep); }) {}
  ~Reader() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t received() const { return received_.load(); }
  bool closed() const { return closed_.load(); }
  // What was read; call after Stop().
  const std::string& data() const { return data_; }

 private:
  void Run(int fd, bool keep) {
    char buf[16384];
    while (!stop_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 10) <= 0) continue;
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) break;
      if (keep) data_.append(buf, n);
      received_.fetch_add(n);
    }
    closed_ = true;
  }

  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> received_{0};
  std::string data_;
  std::thread thread_;
};

// Bytes per second that `bytes` grows by over `seconds`.
double MeasureRate(const std::function<uint64_t()>& bytes, double seconds) {
  const double t1 = Now();
  const uint64_t b1 = bytes();
  SleepFor(seconds);
  const double t2 = Now();
  const uint64_t b2 = bytes();
  return (b2 - b1) / (t2 - t1);
}

std::unique_ptr<RateProxy> StartProxy(const std::string& upstream, double rate,
                                      double delay = 0.005) {
  RateProxy::Options options;
  options.rate_bytes_per_sec = rate;
  options.delay_seconds = delay;
  auto proxy = RateProxy::Start(upstream, options);
  REQUIRE(proxy.ok());
  return std::move(*proxy);
}

TEST_CASE("upstream must be host:port on loopback", "[rate_proxy]") {
  RateProxy::Options options;
  CHECK(RateProxy::Start("10.0.0.1:80", options).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(RateProxy::Start("example.com:80", options).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(RateProxy::Start("127.0.0.1", options).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(RateProxy::Start("127.0.0.1:0", options).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(RateProxy::Start("localhost:1234", options).ok());
  auto proxy = RateProxy::Start("127.0.0.2:1234", options);
  REQUIRE(proxy.ok());
  CHECK((*proxy)->port() > 0);
  CHECK((*proxy)->address() == absl::StrCat("127.0.0.1:", (*proxy)->port()));
}

TEST_CASE("the link queue holds its bytes or its time at the current rate, whichever is more",
          "[rate_proxy]") {
  // 16 KiB below 16384 / 10 ms = 1.64 MB/s (13.1 Mbit/s), 10 ms above.
  CHECK(LinkQueueBytes(250e3, 16384, 0.010) == 16384);
  CHECK(LinkQueueBytes(1.6e6, 16384, 0.010) == 16384);
  CHECK(LinkQueueBytes(20e6, 16384, 0.010) == 200000);
  // Without a time, bytes alone; a stalled link keeps its bytes.
  CHECK(LinkQueueBytes(20e6, 16384, 0) == 16384);
  CHECK(LinkQueueBytes(0, 16384, 0.010) == 16384);
  CHECK(LinkQueueBytes(-1, 16384, 0.010) == 16384);
  // Start refuses a time outside [0, 10] s.
  RateProxy::Options options;
  for (double bad : {-0.001, 10.5, std::numeric_limits<double>::quiet_NaN()}) {
    options.queue_seconds = bad;
    CHECK(RateProxy::Start("127.0.0.1:1234", options).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
  options.queue_seconds = 0.010;
  CHECK(RateProxy::Start("127.0.0.1:1234", options).ok());
}

TEST_CASE("bytes arrive unchanged and in order over concurrent connections", "[rate_proxy]") {
  TestServer server(TestServer::Mode::kEcho);
  auto proxy = StartProxy(server.address(), 40 * kMbit, 0.001);
  constexpr int kConns = 4;
  constexpr uint64_t kBytes = 256 * 1024;
  std::vector<int> fds;
  std::vector<std::unique_ptr<Writer>> writers;
  std::vector<std::unique_ptr<Reader>> readers;
  for (int i = 0; i < kConns; ++i) {
    fds.push_back(Connect(proxy->port()));
    readers.push_back(std::make_unique<Reader>(fds.back(), /*keep=*/true));
    writers.push_back(std::make_unique<Writer>(fds.back(), /*seed=*/i + 1, kBytes));
  }
  // 1 MiB each way at 5 MB/s: about 0.2 s.
  const bool all = WaitUntil(
      [&] {
        for (auto& r : readers) {
          if (r->received() < kBytes) return false;
        }
        return true;
      },
      5.0);
  CHECK(all);
  CHECK(proxy->open_connections() == kConns);
  CHECK(proxy->accepted_connections() == kConns);
  for (int i = 0; i < kConns; ++i) {
    writers[i]->Stop();
    readers[i]->Stop();
    CHECK(readers[i]->data().size() == kBytes);
    CHECK(FirstMismatch(readers[i]->data(), i + 1) == -1);
  }
  CHECK(proxy->bytes_forwarded(Dir::kUp) == kConns * kBytes);
  CHECK(proxy->bytes_forwarded(Dir::kDown) == kConns * kBytes);
  CHECK(server.received() == kConns * kBytes);
  for (int fd : fds) close(fd);
  // The echo server answers EOF with EOF: everything closes.
  CHECK(WaitUntil([&] { return proxy->open_connections() == 0; }, 2.0));
  CHECK(WaitUntil([&] { return server.open() == 0; }, 2.0));
}

TEST_CASE("echo throughput matches the link rate", "[rate_proxy][throughput]") {
  double rate = 0;
  SECTION("2 Mbit/s") { rate = 2 * kMbit; }
  SECTION("8 Mbit/s") { rate = 8 * kMbit; }
  TestServer server(TestServer::Mode::kEcho);
  auto proxy = StartProxy(server.address(), rate);
  const int fd = Connect(proxy->port());
  Reader reader(fd, /*keep=*/false);
  Writer writer(fd, /*seed=*/1);
  SleepFor(kWarmup);
  const double measured = MeasureRate([&] { return reader.received(); }, kWindow);
  INFO("set " << rate << " B/s, measured " << measured << " B/s");
  CHECK(measured == Approx(rate).epsilon(kTolerance));
  writer.Stop();
  reader.Stop();
  close(fd);
}

TEST_CASE("the two directions are shaped separately", "[rate_proxy][throughput]") {
  TestServer server(TestServer::Mode::kSourceSink);
  auto proxy = StartProxy(server.address(), 8 * kMbit);
  proxy->SetRate(Dir::kDown, 2 * kMbit);
  CHECK(proxy->rate(Dir::kUp) == 8 * kMbit);
  CHECK(proxy->rate(Dir::kDown) == 2 * kMbit);
  const int fd = Connect(proxy->port());
  Reader reader(fd, /*keep=*/false);
  Writer writer(fd, /*seed=*/1);
  SleepFor(kWarmup);
  const double t1 = Now();
  const uint64_t up1 = server.received(), down1 = reader.received();
  SleepFor(kWindow);
  const double t2 = Now();
  const double up = (server.received() - up1) / (t2 - t1);
  const double down = (reader.received() - down1) / (t2 - t1);
  INFO("up " << up << " B/s, down " << down << " B/s");
  CHECK(up == Approx(8 * kMbit).epsilon(kTolerance));
  CHECK(down == Approx(2 * kMbit).epsilon(kTolerance));
  writer.Stop();
  reader.Stop();
  close(fd);
}

TEST_CASE("SetRate changes throughput mid-transfer at once", "[rate_proxy][throughput]") {
  TestServer server(TestServer::Mode::kSourceSink);
  auto proxy = StartProxy(server.address(), 8 * kMbit);
  const int fd = Connect(proxy->port());
  Reader reader(fd, /*keep=*/false);
  auto received = [&] { return reader.received(); };
  // Windows start 50 ms after each change: a change that took effect 200 ms
  // late would move the measured rate by more than the tolerance.
  constexpr double kSettle = 0.05, kPhase = 0.8;
  SleepFor(kWarmup);
  const double fast = MeasureRate(received, kPhase);
  proxy->SetRate(2 * kMbit);
  SleepFor(kSettle);
  const double slow = MeasureRate(received, kPhase);
  proxy->SetRate(1000);  // nearly down: about a byte per millisecond
  SleepFor(kSettle);
  const double trickle = MeasureRate(received, 0.5);
  proxy->SetRate(8 * kMbit);
  SleepFor(kSettle);
  const double fast_again = MeasureRate(received, kPhase);
  INFO("8 Mbit/s: " << fast << ", 2 Mbit/s: " << slow << ", 1000 B/s: " << trickle
                    << ", 8 Mbit/s: " << fast_again);
  CHECK(fast == Approx(8 * kMbit).epsilon(kTolerance));
  CHECK(slow == Approx(2 * kMbit).epsilon(kTolerance));
  CHECK(trickle == Approx(1000).epsilon(0.3));  // few bytes: a coarser tolerance
  CHECK(fast_again == Approx(8 * kMbit).epsilon(kTolerance));
  reader.Stop();
  close(fd);
}

TEST_CASE("rate 0 stalls the link, back-pressures the sender, and resumes", "[rate_proxy]") {
  TestServer server(TestServer::Mode::kEcho);
  auto proxy = StartProxy(server.address(), 0);
  // A small send buffer, so that what the sender can write while stalled is
  // what the link path holds: its socket buffers and queue, not megabytes.
  const int fd = Connect(proxy->port(), /*sndbuf=*/16 * 1024);
  constexpr uint64_t kCap = 8 << 20;
  Writer writer(fd, /*seed=*/7, kCap);
  // Written bytes stop growing once the path is full.
  uint64_t last = 0;
  WaitUntil(
      [&] {
        SleepFor(0.1);
        const uint64_t now = writer.written();
        const bool still = now > 0 && now == last;
        last = now;
        return still;
      },
      3.0);
  writer.Stop();
  const uint64_t written = writer.written();
  INFO("accepted from the sender while stalled: " << written << " bytes");
  CHECK(written > 0);
  // 64 KiB here: the sender's 32 KiB, the proxy's receive window and queue.
  // With the kernel's default buffers on the proxy it is 144 KiB, and with
  // an unbounded proxy queue, megabytes.
  CHECK(written < 128 * 1024);
  SleepFor(0.3);
  CHECK(server.received() == 0);
  CHECK(proxy->bytes_forwarded(Dir::kUp) == 0);
  CHECK(proxy->open_connections() == 1);
  CHECK(server.open() == 1);
  CHECK(QuietAndOpen(fd));

  proxy->SetRate(8 * kMbit);
  const std::string echoed = RecvFor(fd, written, 5.0);
  CHECK(echoed.size() == written);
  CHECK(FirstMismatch(echoed, 7) == -1);
  CHECK(proxy->bytes_forwarded(Dir::kUp) == written);
  close(fd);
}

TEST_CASE("the one-way delay applies to each direction", "[rate_proxy]") {
  TestServer server(TestServer::Mode::kEcho);
  constexpr double kDelay = 0.025;
  auto proxy = StartProxy(server.address(), 8 * kMbit, kDelay);
  const int fd = Connect(proxy->port());
  double min_rtt = 1e9;
  for (int i = 0; i < 5; ++i) {
    const std::string ping(100, 'a' + i);
    const double start = Now();
    REQUIRE(SendAll(fd, ping));
    REQUIRE(RecvFor(fd, ping.size(), 2.0) == ping);
    min_rtt = std::min(min_rtt, Now() - start);
  }
  INFO("min rtt " << min_rtt << " s");
  CHECK(min_rtt >= 2 * kDelay);
  CHECK(min_rtt < 2 * kDelay + 0.03);
  close(fd);
}

// With its small socket buffers (16 KiB by default) the proxy announces
// segments of at most a quarter of them. Loopback's 64 KiB segments did not
// fit the 14 KiB window such a buffer advertises, and Linux deferred each
// send to its persist timer: one window per 0.2 s (about 70 KB/s) for
// minutes, on a link replaying tens of MB/s.
TEST_CASE("the proxy announces segments that fit its small socket buffers", "[rate_proxy]") {
  TestServer server(TestServer::Mode::kEcho);
  auto proxy = StartProxy(server.address(), 8 * kMbit, 0.001);
  const int fd = Connect(proxy->port());
  const std::string ping(100, 'p');
  REQUIRE(SendAll(fd, ping));
  REQUIRE(RecvFor(fd, ping.size(), 2.0) == ping);
  tcp_info info{};
  socklen_t len = sizeof(info);
  REQUIRE(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0);
  INFO("segments to the proxy: " << info.tcpi_snd_mss << " bytes");
  CHECK(info.tcpi_snd_mss <= 16 * 1024 / 4);
  close(fd);
}

TEST_CASE("closing either side closes the other", "[rate_proxy]") {
  TestServer server(TestServer::Mode::kEcho);
  auto proxy = StartProxy(server.address(), 8 * kMbit);

  SECTION("the client") {
    const int fd = Connect(proxy->port());
    REQUIRE(SendAll(fd, "ping"));
    REQUIRE(RecvFor(fd, 4, 2.0) == "ping");
    CHECK(server.open() == 1);
    close(fd);
    CHECK(WaitUntil([&] { return server.open() == 0; }, 2.0));
    CHECK(WaitUntil([&] { return proxy->open_connections() == 0; }, 2.0));
  }
  SECTION("the upstream") {
    const int fd = Connect(proxy->port());
    REQUIRE(SendAll(fd, "ping"));
    REQUIRE(RecvFor(fd, 4, 2.0) == "ping");
    server.CloseConnections();
    CHECK(PeerClosed(fd, 2.0));
    close(fd);
    CHECK(WaitUntil([&] { return proxy->open_connections() == 0; }, 2.0));
  }
  SECTION("an upstream that refuses the connection") {
    auto refused = StartProxy(absl::StrCat("127.0.0.1:", UnusedPort()), 8 * kMbit);
    const int fd = Connect(refused->port());
    CHECK(PeerClosed(fd, 2.0));
    close(fd);
    CHECK(WaitUntil([&] { return refused->open_connections() == 0; }, 2.0));
    CHECK(refused->accepted_connections() == 1);
  }
}

TEST_CASE("ResetConnections aborts open connections only", "[rate_proxy]") {
  TestServer server(TestServer::Mode::kEcho);
  auto proxy = StartProxy(server.address(), 8 * kMbit);
  const int fd = Connect(proxy->port());
  REQUIRE(SendAll(fd, "ping"));
  REQUIRE(RecvFor(fd, 4, 2.0) == "ping");
  proxy->ResetConnections();
  CHECK(proxy->open_connections() == 0);
  CHECK(PeerClosed(fd, 2.0));
  CHECK(WaitUntil([&] { return server.open() == 0; }, 2.0));
  close(fd);
  const int again = Connect(proxy->port());
  REQUIRE(SendAll(again, "pong"));
  CHECK(RecvFor(again, 4, 2.0) == "pong");
  close(again);
}

TEST_CASE("the destructor returns at once and leaves no threads or descriptors", "[rate_proxy]") {
  const int fds_before = CountEntries("/proc/self/fd");
  const int threads_before = CountEntries("/proc/self/task");
  {
    TestServer server(TestServer::Mode::kSourceSink);
    auto proxy = StartProxy(server.address(), 2 * kMbit);
    std::vector<int> fds;
    std::vector<std::unique_ptr<Writer>> writers;
    for (int i = 0; i < 3; ++i) {
      fds.push_back(Connect(proxy->port()));
      writers.push_back(std::make_unique<Writer>(fds.back(), i));
    }
    REQUIRE(WaitUntil([&] { return server.open() == 3; }, 2.0));
    SleepFor(0.2);
    proxy->SetRate(Dir::kUp, 0);  // data stuck in the queue one way, flowing the other
    SleepFor(0.1);
    REQUIRE(proxy->open_connections() == 3);
    const double start = Now();
    proxy.reset();
    const double took = Now() - start;
    INFO("destructor took " << took << " s");
    CHECK(took < 0.1);
    for (auto& w : writers) w->Stop();
    for (int fd : fds) {
      CHECK(PeerClosed(fd, 2.0));
      close(fd);
    }
    CHECK(WaitUntil([&] { return server.open() == 0; }, 2.0));
  }
  CHECK(CountEntries("/proc/self/fd") == fds_before);
  CHECK(CountEntries("/proc/self/task") == threads_before);
}

}  // namespace
}  // namespace rog
