#include "tools/links/rate_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rog {
namespace {

using Clock = std::chrono::steady_clock;

// Link time the serializer moves per step, at most: the shaping granularity.
constexpr double kStepSeconds = 0.001;
constexpr size_t kReadBytes = 64 * 1024;
constexpr double kNever = std::numeric_limits<double>::infinity();
// Rates above this (1 TB/s) are taken as this.
constexpr double kMaxRate = 1e12;

// Bytes the serializer moves at once at `rate`.
double StepBytes(double rate) { return std::max(1.0, std::ceil(rate * kStepSeconds)); }

absl::Status Errno(const char* what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void SetSocketOptions(int fd, int buffer_bytes) {
  if (buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
    // Segments of at most a quarter of the buffer (before connect/listen,
    // so the handshake announces it). Without it a sender to the proxy was
    // seen sending one 14 KiB window (all a small buffer advertises) every
    // ~0.2 s, about 70 KB/s, for minutes, whatever rate the link replayed;
    // our reading, not checked in the kernel: loopback's large segments do
    // not fit that window and Linux defers such a send to its persist timer.
    const int mss = std::max(536, buffer_bytes / 4);
    setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss));
  }
  // The link shapes; Nagle plus delayed acks on loopback would add 40 ms stalls.
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Bytes read from the source and not yet serialized; consumed from the front.
class ByteQueue {
 public:
  size_t size() const { return buf_.size() - head_; }
  bool empty() const { return size() == 0; }
  void Append(const char* data, size_t n) {
    if (head_ > 0 && head_ >= buf_.size() / 2) {
      buf_.erase(0, head_);
      head_ = 0;
    }
    buf_.append(data, n);
  }
  std::string Take(size_t n) {
    std::string out = buf_.substr(head_, n);
    head_ += out.size();
    if (head_ == buf_.size()) {
      buf_.clear();
      head_ = 0;
    }
    return out;
  }

 private:
  std::string buf_;
  size_t head_ = 0;
};

// Serialized bytes on their way to the destination.
struct Chunk {
  double release;  // when the last byte arrives at the far end of the link
  std::string data;
  size_t written = 0;
};

// One direction of one connection.
struct Half {
  ByteQueue queue;
  std::deque<Chunk> wire;
  bool eof = false;      // the source sent FIN
  bool shut = false;     // FIN forwarded to the destination
  bool blocked = false;  // the destination refused bytes that are due
};

struct Conn {
  int fd[2] = {-1, -1};  // client, upstream: the source of kUp, kDown
  bool connecting = false;
  bool dead = false;  // close both sides at the end of this round
  bool hup[2] = {false, false};
  Half half[2];
};

// One direction's link, shared by all connections.
struct Link {
  double rate = 0;        // as applied by the loop
  bool busy = false;      // serializing without a gap since busy_until
  double busy_until = 0;  // link time used up to here
  size_t next_first = 0;  // round-robin start
};

}  // namespace

size_t LinkQueueBytes(double rate, size_t queue_bytes, double queue_seconds) {
  const double timed = std::max(0.0, rate) * queue_seconds;
  // Rates are at most 1e12 bytes/s and queue_seconds at most 10: no overflow.
  return std::max(queue_bytes, static_cast<size_t>(timed));
}

struct RateProxy::State {
  Options options;
  sockaddr_in upstream{};
  int listen_fd = -1;
  int wake_fd = -1;
  int port = 0;
  Clock::time_point epoch = Clock::now();

