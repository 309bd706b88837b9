#include "client/worker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/credentials.h"
#include "common/batch_plan.h"
#include "common/codec.h"
#include "common/goodput.h"
#include "common/protocol_rules.h"
#include "common/row_digest.h"
#include "common/row_index.h"
#include "common/selection.h"
#include "common/staleness.h"
#include "common/worker_id.h"
#include "common/worker_state.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"
#include "security/credential_files.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Codes that retrying cannot fix.
bool Permanent(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return true;
    default:
      return false;
  }
}

// An uplink batch sent and not yet acknowledged: enough to undo it.
struct SentBatch {
  uint64_t seq = 0;
  pb::BatchKind kind = pb::BATCH_KIND_UPDATE;
  std::vector<RowId> rows;
  std::vector<uint32_t> counts;
  std::vector<float> decoded;  // UPDATE: what the server folds, concatenated
  uint64_t bytes = 0;
  uint64_t phase = 0;    // the transmission phase that sent it
  bool in_push = false;  // formed inside EndIteration: part of that phase's push
  double sent_at = 0;
};

// A push whose statistics are not complete yet: its EndIteration has not
// returned, or some of its batches are unacknowledged.
struct OpenPush {
  uint64_t phase = 0;
  PushStats stats;
  double t0 = 0;  // EndIteration's call
  double deadline = 0;
  double last_ack = 0;
  uint64_t unacked = 0;  // its batches in flight
  bool ended = false;    // its EndIteration returned
};

using Stream = grpc::ClientReaderWriter<pb::WorkerMessage, pb::ServerMessage>;

}  // namespace

struct Worker::Impl {
  WorkerOptions opt;
  ClientCredentials security;  // TLS settings and the token, loaded
  Layout layout;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::Trainer::Stub> stub;

  mutable std::mutex mu;
  std::condition_variable cv;
  WorkerState state;

  // --- connection (guarded by mu) ---------------------------------------------
  bool closing = false;
  absl::Status fatal;  // set once; every call returns it
  std::string last_error;
  grpc::ClientContext* context = nullptr;  // the live stream's, to cancel it
  bool active = false;                     // welcomed and not broken
  bool writing = false;                    // the sender is inside Write
  uint64_t session = 0;                    // counts streams
  double hold_until = 0;                   // Disconnect(hold)
  uint64_t reconnects = 0;
  uint64_t sessions_at_last_warning = 0;
  double last_warning = 0;
  uint64_t token = 0;

  // --- protocol (guarded by mu) -----------------------------------------------
  SyncPolicy policy = SyncPolicy::kRog;
  uint32_t bound = 0;
  double mta = 1;
  Codec codec = Codec::kFp32;
  uint64_t model_wire_bytes = 0;
  bool team_ready = false;
  // rogd's last Release: the worker may start the iteration after this clock
  // (a Release may arrive while the next iteration computes: it must not
  // let the one after start).
  bool released = false;
  uint64_t released_clock = 0;
  bool stall_reported = false;
  StallInfo stall;
  pb::Window window;
  // Team patience (pb::Detached): outside the bound; pushes everything it
  // holds in the background; trains at most `local_steps_left` more
  // iterations until rogd reattaches it.
  bool detached = false;
  uint32_t local_steps_left = 0;
  std::string detach_reason;
  uint64_t detaches = 0;
  // Downlink.
  uint64_t next_down_seq = 1;
  uint64_t downlink_stream = 0;  // Welcome.stream of the stream next_down_seq counts on
  uint64_t down_ack_seq = 0;
  uint64_t down_ack_bytes = 0;
  bool ack_due = false;
  size_t resync_rows = 0;  // VALUES rows still expected
  bool flush_waiting = false;
  bool flushed = false;
  // Uplink.
  uint64_t last_acked_up = 0;
  uint64_t next_up_seq = 1;
  std::deque<SentBatch> inflight;
  // Acknowledged update batches not yet in a checkpoint of rogd's
  // (Ack.durable_seq): if rogd dies with -9 and restarts from its last
  // checkpoint, its Welcome says it applied less, and these are replayed.
  std::deque<SentBatch> not_durable;
  size_t not_durable_bytes = 0;
  uint64_t replayed = 0, replay_dropped = 0;
  double replay_warned_at = -1e9;
  // Batches acknowledged while a resync is under way: rogd sends acks ahead
  // of queued rows, so values formed before a batch was applied may arrive
  // after its ack, and the batch must still be added back to them.
  std::deque<SentBatch> acked_in_resync;
  uint64_t inflight_bytes = 0;
  GoodputEstimator goodput;
  double rtt_min[2] = {kInf, kInf};
  double rtt_bucket_start = 0;
  RowId values_next = 0;  // initial model upload; == rows when none/done
  std::deque<RowId> forced;
  std::vector<bool> is_forced;
  Plan plan;
  bool transmitting = false;
  bool speculate = true;
  double deadline = kInf;
  uint64_t phase = 0;
  std::vector<uint64_t> sent_phase;  // per row: last phase it was sent in
  std::deque<OpenPush> open_pushes;
  std::vector<std::pair<double, PushStats>> pushes_done;  // (its t0, stats)
  std::deque<pb::Progress> progress_out;
  bool goodbye_due = false;
  bool said_goodbye = false;
  std::string goodbye_reason;

  // --- statistics (guarded by mu) ----------------------------------------------
  IterationStats current;
  double begin_returned = 0;
  bool in_iteration = false;
  double total_compute = 0, total_transmit = 0, total_stall = 0, total_detached = 0;
  // Waits of BeginIteration calls that timed out, for the next stats.
  double carry_stall = 0, carry_detached = 0;
  uint64_t total_stalls = 0;
  double last_overshoot = 0;

  std::thread session_thread;
  std::thread sender_thread;

  // Every reading of time and every timed wait of the protocol goes through
  // the clock (WorkerOptions::clock), so that tests can move it. gRPC's own
  // deadlines (probes, connecting) and the sender's 20 ms poll stay on real
  // time: they are the transport's.
  std::shared_ptr<const Clock> clock;
  double Now() const { return clock->Now(); }
  // Waits on cv until notified or the clock reaches `deadline`; callers loop.
  void WaitUntil(std::unique_lock<std::mutex>& lock, double deadline) {
    clock->WaitUntil(cv, lock, deadline);
  }

  Impl(WorkerOptions o, Layout l, std::vector<float> initial)
      : opt(std::move(o)),
        layout(std::move(l)),
        state(layout, std::move(initial)),
        clock(opt.clock ? opt.clock : DefaultClock()) {
    is_forced.assign(layout.num_rows(), false);
    sent_phase.assign(layout.num_rows(), 0);
    values_next = static_cast<RowId>(layout.num_rows());
  }

