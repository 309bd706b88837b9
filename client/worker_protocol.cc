#include <cstdlib>
#include "client/worker_protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/protocol_rules.h"
#include "common/row_digest.h"
#include "common/row_index.h"
#include "common/selection.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// EndIteration looks at its push at least this often (seconds): the
// window's end and its taper come with time alone.
constexpr double kPushPoll = 0.02;

}  // namespace

WorkerProtocol::WorkerProtocol(ProtocolOptions options, Layout layout, std::vector<float> initial)
    : opt_(std::move(options)),
      clock_(opt_.clock ? opt_.clock : DefaultClock()),
      layout_(std::move(layout)),
      state_(layout_, std::move(initial)),
      deadline_(kInf) {
  is_forced_.assign(layout_.num_rows(), false);
  is_ahead_.assign(layout_.num_rows(), false);
  sent_phase_.assign(layout_.num_rows(), 0);
  values_next_ = static_cast<RowId>(layout_.num_rows());
}

uint64_t WorkerProtocol::RowWireBytes(RowId row) const {
  return rog::RowWireBytes(codec_, layout_.row(row).numel);
}

// This link's batch budget now (BatchBudget): a few milliseconds of its
// goodput.
uint64_t WorkerProtocol::BatchBytes() const {
  return BatchBudget(goodput_.has_estimate() ? goodput_.rate() : 0, opt_.batch_seconds,
                     opt_.batch_bytes);
}

// Unacknowledged bytes allowed: `inflight_lead` seconds of goodput, or the
// path's round trip if longer (acks share the link with downlink rows and
// come back late; a cap below rate × round trip would throttle the link
// and, measured through itself, never recover), plus one batch. The
// round trip is the minimum seen, so our own queueing does not inflate it.
// The batch is the largest one (batch_bytes), not BatchBytes(): a term
// that shrank with the goodput it limits could spiral down on a long
// round trip.
uint64_t WorkerProtocol::InFlightCap() const {
  if (!goodput_.has_estimate()) return kInitialInFlight;
  return InFlightLimit(goodput_.rate(), std::max(opt_.inflight_lead, rtt_.min()), opt_.batch_bytes);
}

// The window is open for rows that are not mandatory while what would be
// in flight with one more batch can still arrive before it closes (the
// deadline taper: without it the last batches overshoot by the whole
// in-flight allowance).
static int HackMode() { static const int f = std::getenv("ROG_FILL") ? std::atoi(std::getenv("ROG_FILL")) : 0; return f; }
bool WorkerProtocol::HackFill() const {
  if (HackMode() == 0 || policy_ != SyncPolicy::kRog) return false;
  if (HackMode() == 1) return true;
  return goodput_.has_estimate() && goodput_.rate() * last_compute_ >= model_wire_bytes_;
}
bool WorkerProtocol::WindowOpen(double now) const {
  if (HackFill()) return true;
  return ArrivesBeforeDeadline(now, deadline_, inflight_bytes_, BatchBytes(),
                               goodput_.has_estimate() ? goodput_.rate() : 0);
}

// Whether the row has something a flush or a stalled peer needs: unpushed
// iterations, or (lossless codecs) updates kept across a rejoin. A lossy
// codec's residual rides along with the row's next push instead.
bool WorkerProtocol::Pushable(RowId row) const {
  return state_.unpushed(row) > 0 || (IsLossless(codec_) && state_.HasResidual(row));
}

bool WorkerProtocol::PlanFinished(double now) const {
  return plan_.done() || (now >= deadline_ && plan_.next >= plan_.mandatory);
}

pb::Progress WorkerProtocol::MakeProgress(bool stalled, bool flush) const {
  pb::Progress p;
  p.set_iteration(state_.clock());
  p.set_stalled(stalled);
  p.set_flush(flush);
  p.set_compute_seconds(total_compute_);
  p.set_last_compute_seconds(last_compute_);
  p.set_transmit_seconds(total_transmit_);
  p.set_stall_seconds(total_stall_);
  p.set_detached_seconds(total_detached_);
  p.set_stalls(total_stalls_);
  p.set_uplink_goodput(goodput_.rate());
  p.set_window_overshoot(last_overshoot_);
  return p;
}

bool WorkerProtocol::MayBegin() const {
  if (!active_ || values_next_ < layout_.num_rows() || resync_rows_ > 0 || !team_ready_)
    return false;
  if (detached_) return state_.clock() < local_until_;
  return (released_ && released_clock_ == state_.clock()) ||
         state_.HasAllUpTo(NeededVersion(state_.clock(), bound_));
}

