// The LibTorch adapter against a real rogd: parameters round-trip exactly,
// a team of two conserves integer updates exactly, a different module is
// refused with rogd's reason.
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

TEST_CASE("the adapter maps parameters to rows by name", "[torch]") {
  Net net;
  absl::StatusOr<Layout> layout = LayoutOfModule(net);
  REQUIRE(layout.ok());
  REQUIRE(layout->tensors().size() == 4);
  CHECK(layout->tensors()[0].name == "fc1.weight");
  CHECK(layout->tensors()[0].shape == std::vector<int64_t>{32, 64});
  CHECK(layout->num_rows() == 32 + 1 + 1 + 1);  // fc2.weight (640) stays one row
  Net doubles;
  doubles.to(torch::kFloat64);
  absl::StatusOr<Layout> bad = LayoutOfModule(doubles);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("float32") != absl::string_view::npos);
}

TEST_CASE("parameters round-trip exactly through rogd", "[torch]") {
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  Net net;
  FillIntegers(net, 1);
  const std::vector<float> initial = Flat(net);
  auto rog = TorchWorker::Start(net, Options(**rogd, "robot1"));
  REQUIRE(rog.ok());
  REQUIRE((*rog)->BeginStep(30).ok());
  CHECK(Flat(net) == initial);
  IntegerStep(net, 0, 0);
  const std::vector<float> stepped = Flat(net);
  REQUIRE((*rog)->EndStep().ok());
  REQUIRE((*rog)->worker().Sync(30).ok());
  auto global = AdminExport((*rogd)->address());
  REQUIRE(global.ok());
  CHECK(*global == stepped);
  REQUIRE((*rog)->BeginStep(30).ok());
  CHECK(Flat(net) == stepped);
}

TEST_CASE("two robots with integer updates conserve exactly", "[torch]") {
  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2"});
  REQUIRE(rogd.ok());
  Net a_net, b_net;
  FillIntegers(a_net, 1);
  FillIntegers(b_net, 4);  // b's own values are replaced by the server's model
  auto a = TorchWorker::Start(a_net, Options(**rogd, "a"));
  REQUIRE(a.ok());
  // a brings the model: wait until it is connected before b starts.
  for (int i = 0; i < 300 && !(*a)->worker().connected(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<float> initial = Flat(a_net);
  auto b = TorchWorker::Start(b_net, Options(**rogd, "b"));
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
  std::thread ta(train, a->get(), &a_net, 0);
  std::thread tb(train, b->get(), &b_net, 1);
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
