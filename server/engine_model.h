// The model rogd holds: its layout, its state (common/server_state.h: the
// global rows, the versions and a copy per worker) and, until that state
// exists, the first worker's initial values as they arrive. Part of the
// engine core (server/engine_core.h); not for use outside it. Who may
// bring the model, and when an upload starts over, is the engine's
// (server/engine_admission.cc); this keeps the model and its upload.
//
// Invariants: there is a layout from the first worker's hello
// (BeginUpload) or a restored checkpoint on; complete() once every row's
// initial values arrived (CompleteUpload) or a checkpoint restored it, and
// from then on the layout and the state stay for the life of the engine.
// While the upload is under way, staged_rows() counts the distinct rows
// whose values arrived; it is empty outside an upload. wire_bytes() is the
// model's update rows in the run's codec, 0 until complete().
#ifndef ROG_SERVER_ENGINE_MODEL_H_
#define ROG_SERVER_ENGINE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/codec.h"
#include "common/layout.h"
#include "common/server_state.h"

namespace rog {
namespace engine_internal {

// What the model state takes with `workers` worker records: the global
// model and a pending copy per worker (fp32), the global versions (rows x
// workers) and each worker's copy versions (rows x workers each).
uint64_t StateBytes(const Layout& layout, uint64_t workers);

// The most worker records whose state (StateBytes) fits `max_bytes`: 0 when
// not even one does.
uint64_t WorkersWithin(const Layout& layout, uint64_t max_bytes);

class ModelStore {
 public:
  // Updates travel in `codec` (wire_bytes()).
  explicit ModelStore(Codec codec) : codec_(codec) {}

  // --- the model ---------------------------------------------------------------
  bool has_layout() const { return layout_ != nullptr; }
  // REQUIRES: has_layout().
  const Layout& layout() const { return *layout_; }
  const std::shared_ptr<const Layout>& shared_layout() const { return layout_; }
  // Whether the model is here: its initial values arrived, or a checkpoint
  // restored it.
  bool complete() const { return state_ != nullptr; }
  // REQUIRES: complete().
  ServerState& state() { return *state_; }
  const ServerState& state() const { return *state_; }
  // Bytes of every row as an update in the run's codec.
  uint64_t wire_bytes() const { return wire_bytes_; }
  // The model of a checkpoint.
  void Restore(std::shared_ptr<const Layout> layout, std::unique_ptr<ServerState> state);

  // --- the first worker's upload ---------------------------------------------------
  // The first worker brings a model of `layout`; whatever arrived of an
  // earlier upload is dropped.
  void BeginUpload(Layout layout);
  // Initial values of `rows`, laid end to end in `values` (checked against
  // the layout by the caller).
  void Stage(const std::vector<RowId>& rows, const std::vector<float>& values);
  size_t staged_rows() const { return staged_rows_; }
  // Every row's values arrived.
  bool uploaded() const { return has_layout() && staged_rows_ == layout_->num_rows(); }
  // The state, from the uploaded values (REQUIRES: uploaded()).
  void CompleteUpload();
  // The worker that brought it left before it was complete: no layout, no
  // upload.
  void DropUpload();

 private:
  Codec codec_;
  std::shared_ptr<const Layout> layout_;
  std::unique_ptr<ServerState> state_;
  uint64_t wire_bytes_ = 0;
  // The initial values while they arrive, and which rows have.
  std::vector<float> staging_;
  std::vector<bool> staged_;
  size_t staged_rows_ = 0;
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_MODEL_H_
