#include "task/fmnist/model.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(int, eval_images, 2000, "degraded test images per evaluation");
ABSL_FLAG(int, batch, 32, "examples per iteration");
ABSL_FLAG(double, lr, 0.02, "SGD learning rate");
ABSL_FLAG(bool, non_iid, false, "label-skewed shards instead of IID ones");
ABSL_FLAG(std::string, data_dir, "/usr/share/datasets/fashion-mnist",
          "folder of the Fashion-MNIST idx files (Debian's dataset-fashion-mnist)");
ABSL_FLAG(std::string, cache_dir, "/tmp/rog-cache", "where the pretrained clean model is cached");
ABSL_FLAG(int, pretrain_steps, 600, "clean-image SGD steps of the pretraining");

namespace rog::fmnist {
namespace {

constexpr int kSide = 28;
constexpr int kPixels = kSide * kSide;

std::string ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

uint32_t BigEndian(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

}  // namespace

NetImpl::NetImpl(bool convmlp) {
  conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 5)));
  conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 5)));
  if (convmlp) {
    fc1 = register_module("fc1", torch::nn::Linear(256, 1024));
    fc2 = register_module("fc2", torch::nn::Linear(1024, 512));
    fc3 = register_module("fc3", torch::nn::Linear(512, 10));
  } else {
    fc1 = register_module("fc1", torch::nn::Linear(256, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 10));
  }
}

torch::Tensor NetImpl::forward(torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
  x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
  x = torch::relu(fc1->forward(x.view({-1, 256})));
  if (fc3) {
    x = torch::relu(fc2->forward(x));
    x = fc3->forward(x);
  } else {
    x = fc2->forward(x);
  }
  return torch::log_softmax(x, 1);
}

Data Load(const std::string& prefix) {
  const std::string dir = absl::GetFlag(FLAGS_data_dir);
  const std::string ipath = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string lpath = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  const std::string img = ReadGz(ipath), lab = ReadGz(lpath);
  if (img.size() < 16 || BigEndian(img, 0) != 2051 || lab.size() < 8 || BigEndian(lab, 0) != 2049) {
    std::fprintf(stderr,
                 "fmnist: cannot read %s and %s (install Debian's dataset-fashion-mnist, "
                 "or pass --data_dir)\n",
                 ipath.c_str(), lpath.c_str());
    std::exit(2);
  }
  const int64_t n = BigEndian(img, 4);
  if (img.size() != 16 + size_t(n) * kPixels || lab.size() != 8 + size_t(n)) {
    std::fprintf(stderr, "fmnist: %s is truncated\n", ipath.c_str());
    std::exit(2);
  }
  Data d;
  d.images =
      torch::from_blob(const_cast<char*>(img.data() + 16), {n, 1, kSide, kSide}, torch::kUInt8)
          .to(torch::kFloat32)
          .div(255);
  d.labels =
      torch::from_blob(const_cast<char*>(lab.data() + 8), {n}, torch::kUInt8).to(torch::kInt64);
  return d;
}

torch::Tensor Degrade(const torch::Tensor& images, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto blurred = torch::avg_pool2d(images, 5, 1, 2, /*ceil_mode=*/false,
                                   /*count_include_pad=*/false);
  auto gen = at::detail::createCPUGenerator(seed * 7919 + 17);
  auto noise = at::normal(0.0, 0.2, images.sizes(), gen);
  return (0.55 * blurred + 0.35 + noise).clamp(0, 1);
}

double Accuracy(Net& net, const torch::Tensor& images, const torch::Tensor& labels) {
  torch::NoGradGuard no_grad;
  net->eval();
  int64_t correct = 0;
  for (int64_t at = 0; at < images.size(0); at += 500) {
    const int64_t n = std::min<int64_t>(500, images.size(0) - at);
    auto out = net->forward(images.narrow(0, at, n));
    correct += out.argmax(1).eq(labels.narrow(0, at, n)).sum().item<int64_t>();
  }
  net->train();
  return static_cast<double>(correct) / images.size(0);
}

void Pretrained(Net& net, const std::string& model, uint64_t seed, const Data& train,
                const Data& test) {
  const std::string dir = absl::GetFlag(FLAGS_cache_dir);
  // The small CNN keeps its original file name, so existing caches stay valid.
  const std::string path = absl::StrCat(dir, "/fmnist-clean-", model == "cnn" ? "" : model + "-",
                                        absl::GetFlag(FLAGS_pretrain_steps), "-seed", seed, ".pt");
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    torch::load(net, path);
    return;
  }
  torch::manual_seed(seed);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, train.images.size(0) - 1);
  for (int step = 0; step < absl::GetFlag(FLAGS_pretrain_steps); ++step) {
    std::vector<int64_t> idx(64);
    for (auto& i : idx) i = pick(rng);
    auto sel = torch::tensor(idx);
    opt.zero_grad();
    auto loss = torch::nll_loss(net->forward(train.images.index_select(0, sel)),
                                train.labels.index_select(0, sel));
    loss.backward();
    opt.step();
  }
  std::filesystem::create_directories(dir, ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  torch::save(net, tmp);
  std::filesystem::rename(tmp, path, ec);
  const auto clean = test.images.narrow(0, 0, 2000);
  std::printf("pretrained clean model: %s (clean test accuracy %.3f)\n", path.c_str(),
              Accuracy(net, clean, test.labels.narrow(0, 0, 2000)));
}

Data DegradedShard(const Data& train, int shard, int shards, uint64_t seed) {
  std::vector<int64_t> mine;
  const int64_t n = train.images.size(0);
  if (absl::GetFlag(FLAGS_non_iid)) {
    auto order = std::get<1>(train.labels.sort(/*stable=*/true, 0, false));
    const int64_t from = n * shard / shards, to = n * (shard + 1) / shards;
    for (int64_t i = from; i < to; ++i) mine.push_back(order[i].item<int64_t>());
  } else {
    for (int64_t i = shard; i < n; i += shards) mine.push_back(i);
  }
  const auto sel = torch::tensor(mine);
  Data d;
  d.images = Degrade(train.images.index_select(0, sel), seed + shard);
  d.labels = train.labels.index_select(0, sel);
  return d;
}

Data DegradedTest(const Data& test, uint64_t seed) {
  const int64_t n = std::min<int64_t>(absl::GetFlag(FLAGS_eval_images), test.images.size(0));
  Data d;
  d.images = Degrade(test.images.narrow(0, 0, n), seed + 1000);
  d.labels = test.labels.narrow(0, 0, n);
  return d;
}

torch::Tensor PickBatch(std::mt19937_64& rng, int64_t n) {
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  std::vector<int64_t> idx(absl::GetFlag(FLAGS_batch));
  for (auto& i : idx) i = pick(rng);
  return torch::tensor(idx);
}

double LearningRate() { return absl::GetFlag(FLAGS_lr); }

}  // namespace rog::fmnist