// Hello.row_digests: digests of the replica's rows, withholding every
// row that holds something of this worker's own rogd might lack (an
// accumulated update, a batch unacknowledged or not yet durable); rogd
// leaves the rows it holds equally out of the resync.
std::string WorkerProtocol::HelloRowDigests() const {
  std::vector<bool> withheld(layout_.num_rows(), false);
  for (const std::deque<SentBatch>* list : {&acked_in_resync_, &inflight_, &not_durable_}) {
    for (const SentBatch& b : *list) {
      for (RowId row : b.rows) withheld[row] = true;
    }
  }
  for (RowId row = 0; row < layout_.num_rows(); ++row) {
    withheld[row] = withheld[row] || state_.HasResidual(row);
  }
  return RowDigests(layout_, state_.replica(), withheld);
}

pb::Hello WorkerProtocol::MakeHello() const {
  pb::Hello h;
  h.set_worker_id(opt_.worker_id);
  h.set_layout_fingerprint(layout_.fingerprint());
  *h.mutable_layout() = LayoutToProto(layout_);
  h.set_resume_token(token_);
  h.set_last_acked_uplink_seq(last_acked_up_);
  h.set_last_applied_downlink_seq(next_down_seq_ - 1);
  h.set_downlink_stream(downlink_stream_);
  h.set_iteration(state_.clock());
  h.set_sdk_version(kRogVersion);
  h.set_row_digests(HelloRowDigests());
  h.set_honours_push_ahead(true);
  return h;
}

