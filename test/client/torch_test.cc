// The LibTorch adapter against a real rogd: parameters round-trip exactly,
// a team of two conserves integer updates exactly (both for modules in each
// accepted dtype, a mix of them, and non-contiguous parameters), a step that
// changes nothing pushes zeros even where bfloat16 cannot hold the replica's
// values, a float64 parameter's update below float32's precision is pushed,
// other dtypes and devices are refused, and a different module is refused
// with rogd's reason.
//
// Debian's libtorch is CPU-only: no test here puts parameters on CUDA.
// Two devices are tested with the CPU and the "meta" device.
#include <cmath>
#include <functional>
#include <thread>

#include "client/torch_adapter.h"
#include "test/client/torch_testing.h"
#include "test/testing/rogd_harness.h"

// LibTorch's glog headers define CHECK; Catch2's must win, so it comes last.
#undef CHECK
#include "catch2/catch.hpp"

namespace rog {
namespace {

struct Net : torch::nn::Module {
  explicit Net(int hidden = 32) {
    fc1 = register_module("fc1", torch::nn::Linear(64, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 10));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

// Non-contiguous parameters of mixed dtypes: a transposed float32 matrix,
// every other column of a float64 one, a transposed bfloat16 matrix, and a
// float16 vector.
struct Strided : torch::nn::Module {
  Strided() {
    register_parameter("t", torch::zeros({8, 5}).t());
    register_parameter("s", torch::zeros({4, 6}, torch::kFloat64).slice(1, 0, 6, 2));
    register_parameter("h", torch::zeros({6, 3}, torch::kBFloat16).t());
    register_parameter("v", torch::zeros({7}, torch::kFloat16));
  }
};

// The modules the exact tests run on.
struct ModuleCase {
  std::string name;
  std::function<std::shared_ptr<torch::nn::Module>()> make;
};

std::shared_ptr<torch::nn::Module> NetIn(torch::ScalarType dtype) {
  auto net = std::make_shared<Net>();
  net->to(dtype);
  return net;
}

std::vector<ModuleCase> ModuleCases() {
  return {
      {"float32", [] { return NetIn(torch::kFloat32); }},
      {"float16", [] { return NetIn(torch::kFloat16); }},
      {"bfloat16", [] { return NetIn(torch::kBFloat16); }},
      {"float64", [] { return NetIn(torch::kFloat64); }},
      {"strided, mixed dtypes", [] { return std::make_shared<Strided>(); }},
  };
}

TEST_CASE("the adapter maps parameters to rows by name", "[torch]") {
  Net net;
  absl::StatusOr<Layout> layout = LayoutOfModule(net);
  REQUIRE(layout.ok());
  REQUIRE(layout->tensors().size() == 4);
  CHECK(layout->tensors()[0].name == "fc1.weight");
  CHECK(layout->tensors()[0].shape == std::vector<int64_t>{32, 64});
  CHECK(layout->num_rows() == 32 + 1 + 1 + 1);  // fc2.weight (640) stays one row
  Strided strided;
  layout = LayoutOfModule(strided);
  REQUIRE(layout.ok());
  REQUIRE(layout->tensors().size() == 4);
  CHECK(layout->tensors()[1].name == "s");
  CHECK(layout->tensors()[1].shape == std::vector<int64_t>{4, 3});
  for (const auto& p : strided.parameters()) {
    if (p.dim() == 2) CHECK_FALSE(p.is_contiguous());
  }
}

TEST_CASE("parameters of other dtypes are refused", "[torch]") {
  struct Counted : Net {
    Counted() { register_parameter("steps", torch::zeros({3}, torch::kInt64), false); }
  };
  Counted net;
  absl::StatusOr<Layout> bad = LayoutOfModule(net);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "parameter 'steps' is int64; ROG synchronises float32, float16, bfloat16 and float64 "
        "parameters");
  WorkerOptions options;
  options.worker_id = "robot1";
  auto rog = TorchWorker::Start(net, options);
  CHECK(rog.status() == bad.status());
}

// A CPU-only libtorch has no second real device: the "meta" device (shapes
// without storage) stands for it. Parameters on two CUDA devices have not
// been tried.
TEST_CASE("parameters on two devices, or not on the CPU or CUDA, are refused", "[torch]") {
  const torch::Device meta(torch::kMeta);
  struct TwoDevices : torch::nn::Module {
    explicit TwoDevices(torch::Device second) {
      register_parameter("a", torch::zeros({2}));
      register_parameter("b", torch::zeros({3}));
      register_parameter("c", torch::zeros({2}, second));
    }
  };
  TwoDevices two(meta);
  absl::StatusOr<Layout> bad = LayoutOfModule(two);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "parameter 'c' is on meta but parameter 'a' is on cpu; ROG synchronises parameters on one "
        "device (move the module with ->to(device))");
  WorkerOptions options;
  options.worker_id = "robot1";
  CHECK(TorchWorker::Start(two, options).status() == bad.status());

