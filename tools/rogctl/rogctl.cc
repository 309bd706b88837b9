// rogctl: asks a running rogd (its Admin service) how training goes.
//
//   rogctl [--server=HOST:PORT] [--json] [--timeout=5s] COMMAND [flags]
//
// Exit codes: 0 ok, 1 other error, 2 usage (unknown command, flag, tensor
// or worker; an --out it cannot write), 3 rogd unreachable, 4 not ready (no
// model yet, no --checkpoint_dir), 5 auth refused. See docs/reference.md, section
// "rogctl", for the JSON schemas.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/credentials.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"
#include "tools/rogctl/rogctl_lib.h"

ABSL_FLAG(std::string, server, "127.0.0.1:7070", "rogd's admin address, HOST:PORT");
ABSL_FLAG(bool, json, false, "print JSON (one schema per command) instead of tables");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5), "deadline of each call to rogd");
ABSL_FLAG(std::string, tensor, "", "staleness: only rows of this tensor");
ABSL_FLAG(std::string, worker, "", "staleness: only this worker's copies");
ABSL_FLAG(uint32_t, top, 0, "staleness: only the N stalest rows (0: all)");
ABSL_FLAG(absl::Duration, watch, absl::ZeroDuration(),
          "status, workers, staleness: refresh every DURATION (e.g. 2s) until Ctrl-C");
ABSL_FLAG(std::string, staleness, "", "mta: the bound S, a range A..B or a list A,B,C");
ABSL_FLAG(std::string, out, "", "export: the file to write, e.g. model.pt");
ABSL_FLAG(std::string, template, "",
          "export: a torch::save of the module whose buffers and structure to keep");

// Security (docs/operations.md "Security"): as rog::WorkerOptions, with the admin token.
ABSL_FLAG(std::string, tls_ca, "", "PEM CA certificate that signed rogd's: talk TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate, for a rogd that requires them (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "check rogd's certificate against this name instead of --server's host");
ABSL_FLAG(std::string, token_file, "",
          "file holding the admin token (the one rogd's --admin_token_file names)");

namespace {

using rog::ctl::kExitError;
using rog::ctl::kExitOk;
using rog::ctl::kExitUsage;

constexpr char kCommands[] = "status, workers, staleness, checkpoint, export, mta";

constexpr char kUsage[] =
    R"(rogctl: look at a running rogd, export its model.

usage: rogctl [--server=HOST:PORT] [--json] [--timeout=5s] COMMAND [flags]

commands:
  status      sync policy, S, MTA, model size, workers (detached too), team patience,
              iterations, checkpoint, rejections
  workers     one row per worker: state, team (attached, or detached by rogd's --patience
              and for how long), detaches, iteration, lag, goodput, stalls, rows/bytes per
              iteration
  staleness   per row: how far each worker's copy is behind, oldest unpushed update, heat map
              [--tensor=NAME] [--worker=ID] [--top=N]
  checkpoint  write a checkpoint now (rogd needs --checkpoint_dir)
  export      write the global model to --out=FILE for torch::load(module, FILE)
              [--template=FILE: a torch::save of the module, for its buffers and structure]
  mta         the minimum transmission amount for --staleness=S (or A..B, or A,B,C); no rogd needed

flags:
  --server=HOST:PORT  rogd's address (default 127.0.0.1:7070)
  --json              JSON instead of tables (schemas: docs/reference.md, "JSON schemas")
  --timeout=DURATION  deadline of each call, e.g. 5s, 500ms (default 5s)
  --watch=DURATION    status, workers, staleness: refresh every DURATION (e.g. 2s) until Ctrl-C

security (docs/operations.md "Security"):
  --tls_ca=FILE           CA certificate that signed rogd's: talk TLS
  --tls_cert=FILE --tls_key=FILE
                          client certificate and key, for a rogd with --tls_ca (mutual TLS)
  --tls_server_name=NAME  check rogd's certificate against NAME, not --server's host
  --token_file=FILE       file holding the admin token (rogd --admin_token_file)

exit codes: 0 ok, 1 other error, 2 usage, unknown tensor/worker, --out not writable,
            3 rogd unreachable, 4 not ready (no model yet, rogd without --checkpoint_dir),
            5 auth refused (token missing, wrong or not the admin token; TLS refused)
)";

const std::set<std::string>& KnownFlags() {
  static const auto* const known =
      new std::set<std::string>{"server", "json", "timeout", "tensor", "worker", "top", "staleness",
                                "watch", "out", "template",
                                // security
                                "tls_ca", "tls_cert", "tls_key", "tls_server_name", "token_file"};
  return *known;
}

int UsageError(const std::string& what) {
  std::fprintf(stderr, "rogctl: %s\nrun `rogctl --help` for the commands and flags\n",
               what.c_str());
  return kExitUsage;
}

// Parses argv with Abseil's flag registry; flags may come before or after
// the command. Returns -1 on success, else the exit code.
int ParseArgs(int argc, char** argv, std::vector<std::string>* positional) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional->push_back(argv[i]);
      break;
    }
    if (arg == "-h" || arg == "--help" || arg == "-help" || arg == "help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional->push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (const size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    bool negated = false;
    if (!KnownFlags().count(name) && absl::StartsWith(name, "no") &&
        KnownFlags().count(name.substr(2))) {
      name = name.substr(2);
      negated = true;
    }
    absl::CommandLineFlag* flag =
        KnownFlags().count(name) ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr) {
      return UsageError(absl::StrCat("unknown flag ", arg, "; the flags are --",
                                     absl::StrJoin(KnownFlags(), ", --")));
    }
    const bool is_bool = flag->IsOfType<bool>();
    if (negated) {
      if (!is_bool || has_value) return UsageError(absl::StrCat("unknown flag ", arg));
      value = "false";
    } else if (!has_value) {
      if (is_bool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return UsageError(absl::StrCat("flag --", name, " needs a value: --", name, "=VALUE"));
      }
    }
    // `--watch 2` means seconds, as in the issue's `--watch SECONDS`.
    if (flag->IsOfType<absl::Duration>() && !value.empty() &&
        value.find_first_not_of("0123456789.") == std::string::npos) {
      value += "s";
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(
          absl::StrCat("bad value for --", name, ": ", error, " (", flag->Help(), ")"));
    }
  }
  return -1;
}