absl::Status WorkerProtocol::OnMessage(const pb::ServerMessage& message) {
  switch (message.kind_case()) {
    case pb::ServerMessage::kBatch:
      return OnBatch(message.batch());
    case pb::ServerMessage::kAck:
      OnAck(message.ack());
      break;
    case pb::ServerMessage::kDirective:
      OnDirective(message.directive());
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

void WorkerProtocol::SayGoodbye(const std::string& reason) {
  goodbye_due_ = true;
  goodbye_reason_ = reason;
}

absl::Status WorkerProtocol::OnWelcome(const pb::Welcome& w) {
  // The rows rogd leaves out of the resync: checked before anything
  // changes.
  absl::StatusOr<std::vector<RowId>> held =
      DecodeRowIds(absl::MakeConstSpan(w.in_sync_row_delta().data(), w.in_sync_row_delta_size()),
                   layout_.num_rows());
  if (!held.ok() || held->size() != static_cast<size_t>(w.in_sync_version_lag_size())) {
    return absl::InternalError(absl::StrCat(
        "the welcome's in-sync rows do not decode (",
        held.ok() ? "their version lags differ in number" : held.status().message(), ")"));
  }
  // Resumed: rogd kept this worker's state (the token it sent back is the
  // one we presented). Otherwise rogd set its versions to the welcome's
  // clock (a first connect, a rejoin, a first worker bringing the model).
  const bool resumed = token_ != 0 && w.resume_token() == token_;
  token_ = w.resume_token();
  policy_ = static_cast<SyncPolicy>(w.sync());
  bound_ = EffectiveBound(policy_, w.staleness());
  mta_ = w.mta();
  codec_ = static_cast<Codec>(w.codec());
  model_wire_bytes_ = 0;
  for (RowId row = 0; row < layout_.num_rows(); ++row) model_wire_bytes_ += RowWireBytes(row);
  ReplayLost(w.last_applied_uplink_seq());
  ReturnInFlight(w.last_applied_uplink_seq());
  // Unless resumed, rogd credits every iteration up to the welcome's
  // clock: what is unpushed goes with count 0 (Rebase), even at an equal
  // clock, or its counts would claim iterations rogd already holds.
  if (!resumed || w.iteration() != state_.clock()) {
    if (w.iteration() != state_.clock()) {
      spdlog::info("worker {}: rogd sets the clock to {} (was {})", opt_.worker_id, w.iteration(),
                   state_.clock());
    }
    state_.Rebase(w.iteration());
  }
  AcceptWelcome(w, *held);
  return absl::OkStatus();
}

// A rogd restarted from a checkpoint after a crash applied less than it
// acknowledged (`applied`): what it lost goes again, like what is in flight.
void WorkerProtocol::ReplayLost(uint64_t applied) {
  if (!not_durable_.empty() && not_durable_.back().seq > applied) {
    uint64_t n = 0;
    while (!not_durable_.empty() && not_durable_.back().seq > applied) {
      not_durable_bytes_ -= ReplayBytes(not_durable_.back());
      inflight_.push_front(std::move(not_durable_.back()));
      not_durable_.pop_back();
      ++n;
    }
    replayed_ += n;
    spdlog::warn(
        "worker {}: rogd lost {} acknowledged batches (it restarted from a checkpoint at uplink "
        "seq {}); pushing them again",
        opt_.worker_id, n, applied);
  }
}

// Uplink: what the server applied (up to `applied`) is done; the rest
// returns to the accumulators, newest first, and goes again with new seqs.
void WorkerProtocol::ReturnInFlight(uint64_t applied) {
  while (!inflight_.empty() && inflight_.front().seq <= applied) {
    inflight_.pop_front();
  }
  for (auto it = inflight_.rbegin(); it != inflight_.rend(); ++it) {
    if (it->kind != pb::BATCH_KIND_UPDATE) continue;
    size_t at = it->decoded.size();
    for (size_t k = it->rows.size(); k-- > 0;) {
      const uint32_t numel = layout_.row(it->rows[k]).numel;
      at -= numel;
      state_.ReturnUplink(it->rows[k], absl::MakeConstSpan(it->decoded.data() + at, numel),
                          it->counts[k]);
    }
  }
  inflight_.clear();
  for (OpenPush& p : open_pushes_) {
    if (p.unacked > 0) p.stats.disconnected = true;
    p.unacked = 0;
  }
  CompletePushes();
  acked_in_resync_.clear();
  inflight_bytes_ = 0;
  goodput_ = GoodputEstimator();
  last_acked_up_ = applied;
  next_up_seq_ = applied + 1;
  forced_.clear();
  std::fill(is_forced_.begin(), is_forced_.end(), false);
  ahead_.clear();
  std::fill(is_ahead_.begin(), is_ahead_.end(), false);
}

// The welcome's account of the new stream: the policy's settings came
// first; this takes the downlink's, the resync's and the team's.
void WorkerProtocol::AcceptWelcome(const pb::Welcome& w, const std::vector<RowId>& held) {
  // Progress reports queued for the old stream: the hello carried the
  // clock, and a stale report could be ahead of a clock rogd moved back.
  progress_out_.clear();
  values_next_ = w.send_initial_values() ? 0 : static_cast<RowId>(layout_.num_rows());
  resync_rows_ = 0;
  if (w.full_resync()) {
    // What rogd did not send, the replica holds already (row digests).
    for (size_t k = 0; k < held.size(); ++k) {
      const int64_t v = static_cast<int64_t>(w.iteration()) - w.in_sync_version_lag(k);
      state_.SetKnownVersion(held[k], v < 0 ? 0 : static_cast<uint64_t>(v));
    }
    resync_rows_ = layout_.num_rows() - held.size();
  }
  next_down_seq_ = 1;
  downlink_stream_ = w.stream();
  down_ack_seq_ = 0;
  down_ack_bytes_ = 0;
  ack_due_ = false;
  team_ready_ = w.team_ready();
  released_ = false;
  stall_reported_ = false;
  pause_reported_ = false;
  stall_ = StallInfo();
  window_ = w.window();
  flushed_ = false;
  // rogd repeats a detachment that still holds right after the welcome.
  detached_ = false;
  active_ = true;
}

absl::Status WorkerProtocol::OnBatch(const pb::RowBatch& b) {
  if (b.seq() != next_down_seq_) {
    return absl::InternalError(
        absl::StrCat("downlink seq ", b.seq(), " where ", next_down_seq_, " was expected"));
  }
  absl::StatusOr<std::vector<RowId>> rows = DecodeRowIds(
      absl::MakeConstSpan(b.row_delta().data(), b.row_delta_size()), layout_.num_rows());
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
    const uint32_t numel = layout_.row(row).numel;
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
      state_.ApplyValues(row, decoded, version);
      AddBackInFlight(row, b.applied_uplink_seq(), version);
      if (resync_rows_ > 0 && --resync_rows_ == 0) acked_in_resync_.clear();
    } else {
      state_.ApplyDownlink(row, decoded, version);
    }
  }
  ++next_down_seq_;
  current_.rows_down += rows->size();
  const uint64_t bytes = b.ByteSizeLong();
  // A probe's padding (rogd measuring a detached worker's link) is not
  // row traffic; it is acknowledged all the same.
  current_.bytes_down += bytes - std::min<uint64_t>(bytes, b.padding().size());
  current_.payload_down += b.payload().size();
  down_ack_seq_ = b.seq();
  down_ack_bytes_ += bytes;
  ack_due_ = true;
  return absl::OkStatus();
}

