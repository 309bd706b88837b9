// The parameter server's model state (docs/design.md, "State"): the global
// rows, version storage, and for every worker a copy: the pending update of
// each row (other workers' updates the worker has not received yet) and the
// versions its replica holds. Pure logic: rogd and the simulator both drive it;
// neither sockets nor clocks enter here.
//
// Not thread-safe: callers serialise access (rogd's engine thread owns it).
#ifndef ROG_COMMON_SERVER_STATE_H_
#define ROG_COMMON_SERVER_STATE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/codec.h"
#include "common/layout.h"
#include "common/version_store.h"

namespace rog {

// What sending a row to a worker changed in its copy, so that it can be
// undone if the batch never reached the worker (ServerState::Untake).
struct TakenRow {
  RowId row = 0;
  // What the worker would have applied: added back to its pending copy.
  std::vector<float> delta;
  // The copy's versions of the row before, one per worker.
  std::vector<uint64_t> versions;
  // Whether the copy held a count-0 fold not yet sent (HasPending).
  bool unversioned = false;
};

class ServerState {
 public:
  // REQUIRES: initial.size() == layout.total_numel().
  ServerState(Layout layout, std::vector<float> initial, size_t num_workers);

  ServerState(const ServerState&) = delete;
  ServerState& operator=(const ServerState&) = delete;

  const Layout& layout() const { return layout_; }
  size_t num_workers() const { return copy_versions_.size(); }
  const std::vector<float>& global() const { return global_; }
  absl::Span<const float> global_row(RowId row) const;
  // v[row][worker]: iterations of each worker folded into the global rows.
  const VersionStore& versions() const { return versions_; }
  // What worker w's replica holds, row by row, of every worker's updates.
  const VersionStore& copy_versions(size_t w) const { return copy_versions_[w]; }
  absl::Span<const float> pending(size_t w, RowId row) const;

  // Folds worker w's decoded update of `row`, covering `count` iterations,
  // into the global row, the versions and every other worker's pending copy.
  // REQUIRES: update.size() == the row's numel; values finite (validated by
  // the caller, which decoded them); update does not overlap this state's
  // storage (it is the caller's decode buffer).
  void Fold(size_t w, RowId row, absl::Span<const float> update, uint32_t count);

  // OK when Fold(w, row, update, ...) keeps every value finite: the global
  // row and every other worker's pending copy. Otherwise InvalidArgument
  // naming the first element that would overflow (finite updates can sum
  // to infinity), and nothing may be folded. REQUIRES as Fold.
  absl::Status CheckFold(size_t w, RowId row, absl::Span<const float> update) const;

  // Whether worker w's copy of `row` lacks some other worker's folded
  // update: one with a higher version, or one folded with count 0 (a
  // residual, or updates a rejoining worker kept), which raises no version
  // but must reach every copy all the same.
  bool HasPending(size_t w, RowId row) const;
  // Mean |pending update| of w's copy of `row`.
  double PendingMagnitude(size_t w, RowId row) const;

  // Sends w its pending update of `row`: encodes it with `codec` (appending
  // to *payload), keeps what the codec could not carry as the residual, and
  // records that w's copy now holds the row's current versions. `decoded`
  // (the row's size) receives what w will apply. Returns the iterations of
  // other workers newly included.
  // With `taken`, records how to undo it (Untake).
  uint64_t TakeDownlink(size_t w, RowId row, Codec codec, std::string* payload,
                        absl::Span<float> decoded, TakenRow* taken = nullptr);

  // Bytes of per-worker copies (pending updates) held.
  uint64_t copy_bytes() const;

  // --- Team changes -------------------------------------------------------
  // Adds a worker (a new VersionStore column) whose versions start at
  // `version` in every row: a worker joining at clock T has vacuously
  // contributed its first T iterations, so nobody waits for them. Its copy
  // holds the current versions and nothing pending (it gets a full resync).
  // Returns its index.
  size_t AddWorker(uint64_t version);
  // Raises worker w's versions to at least `version` in every row (a worker
  // rejoining at clock T). Another worker's copy that held all of w's folded
  // updates of a row is raised with it; one that lacks some keeps its lag.
  void RaiseVersion(size_t w, uint64_t version);
  // Whether w holds a copy (pending updates). An evicted worker holds none:
  // folds skip it, and SetActive(w, true) gives it an empty copy again,
  // to be filled by a full resync.
  bool active(size_t w) const { return !pending_[w].empty(); }
  void SetActive(size_t w, bool active);
  // Full resync of one row: appends the global row as fp32 to *payload; w's
  // copy of the row then holds the row's current versions, nothing pending.
  void TakeValues(size_t w, RowId row, std::string* payload);
  // Undoes a TakeDownlink whose batch never reached w (its
  // stream broke before w applied it): w's copy lacks the row's delta
  // again and holds the versions it held, or lower ones (a version
  // column added since starts where it was). Undo the batches of a stream
  // newest first. REQUIRES: active(w); taken.delta the row's size.
  void Untake(size_t w, const TakenRow& taken);
  // A row w's replica already holds bit for bit (common/row_digest.h): as
  // TakeValues, without sending the values.
  void MarkInSync(size_t w, RowId row);

  // --- Checkpoints --------------------------------------------------------
  // Everything needed to rebuild the state. pending[w] is empty for a worker
  // without a copy.
  struct Parts {
    std::vector<float> global;
    VersionStore versions;
    std::vector<std::vector<float>> pending;
    std::vector<VersionStore> copies;
  };
  Parts Export() const;
  // Rebuilds a state; InvalidArgument naming what does not fit the layout.
  static absl::StatusOr<std::unique_ptr<ServerState>> Restore(Layout layout, Parts parts);

 private:
  Layout layout_;
  std::vector<float> global_;
  VersionStore versions_;
  std::vector<std::vector<float>> pending_;  // per worker, the flattened model
  std::vector<VersionStore> copy_versions_;  // per worker
  // Per worker and row: its pending copy holds a count-0 fold not yet sent
  // (HasPending). Empty for a worker without a copy.
  std::vector<std::vector<bool>> unversioned_;
};

}  // namespace rog

#endif  // ROG_COMMON_SERVER_STATE_H_
