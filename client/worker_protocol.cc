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
      replay_(opt_.replay_buffer_bytes, opt_.worker_id),
      forced_(layout_.num_rows()),
      ahead_(layout_.num_rows()) {
  push_.sent_phase.assign(layout_.num_rows(), 0);
  values_next_ = static_cast<RowId>(layout_.num_rows());
}

uint64_t WorkerProtocol::RowWireBytes(RowId row) const {
  return rog::RowWireBytes(terms_.codec, layout_.row(row).numel);
}

// The uplink's measured goodput (bytes/s); 0 without an estimate.
double WorkerProtocol::Goodput() const {
  return uplink_.goodput().has_estimate() ? uplink_.goodput().rate() : 0;
}

// This link's batch budget now (BatchBudget): a few milliseconds of its
// goodput.
uint64_t WorkerProtocol::BatchBytes() const {
  return BatchBudget(Goodput(), opt_.batch_seconds, opt_.batch_bytes);
}

// Unacknowledged bytes allowed (UplinkInFlight::Cap): `inflight_lead`
// seconds of goodput or the round trip, plus the largest batch
// (batch_bytes, not BatchBytes()).
uint64_t WorkerProtocol::InFlightCap() const {
  return uplink_.Cap(opt_.inflight_lead, opt_.batch_bytes);
}

// The window is open for rows that are not mandatory while what would be
// in flight with one more batch can still arrive before it closes (the
// deadline taper: without it the last batches overshoot by the whole
// in-flight allowance).
bool WorkerProtocol::WindowOpen(double now) const {
  return ArrivesBeforeDeadline(now, push_.deadline, uplink_.bytes(), BatchBytes(), Goodput());
}

// Whether the row has something a flush or a stalled peer needs: unpushed
// iterations, or (lossless codecs) updates kept across a rejoin. A lossy
// codec's residual rides along with the row's next push instead.
bool WorkerProtocol::Pushable(RowId row) const {
  return state_.unpushed(row) > 0 || (IsLossless(terms_.codec) && state_.HasResidual(row));
}

bool WorkerProtocol::PlanFinished(double now) const {
  return push_.plan.done() || (now >= push_.deadline && push_.plan.next >= push_.plan.mandatory);
}

pb::Progress WorkerProtocol::MakeProgress(bool stalled, bool flush) const {
  pb::Progress p;
  p.set_iteration(state_.clock());
  p.set_stalled(stalled);
  p.set_flush(flush);
  stats_.FillProgress(&p);
  p.set_uplink_goodput(uplink_.goodput().rate());
  return p;
}

bool WorkerProtocol::MayBegin() const {
  if (!active_ || values_next_ < layout_.num_rows() || resync_rows_ > 0 || !team_.ready) {
    return false;
  }
  if (team_.detached) return state_.clock() < team_.local_until;
  return (team_.released && team_.released_clock == state_.clock()) ||
         state_.HasAllUpTo(NeededVersion(state_.clock(), terms_.bound));
}

