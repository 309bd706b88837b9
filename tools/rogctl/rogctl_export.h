// `rogctl export`'s LibTorch half, linked into rogctl's helper
// rogctl_torch (rogctl_torch.cc), not into rogctl. Its .cc is the only
// translation unit of either that includes LibTorch headers (slow to
// compile); this header includes none. Bytes in, bytes out: files are read
// and written by the callers.
#ifndef ROG_TOOLS_ROGCTL_ROGCTL_EXPORT_H_
#define ROG_TOOLS_ROGCTL_ROGCTL_EXPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/layout.h"

namespace rog {
namespace ctl {

// A torch::save of the module, read from `name`.
struct ArchiveTemplate {
  std::string name;   // for messages: the file it came from
  std::string bytes;  // its contents
};

struct TorchArchive {
  std::string bytes;     // the file's contents
  uint64_t buffers = 0;  // buffers kept from the template
};

// The model (`values`, fp32 in row order, as rogd exports it) as a file
// that torch::load(module, file) reads into the module whose
// named_parameters() are the layout's tensors, as the LibTorch adapter
// registered them: "block.0.weight" becomes tensor "weight" of the nested
// archive "0" of the nested archive "block", which is how
// torch::nn::Module::save writes a module and Module::load reads it.
//
// rogd holds parameters only. Module::load also wants every buffer (e.g.
// BatchNorm's running statistics) and an archive for every submodule,
// including those without parameters (ReLU, Dropout inside a Sequential).
// Without a template the file holds the parameters alone, so it loads into
// modules that have neither. With a template `with` (a torch::save of the
// same module, e.g. from one robot) the file is that module, buffers and
// structure included, with every parameter replaced by rogd's values.
//
// Errors: InvalidArgument for a template that is not a LibTorch archive or
// not the same module (a parameter missing, extra, of another shape or
// type), naming the template's file; FailedPrecondition for tensor names
// with no place in an archive (see CheckArchiveNames); Internal if LibTorch
// fails.
absl::StatusOr<TorchArchive> MakeTorchArchive(const Layout& layout, absl::Span<const float> values,
                                              const ArchiveTemplate* with = nullptr);

}  // namespace ctl
}  // namespace rog

#endif  // ROG_TOOLS_ROGCTL_ROGCTL_EXPORT_H_
