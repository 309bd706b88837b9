// The engine's checkpoints (docs/design.md, "Checkpoints and replay after a
// crash"): the model and the worker records written to the checkpoint
// file, read back at start, and when that last happened. Part of the
// engine core (server/engine_core.h); not for use outside it. The file
// format and its atomic write are server/checkpoint.h's; when to write (on
// request, at shutdown, at the interval) is the engine's.
//
// Invariants: last_unix() and last_path() are those of the last checkpoint
// written or restored (0 and "" before any). An interval checkpoint is due
// checkpoint_interval seconds after the last attempt, written or failed,
// or the engine's start, so that a failing disk is tried again at the
// interval, not every tick. Once a checkpoint is written, every worker's
// uplink is durable up to the last batch it applied (Uplink::MarkDurable):
// the acks say so from then on.
#ifndef ROG_SERVER_ENGINE_CHECKPOINT_H_
#define ROG_SERVER_ENGINE_CHECKPOINT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/convert.h"
#include "server/engine_core.h"
#include "server/engine_model.h"
#include "server/engine_workers.h"

namespace rog {
namespace engine_internal {

class Checkpointer {
 public:
  // Under `opt`, which outlives it: its checkpoint_path and
  // checkpoint_interval, the policy, bound and codec a checkpoint records,
  // and its clock. The interval counts from `now`.
  Checkpointer(const EngineOptions& opt, double now) : opt_(opt), last_attempt_(now) {}

  // Whether an interval checkpoint is due at `now`.
  bool Due(double now) const;
  // Writes `model` and the records of `workers` to opt.checkpoint_path now.
  absl::StatusOr<pb::CheckpointReply> Write(const ModelStore& model, WorkerRegistry& workers);
  // Restores the checkpoint at `path` into *model and *workers, which hold
  // nothing yet; every restored worker not evicted is disconnected as of
  // now, its lease running. Nothing changes if the file is missing (a
  // NotFound error) or does not fit together (DataLoss, saying why).
  absl::Status Restore(const std::string& path, ModelStore* model, WorkerRegistry* workers);

  double last_unix() const { return last_unix_; }
  const std::string& last_path() const { return last_path_; }

 private:
  double Now() const { return opt_.clock->Now(); }

  const EngineOptions& opt_;
  double last_attempt_;
  double last_unix_ = 0;
  std::string last_path_;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_CHECKPOINT_H_
