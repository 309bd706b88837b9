// The only translation unit of rogctl that includes LibTorch: the
// serialisation headers and the TorchScript loader, not <torch/torch.h>.
#include "tools/rogctl/rogctl_export.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/rogctl/rogctl_lib.h"

namespace rog {
namespace ctl {
namespace {

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The first line of a LibTorch error, without its C++ stack.
std::string TorchMessage(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  if (const size_t nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  return m;
}

// Tensor `t` of the layout as a float32 tensor of its shape (a copy).
at::Tensor TensorOf(const Layout& layout, size_t t, absl::Span<const float> values) {
  const uint64_t first = layout.row(layout.tensor_first_row(t)).offset;
  at::Tensor out = torch::empty(layout.tensors()[t].shape, torch::kFloat32);
  std::memcpy(out.data_ptr<float>(), values.data() + first, layout.tensor_numel(t) * sizeof(float));
  return out;
}

// A module of the archive being built: its parameters, then its
// submodules, in the order the layout names them.
struct Node {
  std::vector<std::pair<std::string, at::Tensor>> parameters;
  std::vector<std::pair<std::string, std::unique_ptr<Node>>> children;

  Node* Child(const std::string& name) {
    for (auto& [n, child] : children) {
      if (n == name) return child.get();
    }
    children.emplace_back(name, std::make_unique<Node>());
    return children.back().second.get();
  }
};

// As torch::nn::Module::save does it: parameters under their own names,
// each submodule in a nested archive of the same compilation unit.
void Write(const Node& node, torch::serialize::OutputArchive& archive) {
  for (const auto& [name, tensor] : node.parameters) archive.write(name, tensor);
  for (const auto& [name, child] : node.children) {
    torch::serialize::OutputArchive nested(archive.compilation_unit());
    Write(*child, nested);
    archive.write(name, nested);
  }
}

absl::StatusOr<TorchArchive> ParametersOnly(const Layout& layout, absl::Span<const float> values) {
  Node root;
  for (size_t t = 0; t < layout.tensors().size(); ++t) {
    const std::string& name = layout.tensors()[t].name;
    Node* node = &root;
    size_t start = 0;
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
      node = node->Child(name.substr(start, dot - start));
      start = dot + 1;
    }
    at::Tensor tensor = TensorOf(layout, t, values);
    // Saved as a module's parameter is: a leaf that requires grad.
    tensor.set_requires_grad(true);
    node->parameters.emplace_back(name.substr(start), std::move(tensor));
  }
  torch::serialize::OutputArchive archive;
  Write(root, archive);
  std::ostringstream out;
  archive.save_to(out);
  return TorchArchive{out.str(), 0};
}

absl::StatusOr<TorchArchive> FromTemplate(const Layout& layout, absl::Span<const float> values,
                                          const ArchiveTemplate& with) {
  torch::jit::Module module;
  try {
    std::istringstream in(with.bytes);
    module = torch::jit::load(in, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--template=", with.name,
                     " is not a LibTorch archive; make one on a robot with torch::save(module, "
                     "\"FILE\") (",
                     TorchMessage(e), ")"));
  }
  const std::string not_same =
      absl::StrCat("--template=", with.name, " is not the module rogd trains: ");
  std::map<std::string, at::Tensor> parameters;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    parameters.emplace(p.name, p.value);
  }
  torch::NoGradGuard no_grad;
  for (size_t t = 0; t < layout.tensors().size(); ++t) {
    const TensorSpec& spec = layout.tensors()[t];
    const auto it = parameters.find(spec.name);
    if (it == parameters.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(not_same, "it has no parameter '", spec.name, "'"));
    }
    at::Tensor& p = it->second;
    if (p.sizes().vec() != spec.shape) {
      return absl::InvalidArgumentError(absl::StrCat(not_same, "its parameter '", spec.name,
                                                     "' is ", ShapeString(p.sizes().vec()),
                                                     ", rogd's is ", ShapeString(spec.shape)));
    }
    if (p.scalar_type() != torch::kFloat32) {
      return absl::InvalidArgumentError(
          absl::StrCat(not_same, "its parameter '", spec.name, "' is ",
                       std::string(c10::toString(p.scalar_type())), ", rogd's is float32"));
    }
    // In place: the module's attribute is this tensor.
    p.copy_(TensorOf(layout, t, values));
    parameters.erase(it);
  }
  if (!parameters.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        not_same, "it has parameter '", parameters.begin()->first, "', which rogd's model lacks"));
  }
  TorchArchive archive;
  archive.buffers = module.named_buffers(/*recurse=*/true).size();
  std::ostringstream out;
  module.save(out);
  archive.bytes = out.str();
  return archive;
}

}  // namespace

absl::StatusOr<TorchArchive> MakeTorchArchive(const Layout& layout, absl::Span<const float> values,
                                              const ArchiveTemplate* with) {
  if (values.size() != layout.total_numel()) {
    return absl::InvalidArgumentError(absl::StrCat("the model has ", values.size(),
                                                   " values, its layout ", layout.total_numel()));
  }
  if (absl::Status s = CheckArchiveNames(layout); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("rogd's model cannot be written for LibTorch: ", s.message()));
  }
  try {
    return with == nullptr ? ParametersOnly(layout, values) : FromTemplate(layout, values, *with);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("LibTorch could not write the model: ", TorchMessage(e)));
  }
}

}  // namespace ctl
}  // namespace rog