// The values of a resync lack this worker's updates sent after
// `applied_seq`, still in flight: add them back to the replica.
void WorkerProtocol::AddBackInFlight(RowId row, uint64_t applied_seq, uint64_t version) {
  const uint32_t numel = layout_.row(row).numel;
  for (const std::deque<SentBatch>* list : {&acked_in_resync_, &inflight_}) {
    for (const SentBatch& b : *list) {
      if (b.seq <= applied_seq || b.kind != pb::BATCH_KIND_UPDATE) continue;
      size_t at = 0;
      for (RowId r : b.rows) {
        if (r == row) {
          state_.ApplyDownlink(row, absl::MakeConstSpan(b.decoded.data() + at, numel), version);
        }
        at += layout_.row(r).numel;
      }
    }
  }
}

size_t WorkerProtocol::ReplayBytes(const SentBatch& b) {
  return b.decoded.size() * sizeof(float) + b.rows.size() * (sizeof(RowId) + sizeof(uint32_t));
}

void WorkerProtocol::KeepForReplay(SentBatch b, double now) {
  if (opt_.replay_buffer_bytes == 0) return;
  not_durable_bytes_ += ReplayBytes(b);
  not_durable_.push_back(std::move(b));
  uint64_t dropped = 0;
  while (not_durable_bytes_ > opt_.replay_buffer_bytes && !not_durable_.empty()) {
    not_durable_bytes_ -= ReplayBytes(not_durable_.front());
    not_durable_.pop_front();
    ++dropped;
  }
  replay_dropped_ += dropped;
  if (dropped > 0 && now - replay_warned_at_ > 60) {
    replay_warned_at_ = now;
    spdlog::warn(
        "worker {}: the replay buffer (replay_buffer_bytes, {} MB of updates kept decoded, "
        "4 bytes per element whatever the codec) is full of batches rogd has not checkpointed, "
        "so a rogd crash now would lose the oldest of them: checkpoint more often (rogd "
        "--checkpoint_interval) or raise the buffer",
        opt_.worker_id, opt_.replay_buffer_bytes >> 20);
  }
}

void WorkerProtocol::OnAck(const pb::Ack& a) {
  const double now = Now();
  while (!inflight_.empty() && inflight_.front().seq <= a.seq()) {
    if (OpenPush* p = PushOf(inflight_.front())) {
      p->last_ack = now;
      p->stats.acked_bytes += inflight_.front().bytes;
      --p->unacked;
    }
    if (inflight_.front().seq == a.seq()) rtt_.OnSample(now, now - inflight_.front().sent_at);
    inflight_bytes_ -= inflight_.front().bytes;
    if (inflight_.front().kind == pb::BATCH_KIND_UPDATE &&
        inflight_.front().seq > a.durable_seq()) {
      // Moved, not copied, unless a resync still needs the batch too.
      if (resync_rows_ > 0) {
        KeepForReplay(inflight_.front(), now);
      } else {
        KeepForReplay(std::move(inflight_.front()), now);
      }
    }
    if (resync_rows_ > 0) acked_in_resync_.push_back(std::move(inflight_.front()));
    inflight_.pop_front();
  }
  while (!not_durable_.empty() && not_durable_.front().seq <= a.durable_seq()) {
    not_durable_bytes_ -= ReplayBytes(not_durable_.front());
    not_durable_.pop_front();
  }
  last_acked_up_ = std::max(last_acked_up_, a.seq());
  goodput_.OnAck(now, a.bytes());
  CompletePushes();
}

WorkerProtocol::OpenPush* WorkerProtocol::PushOf(const SentBatch& b) {
  if (!b.in_push) return nullptr;
  for (OpenPush& p : open_pushes_) {
    if (p.phase == b.phase) return &p;
  }
  return nullptr;
}

// Moves pushes whose EndIteration returned and whose batches are all
// acknowledged (or lost with a stream) to pushes_done, in order.
void WorkerProtocol::CompletePushes() {
  while (!open_pushes_.empty() && open_pushes_.front().ended && open_pushes_.front().unacked == 0) {
    OpenPush& p = open_pushes_.front();
    const double rtt = rtt_.min();
    if (p.last_ack > 0) {
      p.stats.ack_seconds = std::max(0.0, p.last_ack - p.t0);
      p.stats.busy_seconds = std::max(0.0, p.last_ack - p.t0 - rtt);
      if (p.deadline < kInf) {
        p.stats.overshoot_seconds = std::max(0.0, p.last_ack - rtt / 2 - p.deadline);
      }
    }
    if (p.deadline < kInf) last_overshoot_ = p.stats.overshoot_seconds;
    pushes_done_.emplace_back(p.t0, p.stats);
    open_pushes_.pop_front();
  }
}