  // --- helpers -----------------------------------------------------------------
  uint64_t RowWireBytes(RowId row) const { return rog::RowWireBytes(codec, layout.row(row).numel); }

  // Unacknowledged bytes allowed: `inflight_lead` seconds of goodput, or the
  // path's round trip if longer (acks share the link with downlink rows and
  // come back late; a cap below rate × round trip would throttle the link
  // and, measured through itself, never recover), plus one batch. The
  // round trip is the minimum seen, so our own queueing does not inflate it.
  uint64_t InFlightCap() const {
    if (!goodput.has_estimate()) return kInitialInFlight;
    return InFlightLimit(goodput.rate(), std::max(opt.inflight_lead, MinRtt()), opt.batch_bytes);
  }

  double MinRtt() const {
    return std::min(rtt_min[0], rtt_min[1]) < kInf ? std::min(rtt_min[0], rtt_min[1]) : 0;
  }

  void OnRttSample(double now, double rtt) {
    // Two 5 s buckets: the minimum forgets a path that got slower.
    if (now - rtt_bucket_start > 5) {
      rtt_min[0] = rtt_min[1];
      rtt_min[1] = kInf;
      rtt_bucket_start = now;
    }
    rtt_min[1] = std::min(rtt_min[1], rtt);
  }

  // The window is open for rows that are not mandatory while what would be
  // in flight with one more batch can still arrive before it closes (the
  // deadline taper: without it the last batches overshoot by the whole
  // in-flight allowance).
  bool WindowOpen(double now) const {
    if (now >= deadline) return false;
    if (deadline == kInf || !goodput.has_estimate() || goodput.rate() <= 0) return true;
    return now + static_cast<double>(inflight_bytes + opt.batch_bytes) / goodput.rate() <= deadline;
  }

  // Whether the row has something a flush or a stalled peer needs: unpushed
  // iterations, or (lossless codecs) updates kept across a rejoin. A lossy
  // codec's residual rides along with the row's next push instead.
  bool Pushable(RowId row) const {
    return state.unpushed(row) > 0 || (IsLossless(codec) && state.HasResidual(row));
  }

  bool PlanFinished(double now) const {
    return plan.done() || (now >= deadline && plan.next >= plan.mandatory);
  }

  void SetFatal(absl::Status s) {
    if (fatal.ok()) {
      spdlog::error("worker {}: {}", opt.worker_id, std::string(s.message()));
      fatal = std::move(s);
    }
    cv.notify_all();
  }

  pb::Progress MakeProgress(bool stalled, bool flush) const {
    pb::Progress p;
    p.set_iteration(state.clock());
    p.set_stalled(stalled);
    p.set_flush(flush);
    p.set_compute_seconds(total_compute);
    p.set_transmit_seconds(total_transmit);
    p.set_stall_seconds(total_stall);
    p.set_detached_seconds(total_detached);
    p.set_stalls(total_stalls);
    p.set_uplink_goodput(goodput.rate());
    p.set_window_overshoot(last_overshoot);
    return p;
  }

  std::string WaitReason() const {
    if (!active) {
      return absl::StrCat("not connected to rogd at ", opt.server,
                          last_error.empty() ? "" : absl::StrCat(" (", last_error, ")"));
    }
    if (values_next < layout.num_rows()) return "uploading the initial model";
    if (resync_rows > 0) {
      return absl::StrCat("receiving the model from rogd (", layout.num_rows() - resync_rows,
                          " of ", layout.num_rows(), " rows)");
    }
    if (detached) {
      return absl::StrCat("detached from the team by rogd (", detach_reason,
                          "); training pauses until rogd reattaches this worker");
    }
    if (!stall.reason.empty()) return stall.reason;
    if (!team_ready) return "waiting for the team to join";
    return absl::StrCat("waiting at the staleness bound before iteration ", state.clock() + 1);
  }

  bool MayBegin() const {
    if (!active || values_next < layout.num_rows() || resync_rows > 0 || !team_ready) return false;
    if (detached) return local_steps_left > 0;
    return (released && released_clock == state.clock()) ||
           state.HasAllUpTo(NeededVersion(state.clock(), bound));
  }

  // --- incoming messages (mu held) ----------------------------------------------
  absl::Status OnWelcome(const pb::Welcome& w) {
    // The rows rogd leaves out of the resync: checked before anything
    // changes.
    absl::StatusOr<std::vector<RowId>> held =
        DecodeRowIds(absl::MakeConstSpan(w.in_sync_row_delta().data(), w.in_sync_row_delta_size()),
                     layout.num_rows());
    if (!held.ok() || held->size() != static_cast<size_t>(w.in_sync_version_lag_size())) {
      return absl::InternalError(absl::StrCat(
          "the welcome's in-sync rows do not decode (",
          held.ok() ? "their version lags differ in number" : held.status().message(), ")"));
    }
    // Resumed: rogd kept this worker's state (the token it sent back is the
    // one we presented). Otherwise rogd set its versions to the welcome's
    // clock (a first connect, a rejoin, a first worker bringing the model).
    const bool resumed = token != 0 && w.resume_token() == token;
    token = w.resume_token();
    policy = static_cast<SyncPolicy>(w.sync());
    bound = EffectiveBound(policy, w.staleness());
    mta = w.mta();
    codec = static_cast<Codec>(w.codec());
    model_wire_bytes = 0;
    for (RowId row = 0; row < layout.num_rows(); ++row) model_wire_bytes += RowWireBytes(row);
    // A rogd restarted from a checkpoint after a crash applied less than it
    // acknowledged: what it lost goes again, like what is in flight.
    const uint64_t applied = w.last_applied_uplink_seq();
    if (!not_durable.empty() && not_durable.back().seq > applied) {
      uint64_t n = 0;
      while (!not_durable.empty() && not_durable.back().seq > applied) {
        not_durable_bytes -= ReplayBytes(not_durable.back());
        inflight.push_front(std::move(not_durable.back()));
        not_durable.pop_back();
        ++n;
      }
      replayed += n;
      spdlog::warn(
          "worker {}: rogd lost {} acknowledged batches (it restarted from a checkpoint at uplink "
          "seq {}); pushing them again",
          opt.worker_id, n, applied);
    }
    // Uplink: what the server applied is done; the rest returns to the
    // accumulators, newest first, and goes again with new seqs.
    while (!inflight.empty() && inflight.front().seq <= w.last_applied_uplink_seq()) {
      inflight.pop_front();
    }
    for (auto it = inflight.rbegin(); it != inflight.rend(); ++it) {
      if (it->kind != pb::BATCH_KIND_UPDATE) continue;
      size_t at = it->decoded.size();
      for (size_t k = it->rows.size(); k-- > 0;) {
        const uint32_t numel = layout.row(it->rows[k]).numel;
        at -= numel;
        state.ReturnUplink(it->rows[k], absl::MakeConstSpan(it->decoded.data() + at, numel),
                           it->counts[k]);
      }
    }
    inflight.clear();
    for (OpenPush& p : open_pushes) {
      if (p.unacked > 0) p.stats.disconnected = true;
      p.unacked = 0;
    }
    CompletePushes();
    acked_in_resync.clear();
    inflight_bytes = 0;
    goodput = GoodputEstimator();
    last_acked_up = w.last_applied_uplink_seq();
    next_up_seq = w.last_applied_uplink_seq() + 1;
    forced.clear();
    std::fill(is_forced.begin(), is_forced.end(), false);
    // Unless resumed, rogd credits every iteration up to the welcome's
    // clock: what is unpushed goes with count 0 (Rebase), even at an equal
    // clock, or its counts would claim iterations rogd already holds.
    if (!resumed || w.iteration() != state.clock()) {
      if (w.iteration() != state.clock()) {
        spdlog::info("worker {}: rogd sets the clock to {} (was {})", opt.worker_id, w.iteration(),
                     state.clock());
      }
      state.Rebase(w.iteration());
    }
    // Progress reports queued for the old stream: the hello carried the
    // clock, and a stale report could be ahead of a clock rogd moved back.
    progress_out.clear();
    values_next = w.send_initial_values() ? 0 : static_cast<RowId>(layout.num_rows());
    resync_rows = 0;
    if (w.full_resync()) {
      // What rogd did not send, the replica holds already (row digests).
      for (size_t k = 0; k < held->size(); ++k) {
        const int64_t v = static_cast<int64_t>(w.iteration()) - w.in_sync_version_lag(k);
        state.SetKnownVersion((*held)[k], v < 0 ? 0 : static_cast<uint64_t>(v));
      }
      resync_rows = layout.num_rows() - held->size();
    }
    next_down_seq = 1;
    downlink_stream = w.stream();
    down_ack_seq = 0;
    down_ack_bytes = 0;
    ack_due = false;
    team_ready = w.team_ready();
    released = false;
    stall_reported = false;
    stall = StallInfo();
    window = w.window();
    flushed = false;
    // rogd repeats a detachment that still holds right after the welcome.
    detached = false;
    active = true;
    return absl::OkStatus();
  }

