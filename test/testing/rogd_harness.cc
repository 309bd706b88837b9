#include "test/testing/rogd_harness.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"

namespace rog {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TmpRoot() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

// An Admin stub with `security`'s channel credentials, and the token each
// call presents.
struct Admin {
  std::unique_ptr<pb::Admin::Stub> stub;
  ClientCredentials credentials;
};

absl::StatusOr<Admin> AdminStub(const std::string& address, const ClientSecurity& security) {
  absl::StatusOr<ClientCredentials> c =
      LoadClientCredentials(security, address, SettingNames::kFlags);
  if (!c.ok()) return c.status();
  grpc::ChannelArguments args;
  c->Apply(&args);
  Admin admin;
  admin.stub = pb::Admin::NewStub(grpc::CreateCustomChannel(address, c->channel, args));
  admin.credentials = *std::move(c);
  return admin;
}

void SetDeadline(grpc::ClientContext* ctx, double seconds, const Admin& admin) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  admin.credentials.Authorize(ctx);
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string MakeTempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const std::string dir = absl::StrCat(TmpRoot(), "/", prefix, "-", getpid(), "-", counter++);
  std::string cmd = absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "'");
  if (std::system(cmd.c_str()) != 0) return TmpRoot();
  return dir;
}

std::string RogdBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return absl::StrCat(srcdir, "/", workspace, "/server/rogd");
  }
  return "server/rogd";
}

absl::StatusOr<std::unique_ptr<RogdProcess>> RogdProcess::Start(std::vector<std::string> flags,
                                                                int port) {
  auto p = std::unique_ptr<RogdProcess>(new RogdProcess());
  const std::string dir = MakeTempDir("rogd");
  const std::string port_file = dir + "/port";
  p->log_path_ = dir + "/rogd.log";
  std::vector<std::string> args = {RogdBinary(), absl::StrCat("--listen=127.0.0.1:", port),
                                   "--port_file=" + port_file};
  // The paper's protocol unless a test asks for team patience: the checks of
  // the bound (Team) assume every worker stays attached, and a loaded
  // machine can stall a worker past rogd's default patience.
  bool patience = false;
  for (const std::string& f : flags) patience |= absl::StartsWith(f, "--patience");
  if (!patience) args.push_back("--patience=0");
  args.insert(args.end(), flags.begin(), flags.end());
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    FILE* log = std::fopen(p->log_path_.c_str(), "w");
    if (log != nullptr) {
      dup2(fileno(log), 1);
      dup2(fileno(log), 2);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "exec %s failed\n", argv[0]);
    _exit(127);
  }
  p->pid_ = pid;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    const std::string text = ReadFile(port_file);
    if (!text.empty()) {
      p->port_ = std::atoi(text.c_str());
      return p;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return absl::FailedPreconditionError(
          absl::StrCat("rogd exited with status ", WEXITSTATUS(status), ": ", p->log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat("rogd did not start in 20 s: ", p->log()));
}

RogdProcess::~RogdProcess() {
  if (pid_ > 0) Stop(SIGKILL, 5);
}

std::string RogdProcess::address() const { return absl::StrCat("127.0.0.1:", port_); }

int RogdProcess::Stop(int sig, double timeout_seconds) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int>(timeout_seconds * 1000));
  int status = 0;
  for (;;) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) break;
    if (std::chrono::steady_clock::now() >= until) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::string RogdProcess::log() const { return ReadFile(log_path_); }

absl::StatusOr<pb::StatusReply> AdminStatus(const std::string& address,
                                            const ClientSecurity& security) {
  absl::StatusOr<Admin> admin = AdminStub(address, security);
  if (!admin.ok()) return admin.status();
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 10, *admin);
  pb::StatusReply reply;
  grpc::Status s = admin->stub->GetStatus(&ctx, pb::StatusRequest(), &reply);
  if (!s.ok()) return FromGrpc(s);
  return reply;
}

absl::StatusOr<pb::WorkersReply> AdminWorkers(const std::string& address,
                                              const ClientSecurity& security) {
  absl::StatusOr<Admin> admin = AdminStub(address, security);
  if (!admin.ok()) return admin.status();
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 10, *admin);
  pb::WorkersReply reply;
  grpc::Status s = admin->stub->ListWorkers(&ctx, pb::WorkersRequest(), &reply);
  if (!s.ok()) return FromGrpc(s);
  return reply;
}

bool WaitForTeamAt(const std::string& address, int workers, uint64_t iteration, double seconds) {
  return WaitFor(seconds, [&] {
    const absl::StatusOr<pb::WorkersReply> w = AdminWorkers(address);
    if (!w.ok() || w->workers_size() != workers) return false;
    for (const pb::WorkerInfo& info : w->workers()) {
      if (info.iteration() != iteration) return false;
    }
    return true;
  });
}

const pb::WorkerInfo* FindWorker(const pb::WorkersReply& workers, const std::string& id) {
  for (const pb::WorkerInfo& w : workers.workers()) {
    if (w.worker_id() == id) return &w;
  }
  return nullptr;
}

absl::StatusOr<std::vector<float>> AdminExport(const std::string& address,
                                               const ClientSecurity& security) {
  absl::StatusOr<Admin> admin = AdminStub(address, security);
  if (!admin.ok()) return admin.status();
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 30, *admin);
  auto reader = admin->stub->Export(&ctx, pb::ExportRequest());
  pb::ExportChunk chunk;
  std::vector<float> values;
  while (reader->Read(&chunk)) {
    std::vector<float> part;
    if (!BytesToFloats(chunk.values(), &part)) return absl::DataLossError("bad export chunk");
    values.insert(values.end(), part.begin(), part.end());
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpc(s);
  return values;
}

}  // namespace rog
