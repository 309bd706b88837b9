// Model layouts by name, for the tools that need a model's rows but not its
// values: the simulator (//sim, //tools/sim) and the scale study
// (//tools/scale). One definition each, so that the tools agree on what
// "convmlp" is.
#ifndef ROG_COMMON_MODEL_LAYOUTS_H_
#define ROG_COMMON_MODEL_LAYOUTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/layout.h"

namespace rog {

// "cnn": a small CNN for 28×28 images (about 1.7 MB in fp32, 207 rows of
// uneven size). "fmnist": the main job's CNN (client/examples/fmnist_worker.cc,
// 82 KB). "convmlp": fmnist_worker --model=convmlp, the CNN's convolutions
// under a wide MLP head (3.2 MB). "tiny": 6 tensors, a few KB, for tests.
// InvalidArgument naming them for any other name.
absl::StatusOr<Layout> NamedLayout(const std::string& name);

}  // namespace rog

#endif  // ROG_COMMON_MODEL_LAYOUTS_H_