  // Shared with the public methods.
  std::atomic<double> rate[2];
  std::atomic<uint64_t> forwarded[2];
  std::atomic<int> open{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<bool> stop{false};
  std::mutex reset_mu;
  std::condition_variable reset_cv;
  uint64_t reset_requested = 0;  // guarded by reset_mu
  uint64_t reset_done = 0;       // guarded by reset_mu

  // Owned by the loop thread.
  std::vector<std::unique_ptr<Conn>> conns;
  Link link[2];

  State() {
    for (int d = 0; d < 2; ++d) {
      rate[d] = 0;
      forwarded[d] = 0;
    }
  }

  double Now() const { return std::chrono::duration<double>(Clock::now() - epoch).count(); }

  void Wake() {
    uint64_t one = 1;
    ssize_t ignored = write(wake_fd, &one, sizeof(one));
    (void)ignored;
  }

  void Run();
  // The link queue of direction `d` at the rate the loop applies now.
  size_t QueueLimit(int d) const {
    return LinkQueueBytes(link[d].rate, options.queue_bytes, options.queue_seconds);
  }
  // The descriptors to poll: wake_fd, listen_fd, then each connection's two.
  void PollFds(std::vector<pollfd>* fds) const;
  // Waits in ppoll for an event or the next deadline; false if ppoll failed.
  bool Poll(std::vector<pollfd>* fds, double now) const;
  // Handles what poll reported: wake-ups, reset requests, connections'
  // events and new connections.
  void OnPolled(const std::vector<pollfd>& fds);
  // Closes every connection if ResetConnections asked for it.
  void ServeResets();
  // Writes what is due and serializes what the links let through, each way.
  void Forward(double now);
  // Forwards FINs and drops the connections that are closed.
  void Reap();
  void Accept();
  void CloseConn(Conn& c, bool reset);
  void OnEvents(Conn& c, const short revents[2]);
  void Read(Conn& c, int d);
  void WriteDue(Conn& c, int d, double now);
  void ApplyRate(int d, double now);
  // Moves the bytes whose link time has passed from the queues to the wire,
  // in steps of kStepSeconds unless `partial`.
  void Serialize(int d, double now, bool partial);
  double NextDeadline(double now) const;
  void FinishHalves(Conn& c);
};

void RateProxy::State::Run() {
  std::vector<pollfd> fds;
  double now = Now();
  while (!stop.load()) {
    PollFds(&fds);
    if (!Poll(&fds, now)) break;
    if (stop.load()) break;
    now = Now();
    OnPolled(fds);
    Forward(now);
    Reap();
  }
  for (auto& c : conns) CloseConn(*c, /*reset=*/false);
  conns.clear();
  // Nothing is left to reset; do not leave a caller waiting.
  std::lock_guard<std::mutex> lock(reset_mu);
  reset_done = std::numeric_limits<uint64_t>::max();
  reset_cv.notify_all();
}

void RateProxy::State::PollFds(std::vector<pollfd>* fds) const {
  fds->clear();
  fds->push_back({wake_fd, POLLIN, 0});
  fds->push_back({listen_fd, POLLIN, 0});
  for (const auto& c : conns) {
    for (int k = 0; k < 2; ++k) {
      short events = 0;
      if (c->connecting) {
        if (k == 1) events = POLLOUT;
      } else {
        const Half& in = c->half[k];  // k is the source of direction k
        if (!in.eof && in.queue.size() < QueueLimit(k)) events |= POLLIN;
        if (c->half[1 - k].blocked) events |= POLLOUT;
      }
      // A hung-up socket that we ask nothing of would wake poll forever.
      const bool skip = events == 0 && c->hup[k];
      fds->push_back({skip ? -1 : c->fd[k], events, 0});
    }
  }
}

bool RateProxy::State::Poll(std::vector<pollfd>* fds, double now) const {
  const double deadline = NextDeadline(now);
  timespec timeout;
  timespec* timeout_ptr = nullptr;
  if (deadline < kNever) {
    // Rounded up to the microsecond so that we do not wake just before.
    const double wait = std::max(0.0, deadline - now) + 1e-6;
    timeout.tv_sec = static_cast<time_t>(wait);
    timeout.tv_nsec = static_cast<long>((wait - timeout.tv_sec) * 1e9);
    timeout_ptr = &timeout;
  }
  return !(ppoll(fds->data(), fds->size(), timeout_ptr, nullptr) < 0 && errno != EINTR);
}

void RateProxy::State::OnPolled(const std::vector<pollfd>& fds) {
  if (fds[0].revents & POLLIN) {
    uint64_t value;
    ssize_t ignored = read(wake_fd, &value, sizeof(value));
    (void)ignored;
  }
  ServeResets();
  // Connections accepted below were not polled this round.
  const size_t polled = std::min(conns.size(), (fds.size() - 2) / 2);
  for (size_t i = 0; i < polled; ++i) {
    const short revents[2] = {fds[2 + 2 * i].revents, fds[3 + 2 * i].revents};
    OnEvents(*conns[i], revents);
  }
  if (fds[1].revents & POLLIN) Accept();
}

void RateProxy::State::ServeResets() {
  std::lock_guard<std::mutex> lock(reset_mu);
  if (reset_done < reset_requested) {
    for (auto& c : conns) CloseConn(*c, /*reset=*/true);
    conns.clear();
    reset_done = reset_requested;
    reset_cv.notify_all();
  }
}

void RateProxy::State::Forward(double now) {
  for (int d = 0; d < 2; ++d) {
    for (auto& c : conns) {
      if (!c->connecting && !c->dead) WriteDue(*c, d, now);
    }
    ApplyRate(d, now);
    Serialize(d, now, /*partial=*/false);
    // With no delay, what was just serialized is due already.
    for (auto& c : conns) {
      if (!c->connecting && !c->dead) WriteDue(*c, d, now);
    }
  }
}

void RateProxy::State::Reap() {
  for (auto& c : conns) {
    if (!c->connecting && !c->dead) FinishHalves(*c);
  }
  auto is_closed = [this](std::unique_ptr<Conn>& c) {
    const bool done = c->half[0].shut && c->half[1].shut;
    if (c->dead || done) CloseConn(*c, /*reset=*/false);
    return c->dead || done;
  };
  conns.erase(std::remove_if(conns.begin(), conns.end(), is_closed), conns.end());
}

void RateProxy::State::Accept() {
  while (true) {
    const int client = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors: try again on the next event
    }
    accepted.fetch_add(1);
    SetSocketOptions(client, options.socket_buffer_bytes);
    // Buffers before connect(), so that the window scale fits them.
    const int up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (up < 0) {
      close(client);
      continue;
    }
    SetSocketOptions(up, options.socket_buffer_bytes);
    const int rc = connect(up, reinterpret_cast<const sockaddr*>(&upstream), sizeof(upstream));
    if (rc < 0 && errno != EINPROGRESS) {
      close(up);
      close(client);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd[0] = client;
    c->fd[1] = up;
    c->connecting = rc < 0;
    conns.push_back(std::move(c));
    open.fetch_add(1);
  }
}

void RateProxy::State::CloseConn(Conn& c, bool reset) {
  for (int k = 0; k < 2; ++k) {
    if (c.fd[k] < 0) continue;
    if (reset) {
      linger abort{1, 0};
      setsockopt(c.fd[k], SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
    }
    close(c.fd[k]);
    c.fd[k] = -1;
  }
  open.fetch_sub(1);
}

void RateProxy::State::OnEvents(Conn& c, const short revents[2]) {
  if (c.connecting) {
    if (revents[0] & (POLLERR | POLLHUP)) {
      c.dead = true;
    } else if (revents[1] & (POLLOUT | POLLERR | POLLHUP)) {
      int error = 0;
      socklen_t len = sizeof(error);
      getsockopt(c.fd[1], SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) {
        c.dead = true;
      } else {
        c.connecting = false;
      }
    }
    return;
  }
  for (int k = 0; k < 2; ++k) {
    // A pending socket error is a reset or an unreachable peer: what is
    // still queued cannot be delivered either way.
    if (revents[k] & POLLERR) c.dead = true;
    if (revents[k] & POLLHUP) c.hup[k] = true;
  }
  if (c.dead) return;
  for (int d = 0; d < 2; ++d) {
    if (revents[d] & (POLLIN | POLLHUP)) Read(c, d);
  }
}

void RateProxy::State::Read(Conn& c, int d) {
  Half& h = c.half[d];
  char buf[kReadBytes];
  const size_t limit = QueueLimit(d);
  while (!h.eof && h.queue.size() < limit) {
    const size_t want = std::min(sizeof(buf), limit - h.queue.size());
    const ssize_t n = recv(c.fd[d], buf, want, MSG_DONTWAIT);
    if (n > 0) {
      h.queue.Append(buf, n);
    } else if (n == 0) {
      h.eof = true;
    } else if (errno == EINTR) {
      continue;
    } else {
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.dead = true;
      return;
    }
  }
}

void RateProxy::State::WriteDue(Conn& c, int d, double now) {
  Half& h = c.half[d];
  const int fd = c.fd[1 - d];
  h.blocked = false;
  while (!h.wire.empty() && h.wire.front().release <= now) {
    Chunk& chunk = h.wire.front();
    const ssize_t n = send(fd, chunk.data.data() + chunk.written, chunk.data.size() - chunk.written,
                           MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        h.blocked = true;
      } else {
        c.dead = true;
      }
      return;
    }
    forwarded[d].fetch_add(n);
    chunk.written += n;
    if (chunk.written == chunk.data.size()) h.wire.pop_front();
  }
}

void RateProxy::State::ApplyRate(int d, double now) {
  double wanted = rate[d].load();
  if (!(wanted > 0)) wanted = 0;        // NaN too
  wanted = std::min(wanted, kMaxRate);  // no infinite link time arithmetic
  Link& l = link[d];
  if (wanted == l.rate) return;
  // Link time up to now is spent at the old rate; the rest at the new one.
  Serialize(d, now, /*partial=*/true);
  l.rate = wanted;
  if (l.busy) l.busy_until = now;
}

void RateProxy::State::Serialize(int d, double now, bool partial) {
  Link& l = link[d];
  std::vector<Conn*> ready;
  for (auto& c : conns) {
    Half& h = c->half[d];
    if (!c->connecting && !c->dead && !h.blocked && !h.queue.empty()) ready.push_back(c.get());
  }
  if (l.rate <= 0 || ready.empty()) {
    // Stalled, or nothing to send: the link idles, and the next byte starts
    // when it arrives.
    l.busy = false;
    return;
  }
  if (!l.busy) {
    l.busy = true;
    l.busy_until = now;
  }
  // Only bytes whose serialization has ended by now; the fraction of a byte
  // left over stays in busy_until.
  double budget = std::floor((now - l.busy_until) * l.rate + 1e-6);
  // Whole steps only: a loop woken by other events would otherwise cut the
  // stream into ever smaller chunks, each with its own wake-up.
  size_t ready_bytes = 0;
  for (const Conn* c : ready) ready_bytes += c->half[d].queue.size();
  if (!partial && budget < std::min(StepBytes(l.rate), double(ready_bytes))) return;
  std::rotate(ready.begin(), ready.begin() + l.next_first++ % ready.size(), ready.end());
  double t = l.busy_until;
  while (budget >= 1 && !ready.empty()) {
    const double share = std::max(1.0, std::floor(budget / ready.size()));
    for (auto it = ready.begin(); it != ready.end() && budget >= 1;) {
      Half& h = (*it)->half[d];
      const size_t n = static_cast<size_t>(std::min({share, budget, double(h.queue.size())}));
      t += n / l.rate;
      budget -= n;
      h.wire.push_back(Chunk{t + options.delay_seconds, h.queue.Take(n)});
      it = h.queue.empty() ? ready.erase(it) : it + 1;
    }
  }
  l.busy_until = t;
  if (ready.empty()) l.busy = false;
}

double RateProxy::State::NextDeadline(double now) const {
  double deadline = kNever;
  for (int d = 0; d < 2; ++d) {
    const Link& l = link[d];
    size_t ready_bytes = 0;
    for (const auto& c : conns) {
      const Half& h = c->half[d];
      if (!c->connecting && !h.blocked) ready_bytes += h.queue.size();
      if (!h.blocked && !h.wire.empty()) deadline = std::min(deadline, h.wire.front().release);
    }
    if (l.rate > 0 && ready_bytes > 0) {
      const double start = l.busy ? l.busy_until : now;
      const double bytes = std::min(StepBytes(l.rate), double(ready_bytes));
      deadline = std::min(deadline, start + bytes / l.rate);
    }
  }
  return deadline;
}

void RateProxy::State::FinishHalves(Conn& c) {
  for (int d = 0; d < 2; ++d) {
    Half& h = c.half[d];
    if (h.eof && !h.shut && h.queue.empty() && h.wire.empty()) {
      shutdown(c.fd[1 - d], SHUT_WR);
      h.shut = true;
    }
  }
}

absl::StatusOr<std::unique_ptr<RateProxy>> RateProxy::Start(const std::string& upstream,
                                                            Options options) {
  auto state = std::make_unique<State>();
  const size_t colon = upstream.rfind(':');
  int upstream_port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(upstream.substr(colon + 1), &upstream_port) ||
      upstream_port <= 0 || upstream_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("upstream is not host:port: ", upstream));
  }
  std::string host = upstream.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  state->upstream.sin_family = AF_INET;
  state->upstream.sin_port = htons(upstream_port);
  if (inet_pton(AF_INET, host.c_str(), &state->upstream.sin_addr) != 1 ||
      (ntohl(state->upstream.sin_addr.s_addr) >> 24) != 127) {
    return absl::InvalidArgumentError(absl::StrCat("upstream is not on loopback: ", upstream));
  }
  if (!(options.delay_seconds >= 0) || options.queue_bytes == 0 ||
      !(options.queue_seconds >= 0 && options.queue_seconds <= 10)) {
    return absl::InvalidArgumentError(
        "delay must be >= 0, queue_bytes > 0 and queue_seconds in [0, 10]");
  }
  if (options.listen_port < 0 || options.listen_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen_port must be 0..65535, not ", options.listen_port));
  }
  state->options = options;
  for (int d = 0; d < 2; ++d) state->rate[d] = options.rate_bytes_per_sec;

  state->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (state->wake_fd < 0) return Errno("eventfd");
  state->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  auto fail = [&state](const char* what) {
    absl::Status status = Errno(what);
    if (state->listen_fd >= 0) close(state->listen_fd);
    close(state->wake_fd);
    return status;
  };
  if (state->listen_fd < 0) return fail("socket");
  // Accepted sockets inherit the buffer sizes, before the handshake.
  SetSocketOptions(state->listen_fd, options.socket_buffer_bytes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(options.listen_port);
  if (options.listen_port != 0) {
    // A fixed port can be taken again while old connections sit in TIME_WAIT.
    int one = 1;
    setsockopt(state->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  if (bind(state->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    return fail("bind");
  }
  if (listen(state->listen_fd, 128) < 0) return fail("listen");
  socklen_t len = sizeof(addr);
  if (getsockname(state->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
    return fail("getsockname");
  }
  state->port = ntohs(addr.sin_port);
  return std::unique_ptr<RateProxy>(new RateProxy(std::move(state)));
}

RateProxy::RateProxy(std::unique_ptr<State> state) : state_(std::move(state)) {
  State* s = state_.get();
  thread_ = std::thread([s] { s->Run(); });
}

RateProxy::~RateProxy() {
  state_->stop = true;
  state_->Wake();
  thread_.join();
  close(state_->listen_fd);
  close(state_->wake_fd);
}

int RateProxy::port() const { return state_->port; }

std::string RateProxy::address() const { return absl::StrCat("127.0.0.1:", state_->port); }

void RateProxy::SetRate(double bytes_per_sec) {
  state_->rate[0] = bytes_per_sec;
  state_->rate[1] = bytes_per_sec;
  state_->Wake();
}

void RateProxy::SetRate(Direction direction, double bytes_per_sec) {
  state_->rate[static_cast<int>(direction)] = bytes_per_sec;
  state_->Wake();
}

double RateProxy::rate(Direction direction) const {
  return state_->rate[static_cast<int>(direction)].load();
}

uint64_t RateProxy::bytes_forwarded(Direction direction) const {
  return state_->forwarded[static_cast<int>(direction)].load();
}

int RateProxy::open_connections() const { return state_->open.load(); }

uint64_t RateProxy::accepted_connections() const { return state_->accepted.load(); }

void RateProxy::ResetConnections() {
  std::unique_lock<std::mutex> lock(state_->reset_mu);
  const uint64_t ticket = ++state_->reset_requested;
  state_->Wake();
  state_->reset_cv.wait(lock, [&] { return state_->reset_done >= ticket; });
}

}  // namespace rog