// TLS and the admin token from the security flags; loaded once by main.
rog::ClientCredentials g_security;

std::unique_ptr<rog::pb::Admin::Stub> Stub() {
  grpc::ChannelArguments args;
  g_security.Apply(&args);
  return rog::pb::Admin::NewStub(
      grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server), g_security.channel, args));
}

// Every call's deadline, and the admin token if there is one.
void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_timeout)));
  g_security.Authorize(ctx);
}

// What one command produced: its exit code, stdout text and stderr text.
struct Output {
  int code = kExitOk;
  std::string out;
  std::string err;
};

Output Fail(const grpc::Status& s, const std::string& command) {
  rog::ctl::Failure f =
      rog::ctl::DescribeFailure(static_cast<int>(s.error_code()), s.error_message(),
                                absl::GetFlag(FLAGS_server), command, g_security.tls);
  // What rogctl already knew might go wrong (an expired certificate, say).
  if (f.exit_code == rog::ctl::kExitAuth || f.exit_code == rog::ctl::kExitUnreachable) {
    for (const std::string& w : g_security.warnings) absl::StrAppend(&f.message, "\nnote: ", w);
  }
  return {f.exit_code, "", f.message + "\n"};
}

Output Print(const std::string& text) { return {kExitOk, text, ""}; }

int Emit(const Output& o) {
  std::fputs(o.out.c_str(), stdout);
  std::fputs(o.err.c_str(), stderr);
  std::fflush(stdout);
  return o.code;
}

Output RunStatus() {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  rog::pb::StatusReply reply;
  const grpc::Status s = Stub()->GetStatus(&ctx, rog::pb::StatusRequest(), &reply);
  if (!s.ok()) return Fail(s, "status");
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  return Print(absl::GetFlag(FLAGS_json) ? rog::ctl::StatusJson(reply, now)
                                         : rog::ctl::StatusTable(reply, now));
}

Output RunWorkers() {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  rog::pb::WorkersReply reply;
  const grpc::Status s = Stub()->ListWorkers(&ctx, rog::pb::WorkersRequest(), &reply);
  if (!s.ok()) return Fail(s, "workers");
  return Print(absl::GetFlag(FLAGS_json) ? rog::ctl::WorkersJson(reply)
                                         : rog::ctl::WorkersTable(reply));
}