  // Hello.row_digests: digests of the replica's rows, withholding every
  // row that holds something of this worker's own rogd might lack (an
  // accumulated update, a batch unacknowledged or not yet durable); rogd
  // leaves the rows it holds equally out of the resync.
  std::string HelloRowDigests() const {
    std::vector<bool> withheld(layout.num_rows(), false);
    for (const std::deque<SentBatch>* list : {&acked_in_resync, &inflight, &not_durable}) {
      for (const SentBatch& b : *list) {
        for (RowId row : b.rows) withheld[row] = true;
      }
    }
    for (RowId row = 0; row < layout.num_rows(); ++row) {
      withheld[row] = withheld[row] || state.HasResidual(row);
    }
    return RowDigests(layout, state.replica(), withheld);
  }

  absl::Status OnBatch(const pb::RowBatch& b) {
    if (b.seq() != next_down_seq) {
      return absl::InternalError(
          absl::StrCat("downlink seq ", b.seq(), " where ", next_down_seq, " was expected"));
    }
    absl::StatusOr<std::vector<RowId>> rows = DecodeRowIds(
        absl::MakeConstSpan(b.row_delta().data(), b.row_delta_size()), layout.num_rows());
    if (!rows.ok()) return rows.status();
    // `count` is optional downlink (rogd >= 0.1 leaves it empty).
    if ((b.count_size() != 0 && b.count_size() != static_cast<int>(rows->size())) ||
        b.version_lag_size() != static_cast<int>(rows->size())) {
      return absl::InternalError("downlink batch index sizes differ");
    }
    const Codec c = static_cast<Codec>(b.codec());
    size_t offset = 0;
    std::vector<float> decoded;
    for (size_t k = 0; k < rows->size(); ++k) {
      const RowId row = (*rows)[k];
      const uint32_t numel = layout.row(row).numel;
      const size_t bytes = EncodedSize(c, numel);
      if (offset + bytes > b.payload().size()) return absl::InternalError("short downlink payload");
      decoded.resize(numel);
      absl::Status s =
          Decode(c, absl::string_view(b.payload()).substr(offset, bytes), absl::MakeSpan(decoded));
      if (!s.ok()) return s;
      offset += bytes;
      const int64_t v = static_cast<int64_t>(b.iteration()) - b.version_lag(k);
      const uint64_t version = v < 0 ? 0 : static_cast<uint64_t>(v);
      if (b.kind() == pb::BATCH_KIND_VALUES) {
        state.ApplyValues(row, decoded, version);
        AddBackInFlight(row, b.applied_uplink_seq(), version);
        if (resync_rows > 0 && --resync_rows == 0) acked_in_resync.clear();
      } else {
        state.ApplyDownlink(row, decoded, version);
      }
    }
    ++next_down_seq;
    current.rows_down += rows->size();
    const uint64_t bytes = b.ByteSizeLong();
    // A probe's padding (rogd measuring a detached worker's link) is not
    // row traffic; it is acknowledged all the same.
    current.bytes_down += bytes - std::min<uint64_t>(bytes, b.padding().size());
    current.payload_down += b.payload().size();
    down_ack_seq = b.seq();
    down_ack_bytes += bytes;
    ack_due = true;
    return absl::OkStatus();
  }

  // The values of a resync lack this worker's updates sent after
  // `applied_seq`, still in flight: add them back to the replica.
  void AddBackInFlight(RowId row, uint64_t applied_seq, uint64_t version) {
    const uint32_t numel = layout.row(row).numel;
    for (const std::deque<SentBatch>* list : {&acked_in_resync, &inflight}) {
      for (const SentBatch& b : *list) {
        if (b.seq <= applied_seq || b.kind != pb::BATCH_KIND_UPDATE) continue;
        size_t at = 0;
        for (RowId r : b.rows) {
          if (r == row) {
            state.ApplyDownlink(row, absl::MakeConstSpan(b.decoded.data() + at, numel), version);
          }
          at += layout.row(r).numel;
        }
      }
    }
  }

  static size_t ReplayBytes(const SentBatch& b) {
    return b.decoded.size() * sizeof(float) + b.rows.size() * (sizeof(RowId) + sizeof(uint32_t));
  }

