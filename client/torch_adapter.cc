#include "client/torch_adapter.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace rog {
namespace {

absl::Status CheckParameter(const std::string& name, const torch::Tensor& p) {
  if (p.scalar_type() != torch::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", name, "' is ", std::string(c10::toString(p.scalar_type())),
        "; ROG synchronises float32 parameters (convert the module with ->to(torch::kFloat32))"));
  }
  if (!p.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", name, "' is on ", p.device().str(),
        "; ROG 0.1 synchronises CPU parameters (move the module with ->to(torch::kCPU))"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Layout> LayoutOfModule(const torch::nn::Module& module) {
  std::vector<TensorSpec> specs;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    absl::Status s = CheckParameter(item.key(), item.value());
    if (!s.ok()) return s;
    TensorSpec spec;
    spec.name = item.key();
    for (int64_t d : item.value().sizes()) spec.shape.push_back(d);
    specs.push_back(std::move(spec));
  }
  if (specs.empty()) {
    return absl::InvalidArgumentError("the module has no parameters to synchronise");
  }
  return Layout::Create(std::move(specs));
}

TorchWorker::TorchWorker(torch::nn::Module& module, std::vector<torch::Tensor> params,
                         std::unique_ptr<Worker> worker, size_t numel)
    : module_(module),
      params_(std::move(params)),
      worker_(std::move(worker)),
      begin_(numel),
      now_(numel) {}

absl::StatusOr<std::unique_ptr<TorchWorker>> TorchWorker::Start(torch::nn::Module& module,
                                                                WorkerOptions options) {
  absl::StatusOr<Layout> layout = LayoutOfModule(module);
  if (!layout.ok()) return layout.status();
  std::vector<torch::Tensor> params;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) params.push_back(item.value());
  const size_t numel = layout->total_numel();
  std::vector<float> initial(numel);
  StoreParameters(params, absl::MakeSpan(initial));
  absl::StatusOr<std::unique_ptr<Worker>> worker =
      Worker::Start(std::move(options), *std::move(layout), std::move(initial));
  if (!worker.ok()) return worker.status();
  return std::unique_ptr<TorchWorker>(
      new TorchWorker(module, std::move(params), *std::move(worker), numel));
}

void LoadParameters(absl::Span<const float> values, std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  size_t at = 0;
  for (torch::Tensor& p : params) {
    p.copy_(torch::from_blob(const_cast<float*>(values.data() + at), p.sizes(), torch::kFloat32));
    at += p.numel();
  }
}

void StoreParameters(const std::vector<torch::Tensor>& params, absl::Span<float> values) {
  size_t at = 0;
  for (const torch::Tensor& p : params) {
    const torch::Tensor c = p.detach().contiguous();
    std::memcpy(values.data() + at, c.data_ptr<float>(), c.numel() * sizeof(float));
    at += c.numel();
  }
}

void TorchWorker::Load(const std::vector<float>& values) { LoadParameters(values, params_); }

void TorchWorker::Store(std::vector<float>* values) const {
  StoreParameters(params_, absl::MakeSpan(*values));
}

absl::Status TorchWorker::BeginStep(double timeout_seconds) {
  absl::Status s = worker_->BeginIteration(absl::MakeSpan(begin_), timeout_seconds);
  if (!s.ok()) return s;
  Load(begin_);
  return absl::OkStatus();
}

absl::StatusOr<IterationStats> TorchWorker::EndStep() {
  Store(&now_);
  for (size_t j = 0; j < now_.size(); ++j) now_[j] -= begin_[j];
  return worker_->EndIteration(now_);
}

}  // namespace rog
