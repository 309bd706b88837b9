// fmnist_sim (//tools/sim:fmnist_sim): the simulator (sim's flags and table) with the
// main job's model really trained: every simulated worker's update is an
// SGD step of fmnist_worker's model on its own shard, from the parameters
// its compute started from, so the policies' accuracy over time and after
// the final sync can be compared on identical links, seeds and data in
// seconds instead of a benchmark's minutes. The protocol's invariants are
// sim's to check (integer updates); here they are not.
#include <memory>
#include <string>
#include <utility>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "task/fmnist/task.h"
#include "tools/sim/sim_cli.h"

ABSL_DECLARE_FLAG(std::string, model);

namespace {

// The task as the simulator's learning task; scores are test accuracy.
class FmnistLearning final : public rog::SimLearning {
 public:
  explicit FmnistLearning(std::unique_ptr<rog::fmnist::Task> task) : task_(std::move(task)) {}
  std::vector<float> Initial() override { return task_->Initial(); }
  void Step(size_t worker, uint64_t step, absl::Span<const float> params,
            absl::Span<float> update) override {
    task_->Step(worker, step, params, update);
  }
  double Score(absl::Span<const float> params) override { return task_->Accuracy(params); }

 private:
  std::unique_ptr<rog::fmnist::Task> task_;
};

absl::StatusOr<std::unique_ptr<rog::SimLearning>> MakeLearning(const std::string& model,
                                                               const rog::Layout& /*layout*/,
                                                               const rog::SimConfig& config) {
  // The simulator's layouts of fmnist_worker's two models.
  std::string torch_model;
  if (model == "fmnist") torch_model = "cnn";
  if (model == "convmlp") torch_model = "convmlp";
  if (torch_model.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model=", model, " is not a model fmnist_worker trains; use fmnist or convmlp"));
  }
  absl::StatusOr<std::unique_ptr<rog::fmnist::Task>> task =
      rog::fmnist::Task::Create(torch_model, static_cast<int>(config.workers), config.seed);
  if (!task.ok()) return task.status();
  return std::unique_ptr<rog::SimLearning>(new FmnistLearning(*std::move(task)));
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Simulates a ROG team (as //tools/sim) whose workers really train the main job's model "
      "(fmnist_worker's, on their shards of degraded Fashion-MNIST images) and prints each "
      "policy's test accuracy over the training time, at its end and after the final sync.\n"
      "--model is fmnist (the default here) or convmlp.\n"
      "Example: bazel run //tools/sim:fmnist_sim -- --seconds=120 --compute_seconds=1 "
      "--compute_jitter=0 --trace_scale=0.003772\n");
  absl::SetFlag(&FLAGS_model, "fmnist");
  return rog::SimMain(argc, argv, "fmnist_sim", MakeLearning);
}
