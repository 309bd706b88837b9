#include "task/fmnist/task.h"

#include "absl/strings/str_cat.h"
#include "client/torch_adapter.h"
#include "task/fmnist/model.h"

namespace rog::fmnist {

struct Task::Impl {
  explicit Impl(bool convmlp) : net(convmlp) {}
  Net net;
  std::vector<torch::Tensor> params;  // net's, in order
  std::vector<Data> shards;
  Data test;
  uint64_t seed = 0;
  std::vector<float> initial;  // the pretrained values (Step and Accuracy change the net's)
};

Task::Task(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Task::~Task() = default;

absl::StatusOr<std::unique_ptr<Task>> Task::Create(const std::string& model, int workers,
                                                   uint64_t seed) {
  if (model != "cnn" && model != "convmlp") {
    return absl::InvalidArgumentError(
        absl::StrCat("no Fashion-MNIST model '", model, "'; use cnn or convmlp"));
  }
  if (workers < 1) return absl::InvalidArgumentError("need at least one worker");
  // One intra-op thread, as each robot runs: the same floats on every
  // machine whatever its cores.
  torch::set_num_threads(1);
  auto impl = std::make_unique<Impl>(model == "convmlp");
  const Data train = fmnist::Load("train"), test = fmnist::Load("t10k");
  Pretrained(impl->net, model, seed, train, test);
  size_t numel = 0;
  for (const auto& p : impl->net->parameters()) {
    impl->params.push_back(p);
    numel += p.numel();
  }
  impl->initial.resize(numel);
  StoreParameters(impl->params, absl::MakeSpan(impl->initial));
  for (int w = 0; w < workers; ++w) impl->shards.push_back(DegradedShard(train, w, workers, seed));
  impl->test = DegradedTest(test, seed);
  impl->seed = seed;
  return std::unique_ptr<Task>(new Task(std::move(impl)));
}

std::vector<float> Task::Initial() const { return impl_->initial; }

void Task::Step(size_t worker, uint64_t step, absl::Span<const float> params,
                absl::Span<float> update) {
  Impl& m = *impl_;
  LoadParameters(params, m.params);
  std::seed_seq seq{m.seed, static_cast<uint64_t>(worker), step};
  std::mt19937_64 rng(seq);
  const Data& shard = m.shards[worker % m.shards.size()];
  const torch::Tensor b = PickBatch(rng, shard.images.size(0));
  m.net->zero_grad();
  torch::nll_loss(m.net->forward(shard.images.index_select(0, b)), shard.labels.index_select(0, b))
      .backward();
  // Plain SGD, as the robots' optimiser: the delta is -lr x the gradient.
  const float lr = static_cast<float>(LearningRate());
  size_t at = 0;
  for (const torch::Tensor& p : m.params) {
    const torch::Tensor g = p.grad().contiguous();
    const float* gd = g.data_ptr<float>();
    for (int64_t j = 0; j < g.numel(); ++j) update[at + j] = -lr * gd[j];
    at += g.numel();
  }
}

double Task::Accuracy(absl::Span<const float> params) {
  LoadParameters(params, impl_->params);
  return fmnist::Accuracy(impl_->net, impl_->test.images, impl_->test.labels);
}

}  // namespace rog::fmnist
