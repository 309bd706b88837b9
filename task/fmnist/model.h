// The main job's task (client/examples/fmnist_worker.cc): a small model
// pretrained on clean Fashion-MNIST images and adapted to degraded ones
// (fog-like blur plus noise, deterministic per seed), each robot on its own
// shard. Shared by the robots (fmnist_worker, step_bench) and the
// simulator's learning task (task/fmnist/task.h, //tools/sim:fmnist_sim), so both
// train the same model on the same data.
//
// Flags defined here (both binaries): --data_dir, --cache_dir,
// --pretrain_steps, --lr, --batch, --eval_images, --non_iid.
#ifndef ROG_TASK_FMNIST_MODEL_H_
#define ROG_TASK_FMNIST_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>

namespace rog::fmnist {

// The two models of --model (fmnist_worker) and --model=fmnist|convmlp
// (//tools/sim:fmnist_sim): `cnn`, a small CNN (82 KB fp32, 8 tensors), and
// `convmlp`, the same convolutions under a wide MLP head (3.2 MB fp32).
// Their layouts are also the simulator's synthetic "fmnist" and "convmlp"
// layouts (sim/simulator.cc): change both together.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(bool convmlp);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(Net);

struct Data {
  torch::Tensor images;  // N x 1 x 28 x 28, [0, 1]
  torch::Tensor labels;  // N, int64
};

// Reads --data_dir's idx image file and label file `prefix` ("train",
// "t10k"); exits with a message saying what to install on error.
Data Load(const std::string& prefix);

// Fog-like degradation: a 5x5 blur, a grey veil and Gaussian noise, the same
// for a given seed on every robot.
torch::Tensor Degrade(const torch::Tensor& images, uint64_t seed);

// The fraction of `images` `net` labels right.
double Accuracy(Net& net, const torch::Tensor& images, const torch::Tensor& labels);

// Loads into `net` the clean model every robot starts from, pretrained once
// (--pretrain_steps of SGD on clean images, from `seed`) and cached under
// --cache_dir. `model`: "cnn" or "convmlp".
void Pretrained(Net& net, const std::string& model, uint64_t seed, const Data& train,
                const Data& test);

// Shard `shard` of `shards` of the degraded training images (--non_iid:
// label-skewed instead of every shards-th image).
Data DegradedShard(const Data& train, int shard, int shards, uint64_t seed);

// The degraded test images every evaluation uses (--eval_images of them).
Data DegradedTest(const Data& test, uint64_t seed);

// A training batch: --batch indices into a shard of `n` images.
torch::Tensor PickBatch(std::mt19937_64& rng, int64_t n);

// --lr.
double LearningRate();

}  // namespace rog::fmnist

#endif  // ROG_TASK_FMNIST_MODEL_H_