void WorkerProtocol::OnDirective(const pb::Directive& d) {
  switch (d.kind_case()) {
    case pb::Directive::kPushNow: {
      const bool ahead = d.push_now().ahead();
      for (uint32_t row : d.push_now().rows()) {
        if (row >= layout_.num_rows() || is_forced_[row] || state_.unpushed(row) == 0) continue;
        if (ahead) {
          if (is_ahead_[row]) continue;
          is_ahead_[row] = true;
          ahead_.push_back(row);
        } else {
          is_forced_[row] = true;
          forced_.push_back(row);
        }
      }
      break;
    }
    case pb::Directive::kWindow:
      window_ = d.window();
      break;
    case pb::Directive::kStall:
      OnStall(d.stall());
      break;
    case pb::Directive::kRelease:
      team_ready_ = true;
      if (d.release().flushed()) {
        flushed_ = true;
      } else {
        released_ = true;
        released_clock_ = d.release().iteration();
      }
      break;
    case pb::Directive::kDetached:
      OnDetached(d.detached());
      break;
    case pb::Directive::kReattached:
      OnReattached(d.reattached());
      break;
    case pb::Directive::kKnownVersions:
      // Mid-resync the VALUES rows carry their own; otherwise exact.
      if (resync_rows_ > 0 ||
          d.known_versions().version_size() != static_cast<int>(layout_.num_rows())) {
        break;
      }
      for (RowId row = 0; row < layout_.num_rows(); ++row) {
        state_.SetKnownVersion(row, d.known_versions().version(row));
      }
      break;
    case pb::Directive::kEvicted:
      if (said_goodbye_) break;  // our own Close
      spdlog::warn("worker {}: evicted by rogd: {}", opt_.worker_id, d.evicted().reason());
      break;
    default:
      break;
  }
}

// Why rogd holds this worker at the bound (or the team), for WaitReason.
void WorkerProtocol::OnStall(const pb::Stall& s) {
  stall_.iteration = s.iteration();
  stall_.rows.assign(s.rows().begin(), s.rows().end());
  stall_.missing_rows = s.missing_rows();
  stall_.waiting_for.assign(s.waiting_for().begin(), s.waiting_for().end());
  stall_.reason = s.missing_rows() > 0
                      ? absl::StrCat("at the staleness bound before iteration ", s.iteration() + 1,
                                     ": ", s.missing_rows(), " rows lack updates of ",
                                     absl::StrJoin(s.waiting_for(), ", "))
                      : absl::StrCat("waiting before iteration ", s.iteration() + 1, ": ",
                                     absl::StrJoin(s.waiting_for(), ", "));
  spdlog::debug("worker {}: {}", opt_.worker_id, stall_.reason);
}

// Team patience: outside the bound until rogd reattaches it.
void WorkerProtocol::OnDetached(const pb::Detached& d) {
  if (!detached_) ++detaches_;
  detached_ = true;
  pause_reported_ = false;  // a repeated detachment (reconnect) wants it again
  // The local steps count from the clock rogd detached it at, which an
  // iteration under way when the directive arrived has passed already (a
  // rogd that sends no clock: from ours).
  local_until_ = (d.iteration() > 0 ? d.iteration() : state_.clock()) + d.local_steps();
  detach_reason_ = d.reason();
  const uint64_t left = local_until_ > state_.clock() ? local_until_ - state_.clock() : 0;
  spdlog::warn("worker {}: detached from the team by rogd: {}; {}", opt_.worker_id, detach_reason_,
               left > 0 ? absl::StrCat("training on its own for up to ", left, " iterations")
                        : std::string("training pauses until the link recovers"));
}

void WorkerProtocol::OnReattached(const pb::Reattached& r) {
  if (!detached_) return;
  detached_ = false;
  released_ = false;
  stall_reported_ = false;
  stall_ = StallInfo();
  if (r.iteration() > state_.clock()) state_.Rebase(r.iteration());
  spdlog::info("worker {}: reattached to the team at iteration {}: {}", opt_.worker_id,
               state_.clock(), r.reason());
}

// Forms the next uplink batch into *m; false when nothing may go now.
bool WorkerProtocol::FormUplink(pb::WorkerMessage* m) {
  if (inflight_bytes_ >= InFlightCap()) return false;
  pb::RowBatch* b = m->mutable_batch();
  SentBatch sent;
  if (values_next_ < layout_.num_rows()) {
    FillValues(&sent, b->mutable_payload());
    b->set_codec(pb::CODEC_FP32);
  } else {
    if (!FillUpdates(&sent, b->mutable_payload())) return false;
    b->set_codec(static_cast<pb::Codec>(codec_));
  }
  if (sent.rows.empty()) return false;
  FinishBatch(std::move(sent), b);
  return true;
}

