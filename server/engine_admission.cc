// The engine core's worker registry: hellos (a first worker bringing the
// model, a new worker, a resume within the lease, a rejoin), the team
// forming, streams that end, leases and eviction.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log_limiter.h"
#include "common/row_digest.h"
#include "common/uplink_rules.h"
#include "proto/convert.h"
#include "server/engine_impl.h"
#include "spdlog/spdlog.h"

namespace rog {

using engine_internal::kReplaced;
using engine_internal::StateBytes;
using engine_internal::Worker;
using engine_internal::WState;

namespace {

// Hello.sdk_version: for logs and `rogctl workers`, kept per worker record.
constexpr size_t kMaxSdkVersionBytes = 128;

}  // namespace

// Everything about a hello that can be checked before anything changes, so
// that a bad hello leaves no trace: its layout (bounded before anything is
// allocated for it: a hello of a few bytes can describe petabytes), its
// SDK version string, its clock, its fingerprint, its row digests, and
// while there is no model whether the model's state fits --max_state_bytes.
absl::StatusOr<EngineCore::Impl::CheckedHello> EngineCore::Impl::CheckHello(
    const pb::Hello& hello, Rejection* reason) const {
  *reason = Rejection::kBadHello;
  absl::StatusOr<Layout> parsed = LayoutFromProto(hello.layout(), opt.layout_limits);
  if (!parsed.ok()) {
    if (absl::IsResourceExhausted(parsed.status())) {
      *reason = Rejection::kModelTooLarge;
      return absl::ResourceExhaustedError(
          absl::StrCat("hello from '", hello.worker_id(), "': ", parsed.status().message(),
                       " (rogd --max_model_bytes=", opt.layout_limits.max_model_bytes,
                       ", --max_rows=", opt.layout_limits.max_rows,
                       "): register the model's parameters only, or raise the limit"));
    }
    return absl::InvalidArgumentError(absl::StrCat("hello from '", hello.worker_id(),
                                                   "': bad layout: ", parsed.status().message()));
  }
  if (hello.sdk_version().size() > kMaxSdkVersionBytes || !PrintableAscii(hello.sdk_version())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hello from '", hello.worker_id(), "': sdk_version '",
        ClientText(hello.sdk_version(), kMaxSdkVersionBytes), "' must be at most ",
        kMaxSdkVersionBytes,
        " printable ASCII characters: send the SDK's version string (the ROG SDK sends its "
        "release, e.g. ",
        kRogVersion, ")"));
  }
  const Worker* known = workers.Find(hello.worker_id());
  const uint64_t known_clock = known == nullptr ? 0 : known->clock();
  if (absl::Status clock = CheckHelloClock(hello.iteration(), known_clock); !clock.ok()) {
    *reason = Rejection::kBadClock;
    return absl::InvalidArgumentError(
        absl::StrCat("hello from '", hello.worker_id(), "': ", clock.message()));
  }
  if (parsed->fingerprint() != hello.layout_fingerprint()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hello from '%s': layout_fingerprint %016x does not match its layout (%016x); "
        "compute it with pb::Layout::fingerprint()",
        hello.worker_id(), hello.layout_fingerprint(), parsed->fingerprint()));
  }
  CheckedHello checked{*std::move(parsed), {}};
  if (model.complete() && checked.layout.fingerprint() == model.layout().fingerprint()) {
    // A new id that the team has no room for is refused before its row
    // digests cost a pass over the whole model.
    if (known == nullptr) {
      if (absl::Status room = RoomForNewWorker(hello, reason); !room.ok()) return room;
    }
    absl::StatusOr<std::vector<bool>> in_sync =
        RowsInSync(model.layout(), model.state().global(), hello.row_digests());
    if (!in_sync.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("hello from '", hello.worker_id(), "': ", in_sync.status().message()));
    }
    checked.in_sync = *std::move(in_sync);
  }
  // Every hello while rogd has no model, the first worker's again among
  // them: a second hello with another layout starts the model over.
  if (!model.complete()) {
    const uint64_t team = std::max<uint64_t>(opt.team_size, 1);
    const uint64_t need = StateBytes(checked.layout, team);
    if (need > opt.max_state_bytes) {
      *reason = Rejection::kModelTooLarge;
      return absl::ResourceExhaustedError(absl::StrCat(
          "hello from '", hello.worker_id(), "': a model of ", checked.layout.total_numel() * 4,
          " bytes in ", checked.layout.num_rows(), " rows needs ", need, " bytes of state for ",
          team, " workers (a copy per worker, versions per row and worker); rogd may use ",
          opt.max_state_bytes,
          " (--max_state_bytes): use fewer rows (a larger "
          "min_split_numel) or a smaller model, or raise the limit"));
    }
  }
  return checked;
}

