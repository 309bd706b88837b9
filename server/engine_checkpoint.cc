// The engine's checkpoints (server/engine_checkpoint.h).
#include "server/engine_checkpoint.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/uplink_rules.h"
#include "server/checkpoint.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace engine_internal {
namespace {

// A checkpoint's model state (global rows, versions, each worker's pending
// copy and copy versions) into *parts; "" or why the file does not fit
// together. Every size is checked against what the file holds before
// anything is allocated for it: rows × workers in 64 bits (rows < 2^24,
// workers < 2^32), never cast to int, so a small file cannot ask for
// gigabytes.
std::string ReadParts(const pb::Checkpoint& c, size_t rows, ServerState::Parts* parts) {
  const size_t n = c.workers();
  if (!BytesToFloats(c.global(), &parts->global)) return "global rows are not fp32";
  const uint64_t cells = static_cast<uint64_t>(rows) * n;
  if (static_cast<uint64_t>(c.versions_size()) != cells) {
    return absl::StrCat("version storage holds ", c.versions_size(), " entries, ", rows, " rows × ",
                        n, " workers need ", cells);
  }
  if (static_cast<uint64_t>(c.worker_size()) != n) return "worker records and team size differ";
  for (const pb::CheckpointWorker& cw : c.worker()) {
    if (static_cast<uint64_t>(cw.copy_versions_size()) != cells) {
      return absl::StrCat("worker '", cw.worker_id(), "' copy versions");
    }
    if (cw.index() >= n) return absl::StrCat("worker '", cw.worker_id(), "' index");
  }
  parts->versions = VersionStore(rows, n);
  for (RowId row = 0; row < rows; ++row) {
    for (size_t w = 0; w < n; ++w) parts->versions.Set(row, w, c.versions(row * n + w));
  }
  parts->pending.resize(n);
  parts->copies.assign(n, VersionStore(rows, n));
  std::vector<bool> seen(n, false);
  for (const pb::CheckpointWorker& cw : c.worker()) {
    const size_t w = cw.index();
    if (seen[w]) return absl::StrCat("worker '", cw.worker_id(), "' index");
    seen[w] = true;
    if (!BytesToFloats(cw.pending(), &parts->pending[w])) return "pending copy";
    for (RowId row = 0; row < rows; ++row) {
      for (size_t q = 0; q < n; ++q) parts->copies[w].Set(row, q, cw.copy_versions(row * n + q));
    }
  }
  return "";
}

// A checkpoint's worker records, each disconnected (or evicted) as of
// `now`, with its lease running; "" or why they do not fit together.
std::string ReadWorkerRecords(const pb::Checkpoint& c, size_t rows, double now,
                              WorkerRegistry::Records* recs) {
  for (const pb::CheckpointWorker& cw : c.worker()) {
    if (cw.clock() > kMaxClock) return absl::StrCat("worker '", cw.worker_id(), "' clock");
    (*recs)[cw.index()] = Worker::FromCheckpoint(cw, rows, now);
  }
  return "";
}

}  // namespace

bool Checkpointer::Due(double now) const {
  return opt_.checkpoint_interval > 0 && !opt_.checkpoint_path.empty() &&
         now - last_attempt_ >= opt_.checkpoint_interval;
}