  void KeepForReplay(SentBatch b, double now) {
    if (opt.replay_buffer_bytes == 0) return;
    not_durable_bytes += ReplayBytes(b);
    not_durable.push_back(std::move(b));
    uint64_t dropped = 0;
    while (not_durable_bytes > opt.replay_buffer_bytes && !not_durable.empty()) {
      not_durable_bytes -= ReplayBytes(not_durable.front());
      not_durable.pop_front();
      ++dropped;
    }
    replay_dropped += dropped;
    if (dropped > 0 && now - replay_warned_at > 60) {
      replay_warned_at = now;
      spdlog::warn(
          "worker {}: rogd has not checkpointed the last {} MB this worker pushed; the replay "
          "buffer (replay_buffer_bytes) is full, so a rogd crash now would lose the oldest of "
          "them: checkpoint more often (rogd --checkpoint_interval) or raise the buffer",
          opt.worker_id, opt.replay_buffer_bytes >> 20);
    }
  }

  void OnAck(const pb::Ack& a) {
    const double now = Now();
    while (!inflight.empty() && inflight.front().seq <= a.seq()) {
      if (OpenPush* p = PushOf(inflight.front())) {
        p->last_ack = now;
        p->stats.acked_bytes += inflight.front().bytes;
        --p->unacked;
      }
      if (inflight.front().seq == a.seq()) OnRttSample(now, now - inflight.front().sent_at);
      inflight_bytes -= inflight.front().bytes;
      if (inflight.front().kind == pb::BATCH_KIND_UPDATE &&
          inflight.front().seq > a.durable_seq()) {
        // Moved, not copied, unless a resync still needs the batch too.
        if (resync_rows > 0) {
          KeepForReplay(inflight.front(), now);
        } else {
          KeepForReplay(std::move(inflight.front()), now);
        }
      }
      if (resync_rows > 0) acked_in_resync.push_back(std::move(inflight.front()));
      inflight.pop_front();
    }
    while (!not_durable.empty() && not_durable.front().seq <= a.durable_seq()) {
      not_durable_bytes -= ReplayBytes(not_durable.front());
      not_durable.pop_front();
    }
    last_acked_up = std::max(last_acked_up, a.seq());
    goodput.OnAck(now, a.bytes());
    CompletePushes();
  }

  OpenPush* PushOf(const SentBatch& b) {
    if (!b.in_push) return nullptr;
    for (OpenPush& p : open_pushes) {
      if (p.phase == b.phase) return &p;
    }
    return nullptr;
  }

  // Moves pushes whose EndIteration returned and whose batches are all
  // acknowledged (or lost with a stream) to pushes_done, in order.
  void CompletePushes() {
    while (!open_pushes.empty() && open_pushes.front().ended && open_pushes.front().unacked == 0) {
      OpenPush& p = open_pushes.front();
      const double rtt = MinRtt();
      if (p.last_ack > 0) {
        p.stats.ack_seconds = std::max(0.0, p.last_ack - p.t0);
        p.stats.busy_seconds = std::max(0.0, p.last_ack - p.t0 - rtt);
        if (p.deadline < kInf) {
          p.stats.overshoot_seconds = std::max(0.0, p.last_ack - rtt / 2 - p.deadline);
        }
      }
      if (p.deadline < kInf) last_overshoot = p.stats.overshoot_seconds;
      pushes_done.emplace_back(p.t0, p.stats);
      open_pushes.pop_front();
    }
  }

  void OnDirective(const pb::Directive& d) {
    switch (d.kind_case()) {
      case pb::Directive::kPushNow:
        for (uint32_t row : d.push_now().rows()) {
          if (row >= layout.num_rows() || is_forced[row] || state.unpushed(row) == 0) continue;
          is_forced[row] = true;
          forced.push_back(row);
        }
        break;
      case pb::Directive::kWindow:
        window = d.window();
        break;
      case pb::Directive::kStall: {
        const pb::Stall& s = d.stall();
        stall.iteration = s.iteration();
        stall.rows.assign(s.rows().begin(), s.rows().end());
        stall.missing_rows = s.missing_rows();
        stall.waiting_for.assign(s.waiting_for().begin(), s.waiting_for().end());
        stall.reason =
            s.missing_rows() > 0
                ? absl::StrCat("at the staleness bound before iteration ", s.iteration() + 1, ": ",
                               s.missing_rows(), " rows lack updates of ",
                               absl::StrJoin(s.waiting_for(), ", "))
                : absl::StrCat("waiting before iteration ", s.iteration() + 1, ": ",
                               absl::StrJoin(s.waiting_for(), ", "));
        spdlog::debug("worker {}: {}", opt.worker_id, stall.reason);
        break;
      }
      case pb::Directive::kRelease:
        team_ready = true;
        if (d.release().flushed()) {
          flushed = true;
        } else {
          released = true;
          released_clock = d.release().iteration();
        }
        break;
      case pb::Directive::kDetached:
        if (!detached) ++detaches;
        detached = true;
        local_steps_left = d.detached().local_steps();
        detach_reason = d.detached().reason();
        spdlog::warn(
            "worker {}: detached from the team by rogd: {}; {}", opt.worker_id, detach_reason,
            local_steps_left > 0
                ? absl::StrCat("training on its own for up to ", local_steps_left, " iterations")
                : std::string("training pauses until the link recovers"));
        break;
      case pb::Directive::kReattached:
        if (!detached) break;
        detached = false;
        released = false;
        stall_reported = false;
        stall = StallInfo();
        if (d.reattached().iteration() > state.clock()) state.Rebase(d.reattached().iteration());
        spdlog::info("worker {}: reattached to the team at iteration {}: {}", opt.worker_id,
                     state.clock(), d.reattached().reason());
        break;
      case pb::Directive::kKnownVersions:
        // Mid-resync the VALUES rows carry their own; otherwise exact.
        if (resync_rows > 0 ||
            d.known_versions().version_size() != static_cast<int>(layout.num_rows())) {
          break;
        }
        for (RowId row = 0; row < layout.num_rows(); ++row) {
          state.SetKnownVersion(row, d.known_versions().version(row));
        }
        break;
      case pb::Directive::kEvicted:
        if (said_goodbye) break;  // our own Close
        spdlog::warn("worker {}: evicted by rogd: {}", opt.worker_id, d.evicted().reason());
        break;
      default:
        break;
    }
  }