absl::StatusOr<Admission> EngineCore::Impl::OnHello(std::shared_ptr<Outbox> outbox,
                                                    const pb::Hello& hello, const std::string& peer,
                                                    Rejection* reason) {
  absl::StatusOr<CheckedHello> checked = CheckHello(hello, reason);
  if (!checked.ok()) return checked.status();
  const uint64_t session = workers.NewSession();
  pb::Welcome welcome;
  welcome.set_sync(static_cast<pb::SyncPolicy>(opt.policy));
  welcome.set_staleness(opt.staleness);
  welcome.set_mta(mta);
  welcome.set_codec(static_cast<pb::Codec>(opt.codec));
  welcome.set_max_message_bytes(opt.max_message_bytes);
  Admission admission;
  admission.session = session;
  Worker* known = workers.Find(hello.worker_id());
  absl::StatusOr<Worker*> r =
      model.complete()
          ? AdmitMember(hello, *std::move(checked), known, peer, &welcome, reason)
          : AdmitFirst(hello, std::move(checked->layout), known, peer, &welcome, &admission);
  if (!r.ok()) return r.status();
  Connect(**r, session, std::move(outbox), hello, peer, std::move(welcome));
  admission.layout = model.shared_layout();
  admission.next_uplink_seq = (*r)->uplink().last_applied() + 1;
  return admission;
}

// No model yet: the first worker brings it (a worker that said hello before
// and comes again starts over).
absl::StatusOr<Worker*> EngineCore::Impl::AdmitFirst(const pb::Hello& hello, Layout parsed,
                                                     Worker* known, const std::string& peer,
                                                     pb::Welcome* welcome, Admission* admission) {
  if (!workers.empty() && known == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "the model is still arriving from worker '", workers.at(0).id(),
        "'; this worker will be admitted once it is complete (retrying is automatic)"));
  }
  if (known != nullptr) workers.Replace(*known, absl::AbortedError(kReplaced));
  workers.Clear();
  model.BeginUpload(std::move(parsed));
  Worker* r = &workers.Add(hello.worker_id(), 0, hello.iteration(), model.layout().num_rows());
  r->plan().SkipResync();  // it brings the model
  welcome->set_send_initial_values(true);
  admission->accepts_values = true;
  spdlog::info("worker {} connected from {}: it brings the model ({} tensors, {} rows, {} bytes)",
               r->id(), peer, model.layout().tensors().size(), model.layout().num_rows(),
               model.layout().total_numel() * 4);
  return r;
}

// A worker of a team whose model rogd holds: a resume within the lease (its
// downlink goes on where it stopped, when it can), a rejoin, or a new
// worker; all but a resume get the model again, less the rows they hold.
absl::StatusOr<Worker*> EngineCore::Impl::AdmitMember(const pb::Hello& hello, CheckedHello checked,
                                                      Worker* known, const std::string& peer,
                                                      pb::Welcome* welcome, Rejection* reason) {
  if (checked.layout.fingerprint() != model.layout().fingerprint()) {
    *reason = Rejection::kLayoutMismatch;
    return absl::FailedPreconditionError(absl::StrFormat(
        "worker '%s' registers a model layout (fingerprint %016x, %d tensors, %d rows) that "
        "differs from the model rogd holds (fingerprint %016x, %d tensors, %d rows): %s. Every "
        "worker must register the same tensors with the same shapes in the same order "
        "(see `rogctl status` for the server's layout)",
        hello.worker_id(), checked.layout.fingerprint(), checked.layout.tensors().size(),
        checked.layout.num_rows(), model.layout().fingerprint(), model.layout().tensors().size(),
        model.layout().num_rows(),
        DescribeLayoutDifference(checked.layout, model.layout(), "the worker's model", "rogd's")));
  }
  Worker* r = known;
  bool resumed = false;
  if (r != nullptr && r->state() != WState::kEvicted && hello.resume_token() != 0 &&
      hello.resume_token() == r->token()) {
    Resume(*r, hello, peer);
    resumed = true;
  } else if (r != nullptr) {
    Rejoin(*r, hello, peer);
  } else {
    absl::StatusOr<Worker*> added = AddWorker(hello, peer, reason);
    if (!added.ok()) return added.status();
    r = *added;
  }
  if (!resumed || !ResumeDownlink(*r, hello)) StartResync(*r, std::move(checked.in_sync), welcome);
  return r;
}