absl::StatusOr<pb::CheckpointReply> Checkpointer::Write(const ModelStore& model,
                                                        WorkerRegistry& workers) {
  last_attempt_ = Now();
  if (opt_.checkpoint_path.empty()) {
    return absl::FailedPreconditionError(
        "rogd runs without --checkpoint_dir; restart it with one to write checkpoints");
  }
  if (!model.complete()) {
    return absl::FailedPreconditionError("no model yet: nothing to checkpoint");
  }
  const double t0 = Now();
  pb::Checkpoint c;
  c.set_unix_time(opt_.clock->UnixNow());
  *c.mutable_layout() = LayoutToProto(model.layout());
  c.set_sync(static_cast<pb::SyncPolicy>(opt_.policy));
  c.set_staleness(opt_.staleness);
  c.set_codec(static_cast<pb::Codec>(opt_.codec));
  c.set_team_ready(workers.team_ready());
  // Each part of the exported copy is let go once it is in the message, so
  // that the state is held about twice, not three times.
  ServerState::Parts parts = model.state().Export();
  c.set_global(FloatsToBytes(parts.global));
  std::vector<float>().swap(parts.global);
  c.set_workers(static_cast<uint32_t>(parts.versions.num_workers()));
  for (uint64_t v : parts.versions.raw()) c.add_versions(v);
  for (const auto& r : workers) {
    pb::CheckpointWorker* w = c.add_worker();
    r->ToCheckpoint(w);
    w->set_pending(FloatsToBytes(parts.pending[r->index()]));
    std::vector<float>().swap(parts.pending[r->index()]);
    for (uint64_t v : parts.copies[r->index()].raw()) w->add_copy_versions(v);
    parts.copies[r->index()] = VersionStore();
  }
  const double unix_time = c.unix_time();
  absl::StatusOr<uint64_t> bytes = WriteCheckpoint(opt_.checkpoint_path, std::move(c));
  if (!bytes.ok()) return bytes.status();
  for (auto& r : workers) r->uplink().MarkDurable();
  last_unix_ = unix_time;
  last_path_ = opt_.checkpoint_path;
  pb::CheckpointReply reply;
  reply.set_path(opt_.checkpoint_path);
  reply.set_bytes(*bytes);
  reply.set_seconds(Now() - t0);
  spdlog::info("checkpoint written: {} ({} bytes, {:.3f} s)", reply.path(), reply.bytes(),
               reply.seconds());
  return reply;
}

absl::Status Checkpointer::Restore(const std::string& path, ModelStore* model,
                                   WorkerRegistry* workers) {
  absl::StatusOr<pb::Checkpoint> read = ReadCheckpoint(path);
  if (!read.ok()) return read.status();
  const pb::Checkpoint& c = *read;
  const auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path, " does not fit together: ", why,
                                            ". Restore a good copy, or move it away."));
  };
  absl::StatusOr<Layout> parsed = LayoutFromProto(c.layout());
  if (!parsed.ok()) return bad(absl::StrCat("bad layout: ", parsed.status().message()));
  auto restored_layout = std::make_shared<const Layout>(*std::move(parsed));
  const size_t rows = restored_layout->num_rows();
  const size_t n = c.workers();
  ServerState::Parts parts;
  // ReadParts checks the team size against the worker records the file
  // holds: only then is it a size to allocate from.
  if (std::string why = ReadParts(c, rows, &parts); !why.empty()) return bad(why);
  WorkerRegistry::Records recs(n);
  if (std::string why = ReadWorkerRecords(c, rows, Now(), &recs); !why.empty()) return bad(why);
  absl::StatusOr<std::unique_ptr<ServerState>> s =
      ServerState::Restore(*restored_layout, std::move(parts));
  if (!s.ok()) return bad(std::string(s.status().message()));
  model->Restore(std::move(restored_layout), *std::move(s));
  workers->Restore(std::move(recs), c.team_ready());
  last_unix_ = c.unix_time();
  last_path_ = path;
  spdlog::info("restored checkpoint {}: {} rows, {} workers (they have {} s to reconnect)", path,
               rows, n, opt_.lease_seconds);
  if (c.sync() != static_cast<pb::SyncPolicy>(opt_.policy) || c.staleness() != opt_.staleness ||
      c.codec() != static_cast<pb::Codec>(opt_.codec)) {
    spdlog::warn(
        "checkpoint {} was written under sync={} S={} codec={}; continuing under this "
        "rogd's flags (sync={} S={} codec={})",
        path, pb::SyncPolicy_Name(c.sync()), c.staleness(), pb::Codec_Name(c.codec()),
        std::string(SyncPolicyName(opt_.policy)), opt_.staleness,
        std::string(CodecName(opt_.codec)));
  }
  return absl::OkStatus();
}

}  // namespace engine_internal
}  // namespace rog
