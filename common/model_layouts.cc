// The named model layouts (common/model_layouts.h).
#include "common/model_layouts.h"

#include "absl/strings/str_cat.h"

namespace rog {

absl::StatusOr<Layout> NamedLayout(const std::string& name) {
  if (name == "cnn") {
    return Layout::Create({
        {"conv1.weight", {32, 1, 3, 3}},
        {"conv1.bias", {32}},
        {"conv2.weight", {64, 32, 3, 3}},
        {"conv2.bias", {64}},
        {"fc1.weight", {128, 3136}},
        {"fc1.bias", {128}},
        {"fc2.weight", {10, 128}},
        {"fc2.bias", {10}},
    });
  }
  if (name == "fmnist") {
    return Layout::Create({
        {"conv1.weight", {8, 1, 5, 5}},
        {"conv1.bias", {8}},
        {"conv2.weight", {16, 8, 5, 5}},
        {"conv2.bias", {16}},
        {"fc1.weight", {64, 256}},
        {"fc1.bias", {64}},
        {"fc2.weight", {10, 64}},
        {"fc2.bias", {10}},
    });
  }
  if (name == "convmlp") {
    // fmnist_worker --model=convmlp: the CNN's convolutions under a wide
    // MLP head, 3.2 MB fp32.
    return Layout::Create({
        {"conv1.weight", {8, 1, 5, 5}},
        {"conv1.bias", {8}},
        {"conv2.weight", {16, 8, 5, 5}},
        {"conv2.bias", {16}},
        {"fc1.weight", {1024, 256}},
        {"fc1.bias", {1024}},
        {"fc2.weight", {512, 1024}},
        {"fc2.bias", {512}},
        {"fc3.weight", {10, 512}},
        {"fc3.bias", {10}},
    });
  }
  if (name == "tiny") {
    return Layout::Create(
        {
            {"a.weight", {16, 24}},
            {"a.bias", {16}},
            {"b.weight", {8, 40}},
            {"b.bias", {8}},
            {"c.weight", {4, 4, 2}},
            {"scale", {}},
        },
        64);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model '", name, "'; use cnn, fmnist, convmlp or tiny"));
}

}  // namespace rog
