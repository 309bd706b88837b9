#include "client/torch_adapter.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace rog {
namespace {

// Python's names, as the Python SDK's messages print them.
std::string DtypeName(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32:
      return "float32";
    case torch::kFloat16:
      return "float16";
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kFloat64:
      return "float64";
    case torch::kInt64:
      return "int64";
    case torch::kInt32:
      return "int32";
    case torch::kInt16:
      return "int16";
    case torch::kInt8:
      return "int8";
    case torch::kUInt8:
      return "uint8";
    case torch::kBool:
      return "bool";
    case torch::kComplexFloat:
      return "complex64";
    case torch::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(t);
  }
}

bool IsSixteenBit(torch::ScalarType t) { return t == torch::kFloat16 || t == torch::kBFloat16; }

absl::Status CheckDtype(const std::string& name, const torch::Tensor& p) {
  const torch::ScalarType t = p.scalar_type();
  if (t == torch::kFloat32 || t == torch::kFloat64 || IsSixteenBit(t)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("parameter '", name, "' is ", DtypeName(t),
                   "; ROG synchronises float32, float16, bfloat16 and float64 parameters"));
}

// `first` is the first parameter's device, `first_name` its name.
absl::Status CheckDevice(const std::string& name, const torch::Tensor& p,
                         const std::string& first_name, const torch::Device& first) {
  if (p.device() != first) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' is on ", p.device().str(), " but parameter '",
                     first_name, "' is on ", first.str(),
                     "; ROG synchronises parameters on one device (move the module "
                     "with ->to(device))"));
  }
  if (!first.is_cpu() && !first.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' is on ", first.str(),
                     "; ROG synchronises parameters on the CPU or one CUDA device"));
  }
  return absl::OkStatus();
}

// A float32 view of `values`, shaped as `p`, on the CPU.
torch::Tensor HostView(const float* values, const torch::Tensor& p) {
  return torch::from_blob(const_cast<float*>(values), p.sizes(), torch::kFloat32);
}

}  // namespace

absl::StatusOr<Layout> LayoutOfModule(const torch::nn::Module& module) {
  std::vector<TensorSpec> specs;
  std::string first_name;
  torch::Device first(torch::kCPU);
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    absl::Status s = CheckDtype(item.key(), p);
    if (!s.ok()) return s;
    if (specs.empty()) {
      first_name = item.key();
      first = p.device();
    }
    s = CheckDevice(item.key(), p, first_name, first);
    if (!s.ok()) return s;
    TensorSpec spec;
    spec.name = item.key();
    for (int64_t d : p.sizes()) spec.shape.push_back(d);
    specs.push_back(std::move(spec));
  }
  if (specs.empty()) {
    return absl::InvalidArgumentError("the module has no parameters to synchronise");
  }
  return Layout::Create(std::move(specs));
}

void LoadParameters(absl::Span<const float> values, std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  size_t at = 0;
  for (torch::Tensor& p : params) {
    p.copy_(HostView(values.data() + at, p));
    at += p.numel();
  }
}

void StoreParameters(const std::vector<torch::Tensor>& params, absl::Span<float> values) {
  torch::NoGradGuard no_grad;
  size_t at = 0;
  for (const torch::Tensor& p : params) {
    HostView(values.data() + at, p).copy_(p.detach());
    at += p.numel();
  }
}

// The CUDA branches below (on_cuda_) have not run on a GPU: Debian's
// libtorch, which this project builds with, is CPU-only, so parameters are
// never on CUDA in its tests. They use only device-generic torch calls, so
// they compile here.
TorchWorker::TorchWorker(torch::nn::Module& module, std::vector<torch::Tensor> params,
                         std::unique_ptr<Worker> worker, size_t numel)
    : module_(module),
      params_(std::move(params)),
      worker_(std::move(worker)),
      on_cuda_(params_.front().device().is_cuda()) {
  const int64_t n = static_cast<int64_t>(numel);
  torch::TensorOptions host = torch::TensorOptions().dtype(torch::kFloat32);
  // Pinned memory only on CUDA: requesting it needs a CUDA runtime.
  if (on_cuda_) host = host.pinned_memory(true);
  begin_ = torch::zeros({n}, host);
  delta_ = torch::zeros({n}, host);
  torch::Tensor begin_on = begin_, delta_on = delta_;
  if (on_cuda_) {
    const auto device =
        torch::TensorOptions().dtype(torch::kFloat32).device(params_.front().device());
    begin_device_ = torch::zeros({n}, device);
    delta_device_ = torch::zeros({n}, device);
    begin_on = begin_device_;
    delta_on = delta_device_;
  }
  int64_t at = 0;
  for (const torch::Tensor& p : params_) {
    begin_views_.push_back(begin_on.narrow(0, at, p.numel()).view(p.sizes()));
    delta_views_.push_back(delta_on.narrow(0, at, p.numel()).view(p.sizes()));
    at += p.numel();
  }
}

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

// float32 parameters (and float64 ones, which hold any float32 exactly) now
// hold begin's values, which begin_views_ hold already. 16-bit ones hold
// begin's values rounded to nearest: begin_views_ take those, so that a step
// that changes nothing has a zero update.
void TorchWorker::Load() {
  torch::NoGradGuard no_grad;
  // On CUDA the one host-to-device copy of the step. Blocking: begin_ is
  // free again once it returns (for the next BeginIteration).
  if (on_cuda_) begin_device_.copy_(begin_);
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].copy_(begin_views_[i]);
    if (IsSixteenBit(params_[i].scalar_type())) begin_views_[i].copy_(params_[i]);
  }
}

absl::Status TorchWorker::BeginStep(double timeout_seconds) {
  absl::Status s = worker_->BeginIteration(
      absl::MakeSpan(begin_.data_ptr<float>(), static_cast<size_t>(begin_.numel())),
      timeout_seconds);
  if (!s.ok()) return s;
  Load();
  return absl::OkStatus();
}

void TorchWorker::LoadReplica() {
  const std::vector<float> replica = worker_->Replica();
  std::copy(replica.begin(), replica.end(), begin_.data_ptr<float>());
  Load();
}

absl::StatusOr<IterationStats> TorchWorker::EndStep() {
  torch::NoGradGuard no_grad;
  // parameter - begin in the type the two promote to: float64 for a float64
  // parameter, float32 for the others; stored as float32 (round to nearest)
  // straight into the delta buffer. A float32 parameter on the CPU is read
  // where it is, with no copy.
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::sub_out(delta_views_[i], params_[i], begin_views_[i]);
  }
  // On CUDA the one device-to-host copy of the step (blocking).
  if (on_cuda_) delta_.copy_(delta_device_);
  return worker_->EndIteration(last_update());
}

absl::Span<const float> TorchWorker::last_update() const {
  return absl::MakeConstSpan(delta_.data_ptr<float>(), static_cast<size_t>(delta_.numel()));
}

}  // namespace rog