  // --- outgoing (mu held) ---------------------------------------------------------
  // Forms the next uplink batch into *m; false when nothing may go now.
  bool FormUplink(pb::WorkerMessage* m) {
    if (inflight_bytes >= InFlightCap()) return false;
    pb::RowBatch* b = m->mutable_batch();
    SentBatch sent;
    std::string* payload = b->mutable_payload();
    if (values_next < layout.num_rows()) {
      // The initial model: the replica without what is still unpushed.
      BatchFill fill(layout, Codec::kFp32, opt.batch_bytes);
      while (values_next < layout.num_rows() && fill.Fits(values_next)) fill.Add(values_next++);
      sent.rows = fill.Take();
      std::vector<float> row_values;
      for (RowId row : sent.rows) {
        const absl::Span<const float> rep = state.replica_row(row);
        const absl::Span<const float> acc = state.accumulator_row(row);
        row_values.resize(rep.size());
        for (size_t j = 0; j < rep.size(); ++j) row_values[j] = rep[j] - acc[j];
        Encode(Codec::kFp32, row_values, payload);
        sent.counts.push_back(0);
      }
      sent.kind = pb::BATCH_KIND_VALUES;
      b->set_codec(pb::CODEC_FP32);
    } else {
      BatchFill fill(layout, codec, opt.batch_bytes);
      // Rows a stalled worker waits for go first, whatever the window.
      while (!forced.empty() && fill.Fits(forced.front())) {
        const RowId row = forced.front();
        forced.pop_front();
        is_forced[row] = false;
        if (Pushable(row)) fill.Add(row);
      }
      if (detached) {
        // Detached: everything it holds, as fast as the link allows.
        for (RowId row = 0; row < layout.num_rows(); ++row) {
          if (fill.Has(row) || !Pushable(row)) continue;
          if (!fill.Fits(row)) break;
          fill.Add(row);
        }
      }
      if (transmitting) {
        FillFromPlan(&plan, WindowOpen(Now()), speculate, &fill, [&](RowId row) {
          return sent_phase[row] == phase || (state.unpushed(row) == 0 && !state.HasResidual(row));
        });
      }
      if (fill.empty()) return false;
      sent.rows = fill.Take();
      sent.kind = pb::BATCH_KIND_UPDATE;
      b->set_codec(static_cast<pb::Codec>(codec));
      for (RowId row : sent.rows) {
        const uint32_t numel = layout.row(row).numel;
        const size_t at = sent.decoded.size();
        sent.decoded.resize(at + numel);
        sent.counts.push_back(
            state.TakeUplink(row, codec, payload, absl::MakeSpan(sent.decoded.data() + at, numel)));
        sent_phase[row] = phase;
      }
    }
    if (sent.rows.empty()) return false;
    b->set_kind(sent.kind);
    sent.seq = next_up_seq++;
    b->set_seq(sent.seq);
    b->set_iteration(state.clock());
    for (uint32_t d : EncodeRowIds(sent.rows)) b->add_row_delta(d);
    for (size_t k = 0; k < sent.rows.size(); ++k) {
      b->add_count(sent.counts[k]);
      const int64_t lag = sent.kind == pb::BATCH_KIND_VALUES
                              ? 0
                              : static_cast<int64_t>(state.clock()) -
                                    static_cast<int64_t>(state.pushed_version(sent.rows[k]));
      b->add_version_lag(lag);
    }
    sent.bytes = b->ByteSizeLong();
    sent.phase = phase;
    sent.sent_at = Now();
    if (transmitting) {
      current.rows_up += sent.rows.size();
      current.bytes_up += sent.bytes;
      current.payload_up += b->payload().size();
      sent.in_push = true;
      if (OpenPush* p = PushOf(sent)) {
        ++p->unacked;
        if (sent.sent_at >= p->deadline) p->stats.late_bytes += sent.bytes;
      }
    }
    inflight_bytes += sent.bytes;
    goodput.OnSend(Now(), sent.bytes);
    inflight.push_back(std::move(sent));
    return true;
  }

  // Collects what the sender writes next; empty when there is nothing.
  std::vector<pb::WorkerMessage> TakeOutgoing() {
    std::vector<pb::WorkerMessage> out;
    if (ack_due) {
      pb::WorkerMessage m;
      m.mutable_ack()->set_seq(down_ack_seq);
      m.mutable_ack()->set_bytes(down_ack_bytes);
      down_ack_bytes = 0;
      ack_due = false;
      out.push_back(std::move(m));
    }
    while (!progress_out.empty()) {
      pb::WorkerMessage m;
      *m.mutable_progress() = std::move(progress_out.front());
      progress_out.pop_front();
      out.push_back(std::move(m));
    }
    pb::WorkerMessage batch;
    if (FormUplink(&batch)) out.push_back(std::move(batch));
    if (out.empty() && goodbye_due && inflight.empty()) {
      pb::WorkerMessage m;
      m.mutable_goodbye()->set_reason(goodbye_reason);
      goodbye_due = false;
      said_goodbye = true;
      out.push_back(std::move(m));
    }
    return out;
  }

