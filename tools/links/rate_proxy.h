// A user-space TCP relay that behaves like a slow link, for tests and for
// replaying bandwidth traces (trace_relay.cc).
//
// RateProxy listens on 127.0.0.1 (an ephemeral port unless
// Options::listen_port says otherwise) and relays every accepted
// connection to an upstream on loopback, through one simulated link per
// direction. A link is what a WiFi hop looks like to TCP:
//
//   sender -> [proxy socket buffer] -> link queue -> serializer at `rate`
//          -> one-way `delay` -> [proxy socket buffer] -> receiver
//
// - The link queue is small (per connection and direction, the larger of
//   Options::queue_bytes and queue_seconds of the current rate: see
//   LinkQueueBytes) and the proxy's own sockets have small kernel buffers, so when
//   the link is slower than the sender, back-pressure reaches the sender's
//   TCP stack quickly instead of piling up megabytes inside the proxy. Per
//   connection and direction the proxy holds at most that queue plus the
//   bytes on the wire (rate x delay). Its sockets announce segments of at
//   most a quarter of their buffer, so that the window a small buffer
//   advertises always holds whole segments: without it a sender was seen
//   sending one window per ~0.2 s, whatever the link's rate (see
//   SetSocketOptions in rate_proxy.cc).
// - The serializer keeps exact link time (bytes / rate), so throughput does
//   not depend on when the proxy thread happens to run; it moves bytes in
//   steps of about 1 ms of link time. All connections through one proxy share
//   the link of each direction (round-robin), like flows on one radio.
// - Rate changes take effect at once: bytes still in the queue go at the new
//   rate; only bytes already "on the wire" (at most rate x delay) arrive at
//   the old one. Rate 0 stalls the link: nothing moves, connections stay open.
// - A FIN is forwarded after the data before it (half-close is relayed), so
//   closing one side closes the other as soon as the link has delivered
//   what was sent. A reset or socket error on either side closes both at
//   once. If the upstream refuses the connection, the client's is closed.
//
// Threading: one internal thread runs a poll() loop over all sockets. All
// public methods are thread-safe and never wait for the link (only
// ResetConnections waits, microseconds, for the thread).
//
// Lifetime: the destructor stops the thread and closes every socket it
// opened (listener and all open connections; their peers see EOF or a
// reset). It returns within milliseconds whatever the link is doing. Do not
// call other methods concurrently with the destructor.
#ifndef ROG_TOOLS_LINKS_RATE_PROXY_H_
#define ROG_TOOLS_LINKS_RATE_PROXY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace rog {

// The link queue of one connection and direction at `rate` bytes/s: the
// larger of `queue_bytes` and `queue_seconds` of the rate.
size_t LinkQueueBytes(double rate, size_t queue_bytes, double queue_seconds);

class RateProxy {
 public:
  // kUp: client -> upstream; kDown: upstream -> client.
  enum class Direction { kUp = 0, kDown = 1 };

  struct Options {
    // Link rate of both directions, bytes per second (250e3 = 2 Mbit/s).
    double rate_bytes_per_sec = 250e3;
    // One-way propagation delay, seconds, added after serialization.
    double delay_seconds = 0.005;
    // Bytes the proxy reads ahead of the serializer, per connection and
    // direction: the link's queue.
    size_t queue_bytes = 16 * 1024;
    // ... or this much link time at the current rate, whichever is more
    // (0 to 10; 0: queue_bytes alone). The serializer moves ~1 ms of link
    // time at once, so a queue shorter than a few steps idles a fast link
    // whenever the proxy's thread wakes late: with 16 KiB alone, one relay
    // carried 138 of 163 Mbit/s, with 10 ms 163
    // (results/2026-11-29-relay-queue-44fded7). trace_relay's --queue_time
    // defaults to 10 ms; tests keep their links as they were.
    double queue_seconds = 0;
    // SO_RCVBUF and SO_SNDBUF of the proxy's sockets (Linux doubles the
    // value it is given); 0 leaves the kernel's auto-tuning on.
    int socket_buffer_bytes = 16 * 1024;
    // Port to listen on (127.0.0.1); 0 picks a free one.
    int listen_port = 0;
  };

  // Starts listening and the relay thread. `upstream` is "host:port" with a
  // host of "localhost" or 127.0.0.0/8; anything else is InvalidArgument.
  // The upstream is connected to once per accepted connection, so it need
  // not be up yet. Options need delay_seconds >= 0, queue_bytes > 0 and
  // queue_seconds >= 0; a
  // listen_port already in use is an error.
  static absl::StatusOr<std::unique_ptr<RateProxy>> Start(const std::string& upstream,
                                                          Options options);
  ~RateProxy();

  RateProxy(const RateProxy&) = delete;
  RateProxy& operator=(const RateProxy&) = delete;

  // Port the proxy listens on (127.0.0.1), and "127.0.0.1:port".
  int port() const;
  std::string address() const;

  // Sets the rate of both directions, or of one, in bytes per second
  // (<= 0: stalled; at most 1e12). Takes effect at once.
  void SetRate(double bytes_per_sec);
  void SetRate(Direction direction, double bytes_per_sec);
  double rate(Direction direction) const;

  // Bytes the proxy has written to the receiving side of `direction`, over
  // all connections since Start.
  uint64_t bytes_forwarded(Direction direction) const;
  // Connections accepted and not yet closed; all accepted since Start.
  int open_connections() const;
  uint64_t accepted_connections() const;

  // Aborts every open connection: both sides get a reset at once, as when a
  // middlebox drops the flow (a link that dies silently is SetRate(0)).
  // Returns once done; new connections are still accepted.
  void ResetConnections();

 private:
  struct State;

  explicit RateProxy(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace rog

#endif  // ROG_TOOLS_LINKS_RATE_PROXY_H_