  struct OnMeta : torch::nn::Module {
    explicit OnMeta(torch::Device device) { register_parameter("w", torch::zeros({2}, device)); }
  };
  OnMeta on_meta(meta);
  bad = LayoutOfModule(on_meta);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "parameter 'w' is on meta; ROG synchronises parameters on the CPU or one CUDA device");
}

TEST_CASE("parameters round-trip exactly through rogd", "[torch]") {
  const std::vector<ModuleCase> cases = ModuleCases();
  const ModuleCase& c = cases[GENERATE(range(0, 5))];
  INFO(c.name);
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  std::shared_ptr<torch::nn::Module> net = c.make();
  FillIntegers(*net, 1);
  const std::vector<float> initial = Flat(*net);
  auto rog = TorchWorker::Start(*net, Options(**rogd, "robot1"));
  REQUIRE(rog.ok());
  REQUIRE((*rog)->BeginStep(30).ok());
  CHECK(Flat(*net) == initial);
  IntegerStep(*net, 0, 0);
  const std::vector<float> stepped = Flat(*net);
  REQUIRE((*rog)->EndStep().ok());
  std::vector<float> update(initial.size());
  for (size_t j = 0; j < update.size(); ++j) update[j] = stepped[j] - initial[j];
  CHECK(std::vector<float>((*rog)->last_update().begin(), (*rog)->last_update().end()) == update);
  REQUIRE((*rog)->worker().Sync(30).ok());
  auto global = AdminExport((*rogd)->address());
  REQUIRE(global.ok());
  CHECK(*global == stepped);
  FillIntegers(*net, 3);
  (*rog)->LoadReplica();
  CHECK(Flat(*net) == stepped);
  FillIntegers(*net, 3);
  REQUIRE((*rog)->BeginStep(30).ok());
  CHECK(Flat(*net) == stepped);
}

TEST_CASE("two robots with integer updates conserve exactly", "[torch]") {
  const std::vector<ModuleCase> cases = ModuleCases();
  const ModuleCase& c = cases[GENERATE(range(0, 5))];
  INFO(c.name);
  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2"});
  REQUIRE(rogd.ok());
  std::shared_ptr<torch::nn::Module> a_net = c.make(), b_net = c.make();
  FillIntegers(*a_net, 1);
  FillIntegers(*b_net, 4);  // b's own values are replaced by the server's model
  auto a = TorchWorker::Start(*a_net, Options(**rogd, "a"));
  REQUIRE(a.ok());
  // a brings the model: wait until it is connected before b starts.
  for (int i = 0; i < 300 && !(*a)->worker().connected(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<float> initial = Flat(*a_net);
  auto b = TorchWorker::Start(*b_net, Options(**rogd, "b"));
  REQUIRE(b.ok());
  std::vector<double> sum(initial.size(), 0.0);
  std::mutex mu;
  std::string error;
  auto train = [&](TorchWorker* rog, torch::nn::Module* net, int w) {
    for (int k = 0; k < 12; ++k) {
      absl::Status s = rog->BeginStep(30);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        error = s.ToString();
        return;
      }
      const std::vector<float> before = Flat(*net);
      IntegerStep(*net, w, k);
      const std::vector<float> after = Flat(*net);
      if (!rog->EndStep().ok()) return;
      std::lock_guard<std::mutex> lock(mu);
      for (size_t j = 0; j < sum.size(); ++j) sum[j] += after[j] - before[j];
    }
  };
  std::thread ta(train, a->get(), a_net.get(), 0);
  std::thread tb(train, b->get(), b_net.get(), 1);
  ta.join();
  tb.join();
  REQUIRE(error == "");
  REQUIRE((*a)->worker().Flush(30).ok());
  REQUIRE((*b)->worker().Flush(30).ok());
  REQUIRE((*a)->worker().Sync(30).ok());
  REQUIRE((*b)->worker().Sync(30).ok());
  auto global = AdminExport((*rogd)->address());
  REQUIRE(global.ok());
  size_t wrong = 0;
  for (size_t j = 0; j < initial.size(); ++j) wrong += (*global)[j] != initial[j] + sum[j];
  CHECK(wrong == 0);
  CHECK((*a)->worker().Replica() == *global);
  CHECK((*b)->worker().Replica() == *global);
}

// rogd's model comes from a float32 robot whose values bfloat16 cannot hold
// (k + 0.3). A bfloat16 robot's parameters hold them rounded; a step that
// changes nothing must push zeros, not the rounding.
TEST_CASE("a step that changes nothing pushes zeros whatever the dtype rounds", "[torch]") {
  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2"});
  REQUIRE(rogd.ok());
  Net a_net;
  FillIntegers(a_net, 1);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : a_net.parameters()) p.add_(0.3);
  }
  const std::vector<float> initial = Flat(a_net);
  std::vector<float> rounded(initial.size());
  for (size_t j = 0; j < initial.size(); ++j) {
    rounded[j] = static_cast<float>(c10::BFloat16(initial[j]));
  }
  size_t representable = 0;
  for (size_t j = 0; j < initial.size(); ++j) representable += rounded[j] == initial[j];
  REQUIRE(representable == 0);
  auto a = TorchWorker::Start(a_net, Options(**rogd, "a"));
  REQUIRE(a.ok());
  for (int i = 0; i < 300 && !(*a)->worker().connected(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::shared_ptr<torch::nn::Module> b_net = NetIn(torch::kBFloat16);
  auto b = TorchWorker::Start(*b_net, Options(**rogd, "b"));
  REQUIRE(b.ok());
  const std::vector<float> zeros(initial.size(), 0.0f);
  for (int k = 0; k < 3; ++k) {
    REQUIRE((*a)->BeginStep(30).ok());
    REQUIRE((*a)->EndStep().ok());
    REQUIRE((*b)->BeginStep(30).ok());
    CHECK((*b)->worker().Replica() == initial);
    CHECK(Flat(*b_net) == rounded);
    REQUIRE((*b)->EndStep().ok());
    CHECK(std::vector<float>((*b)->last_update().begin(), (*b)->last_update().end()) == zeros);
    CHECK((*b)->worker().Replica() == initial);
  }
  REQUIRE((*a)->worker().Flush(30).ok());
  REQUIRE((*b)->worker().Flush(30).ok());
  REQUIRE((*b)->worker().Sync(30).ok());
  auto global = AdminExport((*rogd)->address());
  REQUIRE(global.ok());
  CHECK(*global == initial);
}

// The update of a float64 parameter is computed in float64, then narrowed:
// 1 + 2^-30 - 1 is 2^-30, which float32 holds, where narrowing first would
// give 1 - 1 = 0. (rogd's float32 model at 1.0 still cannot take it: the
// worker's update is what this checks.)
TEST_CASE("a float64 parameter's small update is pushed", "[torch]") {
  struct Doubles : torch::nn::Module {
    Doubles() { w = register_parameter("w", torch::ones({4}, torch::kFloat64)); }
    torch::Tensor w;
  };
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  Doubles net;
  auto rog = TorchWorker::Start(net, Options(**rogd, "robot1"));
  REQUIRE(rog.ok());
  REQUIRE((*rog)->BeginStep(30).ok());
  const double tiny = std::ldexp(1.0, -30);
  {
    torch::NoGradGuard no_grad;
    net.w.add_(torch::tensor({tiny, 1.0, -tiny, 0.0}, torch::kFloat64));
  }
  REQUIRE((*rog)->EndStep().ok());
  const std::vector<float> pushed((*rog)->last_update().begin(), (*rog)->last_update().end());
  CHECK(pushed ==
        std::vector<float>{static_cast<float>(tiny), 1.0f, -static_cast<float>(tiny), 0.0f});
  REQUIRE((*rog)->worker().Sync(30).ok());
  auto global = AdminExport((*rogd)->address());
  REQUIRE(global.ok());
  CHECK(*global == std::vector<float>{1.0f, 2.0f, 1.0f, 1.0f});
}

TEST_CASE("a module with another layout is refused with rogd's reason", "[torch]") {
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  Net net;
  auto a = TorchWorker::Start(net, Options(**rogd, "a"));
  REQUIRE(a.ok());
  REQUIRE((*a)->BeginStep(30).ok());
  REQUIRE((*a)->EndStep().ok());
  Net other(16);
  auto z = TorchWorker::Start(other, Options(**rogd, "z"));
  REQUIRE(z.ok());
  const absl::Status s = (*z)->BeginStep(20);
  INFO(s.ToString());
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(s.message().find("same tensors") != absl::string_view::npos);
  CHECK(s.message().find("tensor 0 is 'fc1.weight' [16, 64] in the worker's model but "
                         "'fc1.weight' [32, 64] in rogd's") != absl::string_view::npos);
}

}  // namespace
}  // namespace rog