  // --- threads ----------------------------------------------------------------------
  void SenderLoop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      std::vector<pb::WorkerMessage> out;
      // Wakes on every state change and at least every 20 ms, so that a
      // window's end is noticed without a message.
      cv.wait_for(lock, std::chrono::milliseconds(20),
                  [&] { return closing || !fatal.ok() || active; });
      if (!fatal.ok() || (closing && !active)) return;
      if (!active || context == nullptr) continue;
      out = TakeOutgoing();
      if (out.empty()) {
        cv.wait_for(lock, std::chrono::milliseconds(20));
        continue;
      }
      Stream* stream = current_stream;
      const uint64_t s = session;
      writing = true;
      lock.unlock();
      bool ok = true;
      for (const pb::WorkerMessage& m : out) {
        if (!stream->Write(m)) {
          ok = false;
          break;
        }
      }
      lock.lock();
      writing = false;
      cv.notify_all();
      if (!ok && s == session && context != nullptr) {
        active = false;
        context->TryCancel();
      }
    }
  }

  Stream* current_stream = nullptr;

  void SessionLoop() {
    double backoff = opt.backoff_initial;
    std::mt19937_64 rng{std::random_device{}()};
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (closing || !fatal.ok()) return;
        if (hold_until > Now()) {
          while (!closing && Now() < hold_until) WaitUntil(lock, hold_until);
          continue;
        }
      }
      const double started = Now();
      grpc::Status status = RunStream();
      std::unique_lock<std::mutex> lock(mu);
      if (closing || said_goodbye) return;
      if (!status.ok() && Permanent(status.error_code())) {
        SetFatal(absl::Status(
            static_cast<absl::StatusCode>(status.error_code()),
            absl::StrCat("rogd refused worker '", opt.worker_id, "': ", status.error_message())));
        return;
      }
      last_error = status.ok() ? "stream ended" : status.error_message();
      // Say so when rogd stays out of reach: at the first failure, then every
      // 10 s (a worker waiting silently looks hung).
      const double now = Now();
      if (session == sessions_at_last_warning && now - last_warning >= 10) {
        spdlog::warn("worker {}: cannot reach rogd at {}: {}; retrying", opt.worker_id, opt.server,
                     last_error);
        last_warning = now;
      } else if (session != sessions_at_last_warning) {
        sessions_at_last_warning = session;
        last_warning = 0;
      }
      if (Now() - started > 10) backoff = opt.backoff_initial;
      std::uniform_real_distribution<double> jitter(0.5, 1.0);
      const double wait = backoff * jitter(rng);
      backoff = std::min(opt.backoff_max, backoff * 2);
      spdlog::debug("worker {}: reconnecting in {:.2f} s ({})", opt.worker_id, wait, last_error);
      const double retry_at = Now() + wait;
      while (!closing && Now() < retry_at) WaitUntil(lock, retry_at);
    }
  }

  // Why the channel does not connect. WaitForConnected does not say, and a
  // refused TLS handshake looks like an unreachable rogd to it, so a call
  // that may not wait for the connection asks the channel for its last
  // error. (Should the channel connect meanwhile, the call reaches rogd
  // with the token and no hello, and ends at its deadline: no state.)
  grpc::Status ConnectError() {
    grpc::ClientContext probe;
    security.Authorize(&probe);
    probe.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    std::unique_ptr<Stream> stream = stub->Session(&probe);
    const grpc::Status s = stream->Finish();
    std::string why = s.error_message();
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || why.empty()) {
      why = absl::StrCat("no connection within ", std::max(0.1, opt.backoff_max),
                         " s (is rogd running there?)");
    } else if (absl::StrContains(why, "Socket closed")) {
      absl::StrAppend(
          &why, security.tls ? "; rogd closed the connection during TLS: if it requires client "
                               "certificates (rogd --tls_ca), it refused this worker's "
                               "(tls_cert_file: signed by another CA, expired, or none given); "
                               "rogd's log says which"
                             : "; rogd closed the connection: if it serves TLS (rogd --tls_cert), "
                               "set tls_ca_file to the CA that signed its certificate");
    } else if (LooksLikeTlsFailure(why)) {
      absl::StrAppend(&why,
                      "; this worker does not trust rogd's certificate: it must be signed by "
                      "the CA in tls_ca_file, be valid now and name the host of the server "
                      "address (or tls_server_name)");
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, why);
  }

  // One stream from hello to its end.
  grpc::Status RunStream() {
    // Fail fast while rogd is away; the session loop backs off and retries.
    if (!channel->WaitForConnected(
            std::chrono::system_clock::now() +
            std::chrono::milliseconds(static_cast<int>(std::max(0.1, opt.backoff_max) * 1000)))) {
      return ConnectError();
    }
    grpc::ClientContext ctx;
    security.Authorize(&ctx);
    pb::WorkerMessage hello;
    {
      std::lock_guard<std::mutex> lock(mu);
      pb::Hello* h = hello.mutable_hello();
      h->set_worker_id(opt.worker_id);
      h->set_layout_fingerprint(layout.fingerprint());
      *h->mutable_layout() = LayoutToProto(layout);
      h->set_resume_token(token);
      h->set_last_acked_uplink_seq(last_acked_up);
      h->set_last_applied_downlink_seq(next_down_seq - 1);
      h->set_downlink_stream(downlink_stream);
      h->set_iteration(state.clock());
      h->set_sdk_version(kRogVersion);
      h->set_row_digests(HelloRowDigests());
      context = &ctx;
    }
    std::unique_ptr<Stream> stream = stub->Session(&ctx);
    // rogd's own account of why it ended the stream (pb::StreamEnd): the
    // call's status may say only CANCELLED.
    std::unique_ptr<grpc::Status> ended_by_rogd;
    pb::ServerMessage m;
    bool ok = stream->Write(hello) && stream->Read(&m);
    if (ok && m.kind_case() != pb::ServerMessage::kWelcome) ok = false;
    if (ok) {
      std::lock_guard<std::mutex> lock(mu);
      ++session;
      if (session > 1) ++reconnects;
      current_stream = stream.get();
      const absl::Status welcomed = OnWelcome(m.welcome());
      if (!welcomed.ok()) {
        spdlog::error("worker {}: bad welcome ({}); reconnecting", opt.worker_id,
                      std::string(welcomed.message()));
        ctx.TryCancel();
      }
      spdlog::info("worker {}: connected to {} at iteration {}{}", opt.worker_id, opt.server,
                   state.clock(),
                   m.welcome().send_initial_values() ? " (uploading the model)" : "");
      cv.notify_all();
    }
    while (ok && stream->Read(&m)) {
      std::lock_guard<std::mutex> lock(mu);
      switch (m.kind_case()) {
        case pb::ServerMessage::kBatch: {
          absl::Status s = OnBatch(m.batch());
          if (!s.ok()) {
            spdlog::error("worker {}: bad downlink batch ({}); reconnecting", opt.worker_id,
                          std::string(s.message()));
            ctx.TryCancel();
          }
          break;
        }
        case pb::ServerMessage::kAck:
          OnAck(m.ack());
          break;
        case pb::ServerMessage::kDirective:
          OnDirective(m.directive());
          break;
        case pb::ServerMessage::kEnd:
          // rogd's last word on this stream: close our side at once.
          ended_by_rogd = std::make_unique<grpc::Status>(
              static_cast<grpc::StatusCode>(m.end().code()), m.end().message());
          ctx.TryCancel();
          break;
        default:
          break;
      }
      cv.notify_all();
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      active = false;
      cv.notify_all();
      // The call is over (or was cancelled); a write still in progress ends
      // with it. Cancel only if it does not, so Finish reports rogd's status.
      if (!cv.wait_for(lock, std::chrono::seconds(1), [&] { return !writing; })) {
        ctx.TryCancel();
        cv.wait(lock, [&] { return !writing; });
      }
      current_stream = nullptr;
      context = nullptr;
    }
    grpc::Status status = stream->Finish();
    if (ended_by_rogd != nullptr) status = *ended_by_rogd;
    spdlog::info("worker {}: stream to {} ended: {}", opt.worker_id, opt.server,
                 status.ok() ? std::string("ok") : status.error_message());
    return status;
  }
};