// The initial model's next rows: the replica without what is still unpushed.
void WorkerProtocol::FillValues(SentBatch* sent, std::string* payload) {
  BatchFill fill(layout_, Codec::kFp32, BatchBytes());
  while (values_next_ < layout_.num_rows() && fill.Fits(values_next_)) fill.Add(values_next_++);
  sent->rows = fill.Take();
  std::vector<float> row_values;
  for (RowId row : sent->rows) {
    const absl::Span<const float> rep = state_.replica_row(row);
    const absl::Span<const float> acc = state_.accumulator_row(row);
    row_values.resize(rep.size());
    for (size_t j = 0; j < rep.size(); ++j) row_values[j] = rep[j] - acc[j];
    Encode(Codec::kFp32, row_values, payload);
    sent->counts.push_back(0);
  }
  sent->kind = pb::BATCH_KIND_VALUES;
}

// The next update rows, most urgent first: what a stalled peer asked for,
// everything while detached, then what a computing peer will need next
// (PushNow.ahead) and the push's plan, within its window.
// False when nothing may go now.
bool WorkerProtocol::FillUpdates(SentBatch* sent, std::string* payload) {
  BatchFill fill(layout_, codec_, BatchBytes());
  // Rows a stalled worker waits for go first, whatever the window.
  while (!forced_.empty() && fill.Fits(forced_.front())) {
    const RowId row = forced_.front();
    forced_.pop_front();
    is_forced_[row] = false;
    if (Pushable(row)) fill.Add(row);
  }
  if (detached_) {
    // Detached: everything it holds, as fast as the link allows.
    for (RowId row = 0; row < layout_.num_rows(); ++row) {
      if (fill.Has(row) || !Pushable(row)) continue;
      if (!fill.Fits(row)) break;
      fill.Add(row);
    }
  }
  if (transmitting_ && !ahead_.empty() && WindowOpen(Now())) {
    // What a computing peer will need next (PushNow.ahead), before the
    // plan's rows, while the window is open.
    while (!ahead_.empty()) {
      const RowId row = ahead_.front();
      if (!fill.Has(row) && Pushable(row)) {
        if (!fill.Fits(row)) break;
        fill.Add(row);
      }
      ahead_.pop_front();
      is_ahead_[row] = false;
    }
  }
  if (transmitting_) {
    FillFromPlan(&plan_, WindowOpen(Now()), speculate_, &fill, [&](RowId row) {
      return sent_phase_[row] == phase_ || (state_.unpushed(row) == 0 && !state_.HasResidual(row));
    });
  }
  if (fill.empty()) return false;
  sent->rows = fill.Take();
  sent->kind = pb::BATCH_KIND_UPDATE;
  for (RowId row : sent->rows) {
    const uint32_t numel = layout_.row(row).numel;
    const size_t at = sent->decoded.size();
    sent->decoded.resize(at + numel);
    sent->counts.push_back(
        state_.TakeUplink(row, codec_, payload, absl::MakeSpan(sent->decoded.data() + at, numel)));
    sent_phase_[row] = phase_;
  }
  return true;
}

// Numbers, indexes and accounts for a formed batch, and keeps it in flight.
void WorkerProtocol::FinishBatch(SentBatch sent, pb::RowBatch* b) {
  b->set_kind(sent.kind);
  sent.seq = next_up_seq_++;
  b->set_seq(sent.seq);
  b->set_iteration(state_.clock());
  for (uint32_t d : EncodeRowIds(sent.rows)) b->add_row_delta(d);
  for (size_t k = 0; k < sent.rows.size(); ++k) {
    b->add_count(sent.counts[k]);
    const int64_t lag = sent.kind == pb::BATCH_KIND_VALUES
                            ? 0
                            : static_cast<int64_t>(state_.clock()) -
                                  static_cast<int64_t>(state_.pushed_version(sent.rows[k]));
    b->add_version_lag(lag);
  }
  sent.bytes = b->ByteSizeLong();
  sent.phase = phase_;
  sent.sent_at = Now();
  if (transmitting_) {
    current_.rows_up += sent.rows.size();
    current_.bytes_up += sent.bytes;
    current_.payload_up += b->payload().size();
    sent.in_push = true;
    if (OpenPush* p = PushOf(sent)) {
      ++p->unacked;
      p->stats.bytes += sent.bytes;
      p->stats.payload += b->payload().size();
      if (sent.sent_at >= p->deadline) p->stats.late_bytes += sent.bytes;
    }
  }
  inflight_bytes_ += sent.bytes;
  goodput_.OnSend(Now(), sent.bytes);
  inflight_.push_back(std::move(sent));
}