// Resume: same incarnation, its state kept within the lease.
void EngineCore::Impl::Resume(Worker& r, const pb::Hello& hello, const std::string& peer) {
  if (r.outbox()) r.downlink().EndStream(r.session());
  workers.Replace(r, absl::AbortedError(kReplaced));
  r.AdvanceClock(hello.iteration());
  spdlog::info("worker {} reconnected from {} at iteration {} (resumes after uplink seq {})",
               r.id(), peer, r.clock(), r.uplink().last_applied());
}

// Rejoin: evicted, or a new incarnation (its process restarted).
void EngineCore::Impl::Rejoin(Worker& r, const pb::Hello& hello, const std::string& peer) {
  const uint64_t team_min = workers.MinAttachedClock(&r);
  const bool alone = team_min == std::numeric_limits<uint64_t>::max();
  workers.Replace(r, absl::AbortedError(
                         "replaced by a new incarnation of the same worker (its process restarted, "
                         "or a second process runs under this worker id)"));
  const bool was_evicted = r.state() == WState::kEvicted;
  if (was_evicted) model.state().SetActive(r.index(), true);
  // The uplink seqs go on: a worker that comes back after eviction drops
  // what was applied before it and resends the rest, exactly once.
  // Never below its own clock: its folded updates count iterations up
  // to there, and its new ones must count after them (a new
  // incarnation starting at the team's clock below that would push
  // iterations rogd already holds).
  workers.Rejoin(r, alone ? std::max(r.clock(), hello.iteration()) : std::max(team_min, r.clock()),
                 &model.state());
  spdlog::info("worker {} rejoined from {} ({}) at iteration {}", r.id(), peer,
               was_evicted ? "was evicted" : "new incarnation", r.clock());
}

// Whether a worker id rogd has no record of may have one: within
// --max_workers and --max_state_bytes.
absl::Status EngineCore::Impl::RoomForNewWorker(const pb::Hello& hello, Rejection* reason) const {
  if (workers.size() < opt.max_workers &&
      StateBytes(model.layout(), workers.size() + 1) > opt.max_state_bytes) {
    *reason = Rejection::kTooManyWorkers;
    return absl::ResourceExhaustedError(absl::StrCat(
        "'", hello.worker_id(), "' would be worker record ", workers.size() + 1,
        ", and the model state would then need ", StateBytes(model.layout(), workers.size() + 1),
        " bytes (a copy of the model per worker, versions per row and worker); rogd may use ",
        opt.max_state_bytes,
        " (--max_state_bytes): restart robots under their old worker ids, or raise the "
        "limit"));
  }
  if (workers.size() >= opt.max_workers) {
    *reason = Rejection::kTooManyWorkers;
    return absl::ResourceExhaustedError(
        absl::StrCat("rogd keeps ", workers.size(),
                     " worker records (--max_workers), evicted ones "
                     "included, and '",
                     hello.worker_id(),
                     "' would be a new one: restart robots under "
                     "their old worker ids (a stable id, e.g. the host name, rejoins), or raise "
                     "--max_workers"));
  }
  return absl::OkStatus();
}

// A new worker record (RoomForNewWorker permitting); it starts at the
// slowest attached clock (its own, alone).
absl::StatusOr<Worker*> EngineCore::Impl::AddWorker(const pb::Hello& hello, const std::string& peer,
                                                    Rejection* reason) {
  if (absl::Status room = RoomForNewWorker(hello, reason); !room.ok()) return room;
  const uint64_t team_min = workers.MinAttachedClock();
  const bool alone = team_min == std::numeric_limits<uint64_t>::max();
  const uint64_t clock = alone ? hello.iteration() : team_min;
  Worker* r = &workers.Add(hello.worker_id(), model.state().AddWorker(clock), clock,
                           model.layout().num_rows());
  // Its versions start at its clock (ServerState::AddWorker): credited.
  r->RaiseClock(clock, &model.state());
  r->Joined(Now());
  spdlog::info("worker {} joined from {} at iteration {} (team of {})", r->id(), peer, r->clock(),
               workers.size());
  return r;
}