// --- Worker -----------------------------------------------------------------------

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Start(WorkerOptions options, Layout layout,
                                                      std::vector<float> initial) {
  if (!ValidWorkerId(options.worker_id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker id '", options.worker_id.substr(0, 80),
        "' is invalid: use 1-64 letters, digits, '.', '_' or '-' (e.g. the robot's host name)"));
  }
  if (initial.size() != layout.total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("initial values have ", initial.size(),
                                                   " elements; the layout has ",
                                                   layout.total_numel()));
  }
  if (options.batch_bytes < 1024) {
    return absl::InvalidArgumentError("batch_bytes must be at least 1024");
  }
  if (!(options.keepalive_timeout >= 1 && options.keepalive_timeout <= 3600)) {
    return absl::InvalidArgumentError(
        absl::StrCat("keepalive_timeout is ", options.keepalive_timeout,
                     " s: give 1 to 3600 seconds (30 by default; docs/sdk.md, \"Faults\")"));
  }
  ClientSecurity sec{options.tls_ca_file,     options.tls_cert_file, options.tls_key_file,
                     options.tls_server_name, options.token,         options.token_file};
  absl::StatusOr<ClientCredentials> security =
      LoadClientCredentials(sec, options.server, SettingNames::kWorkerOptions);
  if (!security.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker '", options.worker_id, "': ", security.status().message()));
  }
  if (options.credentials != nullptr && security->tls) {
    return absl::InvalidArgumentError(
        "give WorkerOptions.credentials or the tls_* files, not both");
  }
  for (const std::string& w : security->warnings) {
    spdlog::warn("worker {}: {}", options.worker_id, w);
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(layout), std::move(initial));
  impl->security = *std::move(security);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(impl->opt.keepalive_timeout * 1000));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::max(0.1, impl->opt.backoff_max) * 1000));
  args.SetMaxReceiveMessageSize(64 << 20);
  impl->security.Apply(&args);
  std::shared_ptr<grpc::ChannelCredentials> creds =
      impl->opt.credentials ? impl->opt.credentials : impl->security.channel;
  impl->channel = grpc::CreateCustomChannel(impl->opt.server, creds, args);
  impl->stub = pb::Trainer::NewStub(impl->channel);
  Impl* raw = impl.get();
  impl->session_thread = std::thread([raw] { raw->SessionLoop(); });
  impl->sender_thread = std::thread([raw] { raw->SenderLoop(); });
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->closing = true;
    if (impl_->context != nullptr) impl_->context->TryCancel();
    impl_->cv.notify_all();
  }
  if (impl_->session_thread.joinable()) impl_->session_thread.join();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->active = false;
    impl_->cv.notify_all();
  }
  if (impl_->sender_thread.joinable()) impl_->sender_thread.join();
}

absl::Status Worker::BeginIteration(absl::Span<float> params, double timeout_seconds) {
  Impl& m = *impl_;
  if (params.size() != m.layout.total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("BeginIteration: params have ", params.size(),
                                                   " elements; the model has ",
                                                   m.layout.total_numel()));
  }
  std::unique_lock<std::mutex> lock(m.mu);
  if (!m.fatal.ok()) return m.fatal;
  if (m.in_iteration) {
    return absl::FailedPreconditionError("BeginIteration called twice without EndIteration");
  }
  const double t0 = m.Now();
  const double until = timeout_seconds > 0 ? t0 + timeout_seconds : kInf;
  bool waited = false;
  double detached_wait = 0;  // of the wait, the time spent detached
  while (!m.MayBegin()) {
    if (!m.fatal.ok()) return m.fatal;
    if (m.closing) return absl::CancelledError("the worker is closing");
    if (m.active && m.values_next >= m.layout.num_rows() && m.resync_rows == 0 &&
        !m.stall_reported && !m.detached) {
      // Tell rogd we wait: it releases us, or asks the others to push.
      m.stall_reported = true;
      m.progress_out.push_back(m.MakeProgress(/*stalled=*/true, /*flush=*/false));
      m.cv.notify_all();
    }
    waited = true;
    const double now = m.Now();
    if (now >= until) {
      // The wait counts all the same: in the totals now, and in the stats
      // of the iteration that starts eventually.
      const double stalled = now - t0 - detached_wait;
      m.carry_stall += stalled;
      m.carry_detached += detached_wait;
      m.total_stall += stalled;
      m.total_detached += detached_wait;
      return absl::DeadlineExceededError(
          absl::StrCat("worker '", m.opt.worker_id, "' could not start iteration ",
                       m.state.clock() + 1, " within ", timeout_seconds, " s: ", m.WaitReason()));
    }
    const bool was_detached = m.detached;
    m.WaitUntil(lock, std::min(until, now + 0.1));
    if (was_detached) detached_wait += m.Now() - now;
  }
  const double now = m.Now();
  // Downlink received since the last stats (also while waiting) counts.
  IterationStats fresh;
  fresh.rows_down = m.current.rows_down;
  fresh.bytes_down = m.current.bytes_down;
  fresh.payload_down = m.current.payload_down;
  m.current = fresh;
  detached_wait = std::min(detached_wait, now - t0);
  const double stalled = waited ? now - t0 - detached_wait : 0;
  m.total_detached += detached_wait;
  m.total_stall += stalled;
  // Earlier calls that timed out waiting for this iteration count too.
  m.current.detached_seconds = detached_wait + m.carry_detached;
  m.current.stall_seconds = stalled + m.carry_stall;
  m.carry_stall = m.carry_detached = 0;
  m.current.stalled = m.current.stall_seconds > 0;
  if (m.current.stalled) ++m.total_stalls;
  if (m.detached) {
    // A local step: outside the bound.
    m.current.detached = true;
    --m.local_steps_left;
  }
  m.released = false;
  m.stall_reported = false;
  m.stall = StallInfo();
  const std::vector<float>& replica = m.state.replica();
  std::copy(replica.begin(), replica.end(), params.begin());
  m.begin_returned = now;
  m.in_iteration = true;
  return absl::OkStatus();
}

