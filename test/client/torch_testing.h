// Helpers for tests of the LibTorch adapter against a real rogd: integer
// parameters and updates, so that every sum is exact in fp32 (and in the
// parameters' own dtype: float16 holds integers exactly up to 2048,
// bfloat16 up to 256, and these stay within a few tens) and conservation
// can be checked with ==.
#ifndef ROG_TEST_CLIENT_TORCH_TESTING_H_
#define ROG_TEST_CLIENT_TORCH_TESTING_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "client/worker.h"
#include "test/testing/rogd_harness.h"

namespace rog {

// Integer values, so that every sum below is exact in fp32.
inline void FillIntegers(torch::nn::Module& m, int seed) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) {
    auto r = torch::arange(p.numel(), torch::kFloat32).reshape(p.sizes());
    p.copy_(torch::remainder(r + seed, 7) - 3);
  }
}

// What an optimizer step would do, with integer deltas: worker `w`, step
// `k`. The deltas of any 5 consecutive steps cancel out: use other counts.
inline void IntegerStep(torch::nn::Module& m, int w, int k) {
  torch::NoGradGuard no_grad;
  int i = 0;
  for (auto& p : m.parameters()) {
    auto r = torch::arange(p.numel(), torch::kFloat32).reshape(p.sizes());
    p.add_(torch::remainder(r * (w + 1) + k + i++, 5) - 2);
  }
}

// The parameters in named_parameters() order, flattened and converted to
// float32 on the CPU: the adapter's row order, so comparable with
// AdminExport.
inline std::vector<float> Flat(const torch::nn::Module& m) {
  std::vector<float> v;
  for (const auto& p : m.named_parameters()) {
    auto c = p.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    v.insert(v.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return v;
}

inline WorkerOptions Options(const RogdProcess& rogd, const std::string& id) {
  WorkerOptions o;
  o.server = rogd.address();
  o.worker_id = id;
  return o;
}

}  // namespace rog

#endif  // ROG_TEST_CLIENT_TORCH_TESTING_H_