Output RunStaleness() {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  rog::pb::StalenessRequest request;
  request.set_tensor(absl::GetFlag(FLAGS_tensor));
  request.set_worker_id(absl::GetFlag(FLAGS_worker));
  request.set_top(absl::GetFlag(FLAGS_top));
  rog::pb::StalenessReply reply;
  const grpc::Status s = Stub()->GetStaleness(&ctx, request, &reply);
  if (!s.ok()) return Fail(s, "staleness");
  if (absl::GetFlag(FLAGS_json)) return Print(rog::ctl::StalenessJson(reply));
  // The heat map shows whole tensors, so not with --top.
  return Print(rog::ctl::StalenessTable(reply, /*heat_map=*/request.top() == 0,
                                        /*color=*/isatty(1) == 1));
}

Output RunCheckpoint() {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  rog::pb::CheckpointReply reply;
  const grpc::Status s = Stub()->Checkpoint(&ctx, rog::pb::CheckpointRequest(), &reply);
  if (!s.ok()) return Fail(s, "checkpoint");
  return Print(absl::GetFlag(FLAGS_json) ? rog::ctl::CheckpointJson(reply)
                                         : rog::ctl::CheckpointTable(reply));
}

Output RunMta() {
  const std::string spec = absl::GetFlag(FLAGS_staleness);
  if (spec.empty()) return {UsageError("mta needs --staleness=S (e.g. 4, 2..8 or 1,2,4)")};
  absl::StatusOr<std::vector<uint32_t>> bounds = rog::ctl::ParseStalenessList(spec);
  if (!bounds.ok()) return {UsageError(std::string(bounds.status().message()))};
  return Print(absl::GetFlag(FLAGS_json) ? rog::ctl::MtaJson(*bounds)
                                         : rog::ctl::MtaTable(*bounds));
}

// The folder `path` lives in.
std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Why `out` cannot be written, or "" if it looks writable: checked before
// asking rogd, so that a typo costs no transfer.
std::string OutProblem(const std::string& out) {
  struct stat st;
  if (stat(out.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return absl::StrCat("it is a folder; name a file in it, e.g. --out=", out,
                          absl::EndsWith(out, "/") ? "" : "/", "model.pt");
    }
    if (!S_ISREG(st.st_mode)) return "it exists and is not a regular file";
  }
  const std::string dir = DirName(out);
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::StrCat("folder ", dir, " does not exist");
    return absl::StrCat("cannot look at folder ", dir, " (", std::strerror(errno), ")");
  }
  if (!S_ISDIR(st.st_mode)) return absl::StrCat(dir, " is not a folder");
  if (access(dir.c_str(), W_OK) != 0) {
    return absl::StrCat("no permission to write in ", dir, " (", std::strerror(errno), ")");
  }
  return "";
}

Output ExportError(int code, absl::string_view message) {
  return {code, "", absl::StrCat("rogctl export: ", message, "\n")};
}

// argv[0], for finding rogctl_torch.
std::string g_argv0;

// rogctl_torch, `export`'s LibTorch helper (rogctl_torch.cc): beside
// this binary (bazel-bin/tools/rogctl, or wherever both are installed), or beside
// the path it was started by (a symlink, Bazel's runfiles).
std::string HelperPath() {
  std::vector<std::string> candidates;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) candidates.push_back(DirName(std::string(self, n)) + "/rogctl_torch");
  if (g_argv0.find('/') != std::string::npos) {
    candidates.push_back(DirName(g_argv0) + "/rogctl_torch");
  }
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return candidates.empty() ? "rogctl_torch" : candidates.front();
}