// The admitted worker's stream from now on: its welcome, then whatever is
// due (detachment, the team's release, a stall plan, rows).
void EngineCore::Impl::Connect(Worker& r, uint64_t session, std::shared_ptr<Outbox> outbox,
                               const pb::Hello& hello, const std::string& peer,
                               pb::Welcome welcome) {
  workers.Connect(r, session, std::move(outbox), peer, hello.sdk_version(), Now());
  // A new stream: nothing in flight, nothing kept for a resume (the
  // hello's ResumeDownlink is done), no window.
  r.downlink().Reset();
  r.stall().Clear(Now());
  r.asks().Reset(model.layout().num_rows(), hello.honours_push_ahead());
  r.plan().Reset();
  welcome.set_resume_token(r.token());
  welcome.set_stream(session);
  welcome.set_iteration(r.clock());
  welcome.set_last_applied_uplink_seq(r.uplink().last_applied());
  welcome.set_team_ready(workers.team_ready());
  welcome.set_team_size(static_cast<uint32_t>(std::max<size_t>(opt.team_size, workers.Members())));
  if (model.complete()) *welcome.mutable_window() = CurrentWindow(r.clock() + 1);
  pb::ServerMessage m;
  *m.mutable_welcome() = std::move(welcome);
  r.outbox()->Send(std::move(m));
  // Detachment outlives a reconnect: the link that caused it is the same.
  if (r.detach().detached()) SendDetached(r);
  // After the welcome: the team's Release must follow it on this stream.
  CheckTeamReady();
  ReplanStalls();
  Pump(r);
}

void EngineCore::Impl::ModelComplete() {
  model.CompleteUpload();
  Worker& r = workers.at(0);
  r.Joined(Now());
  r.RaiseClock(r.clock(), &model.state());
  spdlog::info("model received from worker {}: {} rows, {} bytes", r.id(),
               model.layout().num_rows(), model.layout().total_numel() * 4);
  CheckTeamReady();
}

void EngineCore::Impl::CheckTeamReady() {
  if (!model.complete() || !workers.FormTeam(opt.team_size, Now())) return;
  spdlog::info("team ready: {} workers joined, training starts", workers.Members());
  for (auto& r : workers) {
    if (r->state() != WState::kConnected) continue;
    r->stall().AnnounceAgain();
    SendDirective(*r, [&](pb::Directive* d) { d->mutable_release()->set_iteration(r->clock()); });
  }
}

void EngineCore::Impl::Evict(Worker& r, const std::string& reason, bool left) {
  if (r.state() == WState::kEvicted) return;
  if (left) {
    spdlog::info("worker {} left at iteration {}: {}", r.id(), r.clock(), reason);
  } else {
    spdlog::info("evicted worker {} at iteration {}: {}", r.id(), r.clock(), reason);
  }
  r.detach().EndDetachment(Now());
  if (model.complete()) model.state().SetActive(r.index(), false);
  SendDirective(r, [&](pb::Directive* d) { d->mutable_evicted()->set_reason(reason); });
  workers.Evict(r, left ? absl::OkStatus()
                        : absl::AbortedError(absl::StrCat("rogd evicted this worker: ", reason)));
  r.stall().Clear(Now());
  r.downlink().Reset();  // its copy is gone; a rejoin resyncs
  ReplanStalls();
  PumpAll();
}

void EngineCore::Impl::OnClosed(uint64_t session) {
  Worker* r = workers.Closed(session);
  if (r == nullptr) return;  // not its worker's current stream
  r->downlink().EndStream(session);
  if (!model.complete()) {
    spdlog::info(
        "worker {} disconnected before its model arrived; waiting for a worker to bring it",
        r->id());
    workers.Clear();
    model.DropUpload();
    return;
  }
  if (r->state() == WState::kConnected) {
    r->Disconnect(Now());
    spdlog::info("worker {} disconnected at iteration {}; state kept for {} s", r->id(), r->clock(),
                 opt.lease_seconds);
  }
}

}  // namespace rog