// Hello.row_digests: digests of the replica's rows, withholding every
// row that holds something of this worker's own rogd might lack (an
// accumulated update, a batch unacknowledged or not yet durable); rogd
// leaves the rows it holds equally out of the resync.
std::string WorkerProtocol::HelloRowDigests() const {
  std::vector<bool> withheld(layout_.num_rows(), false);
  uplink_.ForEach([&](const SentBatch& b) {
    for (RowId row : b.rows) withheld[row] = true;
  });
  replay_.MarkRows(&withheld);
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
  h.set_resume_token(terms_.token);
  h.set_last_acked_uplink_seq(uplink_.last_acked());
  h.set_last_applied_downlink_seq(down_.next_seq - 1);
  h.set_downlink_stream(down_.stream);
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
  goodbye_.due = true;
  goodbye_.reason = reason;
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
  const bool resumed = terms_.token != 0 && w.resume_token() == terms_.token;
  terms_.token = w.resume_token();
  terms_.policy = static_cast<SyncPolicy>(w.sync());
  terms_.bound = EffectiveBound(terms_.policy, w.staleness());
  terms_.mta = w.mta();
  terms_.codec = static_cast<Codec>(w.codec());
  terms_.team_size = w.team_size();
  terms_.model_wire_bytes = 0;
  for (RowId row = 0; row < layout_.num_rows(); ++row) {
    terms_.model_wire_bytes += RowWireBytes(row);
  }
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

// Uplink: what the server applied (up to `applied`) is done; the rest
// returns to the accumulators, newest first, and goes again with new seqs.
// A rogd restarted from a checkpoint after a crash applied less than it
// acknowledged: what it lost (the replay buffer's) returns the same way.
void WorkerProtocol::ReturnInFlight(uint64_t applied) {
  std::deque<SentBatch> unapplied = uplink_.Restart(applied, replay_.TakeLost(applied));
  for (auto it = unapplied.rbegin(); it != unapplied.rend(); ++it) {
    if (it->kind != pb::BATCH_KIND_UPDATE) continue;
    size_t at = it->decoded.size();
    for (size_t k = it->rows.size(); k-- > 0;) {
      const uint32_t numel = layout_.row(it->rows[k]).numel;
      at -= numel;
      state_.ReturnUplink(it->rows[k], absl::MakeConstSpan(it->decoded.data() + at, numel),
                          it->counts[k]);
    }
  }
  stats_.OnStreamLost(uplink_.min_rtt());
  forced_.Clear();
  ahead_.Clear();
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
  down_ = Downlink();
  down_.stream = w.stream();
  team_.ready = w.team_ready();
  team_.released = false;
  team_.stall_reported = false;
  team_.pause_reported = false;
  team_.stall = StallInfo();
  team_.window = w.window();
  flush_.flushed = false;
  // rogd repeats a detachment that still holds right after the welcome.
  team_.detached = false;
  active_ = true;
}

absl::Status WorkerProtocol::OnBatch(const pb::RowBatch& b) {
  if (b.seq() != down_.next_seq) {
    return absl::InternalError(
        absl::StrCat("downlink seq ", b.seq(), " where ", down_.next_seq, " was expected"));
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
      if (resync_rows_ > 0 && --resync_rows_ == 0) uplink_.ResyncDone();
    } else {
      state_.ApplyDownlink(row, decoded, version);
    }
  }
  ++down_.next_seq;
  const uint64_t bytes = b.ByteSizeLong();
  // A probe's padding (rogd measuring a detached worker's link) is not
  // row traffic; it is acknowledged all the same.
  stats_.OnReceived(rows->size(), bytes - std::min<uint64_t>(bytes, b.padding().size()),
                    b.payload().size());
  down_.ack_seq = b.seq();
  down_.ack_bytes += bytes;
  down_.ack_due = true;
  return absl::OkStatus();
}

// The values of a resync lack this worker's updates sent after
// `applied_seq`, still in flight: add them back to the replica.
void WorkerProtocol::AddBackInFlight(RowId row, uint64_t applied_seq, uint64_t version) {
  const uint32_t numel = layout_.row(row).numel;
  uplink_.ForEach([&](const SentBatch& b) {
    if (b.seq <= applied_seq || b.kind != pb::BATCH_KIND_UPDATE) return;
    size_t at = 0;
    for (RowId r : b.rows) {
      if (r == row) {
        state_.ApplyDownlink(row, absl::MakeConstSpan(b.decoded.data() + at, numel), version);
      }
      at += layout_.row(r).numel;
    }
  });
}

void WorkerProtocol::OnAck(const pb::Ack& a) {
  const double now = Now();
  for (SentBatch& b : uplink_.Acknowledge(a.seq(), a.bytes(), now)) {
    stats_.OnAcked(b, now);
    if (b.kind == pb::BATCH_KIND_UPDATE && b.seq > a.durable_seq()) {
      // Moved, not copied, unless a resync still needs the batch too.
      if (resync_rows_ > 0) {
        replay_.Keep(b, now);
      } else {
        replay_.Keep(std::move(b), now);
      }
    }
    if (resync_rows_ > 0) uplink_.KeepAckedInResync(std::move(b));
  }
  replay_.Forget(a.durable_seq());
  stats_.Complete(uplink_.min_rtt());
}

// Rows rogd asks for: a stalled peer's (forced) or ahead of a peer's need.
void WorkerProtocol::OnPushNow(const pb::PushNow& p) {
  for (uint32_t row : p.rows()) {
    if (row >= layout_.num_rows() || forced_.contains(row) || state_.unpushed(row) == 0) continue;
    if (p.ahead()) {
      ahead_.Push(row);
    } else {
      forced_.Push(row);
    }
  }
}

