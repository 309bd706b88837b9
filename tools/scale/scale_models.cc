#include "tools/scale/scale_models.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/model_layouts.h"

namespace rog {
namespace {

// A ViT-style stack of `blocks` transformer blocks of width 768 under a
// patch embedding (16 x 16 x 3 inputs) and over a `classes`-way head.
absl::StatusOr<Layout> Transformer(int blocks, int64_t classes) {
  constexpr int64_t d = 768;
  std::vector<TensorSpec> t = {
      {"patch_embed.weight", {d, 3 * 16 * 16}},
      {"patch_embed.bias", {d}},
      {"cls_token", {1, 1, d}},
      {"pos_embed", {197, d}},
  };
  for (int b = 0; b < blocks; ++b) {
    const std::string p = absl::StrCat("blocks.", b, ".");
    t.push_back({p + "norm1.weight", {d}});
    t.push_back({p + "norm1.bias", {d}});
    t.push_back({p + "attn.qkv.weight", {3 * d, d}});
    t.push_back({p + "attn.qkv.bias", {3 * d}});
    t.push_back({p + "attn.proj.weight", {d, d}});
    t.push_back({p + "attn.proj.bias", {d}});
    t.push_back({p + "norm2.weight", {d}});
    t.push_back({p + "norm2.bias", {d}});
    t.push_back({p + "mlp.fc1.weight", {4 * d, d}});
    t.push_back({p + "mlp.fc1.bias", {4 * d}});
    t.push_back({p + "mlp.fc2.weight", {d, 4 * d}});
    t.push_back({p + "mlp.fc2.bias", {d}});
  }
  t.push_back({"norm.weight", {d}});
  t.push_back({"norm.bias", {d}});
  t.push_back({"head.weight", {classes, d}});
  t.push_back({"head.bias", {classes}});
  return Layout::Create(std::move(t));
}

}  // namespace

absl::StatusOr<Layout> ScaleModel(const std::string& name) {
  if (name == "convmlp") return NamedLayout("convmlp");
  if (name == "vit25m") return Transformer(3, 3000);
  if (name == "vit100m") return Transformer(14, 1000);
  return absl::InvalidArgumentError(
      absl::StrCat("no scale model '", name, "'; use convmlp, vit25m or vit100m"));
}

}  // namespace rog
