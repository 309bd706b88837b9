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
//   rog->worker().Finish();                                         // 4
//   rog->worker().Close();                                          // 5
//
// Parameters are mapped in named_parameters() order under their names, so
// every robot must build the same module (rogd refuses a different one).
// Buffers (e.g. BatchNorm running statistics) stay local to each robot.
//
// Dtypes and devices (the same rules as the Python SDK's, so both accept the
// same modules and push the same bits): parameters may be float32, float16,
// bfloat16 or float64 (any mix), contiguous or not, all on one device: the
// CPU or one CUDA device. The wire and the worker's replica stay float32:
// BeginStep converts the replica's values to each parameter's dtype (round
// to nearest) and device, and the step starts from the values the
// parameters then hold; EndStep takes parameter - start, computed in
// float64 for a float64 parameter and in float32 otherwise, as the float32
// update. So a step that changes nothing pushes zeros, even where a 16-bit
// parameter cannot hold the replica's value, and a float64 parameter's
// update too small for float32 at the parameter's value is still pushed
// (the float32 replica and rogd's model may round it away as they add it).
// Staging: two float32 host buffers of the model's size (pinned on CUDA);
// on CUDA one host-to-device copy per BeginStep and one device-to-host copy
// per EndStep, into and out of two float32 buffers on the device. The CUDA
// path has not run on a GPU yet (this project builds with Debian's CPU-only
// libtorch).
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
// Errors (InvalidArgument): a parameter of another dtype than float32,
// float16, bfloat16 or float64; parameters on two devices, or on another
// device than the CPU or CUDA; no parameters.
absl::StatusOr<Layout> LayoutOfModule(const torch::nn::Module& module);

// Copies flat float32 values (the layout's order) into `params`, whose sizes
// add up to values.size(), converting to each one's dtype (round to nearest)
// and device; and back, converting to float32.
void LoadParameters(absl::Span<const float> values, std::vector<torch::Tensor>& params);
void StoreParameters(const std::vector<torch::Tensor>& params, absl::Span<float> values);

class TorchWorker {
 public:
  // Starts a rog::Worker whose model is `module`'s parameters with their
  // current values, converted to float32. Errors: those of LayoutOfModule,
  // an invalid worker id.
  static absl::StatusOr<std::unique_ptr<TorchWorker>> Start(torch::nn::Module& module,
                                                            WorkerOptions options);

  // Waits until the next step may start (see Worker::BeginIteration), then
  // loads the replica into the module's parameters.
  absl::Status BeginStep(double timeout_seconds = 0);
  // Takes the change of the parameters since BeginStep as this step's update
  // and streams it (see Worker::EndIteration).
  absl::StatusOr<IterationStats> EndStep();

  // Loads the worker's replica into the module's parameters, as BeginStep
  // does, e.g. after worker().Sync() to evaluate the team's model. Not
  // between BeginStep and EndStep.
  void LoadReplica();

  // The float32 update the last EndStep pushed (the layout's order); valid
  // until the next EndStep.
  absl::Span<const float> last_update() const;

  Worker& worker() { return *worker_; }

 private:
  TorchWorker(torch::nn::Module& module, std::vector<torch::Tensor> params,
              std::unique_ptr<Worker> worker, size_t numel);
  // Loads begin_ into the parameters and keeps in begin_views_ the values
  // they then hold; see BeginStep.
  void Load();

  torch::nn::Module& module_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<Worker> worker_;
  bool on_cuda_;
  // float32 host buffers of the model's size, pinned on CUDA: what
  // BeginIteration gave (the replica), and the update EndIteration takes.
  torch::Tensor begin_, delta_;
  // On CUDA, float32 buffers of the model's size on the parameters' device;
  // undefined on the CPU.
  torch::Tensor begin_device_, delta_device_;
  // Per parameter, its slice of the begin and delta buffers on its device
  // (begin_/delta_ on the CPU, begin_device_/delta_device_ on CUDA), shaped
  // as the parameter. begin_views_ hold the values the step started from.
  std::vector<torch::Tensor> begin_views_, delta_views_;
};

}  // namespace rog

#endif  // ROG_CLIENT_TORCH_ADAPTER_H_