// Collects what the sender writes next; empty when there is nothing.
std::vector<pb::WorkerMessage> WorkerProtocol::TakeOutgoing() {
  std::vector<pb::WorkerMessage> out;
  if (ack_due_) {
    pb::WorkerMessage m;
    m.mutable_ack()->set_seq(down_ack_seq_);
    m.mutable_ack()->set_bytes(down_ack_bytes_);
    down_ack_bytes_ = 0;
    ack_due_ = false;
    out.push_back(std::move(m));
  }
  while (!progress_out_.empty()) {
    pb::WorkerMessage m;
    *m.mutable_progress() = std::move(progress_out_.front());
    progress_out_.pop_front();
    out.push_back(std::move(m));
  }
  pb::WorkerMessage batch;
  if (FormUplink(&batch)) out.push_back(std::move(batch));
  if (out.empty() && goodbye_due_ && inflight_.empty()) {
    pb::WorkerMessage m;
    m.mutable_goodbye()->set_reason(goodbye_reason_);
    goodbye_due_ = false;
    said_goodbye_ = true;
    out.push_back(std::move(m));
  }
  return out;
}

bool WorkerProtocol::ReportWait() {
  if (!active_ || values_next_ < layout_.num_rows() || resync_rows_ > 0) return false;
  // Detached and out of local steps: rogd reattaches only a worker that
  // said it pauses, at the clock rogd holds for it, so that the clock rogd
  // moves it to credits no iteration this worker is still computing.
  bool& reported = detached_ ? pause_reported_ : stall_reported_;
  if (reported) return false;
  reported = true;
  progress_out_.push_back(MakeProgress(/*stalled=*/true, /*flush=*/false));
  progress_out_.back().set_paused(detached_);
  return true;
}

std::string WorkerProtocol::WaitReason() const {
  if (values_next_ < layout_.num_rows()) return "uploading the initial model";
  if (resync_rows_ > 0) {
    return absl::StrCat("receiving the model from rogd (", layout_.num_rows() - resync_rows_,
                        " of ", layout_.num_rows(), " rows)");
  }
  if (detached_) {
    return absl::StrCat("detached from the team by rogd (", detach_reason_,
                        "); training pauses until rogd reattaches this worker");
  }
  if (!stall_.reason.empty()) return stall_.reason;
  if (!team_ready_) return "waiting for the team to join";
  return absl::StrCat("waiting at the staleness bound before iteration ", state_.clock() + 1);
}

void WorkerProtocol::CountTimedOutWait(double stalled_seconds, double detached_seconds) {
  carry_stall_ += stalled_seconds;
  carry_detached_ += detached_seconds;
  total_stall_ += stalled_seconds;
  total_detached_ += detached_seconds;
}

void WorkerProtocol::Begin(double t0, double now, bool waited, double detached_wait,
                           absl::Span<float> params) {
  // Downlink received since the last stats (also while waiting) counts, and
  // so does the uplink a window still streaming sent meanwhile.
  IterationStats fresh;
  fresh.rows_down = current_.rows_down;
  fresh.bytes_down = current_.bytes_down;
  fresh.payload_down = current_.payload_down;
  fresh.rows_up = current_.rows_up;
  fresh.bytes_up = current_.bytes_up;
  fresh.payload_up = current_.payload_up;
  current_ = fresh;
  detached_wait = std::min(detached_wait, now - t0);
  const double stalled = waited ? now - t0 - detached_wait : 0;
  total_detached_ += detached_wait;
  total_stall_ += stalled;
  // Earlier calls that timed out waiting for this iteration count too.
  current_.detached_seconds = detached_wait + carry_detached_;
  current_.stall_seconds = stalled + carry_stall_;
  carry_stall_ = carry_detached_ = 0;
  current_.stalled = current_.stall_seconds > 0;
  if (current_.stalled) ++total_stalls_;
  // A local step: outside the bound.
  if (detached_) current_.detached = true;
  released_ = false;
  stall_reported_ = false;
  pause_reported_ = false;
  stall_ = StallInfo();
  const std::vector<float>& replica = state_.replica();
  std::copy(replica.begin(), replica.end(), params.begin());
  begin_returned_ = now;
  in_iteration_ = true;
}