void WorkerProtocol::OnDirective(const pb::Directive& d) {
  switch (d.kind_case()) {
    case pb::Directive::kPushNow:
      OnPushNow(d.push_now());
      break;
    case pb::Directive::kWindow:
      team_.window = d.window();
      break;
    case pb::Directive::kStall:
      OnStall(d.stall());
      break;
    case pb::Directive::kRelease:
      team_.ready = true;
      if (d.release().flushed()) {
        flush_.flushed = true;
      } else {
        team_.released = true;
        team_.released_clock = d.release().iteration();
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
      if (goodbye_.said) break;  // our own Close
      spdlog::warn("worker {}: evicted by rogd: {}", opt_.worker_id, d.evicted().reason());
      break;
    default:
      break;
  }
}

// Why rogd holds this worker at the bound (or the team), for WaitReason.
void WorkerProtocol::OnStall(const pb::Stall& s) {
  team_.stall.iteration = s.iteration();
  team_.stall.rows.assign(s.rows().begin(), s.rows().end());
  team_.stall.missing_rows = s.missing_rows();
  team_.stall.waiting_for.assign(s.waiting_for().begin(), s.waiting_for().end());
  team_.stall.reason =
      s.missing_rows() > 0
          ? absl::StrCat("at the staleness bound before iteration ", s.iteration() + 1, ": ",
                         s.missing_rows(), " rows lack updates of ",
                         absl::StrJoin(s.waiting_for(), ", "))
          : absl::StrCat("waiting before iteration ", s.iteration() + 1, ": ",
                         absl::StrJoin(s.waiting_for(), ", "));
  spdlog::debug("worker {}: {}", opt_.worker_id, team_.stall.reason);
}

// Team patience: outside the bound until rogd reattaches it.
void WorkerProtocol::OnDetached(const pb::Detached& d) {
  if (!team_.detached) ++team_.detaches;
  team_.detached = true;
  team_.pause_reported = false;  // a repeated detachment (reconnect) wants it again
  // The local steps count from the clock rogd detached it at, which an
  // iteration under way when the directive arrived has passed already (a
  // rogd that sends no clock: from ours).
  team_.local_until = (d.iteration() > 0 ? d.iteration() : state_.clock()) + d.local_steps();
  team_.detach_reason = d.reason();
  const uint64_t left = team_.local_until > state_.clock() ? team_.local_until - state_.clock() : 0;
  spdlog::warn("worker {}: detached from the team by rogd: {}; {}", opt_.worker_id,
               team_.detach_reason,
               left > 0 ? absl::StrCat("training on its own for up to ", left, " iterations")
                        : std::string("training pauses until the link recovers"));
}

void WorkerProtocol::OnReattached(const pb::Reattached& r) {
  if (!team_.detached) return;
  team_.detached = false;
  team_.released = false;
  team_.stall_reported = false;
  team_.stall = StallInfo();
  if (r.iteration() > state_.clock()) state_.Rebase(r.iteration());
  spdlog::info("worker {}: reattached to the team at iteration {}: {}", opt_.worker_id,
               state_.clock(), r.reason());
}

// Forms the next uplink batch into *m; false when nothing may go now.
bool WorkerProtocol::FormUplink(pb::WorkerMessage* m) {
  if (uplink_.bytes() >= InFlightCap()) return false;
  pb::RowBatch* b = m->mutable_batch();
  SentBatch sent;
  if (values_next_ < layout_.num_rows()) {
    FillValues(&sent, b->mutable_payload());
    b->set_codec(pb::CODEC_FP32);
  } else {
    if (!FillUpdates(&sent, b->mutable_payload())) return false;
    b->set_codec(static_cast<pb::Codec>(terms_.codec));
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
  BatchFill fill(layout_, terms_.codec, BatchBytes());
  // Rows a stalled worker waits for go first, whatever the window.
  while (!forced_.empty() && fill.Fits(forced_.front())) {
    const RowId row = forced_.front();
    forced_.PopFront();
    if (Pushable(row)) fill.Add(row);
  }
  if (team_.detached) {
    // Detached: everything it holds, as fast as the link allows.
    for (RowId row = 0; row < layout_.num_rows(); ++row) {
      if (fill.Has(row) || !Pushable(row)) continue;
      if (!fill.Fits(row)) break;
      fill.Add(row);
    }
  }
  if (push_.transmitting && !ahead_.empty() && WindowOpen(Now())) {
    // What a computing peer will need next (PushNow.ahead), before the
    // plan's rows, while the window is open.
    while (!ahead_.empty()) {
      const RowId row = ahead_.front();
      if (!fill.Has(row) && Pushable(row)) {
        if (!fill.Fits(row)) break;
        fill.Add(row);
      }
      ahead_.PopFront();
    }
  }
  if (push_.transmitting) {
    FillFromPlan(&push_.plan, WindowOpen(Now()), push_.speculate, &fill, [&](RowId row) {
      return push_.sent_phase[row] == push_.phase ||
             (state_.unpushed(row) == 0 && !state_.HasResidual(row));
    });
  }
  if (fill.empty()) return false;
  sent->rows = fill.Take();
  sent->kind = pb::BATCH_KIND_UPDATE;
  for (RowId row : sent->rows) {
    const uint32_t numel = layout_.row(row).numel;
    const size_t at = sent->decoded.size();
    sent->decoded.resize(at + numel);
    sent->counts.push_back(state_.TakeUplink(row, terms_.codec, payload,
                                             absl::MakeSpan(sent->decoded.data() + at, numel)));
    push_.sent_phase[row] = push_.phase;
  }
  return true;
}

// Numbers, indexes and accounts for a formed batch, and keeps it in flight.
void WorkerProtocol::FinishBatch(SentBatch sent, pb::RowBatch* b) {
  b->set_kind(sent.kind);
  sent.seq = uplink_.TakeSeq();
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
  sent.phase = push_.phase;
  sent.sent_at = Now();
  if (push_.transmitting) {
    sent.in_push = true;
    stats_.OnSent(sent, b->payload().size());
  }
  uplink_.Send(std::move(sent), Now());
}

// Collects what the sender writes next; empty when there is nothing.
std::vector<pb::WorkerMessage> WorkerProtocol::TakeOutgoing() {
  std::vector<pb::WorkerMessage> out;
  if (down_.ack_due) {
    pb::WorkerMessage m;
    m.mutable_ack()->set_seq(down_.ack_seq);
    m.mutable_ack()->set_bytes(down_.ack_bytes);
    down_.ack_bytes = 0;
    down_.ack_due = false;
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
  if (out.empty() && goodbye_.due && uplink_.empty()) {
    pb::WorkerMessage m;
    m.mutable_goodbye()->set_reason(goodbye_.reason);
    goodbye_.due = false;
    goodbye_.said = true;
    out.push_back(std::move(m));
  }
  return out;
}

bool WorkerProtocol::ReportWait() {
  if (!active_ || values_next_ < layout_.num_rows() || resync_rows_ > 0) return false;
  // Detached and out of local steps: rogd reattaches only a worker that
  // said it pauses, at the clock rogd holds for it, so that the clock rogd
  // moves it to credits no iteration this worker is still computing.
  bool& reported = team_.detached ? team_.pause_reported : team_.stall_reported;
  if (reported) return false;
  reported = true;
  progress_out_.push_back(MakeProgress(/*stalled=*/true, /*flush=*/false));
  progress_out_.back().set_paused(team_.detached);
  return true;
}

std::string WorkerProtocol::WaitReason() const {
  if (values_next_ < layout_.num_rows()) return "uploading the initial model";
  if (resync_rows_ > 0) {
    return absl::StrCat("receiving the model from rogd (", layout_.num_rows() - resync_rows_,
                        " of ", layout_.num_rows(), " rows)");
  }
  if (team_.detached) {
    return absl::StrCat("detached from the team by rogd (", team_.detach_reason,
                        "); training pauses until rogd reattaches this worker");
  }
  if (!team_.stall.reason.empty()) return team_.stall.reason;
  if (!team_.ready) return "waiting for the team to join";
  return absl::StrCat("waiting at the staleness bound before iteration ", state_.clock() + 1);
}

void WorkerProtocol::CountTimedOutWait(double stalled_seconds, double detached_seconds) {
  stats_.CountTimedOutWait(stalled_seconds, detached_seconds);
}

void WorkerProtocol::Begin(double t0, double now, bool waited, double detached_wait,
                           absl::Span<float> params) {
  stats_.Begin(t0, now, waited, detached_wait, team_.detached);
  team_.released = false;
  team_.stall_reported = false;
  team_.pause_reported = false;
  team_.stall = StallInfo();
  const std::vector<float>& replica = state_.replica();
  std::copy(replica.begin(), replica.end(), params.begin());
  if (opt_.stale_weight) {
    row_weights_.resize(layout_.num_rows());
    for (RowId row = 0; row < layout_.num_rows(); ++row) {
      row_weights_[row] =
          static_cast<float>(StaleWeight(state_.clock(), state_.known_version(row)));
    }
  }
  in_iteration_ = true;
}

void WorkerProtocol::StartPush(absl::Span<const float> update) {
  in_iteration_ = false;
  const double t0 = Now();
  stats_.EndCompute(t0);
  if (row_weights_.empty()) {
    state_.ApplyLocalUpdate(update);
  } else {
    state_.ApplyLocalUpdate(update, row_weights_);
  }
  // The plan: every row with something to push (a lossy codec's residual
  // too), mandatory first.
  const bool rog = terms_.policy == SyncPolicy::kRog;
  ++push_.phase;
  push_.plan.Reset(
      SelectRows(UplinkCandidates(terms_.policy, terms_.bound, state_, terms_.codec, layout_),
                 terms_.mta, terms_.model_wire_bytes));
  const double window_seconds = rog ? team_.window.seconds() : 0;
  push_.speculate = MaySpeculate(terms_.policy, state_.clock(), team_.window.min_iteration()) ||
                    (opt_.send_whole_when_it_fits &&
                     SendsWhole(push_.plan.bytes_left(), InFlightCap(), Goodput(), window_seconds));
  push_.deadline = window_seconds > 0 ? t0 + window_seconds : kInf;
  stats_.OpenPush(push_.phase, t0, push_.deadline, state_.clock(), window_seconds);
  push_.transmitting = true;
  progress_out_.push_back(MakeProgress(/*stalled=*/false, /*flush=*/false));
}

bool WorkerProtocol::PushEnds(double now) {
  // Detached (now or during the push): what is left drains in the
  // background; the training loop does not wait for the link.
  if (team_.detached) return true;
  if (!active_) {
    stats_.NoteDisconnected();
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
  return opt_.return_after_share && terms_.policy == SyncPolicy::kRog;
}

// Under return_after_share: the rows EndIteration waits for are on their
// way (the mandatory ones; with share_in_background off, the MTA share's too).
bool WorkerProtocol::ReturnPointPassed() const {
  const Plan& plan = push_.plan;
  return plan.next >=
         (opt_.share_in_background ? plan.mandatory : std::max(plan.mandatory, plan.mta_end));
}

double WorkerProtocol::PushWakeAt(double now) const {
  // The poll notices the window's end and the taper closing it.
  return std::min(now + kPushPoll, push_.deadline > now ? push_.deadline : kInf);
}

IterationStats WorkerProtocol::FinishPush() {
  const double now = Now();
  // What is left of the window streams on (return_after_share) or is left
  // in the accumulators.
  if (!(ReturnsAfterShare() && !push_.plan.done() && now < push_.deadline)) {
    push_.transmitting = false;
    push_.plan = Plan();
  }
  uint64_t rows_kept = 0;
  for (RowId r = 0; r < layout_.num_rows(); ++r) rows_kept += state_.unpushed(r) > 0;
  return stats_.FinishPush(now, push_.phase, uplink_.goodput().rate(), rows_kept,
                           uplink_.min_rtt());
}

bool WorkerProtocol::Uploaded() const { return active_ && values_next_ >= layout_.num_rows(); }

double WorkerProtocol::StartDrain() {
  const double keep = DrainKeep(terms_.policy, opt_.drain, terms_.team_size);
  if (keep < 1) {
    state_.KeepHeld(keep);
    spdlog::info("worker {}: the final flush pushes 1/{} of what it holds (the drain averaged)",
                 opt_.worker_id, terms_.team_size);
  }
  return keep;
}

bool WorkerProtocol::FlushStep() {
  if (active_) {
    for (RowId r = 0; r < layout_.num_rows(); ++r) {
      if (!forced_.contains(r) && Pushable(r)) forced_.Push(r);
    }
  }
  bool done = active_ && forced_.empty() && uplink_.empty();
  for (RowId r = 0; done && r < layout_.num_rows(); ++r) done = !Pushable(r);
  return done;
}

bool WorkerProtocol::SyncStep() {
  if (active_ && !flush_.waiting && resync_rows_ == 0) {
    flush_.flushed = false;
    flush_.waiting = true;
    progress_out_.push_back(MakeProgress(/*stalled=*/false, /*flush=*/true));
  }
  if (flush_.waiting && flush_.flushed) {
    flush_.waiting = false;
    return true;
  }
  if (!active_) flush_.waiting = false;  // ask again on the next stream
  return false;
}

}  // namespace rog