// Runs rogctl_torch on `model` (one chunk holding every row): it writes
// `out` (and reads `template_path` if not empty). Its messages go straight
// to stderr; its exit code becomes rogctl's.
Output RunHelper(const rog::pb::ExportChunk& model, const std::string& out,
                 const std::string& template_path, uint64_t* bytes, uint64_t* buffers) {
  const std::string helper = HelperPath();
  if (access(helper.c_str(), X_OK) != 0) {
    return ExportError(
        kExitError,
        absl::StrCat("its LibTorch helper ", helper, " is missing (", std::strerror(errno),
                     "); `bazel build //tools/rogctl` builds it beside rogctl, and "
                     "an installed rogctl needs rogctl_torch in the same folder"));
  }
  int in[2], from[2];
  if (pipe2(in, O_CLOEXEC) != 0) return ExportError(kExitError, "pipe failed");
  if (pipe2(from, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return ExportError(kExitError, "pipe failed");
  }
  std::vector<std::string> args = {helper, out};
  if (!template_path.empty()) args.push_back(template_path);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from[1], 1);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, helper.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(from[1]);
  if (spawned != 0) {
    close(in[1]);
    close(from[0]);
    return ExportError(kExitError,
                       absl::StrCat("cannot run ", helper, ": ", std::strerror(spawned)));
  }
  // The helper reads all of its input before it writes anything, so writing
  // everything first and then reading cannot deadlock. If it dies early,
  // the write fails with EPIPE instead of killing rogctl.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string data = model.SerializeAsString();
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = write(in[1], data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(in[1]);
  std::string reply;
  char buf[256];
  for (;;) {
    const ssize_t n = read(from[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(from[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return ExportError(kExitError, absl::StrCat(helper, " died of signal ", WTERMSIG(status),
                                                "; nothing was written to ", out));
  }
  if (WEXITSTATUS(status) != 0) return {WEXITSTATUS(status), "", ""};  // it said why
  unsigned long long b = 0, f = 0;
  if (std::sscanf(reply.c_str(), "bytes %llu buffers %llu", &b, &f) != 2) {
    return ExportError(kExitError, absl::StrCat(helper, " answered '", reply, "'"));
  }
  *bytes = b;
  *buffers = f;
  return {};
}

// A path the user typed, relative to where they typed it: under `bazel
// run` the working directory is the runfiles tree, and Bazel says in
// BUILD_WORKING_DIRECTORY where the user was.
std::string UserPath(const std::string& path) {
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || dir == nullptr || *dir == '\0') return path;
  return absl::StrCat(dir, "/", path);
}

// Streams the global model from rogd and writes it as a LibTorch archive.
Output RunExport() {
  const std::string out_flag = absl::GetFlag(FLAGS_out);
  if (out_flag.empty()) {
    return {UsageError("export needs --out=FILE, the file to write (e.g. --out=model.pt)")};
  }
  const std::string out = UserPath(out_flag);
  if (const std::string problem = OutProblem(out); !problem.empty()) {
    return ExportError(kExitUsage, absl::StrCat("cannot write --out=", out_flag, ": ", problem));
  }
  const std::string template_flag = absl::GetFlag(FLAGS_template);
  const std::string template_path = UserPath(template_flag);
  if (!template_path.empty()) {
    const int fd = open(template_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return ExportError(kExitUsage, absl::StrCat("cannot read --template=", template_flag,
                                                  ": cannot open it: ", std::strerror(errno)));
    }
    close(fd);
  }

  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  std::unique_ptr<grpc::ClientReader<rog::pb::ExportChunk>> reader =
      Stub()->Export(&ctx, rog::pb::ExportRequest());
  rog::ctl::ExportAssembler assembler;
  rog::pb::ExportChunk chunk;
  absl::Status malformed;
  while (reader->Read(&chunk)) {
    malformed = assembler.Add(chunk);
    if (!malformed.ok()) {
      ctx.TryCancel();
      break;
    }
  }
  const grpc::Status s = reader->Finish();
  if (!malformed.ok()) return ExportError(kExitError, malformed.message());
  if (!s.ok()) return Fail(s, "export");
  absl::StatusOr<rog::ctl::ExportedModel> model = assembler.Finish();
  if (!model.ok()) return ExportError(kExitError, model.status().message());

  rog::pb::ExportChunk whole;
  *whole.mutable_layout() = rog::LayoutToProto(model->layout);
  whole.set_first_row(0);
  whole.set_rows(static_cast<uint32_t>(model->layout.num_rows()));
  whole.set_values(rog::FloatsToBytes(model->values));
  rog::ctl::ExportSummary summary;
  if (Output o = RunHelper(whole, out, template_path, &summary.bytes, &summary.buffers);
      o.code != kExitOk) {
    return o;
  }
  summary.out = out_flag;
  summary.tensors = model->layout.tensors().size();
  summary.elements = model->layout.total_numel();
  summary.template_path = template_flag;
  return Print(absl::GetFlag(FLAGS_json) ? rog::ctl::ExportJson(summary)
                                         : rog::ctl::ExportTable(summary));
}

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

// Runs `run` every `every` until SIGINT or SIGTERM (then exit 0). On a
// terminal each refresh redraws the screen; otherwise snapshots follow each
// other (with --json: one object per line). Failures are shown and retried,
// except usage errors and auth refusals, which end the watch.
int Watch(Output (*run)(), const std::string& command, absl::Duration every) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const bool tty = isatty(1) == 1;
  const bool json = absl::GetFlag(FLAGS_json);
  while (!g_stop) {
    const Output o = run();
    // Refreshing cannot fix a wrong flag or a refused credential.
    if (o.code == kExitUsage || o.code == rog::ctl::kExitAuth) return Emit(o);
    const std::string when = absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone());
    if (tty && !json) {
      std::fputs("\x1b[H\x1b[2J", stdout);
      std::printf("rogctl %s every %s at %s (Ctrl-C stops)\n\n", command.c_str(),
                  absl::FormatDuration(every).c_str(), when.c_str());
    } else if (!json) {
      std::printf("--- %s\n", when.c_str());
    }
    Emit(o);
    for (absl::Time until = absl::Now() + every; !g_stop && absl::Now() < until;) {
      absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
    }
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  g_argv0 = argv[0];
  std::vector<std::string> positional;
  if (int code = ParseArgs(argc, argv, &positional); code >= 0) return code;
  if (positional.empty()) {
    return UsageError(absl::StrCat("no command given; use one of: ", kCommands));
  }
  if (positional.size() > 1) {
    return UsageError(absl::StrCat("one command at a time; got: ", absl::StrJoin(positional, " ")));
  }
  const std::string& command = positional[0];
  const bool staleness_flags = !absl::GetFlag(FLAGS_tensor).empty() ||
                               !absl::GetFlag(FLAGS_worker).empty() || absl::GetFlag(FLAGS_top) > 0;
  if (staleness_flags && command != "staleness") {
    return UsageError("--tensor, --worker and --top belong to `rogctl staleness`");
  }
  if (!absl::GetFlag(FLAGS_staleness).empty() && command != "mta") {
    return UsageError("--staleness belongs to `rogctl mta`; rogd's own S is in `rogctl status`");
  }
  if ((!absl::GetFlag(FLAGS_out).empty() || !absl::GetFlag(FLAGS_template).empty()) &&
      command != "export") {
    return UsageError("--out and --template belong to `rogctl export`");
  }
  if (command != "mta") {
    const std::string server = absl::GetFlag(FLAGS_server);
    const size_t colon = server.rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(server.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return UsageError(absl::StrCat(
          "--server=", server, " is not HOST:PORT (e.g. 127.0.0.1:7070 or robot1.local:7070)"));
    }
    rog::ClientSecurity security;
    security.tls_ca_file = UserPath(absl::GetFlag(FLAGS_tls_ca));
    security.tls_cert_file = UserPath(absl::GetFlag(FLAGS_tls_cert));
    security.tls_key_file = UserPath(absl::GetFlag(FLAGS_tls_key));
    security.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
    security.token_file = UserPath(absl::GetFlag(FLAGS_token_file));
    absl::StatusOr<rog::ClientCredentials> loaded = rog::LoadClientCredentials(
        security, absl::GetFlag(FLAGS_server), rog::SettingNames::kFlags);
    if (!loaded.ok()) return UsageError(std::string(loaded.status().message()));
    g_security = *std::move(loaded);
  }
  Output (*run)() = nullptr;
  if (command == "status") run = RunStatus;
  if (command == "workers") run = RunWorkers;
  if (command == "staleness") run = RunStaleness;
  if (command == "checkpoint") run = RunCheckpoint;
  if (command == "export") run = RunExport;
  if (command == "mta") run = RunMta;
  const absl::Duration watch = absl::GetFlag(FLAGS_watch);
  if (run != nullptr && watch > absl::ZeroDuration()) {
    if (run == RunCheckpoint || run == RunExport || run == RunMta) {
      return UsageError("--watch refreshes status, workers or staleness");
    }
    return Watch(run, command, watch);
  }
  if (run != nullptr) return Emit(run());
  return UsageError(absl::StrCat("unknown command '", command, "'; use one of: ", kCommands));
}