void WorkerProtocol::StartPush(absl::Span<const float> update) {
  in_iteration_ = false;
  const double t0 = Now();
  push_started_ = t0;
  current_.compute_seconds = t0 - begin_returned_;
  total_compute_ += current_.compute_seconds;
  last_compute_ = current_.compute_seconds;
  state_.ApplyLocalUpdate(update);
  current_.iteration = state_.clock();
  // The plan: every row with something to push (a lossy codec's residual
  // too), mandatory first.
  const bool rog = policy_ == SyncPolicy::kRog;
  ++phase_;
  plan_.Reset(SelectRows(UplinkCandidates(policy_, bound_, state_, codec_, layout_), mta_,
                         model_wire_bytes_));
  speculate_ = (HackFill() && rog) || MaySpeculate(policy_, state_.clock(), window_.min_iteration());
  current_.window_seconds = rog ? window_.seconds() : 0;
  deadline_ = current_.window_seconds > 0 ? t0 + current_.window_seconds : kInf;
  OpenPush p;
  p.phase = phase_;
  p.t0 = t0;
  p.deadline = deadline_;
  p.stats.iteration = state_.clock();
  p.stats.window_seconds = current_.window_seconds;
  open_pushes_.push_back(p);
  transmitting_ = true;
  progress_out_.push_back(MakeProgress(/*stalled=*/false, /*flush=*/false));
}

bool WorkerProtocol::PushEnds(double now) {
  // Detached (now or during the push): what is left drains in the
  // background; the training loop does not wait for the link.
  if (detached_) return true;
  if (!active_) {
    current_.disconnected = true;
    return true;
  }
  // Every selected row is on its way: the acknowledgements are not waited
  // for (PushStats reports them). No pacing hold: a worker ahead of the
  // slowest computes on while its window's rows stream, and stalls at the
  // bound if it gets there (holding its link for the window instead cost
  // ROG 3.8% at the paper profile's fp32/fast quarter, 4.9% simulated;
  // results/2026-11-27-paper-fp32-fast-no-pacing-hold-a0d02b7).
  return PlanFinished(now) || (ReturnsAfterShare() && ReturnPointPassed());
}

bool WorkerProtocol::ReturnsAfterShare() const {
  return opt_.return_after_share && policy_ == SyncPolicy::kRog;
}

// Under return_after_share: the rows EndIteration waits for are on their
// way (the mandatory ones; with share_in_background off, the MTA share's too).
bool WorkerProtocol::ReturnPointPassed() const {
  return plan_.next >=
         (opt_.share_in_background ? plan_.mandatory : std::max(plan_.mandatory, plan_.mta_end));
}

double WorkerProtocol::PushWakeAt(double now) const {
  // The poll notices the window's end and the taper closing it.
  return std::min(now + kPushPoll, deadline_ > now ? deadline_ : kInf);
}

IterationStats WorkerProtocol::FinishPush() {
  const double now = Now();
  // What is left of the window streams on (return_after_share) or is left
  // in the accumulators.
  if (!(ReturnsAfterShare() && !plan_.done() && (now < deadline_ || HackFill()))) {
    transmitting_ = false;
    plan_ = Plan();
  }
  current_.transmit_seconds = now - push_started_;
  total_transmit_ += current_.transmit_seconds;
  for (OpenPush& p : open_pushes_) {
    if (p.phase != phase_) continue;
    p.ended = true;
  }
  CompletePushes();
  for (auto& [start, push] : pushes_done_) {
    push.age_seconds = now - start;
    current_.pushes.push_back(push);
  }
  pushes_done_.clear();
  current_.uplink_goodput = goodput_.rate();
  for (RowId r = 0; r < layout_.num_rows(); ++r) current_.rows_kept += state_.unpushed(r) > 0;
  IterationStats stats = current_;
  current_ = IterationStats();
  return stats;
}

bool WorkerProtocol::Uploaded() const { return active_ && values_next_ >= layout_.num_rows(); }

bool WorkerProtocol::FlushStep() {
  if (active_) {
    for (RowId r = 0; r < layout_.num_rows(); ++r) {
      if (!is_forced_[r] && Pushable(r)) {
        is_forced_[r] = true;
        forced_.push_back(r);
      }
    }
  }
  bool done = active_ && forced_.empty() && inflight_.empty();
  for (RowId r = 0; done && r < layout_.num_rows(); ++r) done = !Pushable(r);
  return done;
}

bool WorkerProtocol::SyncStep() {
  if (active_ && !flush_waiting_ && resync_rows_ == 0) {
    flushed_ = false;
    flush_waiting_ = true;
    progress_out_.push_back(MakeProgress(/*stalled=*/false, /*flush=*/true));
  }
  if (flush_waiting_ && flushed_) {
    flush_waiting_ = false;
    return true;
  }
  if (!active_) flush_waiting_ = false;  // ask again on the next stream
  return false;
}

}  // namespace rog
