// The models of the scale study, as layouts only (no values, no training):
// `convmlp`, the benchmark's 3.2 MB model (common/model_layouts.h, as the
// simulator has it), and two transformer stacks in the rows a real one has
// (d = 768, a ViT-B block: qkv [2304, 768], proj [768, 768], fc1
// [3072, 768], fc2 [768, 3072], biases and norms as single rows):
// `vit25m`, 3 blocks and a 3000-class head (24.3M parameters, 97.3 MB fp32),
// and `vit100m`, 14 blocks and a 1000-class head (100.7M, 403 MB).
#ifndef ROG_TOOLS_SCALE_SCALE_MODELS_H_
#define ROG_TOOLS_SCALE_SCALE_MODELS_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/layout.h"

namespace rog {

// InvalidArgument naming the models for any other name.
absl::StatusOr<Layout> ScaleModel(const std::string& name);

}  // namespace rog

#endif  // ROG_TOOLS_SCALE_SCALE_MODELS_H_
