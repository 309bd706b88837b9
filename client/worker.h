// rog::Worker: a training process's end of ROG's protocol (docs/protocol.md),
// free of LibTorch. It holds the worker's replica of the model, one accumulator
// per row and what it knows of the other workers' versions, and keeps one
// bidirectional stream to rogd for the whole session:
//
//   auto worker = rog::Worker::Start(options, layout, initial_values);
//   for (;;) {
//     worker->BeginIteration(params);   // blocks while the policy says so
//     ... compute; update = new params - params ...
//     worker->EndIteration(update);     // ATP: rows in importance order
//   }                                   // until the window closes
//   worker->Finish();                   // drain: replica == global model
//   worker->Close();                    // goodbye: rogd drops our state
//
// Uplink (ATP): after each iteration the worker streams its rows, mandatory
// rows first (whatever the window), then the MTA share, then speculative
// rows in importance order until the transmission window rogd sent closes.
// At most ~50 ms of measured goodput travels unacknowledged, so the cutoff
// is sharp; what misses it stays in the accumulator for the next iteration.
// EndIteration does not wait for the last acknowledgements: the next
// iteration computes while the last batches cross the link. Under ROG it
// returns once the mandatory rows and the MTA share are on their way; the
// window's other rows stream on while the next iteration computes.
// Downlink rows are applied as they arrive, on the stream's thread.
//
// Faults: the worker reconnects by itself with backoff and resumes exactly
// once in both directions: acknowledged uplink batches are never resent,
// unacknowledged ones return to the accumulator and go again; a reconnect
// within rogd's lease gets again only the downlink rows it never applied,
// any other a full resync of the replica, less the rows it holds already.
// docs/protocol.md, "What a reconnect resends", is the one description of
// each case. Errors that retrying
// cannot fix (a layout the server does not hold, a message rogd refused)
// stop the worker: every call then returns that error.
//
// Team patience: when this worker's link keeps the team waiting at the
// staleness bound longer than rogd's patience (--patience, or
// --patience_iterations times the team's compute time per iteration if
// that is longer), rogd detaches it. The
// stream stays; everything unpushed drains in the background and every
// pending row arrives, while BeginIteration blocks (after up to rogd's
// --detached_local_steps iterations on its own) until rogd reattaches it
// once the link recovers. See detached() and IterationStats.
//
// Thread-safety: every method may be called from any thread. BeginIteration
// and EndIteration must alternate and be called by one thread at a time
// (the training loop). Downlink rows change the replica between calls, never
// the caller's buffers.
//
// Lifetime: the destructor stops the stream at once without a goodbye, as a
// crash would: rogd keeps the worker's state for its --lease and a worker of
// the same id may resume it. Call Close() to leave for good.
#ifndef ROG_CLIENT_WORKER_H_
#define ROG_CLIENT_WORKER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/worker_stats.h"
#include "common/clock.h"
#include "common/drain_rule.h"
#include "common/layout.h"

namespace grpc {
class ChannelCredentials;
}  // namespace grpc

namespace rog {

struct WorkerOptions {
  // rogd's address, host:port.
  std::string server = "127.0.0.1:7070";
  // Stable name of this worker (e.g. the robot's host name): 1-64 letters,
  // digits, '.', '_' or '-'. A worker that restarts under the same id rejoins.
  std::string worker_id;
  // Largest payload of one uplink row batch (see batch_seconds); small
  // batches let the window cut between them on slow links. It is also the
  // one batch the in-flight cap allows beyond its lead.
  size_t batch_bytes = 16 * 1024;
  // Sized to the link: each batch carries at most this many seconds of the
  // uplink's measured goodput (at least 2 KiB, at most batch_bytes), so a
  // slow link cuts the window and answers a stalled peer within a few
  // milliseconds. 0: every batch up to batch_bytes.
  double batch_seconds = 0.005;  // kDefaultBatchSeconds (common/goodput.h)
  // Unacknowledged uplink bytes: this many seconds of measured goodput (plus
  // one batch).
  double inflight_lead = 0.05;
  // Reconnect backoff, seconds: doubles from `backoff_initial` to
  // `backoff_max`, with jitter.
  double backoff_initial = 0.1;
  double backoff_max = 2.0;
  // Dead links: the worker pings rogd every second and drops a connection
  // whose ping goes unanswered this long, seconds (then reconnects). A ping
  // waits behind the bytes queued on the link, up to a batch or two: seconds
  // on a live link of a few KB/s, which a shorter timeout would break again
  // and again, resyncing the model each time.
  double keepalive_timeout = 30.0;
  // Memory for acknowledged updates rogd has not checkpointed yet, replayed
  // if rogd is killed and restarts from its last checkpoint. They are kept
  // decoded (4 bytes per element whatever the codec), so size it as the
  // fp32 bytes pushed per rogd --checkpoint_interval (with the sign codec,
  // 32 times the bytes on the wire); past this the oldest are dropped (with
  // a warning, counted in replay_dropped()), and a rogd crash would lose
  // them. 0 disables the replay.
  size_t replay_buffer_bytes = 64 << 20;
  // ROG: EndIteration returns once the rows it waits for are on their way
  // (see share_in_background); the window's other rows stream on while the
  // next iteration computes, until the window closes or the next push
  // starts. false: it returns once the window has closed (or every selected
  // row is on its way), as before 2026-11-25.
  bool return_after_share = true;
  // With return_after_share: EndIteration waits only for the mandatory rows
  // (those at the staleness bound); the MTA share streams on in the
  // background with the window's other rows, while the next iteration
  // computes. false: it waits for the MTA share too, as before 2026-11-26.
  bool share_in_background = true;
  // What Finish pushes of the updates the worker still holds when training
  // ends. kAverage (ROG only): 1/N of them, N the team's size (rogd's
  // --workers), and the rest leaves the replica too: every worker ends
  // holding updates computed from nearly the same model, and their sum
  // overshoots (docs/design.md, "The drain"). kSum: all of them, as
  // before 2026-12-04. Flush and Sync always push everything.
  DrainRule drain = DrainRule::kAverage;
  // Channel credentials; null means an insecure channel (loopback, tests).
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // The clock the protocol's times and timeouts are read from (windows,
  // stalls, goodput, timeouts, reconnect backoff); null: the
  // steady clock. Tests pass a FakeClock.
  std::shared_ptr<const Clock> clock;