absl::StatusOr<IterationStats> Worker::EndIteration(absl::Span<const float> update) {
  Impl& m = *impl_;
  if (update.size() != m.layout.total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("EndIteration: the update has ", update.size(),
                                                   " elements; the model has ",
                                                   m.layout.total_numel()));
  }
  for (float v : update) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          "EndIteration: the update holds NaN or infinity; it was not applied (check the "
          "learning rate and the loss)");
    }
  }
  std::unique_lock<std::mutex> lock(m.mu);
  if (!m.fatal.ok()) return m.fatal;
  if (!m.in_iteration) {
    return absl::FailedPreconditionError("EndIteration called without BeginIteration");
  }
  m.in_iteration = false;
  const double t0 = m.Now();
  m.current.compute_seconds = t0 - m.begin_returned;
  m.total_compute += m.current.compute_seconds;
  m.state.ApplyLocalUpdate(update);
  m.current.iteration = m.state.clock();

  // The plan: every row with something to push (a lossy codec's residual
  // too), mandatory first.
  const bool rog = m.policy == SyncPolicy::kRog;
  ++m.phase;
  m.plan.Reset(SelectRows(UplinkCandidates(m.policy, m.bound, m.state, m.codec, m.layout,
                                           UplinkOptions{/*include_residual_rows=*/true}),
                          m.mta, m.model_wire_bytes));
  m.speculate = MaySpeculate(m.policy, m.state.clock(), m.window.min_iteration());
  m.current.window_seconds = rog ? m.window.seconds() : 0;
  m.deadline = m.current.window_seconds > 0 ? t0 + m.current.window_seconds : kInf;
  {
    OpenPush p;
    p.phase = m.phase;
    p.t0 = t0;
    p.deadline = m.deadline;
    p.stats.iteration = m.state.clock();
    p.stats.window_seconds = m.current.window_seconds;
    m.open_pushes.push_back(p);
  }
  m.transmitting = true;
  m.progress_out.push_back(m.MakeProgress(/*stalled=*/false, /*flush=*/false));
  m.cv.notify_all();

  const uint64_t phase = m.phase;
  for (;;) {
    if (!m.fatal.ok()) break;
    // Detached (now or during the push): what is left drains in the
    // background; the training loop does not wait for the link.
    if (m.detached) break;
    if (!m.active) {
      m.current.disconnected = true;
      break;
    }
    const double now = m.Now();
    // Every selected row is on its way: the acknowledgements are not waited
    // for (PushStats reports them).
    if (m.PlanFinished(now)) {
      // Pacing: ahead of the slowest worker, keep the link for the window.
      if (!HoldForPace(now, m.deadline, m.state.clock(), m.window.min_iteration())) break;
    }
    // Acks and disconnects notify; the poll notices the window's end.
    m.WaitUntil(lock, std::min(now + 0.02, m.deadline > now ? m.deadline : kInf));
  }
  m.transmitting = false;
  m.plan = Plan();
  const double now = m.Now();
  m.current.transmit_seconds = now - t0;
  m.total_transmit += m.current.transmit_seconds;
  for (OpenPush& p : m.open_pushes) {
    if (p.phase != phase) continue;
    p.ended = true;
    p.stats.bytes = m.current.bytes_up;
    p.stats.payload = m.current.payload_up;
  }
  m.CompletePushes();
  for (auto& [start, push] : m.pushes_done) {
    push.age_seconds = now - start;
    m.current.pushes.push_back(push);
  }
  m.pushes_done.clear();
  m.current.uplink_goodput = m.goodput.rate();
  for (RowId r = 0; r < m.layout.num_rows(); ++r) m.current.rows_kept += m.state.unpushed(r) > 0;
  IterationStats stats = m.current;
  m.current = IterationStats();
  if (!m.fatal.ok()) return m.fatal;
  return stats;
}

absl::Status Worker::Flush(double timeout_seconds) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  const double until = m.Now() + timeout_seconds;
  // Connected first, so that what is unacknowledged is settled by a welcome.
  while (!(m.active && m.values_next >= m.layout.num_rows())) {
    if (!m.fatal.ok()) return m.fatal;
    if (m.Now() >= until) {
      return absl::DeadlineExceededError(absl::StrCat("Flush: ", m.WaitReason()));
    }
    m.WaitUntil(lock, std::min(until, m.Now() + 0.1));
  }
  for (;;) {
    if (!m.fatal.ok()) return m.fatal;
    if (m.active) {
      for (RowId r = 0; r < m.layout.num_rows(); ++r) {
        if (!m.is_forced[r] && m.Pushable(r)) {
          m.is_forced[r] = true;
          m.forced.push_back(r);
        }
      }
      m.cv.notify_all();
    }
    bool done = m.active && m.forced.empty() && m.inflight.empty();
    for (RowId r = 0; done && r < m.layout.num_rows(); ++r) done = !m.Pushable(r);
    if (done) return absl::OkStatus();
    if (m.Now() >= until) {
      return absl::DeadlineExceededError(
          absl::StrCat("Flush: rogd did not acknowledge every row within ", timeout_seconds, " s (",
                       m.WaitReason(), ")"));
    }
    m.WaitUntil(lock, std::min(until, m.Now() + 0.05));
  }
}

absl::Status Worker::Sync(double timeout_seconds) {
  const double until = impl_->Now() + timeout_seconds;
  absl::Status s = Flush(timeout_seconds);
  if (!s.ok()) return s;
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  for (;;) {
    if (!m.fatal.ok()) return m.fatal;
    if (m.active && !m.flush_waiting && m.resync_rows == 0) {
      m.flushed = false;
      m.flush_waiting = true;
      m.progress_out.push_back(m.MakeProgress(/*stalled=*/false, /*flush=*/true));
      m.cv.notify_all();
    }
    if (m.flush_waiting && m.flushed) {
      m.flush_waiting = false;
      return absl::OkStatus();
    }
    if (!m.active) m.flush_waiting = false;  // ask again on the next stream
    if (m.Now() >= until) {
      m.flush_waiting = false;
      return absl::DeadlineExceededError(
          absl::StrCat("Sync: rogd did not send every pending row within ", timeout_seconds, " s (",
                       m.WaitReason(), ")"));
    }
    m.WaitUntil(lock, std::min(until, m.Now() + 0.05));
  }
}

absl::Status Worker::Close(double timeout_seconds) {
  absl::Status s = Flush(timeout_seconds);
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  if (s.ok() && m.active) {
    m.goodbye_due = true;
    m.goodbye_reason = "worker closed";
    m.cv.notify_all();
    // rogd ends the stream once it has the goodbye.
    const double until = m.Now() + timeout_seconds;
    while (m.active && m.Now() < until) m.WaitUntil(lock, until);
  }
  m.closing = true;
  if (m.context != nullptr) m.context->TryCancel();
  m.cv.notify_all();
  return s;
}

std::vector<float> Worker::Replica() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->state.replica();
}

const Layout& Worker::layout() const { return impl_->layout; }

uint64_t Worker::clock() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->state.clock();
}

bool Worker::connected() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->active;
}

double Worker::stall_seconds() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->total_stall;
}

double Worker::detached_seconds() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->total_detached;
}

bool Worker::detached() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->detached;
}

uint64_t Worker::detaches() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->detaches;
}

uint64_t Worker::reconnects() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->reconnects;
}

uint64_t Worker::replayed() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->replayed;
}

uint64_t Worker::replay_dropped() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->replay_dropped;
}

StallInfo Worker::last_stall() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  StallInfo s = impl_->stall;
  if (s.reason.empty()) s.reason = impl_->WaitReason();
  return s;
}

void Worker::Disconnect(double hold_seconds) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->hold_until = impl_->Now() + hold_seconds;
  if (impl_->context != nullptr) impl_->context->TryCancel();
  impl_->cv.notify_all();
}

}  // namespace rog
