// `rogctl export` against a real rogd: modules trained through the LibTorch
// adapter with integer-valued updates are exported, torch::load reads the
// file into a fresh instance of the module, and its parameters equal the
// global model exactly. Then buffers through --template, and every error
// path with its exit code. Each rogctl run is bounded (rogctl_runner.h);
// rogd dies with the test (rogd_harness.h).
#include "tools/rogctl/rogctl_export.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/torch_adapter.h"
#include "test/client/torch_testing.h"
#include "test/testing/rogctl_runner.h"
#include "test/testing/rogd_harness.h"
#include "tools/rogctl/rogctl_lib.h"

// LibTorch's glog headers define CHECK; Catch2's must win, so it comes last.
#undef CHECK
#include "catch2/catch.hpp"

namespace rog {
namespace {

// Nested like real models: a Linear split into rows, a Sequential of
// Linears (parameters "block.0.weight", ...) and a scalar parameter of the
// top module itself.
struct Net : torch::nn::Module {
  explicit Net(int hidden = 32) {
    fc1 = register_module("fc1", torch::nn::Linear(64, hidden));
    block = register_module(
        "block", torch::nn::Sequential(torch::nn::Linear(hidden, 16), torch::nn::Linear(16, 10)));
    scale = register_parameter("scale", torch::ones({}));
  }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Sequential block{nullptr};
  torch::Tensor scale;
};

// With buffers (BatchNorm's running statistics) and a submodule without
// parameters (the ReLU): Module::load wants both in the file.
struct BnNet : torch::nn::Module {
  BnNet() {
    block = register_module(
        "block", torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::BatchNorm1d(16),
                                       torch::nn::ReLU(), torch::nn::Linear(16, 4)));
  }
  torch::Tensor forward(torch::Tensor x) { return block->forward(x); }
  torch::nn::Sequential block{nullptr};
};

// Trains `robots` (each through its own TorchWorker, `steps` integer steps)
// against `rogd`, drains every update, loads the global model into every
// robot's module and returns it.
std::vector<float> Train(const RogdProcess& rogd, std::vector<torch::nn::Module*> robots,
                         int steps) {
  std::vector<std::unique_ptr<TorchWorker>> workers;
  for (size_t w = 0; w < robots.size(); ++w) {
    auto worker = TorchWorker::Start(*robots[w], Options(rogd, absl::StrCat("robot", w + 1)));
    REQUIRE(worker.ok());
    workers.push_back(*std::move(worker));
    // The first robot brings the model: wait until it is connected.
    for (int i = 0; i < 300 && !workers[0]->worker().connected(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::mutex mu;
  std::string error;
  std::vector<std::thread> threads;
  for (size_t w = 0; w < robots.size(); ++w) {
    threads.emplace_back([&, w] {
      for (int k = 0; k < steps; ++k) {
        absl::Status s = workers[w]->BeginStep(30);
        if (s.ok()) {
          IntegerStep(*robots[w], static_cast<int>(w), k);
          s = workers[w]->EndStep().status();
        }
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          error = s.ToString();
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(error == "");
  for (auto& w : workers) REQUIRE(w->worker().Flush(30).ok());
  for (auto& w : workers) REQUIRE(w->worker().Sync(30).ok());
  auto global = AdminExport(rogd.address());
  REQUIRE(global.ok());
  for (auto& w : workers) {
    CHECK(w->worker().Replica() == *global);
    w->LoadReplica();  // each robot's module now holds the team's model
    CHECK(w->worker().Close().ok());
  }
  return *global;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) n += entry.exists();
  return n;
}

#define SHOW(run) \
  INFO("exit " << (run).code << "\nstdout:\n" << (run).out << "stderr:\n" << (run).err)

TEST_CASE("rogctl export writes what torch::load reads into the same module", "[export]") {
  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2"});
  REQUIRE(rogd.ok());
  INFO((*rogd)->log());
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  FillIntegers(*a, 1);
  FillIntegers(*b, 4);  // b's own values are replaced by the server's model
  const std::vector<float> initial = Flat(*a);
  // 12 steps: the deltas of IntegerStep cancel out over any 5.
  const std::vector<float> global = Train(**rogd, {a.get(), b.get()}, 12);
  REQUIRE(global.size() == initial.size());
  REQUIRE(global != initial);

  const std::string dir = MakeTempDir("export");
  const std::string path = dir + "/model.pt";
  const std::string server = "--server=" + (*rogd)->address();
  RogctlRun run = Rogctl({server, "export", "--out=" + path});
  SHOW(run);
  REQUIRE(run.code == 0);
  CHECK(run.err.empty());
  CHECK(run.out == absl::StrCat("model exported: ", path, " (7 tensors, ", global.size(),
                                " values, ", ctl::HumanBytes(FileSize(path)), ")\n",
                                "load it with torch::load(module, \"", path,
                                "\") into the module the robots train\n"));

  // A fresh instance, with other values, reads the global model exactly.
  auto fresh = std::make_shared<Net>();
  REQUIRE(Flat(*fresh) != global);
  torch::load(fresh, path);
  CHECK(Flat(*fresh) == global);
  // Tensor by tensor, by name, against the robot's module.
  {
    const auto want = a->named_parameters();
    const auto got = fresh->named_parameters();
    REQUIRE(got.size() == want.size());
    for (const auto& p : want) {
      INFO(p.key());
      REQUIRE(got.contains(p.key()));
      CHECK(torch::equal(got[p.key()], p.value()));
    }
  }

  // --json, to a path that already holds a file: replaced whole, nothing left beside it.
  RogctlRun json = Rogctl({server, "--json", "export", "--out", path});
  SHOW(json);
  REQUIRE(json.code == 0);
  CHECK(json.out ==
        absl::StrCat("{\"out\":\"", path, "\",\"tensors\":7,\"elements\":", global.size(),
                     ",\"bytes\":", FileSize(path), ",\"template\":null,\"buffers\":0}\n"));
  CHECK(FilesIn(dir) == 1);
  auto again = std::make_shared<Net>();
  torch::load(again, path);
  CHECK(Flat(*again) == global);
}

TEST_CASE("buffers and parameter-less submodules come from --template", "[export]") {
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  INFO((*rogd)->log());
  auto robot = std::make_shared<BnNet>();
  FillIntegers(*robot, 2);
  const std::vector<float> global = Train(**rogd, {robot.get()}, 6);
  // The robot's BatchNorm statistics move with its own data; rogd never sees them.
  {
    torch::NoGradGuard no_grad;
    robot->train();
    for (int i = 0; i < 3; ++i) robot->forward(torch::randn({32, 8}) * (i + 1) + i);
  }
  const std::string dir = MakeTempDir("export");
  const std::string template_path = dir + "/robot1.pt";
  // The template's parameters are not the team's: the export replaces them.
  auto saved = std::make_shared<BnNet>();
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : robot->named_buffers()) saved->named_buffers()[p.key()].copy_(p.value());
  }
  torch::save(saved, template_path);
  REQUIRE(Flat(*saved) != global);

  const std::string server = "--server=" + (*rogd)->address();
  const std::string path = dir + "/model.pt";

  // Parameters alone: torch::load refuses this module (it wants the
  // buffers and the ReLU's archive), as docs/reference.md says.
  RogctlRun plain = Rogctl({server, "export", "--out=" + path});
  SHOW(plain);
  REQUIRE(plain.code == 0);
  auto refused = std::make_shared<BnNet>();
  try {
    torch::load(refused, path);
    FAIL("torch::load read a parameters-only export into a module with buffers");
  } catch (const c10::Error& e) {
    CHECK(absl::StrContains(e.what_without_backtrace(), "No such serialized"));
  }

  RogctlRun run = Rogctl({server, "export", "--out=" + path, "--template=" + template_path});
  SHOW(run);
  REQUIRE(run.code == 0);
  CHECK(absl::StrContains(run.out, absl::StrCat("model exported: ", path, " (6 tensors, ",
                                                global.size(), " values, ")));
  CHECK(absl::StrContains(run.out, "\nfrom template " + template_path +
                                       ": 3 buffers and the module structure, kept as they "
                                       "are\n"));
  auto fresh = std::make_shared<BnNet>();
  torch::load(fresh, path);
  CHECK(Flat(*fresh) == global);
  const auto want = robot->named_buffers();
  const auto got = fresh->named_buffers();
  REQUIRE(got.size() == 3);
  for (const auto& p : want) {
    INFO(p.key());
    CHECK(torch::equal(got[p.key()], p.value()));
  }
  CHECK(got["block.1.num_batches_tracked"].item<int64_t>() == 3);

  RogctlRun json =
      Rogctl({server, "export", "--json", "--out=" + path, "--template=" + template_path});
  SHOW(json);
  CHECK(json.code == 0);
  CHECK(absl::StrContains(json.out,
                          absl::StrCat(",\"template\":\"", template_path, "\",\"buffers\":3}\n")));

  {  // A template of another module: exit 2, naming the parameter.
    auto other = std::make_shared<Net>();
    const std::string other_path = dir + "/other.pt";
    torch::save(other, other_path);
    RogctlRun bad =
        Rogctl({server, "export", "--out=" + dir + "/x.pt", "--template=" + other_path});
    SHOW(bad);
    CHECK(bad.code == 2);
    CHECK(absl::StrContains(bad.err, "rogctl export: --template=" + other_path +
                                         " is not the module rogd trains: its parameter "
                                         "'block.0.weight' is [16, 32], rogd's is [16, 8]"));
    CHECK(!Exists(dir + "/x.pt"));
  }
  {  // A template that is no LibTorch archive, or no file: exit 2.
    const std::string junk = dir + "/junk.pt";
    std::ofstream(junk) << "not a zip file";
    RogctlRun bad = Rogctl({server, "export", "--out=" + dir + "/x.pt", "--template=" + junk});
    SHOW(bad);
    CHECK(bad.code == 2);
    CHECK(absl::StrContains(bad.err, "--template=" + junk + " is not a LibTorch archive"));
    RogctlRun missing =
        Rogctl({server, "export", "--out=" + dir + "/x.pt", "--template=" + dir + "/nope.pt"});
    SHOW(missing);
    CHECK(missing.code == 2);
    CHECK(absl::StrContains(missing.err, "cannot read --template=" + dir + "/nope.pt"));
    CHECK(!Exists(dir + "/x.pt"));
  }
}

TEST_CASE("rogctl export's error paths exit with their codes and say what to do", "[export]") {
  const std::string dir = MakeTempDir("export");
  SECTION("no model yet: exit 4, no file") {
    auto rogd = RogdProcess::Start({"--workers=1"});
    REQUIRE(rogd.ok());
    RogctlRun run =
        Rogctl({"--server=" + (*rogd)->address(), "export", "--out=" + dir + "/model.pt"});
    SHOW(run);
    CHECK(run.code == 4);
    CHECK(run.out.empty());
    CHECK(absl::StrContains(run.err, "rogctl export: no model yet"));
    CHECK(absl::StrContains(run.err, "start a worker"));
    CHECK(FilesIn(dir) == 0);
  }
  SECTION("an --out that cannot be written: exit 2 before asking rogd") {
    // No rogd at all: the path is checked first.
    const std::string server = absl::StrCat("--server=127.0.0.1:", FreePort());
    const std::string file = dir + "/plain";
    std::ofstream(file) << "x";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {dir + "/no/such/folder/model.pt", "folder " + dir + "/no/such/folder does not exist"},
        {dir, "it is a folder; name a file in it, e.g. --out=" + dir + "/model.pt"},
        {file + "/model.pt", file + " is not a folder"},
        {"/dev/null", "it exists and is not a regular file"},
    };
    for (const auto& [out, why] : cases) {
      RogctlRun run = Rogctl({server, "export", "--out=" + out});
      SHOW(run);
      CHECK(run.code == 2);
      CHECK(run.err == absl::StrCat("rogctl export: cannot write --out=", out, ": ", why, "\n"));
    }
    CHECK(FilesIn(dir) == 1);
  }
  SECTION("under `bazel run`, relative paths are the user's") {
    setenv("BUILD_WORKING_DIRECTORY", dir.c_str(), 1);
    RogctlRun run = Rogctl({absl::StrCat("--server=127.0.0.1:", FreePort()), "export",
                            "--out=sub/model.pt", "--template=robot.pt"});
    unsetenv("BUILD_WORKING_DIRECTORY");
    SHOW(run);
    CHECK(run.code == 2);
    CHECK(run.err == "rogctl export: cannot write --out=sub/model.pt: folder " + dir +
                         "/sub does not exist\n");
  }
  SECTION("no rogd at --server: exit 3") {
    const std::string address = absl::StrCat("127.0.0.1:", FreePort());
    RogctlRun run =
        Rogctl({"--server=" + address, "--timeout=3s", "export", "--out=" + dir + "/m.pt"});
    SHOW(run);
    CHECK(run.code == 3);
    CHECK(absl::StrContains(run.err, "cannot reach rogd at " + address));
    CHECK(FilesIn(dir) == 0);
  }
  SECTION("usage: --out is required, belongs to export, no --watch") {
    RogctlRun missing = Rogctl({"export"});
    SHOW(missing);
    CHECK(missing.code == 2);
    CHECK(absl::StrContains(missing.err, "export needs --out=FILE"));
    CHECK(Rogctl({"status", "--out=m.pt"}).code == 2);
    CHECK(Rogctl({"checkpoint", "--template=m.pt"}).code == 2);
    CHECK(Rogctl({"--watch=1s", "export", "--out=" + dir + "/m.pt"}).code == 2);
    RogctlRun help = Rogctl({"--help"});
    CHECK(absl::StrContains(help.out, "\n  export      write the global model to --out=FILE"));
  }
}

// The archive format itself, without rogd: a layout whose names need
// nesting three deep, values i at element i.
TEST_CASE("MakeTorchArchive nests parameters the way Module::load reads them", "[export]") {
  Net net;
  absl::StatusOr<Layout> layout = LayoutOfModule(net);
  REQUIRE(layout.ok());
  std::vector<float> values(layout->total_numel());
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  absl::StatusOr<ctl::TorchArchive> archive = ctl::MakeTorchArchive(*layout, values);
  REQUIRE(archive.ok());
  CHECK(archive->buffers == 0);
  auto loaded = std::make_shared<Net>();
  std::istringstream in(archive->bytes);
  torch::load(loaded, in);
  CHECK(Flat(*loaded) == values);
  CHECK(loaded->scale.item<float>() == 0);  // "scale" comes first in named_parameters()

  auto bad = Layout::Create({{"fc.weight", {2}}, {"fc", {2}}});
  REQUIRE(bad.ok());
  absl::StatusOr<ctl::TorchArchive> refused = ctl::MakeTorchArchive(*bad, {1, 2, 3, 4});
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(refused.status().message(), "'fc' is also the submodule"));
  CHECK(ctl::MakeTorchArchive(*layout, {1, 2}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a template must hold exactly the model's parameters", "[export]") {
  Net net;
  absl::StatusOr<Layout> layout = LayoutOfModule(net);
  REQUIRE(layout.ok());
  const std::vector<float> values(layout->total_numel(), 1.0f);
  const auto archive_of = [](std::shared_ptr<torch::nn::Module> m) {
    std::ostringstream out;
    torch::save(m, out);
    return ctl::ArchiveTemplate{"t.pt", out.str()};
  };
  const ctl::ArchiveTemplate bn = archive_of(std::make_shared<BnNet>());
  absl::StatusOr<ctl::TorchArchive> s = ctl::MakeTorchArchive(*layout, values, &bn);
  CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.status().message() ==
        "--template=t.pt is not the module rogd trains: it has no parameter 'scale'");
  // The model without "scale": the template has one parameter too many.
  std::vector<TensorSpec> specs(layout->tensors().begin() + 1, layout->tensors().end());
  REQUIRE(layout->tensors()[0].name == "scale");
  const Layout fewer = *Layout::Create(specs);
  const ctl::ArchiveTemplate same = archive_of(std::make_shared<Net>());
  s = ctl::MakeTorchArchive(fewer, std::vector<float>(fewer.total_numel()), &same);
  CHECK(s.status().message() ==
        "--template=t.pt is not the module rogd trains: it has parameter 'scale', which rogd's "
        "model lacks");
  auto doubles = std::make_shared<Net>();
  doubles->to(torch::kFloat64);
  const ctl::ArchiveTemplate f64 = archive_of(doubles);
  s = ctl::MakeTorchArchive(*layout, values, &f64);
  CHECK(s.status().message() ==
        "--template=t.pt is not the module rogd trains: its parameter 'scale' is Double, rogd's "
        "is float32");
  s = ctl::MakeTorchArchive(*layout, values, &same);
  REQUIRE(s.ok());
  auto loaded = std::make_shared<Net>();
  std::istringstream in(s->bytes);
  torch::load(loaded, in);
  CHECK(Flat(*loaded) == values);
}

}  // namespace
}  // namespace rog