  // --- security (docs/operations.md, "Security") ----------------------------
  // Not together with `credentials`: these build the channel's.
  // TLS: the PEM file of the CA that signed rogd's certificate (rogd
  // --tls_cert). Empty: plaintext.
  std::string tls_ca_file;
  // Mutual TLS (rogd --tls_ca): this robot's certificate and unencrypted
  // private key, PEM files. Both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Check rogd's certificate against this name instead of the host in
  // `server` (e.g. an IP address with a certificate for "rogd.team").
  std::string tls_server_name;
  // The worker token (rogd --worker_token_file): a file holding it, or the
  // token itself as the caller loaded it. At most one. Never take it from
  // the command line, where `ps` shows it.
  std::string token_file;
  std::string token;
};

class Worker {
 public:
  // Starts connecting to options.server in the background and returns at
  // once. `initial` is the model's values (the layout's row order); the
  // first worker of a fresh rogd uploads them, later workers receive the
  // server's model instead. Errors: an invalid worker id, initial values of
  // the wrong size, security files that cannot be read or do not fit.
  // rogd refusing the token (UNAUTHENTICATED, PERMISSION_DENIED) stops the
  // worker: every call returns that error. A refused TLS handshake (a
  // certificate rogd does not trust, or the reverse) looks like an
  // unreachable rogd and is retried; calls that wait say why.
  static absl::StatusOr<std::unique_ptr<Worker>> Start(WorkerOptions options, Layout layout,
                                                       std::vector<float> initial);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Blocks until the next iteration may start (connected, resynced, the team
  // complete, the staleness bound met), then copies the replica into
  // `params` (total_numel elements). `timeout_seconds` <= 0 waits forever;
  // on timeout, DeadlineExceeded says what it waits for.
  absl::Status BeginIteration(absl::Span<float> params, double timeout_seconds = 0);

  // Ends the iteration: `update` (total_numel elements) is the parameter
  // delta it computed; it is applied to the replica and streamed under ATP.
  // Returns once the rows it waits for are handed to the stream (under ROG
  // the mandatory rows, whatever the window, see return_after_share; under
  // BSP and SSP every row), ahead of the slowest worker too (no pacing hold
  // since 2026-11-27); at once if the stream breaks. It does not
  // wait for rogd's acknowledgements: at most ~50 ms of goodput is still on
  // its way, and PushStats reports the push once it is acknowledged.
  absl::StatusOr<IterationStats> EndIteration(absl::Span<const float> update);

  // Pushes every row with unpushed updates, whatever the window, and waits
  // until rogd has acknowledged them.
  absl::Status Flush(double timeout_seconds = 60);
  // Flush, then asks rogd for every row other workers pushed and waits until
  // they are applied. Once every worker has flushed, Sync leaves the replica
  // equal to rogd's global model.
  absl::Status Sync(double timeout_seconds = 60);
  // The end of training: applies the drain rule (WorkerOptions::drain) to
  // what the worker still holds, then Sync. Call it once, after the last
  // EndIteration; the worker may still Close (or train on, summing again).
  absl::Status Finish(double timeout_seconds = 60);
  // Flush, then says goodbye: rogd drops this worker at once and nobody
  // waits on it. The worker is unusable afterwards.
  absl::Status Close(double timeout_seconds = 10);

  // A copy of the replica (total_numel elements).
  std::vector<float> Replica() const;
  const Layout& layout() const;
  // Iterations completed (rogd may move it when the worker rejoins).
  uint64_t clock() const;
  bool connected() const;
  uint64_t reconnects() const;
  // Team patience: whether rogd has detached this worker now (its link kept
  // the team waiting longer than rogd's patience; BeginIteration then
  // waits until rogd reattaches it, after any --detached_local_steps), and
  // how often that happened.
  bool detached() const;
  uint64_t detaches() const;
  // Seconds BeginIteration waited in all, at the bound or for a connection
  // (stall) and while detached, including calls that timed out.
  double stall_seconds() const;
  double detached_seconds() const;
  // Acknowledged batches replayed to a rogd that restarted from a
  // checkpoint, and those dropped from the replay buffer before rogd
  // checkpointed them (see WorkerOptions::replay_buffer_bytes).
  uint64_t replayed() const;
  uint64_t replay_dropped() const;
  StallInfo last_stall() const;
  // Breaks the current stream as a network failure would and stays away for
  // `hold_seconds` before reconnecting (fault tests, operators' drills).
  void Disconnect(double hold_seconds = 0);

  // A check the blocking calls (BeginIteration, EndIteration, Flush, Sync,
  // Close) run on the calling thread while they wait, at least every 50 ms
  // of real time, with no lock held. A status other than OK ends the wait:
  // the call returns it, leaving the worker as a timeout would
  // (BeginIteration counts the wait; EndIteration's rows stream on in the
  // background; Sync stops asking; Close goes without its goodbye). For
  // bindings whose runtime handles signals between calls (Python's
  // KeyboardInterrupt). Set it before the first call; null: none.
  void SetInterruptCheck(std::function<absl::Status()> check);

  struct Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rog

#endif  // ROG_CLIENT_WORKER_H_
