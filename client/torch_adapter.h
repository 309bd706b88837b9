// LibTorch adapter for rog::Worker: a torch::nn::Module's parameters become
// the model's rows, each optimizer step becomes a parameter delta, and the
// rows other robots push land in the module's parameters. A normal training
// loop gains five lines:
//
//   auto rog = rog::TorchWorker::Start(*model, options).value();   // 1
//   for (auto& batch : *loader) {
//     rog->BeginStep();                                             // 2
//     optimizer.zero_grad();
//     auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
//     loss.backward();
//     optimizer.step();
//     rog->EndStep();                                               // 3
//   }
//   rog->worker().Sync();                                           // 4
//   rog->worker().Close();                                          // 5
//
// Parameters are mapped in named_parameters() order under their names, so
// every robot must build the same module (rogd refuses a different one).
// Only float32 CPU parameters are supported; buffers (e.g. BatchNorm running
// statistics) stay local to each robot.
//
// Thread-safety: BeginStep/EndStep must alternate on the training thread, and
// the module must not be changed between EndStep and the next BeginStep by
// anyone else. Lifetime: the module must outlive the TorchWorker.
#ifndef ROG_CLIENT_TORCH_ADAPTER_H_
#define ROG_CLIENT_TORCH_ADAPTER_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/worker.h"
#include "common/layout.h"

namespace rog {

// The layout of `module`'s parameters: one tensor per parameter, by name.
absl::StatusOr<Layout> LayoutOfModule(const torch::nn::Module& module);

// Copies flat values (the layout's order) into `params`, float32 CPU
// tensors whose sizes add up to values.size(), and back.
void LoadParameters(absl::Span<const float> values, std::vector<torch::Tensor>& params);
void StoreParameters(const std::vector<torch::Tensor>& params, absl::Span<float> values);

class TorchWorker {
 public:
  // Starts a rog::Worker whose model is `module`'s parameters with their
  // current values. Errors: a parameter that is not float32 on the CPU, an
  // invalid layout or worker id.
  static absl::StatusOr<std::unique_ptr<TorchWorker>> Start(torch::nn::Module& module,
                                                            WorkerOptions options);

  // Waits until the next step may start (see Worker::BeginIteration), then
  // loads the replica into the module's parameters.
  absl::Status BeginStep(double timeout_seconds = 0);
  // Takes the change of the parameters since BeginStep as this step's update
  // and streams it (see Worker::EndIteration).
  absl::StatusOr<IterationStats> EndStep();

  // Loads the worker's replica into the module's parameters, e.g. after
  // worker().Sync() to evaluate the team's model. Not between BeginStep and
  // EndStep.
  void LoadReplica() { Load(worker_->Replica()); }

  Worker& worker() { return *worker_; }

 private:
  TorchWorker(torch::nn::Module& module, std::vector<torch::Tensor> params,
              std::unique_ptr<Worker> worker, size_t numel);
  void Load(const std::vector<float>& values);
  void Store(std::vector<float>* values) const;

  torch::nn::Module& module_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<Worker> worker_;
  std::vector<float> begin_;  // the parameters BeginStep loaded
  std::vector<float> now_;
};

}  // namespace rog

#endif  // ROG_CLIENT_TORCH_ADAPTER_H_
