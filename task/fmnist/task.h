// The main job's training (task/fmnist/model.h) as flat parameter vectors, for
// the simulator's learning task (//tools/sim:fmnist_sim): no LibTorch in this
// header, so its users compile without it.
#ifndef ROG_TASK_FMNIST_TASK_H_
#define ROG_TASK_FMNIST_TASK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rog::fmnist {

class Task {
 public:
  // `model`: "cnn" or "convmlp"; `workers` shards of the degraded training
  // images, one per worker; `seed` as fmnist_worker's --seed. Reads the
  // data and the pretrained model (pretraining it if it is not cached).
  // Sets LibTorch to one intra-op thread, as fmnist_worker runs.
  static absl::StatusOr<std::unique_ptr<Task>> Create(const std::string& model, int workers,
                                                      uint64_t seed);
  ~Task();

  // The pretrained model's parameters, in the module's order (the
  // layout's).
  std::vector<float> Initial() const;
  // One SGD step of worker `worker` (--batch images of its shard, --lr) from
  // `params`: the delta, into `update`. Its batch depends on (seed, worker,
  // step) alone.
  void Step(size_t worker, uint64_t step, absl::Span<const float> params, absl::Span<float> update);
  // Accuracy of `params` on the degraded test images (--eval_images).
  double Accuracy(absl::Span<const float> params);

 private:
  struct Impl;
  explicit Task(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rog::fmnist

#endif  // ROG_TASK_FMNIST_TASK_H_
