// rogd: ROG's parameter server daemon. See README.md ("Running rogd").
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/codec.h"
#include "common/mta.h"
#include "common/staleness.h"
#include "grpcpp/grpcpp.h"
#include "server/engine.h"
#include "server/metrics.h"
#include "server/service.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7070",
          "address to serve workers and rogctl on (host:port; port 0 picks a free one)");
ABSL_FLAG(std::string, sync, "rog", "synchronisation policy: bsp, ssp or rog");
ABSL_FLAG(uint32_t, staleness, 4, "staleness bound S for ssp and rog (bsp ignores it)");
ABSL_FLAG(std::string, codec, "fp32", "codec of update batches: fp32, bf16, int8 or sign");
ABSL_FLAG(uint32_t, workers, 1, "team size to wait for before the first iteration");
ABSL_FLAG(absl::Duration, lease, absl::Seconds(30),
          "how long a disconnected worker's state is kept before it is evicted");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "folder for the checkpoint (rogd.ckpt); restored on start if present; empty: none");
ABSL_FLAG(absl::Duration, checkpoint_interval, absl::Minutes(5),
          "time between checkpoints (also written on SIGTERM/SIGINT); 0 = only then");
ABSL_FLAG(std::string, init, "",
          "checkpoint file to start from (otherwise the first worker's hello brings the model)");
ABSL_FLAG(uint64_t, max_message_bytes, 4 << 20, "largest message accepted from a worker, bytes");
ABSL_FLAG(uint32_t, batch_bytes, 16 * 1024, "payload budget of one downlink row batch, bytes");
ABSL_FLAG(std::string, port_file, "",
          "write the port actually bound to this file once serving (for scripts and tests)");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9470; port 0 "
          "picks a free one); beyond loopback only with --insecure; empty: no metrics");
ABSL_FLAG(std::string, log_level, "info", "log level: debug, info, warn or error");
ABSL_FLAG(bool, insecure, false,
          "listen beyond loopback although this build has no TLS or tokens yet (trusted "
          "networks only)");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "rogd: %s\n", message.c_str());
  return 2;
}

bool IsLoopback(const std::string& address) {
  return absl::StartsWith(address, "127.") || absl::StartsWith(address, "localhost:") ||
         absl::StartsWith(address, "[::1]:");
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "ROG parameter server: holds the global model rows and serves one stream per worker.\n"
      "Usage: rogd [--flagfile=FILE] [--listen=HOST:PORT] [--sync=bsp|ssp|rog]\n"
      "            [--metrics_listen=HOST:PORT] ...\n"
      "Flags are listed under rogd_main.cc below.");
  absl::ParseCommandLine(argc, argv);
  // Logs go to stderr (systemd's journal takes both; stdout stays free).
  spdlog::set_default_logger(spdlog::stderr_color_mt("rogd"));

  const std::string level = absl::GetFlag(FLAGS_log_level);
  if (level == "debug") {
    spdlog::set_level(spdlog::level::debug);
  } else if (level == "info") {
    spdlog::set_level(spdlog::level::info);
  } else if (level == "warn") {
    spdlog::set_level(spdlog::level::warn);
  } else if (level == "error") {
    spdlog::set_level(spdlog::level::err);
  } else {
    return Fail(absl::StrCat("--log_level=", level, " is unknown; use debug, info, warn or error"));
  }

  rog::EngineOptions options;
  absl::StatusOr<rog::SyncPolicy> policy = rog::ParseSyncPolicy(absl::GetFlag(FLAGS_sync));
  if (!policy.ok()) return Fail(absl::StrCat("--sync: ", policy.status().message()));
  options.policy = *policy;
  options.staleness = absl::GetFlag(FLAGS_staleness);
  if (options.policy != rog::SyncPolicy::kBsp && options.staleness == 0) {
    return Fail("--staleness must be at least 1 for ssp and rog (use --sync=bsp for a barrier)");
  }
  if (options.staleness > 1000000) return Fail("--staleness must be at most 1000000");
  absl::StatusOr<rog::Codec> codec = rog::ParseCodec(absl::GetFlag(FLAGS_codec));
  if (!codec.ok()) return Fail(absl::StrCat("--codec: ", codec.status().message()));
  options.codec = *codec;
  options.team_size = absl::GetFlag(FLAGS_workers);
  if (options.team_size < 1 || options.team_size > 1024) {
    return Fail("--workers must be between 1 and 1024");
  }
  const absl::Duration lease = absl::GetFlag(FLAGS_lease);
  if (lease <= absl::ZeroDuration()) return Fail("--lease must be positive, e.g. 30s");
  options.lease_seconds = absl::ToDoubleSeconds(lease);
  const std::string dir = absl::GetFlag(FLAGS_checkpoint_dir);
  if (!dir.empty()) options.checkpoint_path = dir + "/rogd.ckpt";
  const absl::Duration interval = absl::GetFlag(FLAGS_checkpoint_interval);
  if (interval < absl::ZeroDuration()) return Fail("--checkpoint_interval must not be negative");
  options.checkpoint_interval = absl::ToDoubleSeconds(interval);
  options.init_path = absl::GetFlag(FLAGS_init);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (options.max_message_bytes < 64 * 1024 || options.max_message_bytes > (1u << 30)) {
    return Fail("--max_message_bytes must be between 65536 and 1073741824");
  }
  options.batch_bytes = absl::GetFlag(FLAGS_batch_bytes);
  if (options.batch_bytes < 256 || options.batch_bytes > options.max_message_bytes / 2) {
    return Fail("--batch_bytes must be at least 256 and at most half of --max_message_bytes");
  }
  const std::string listen = absl::GetFlag(FLAGS_listen);
  if (!IsLoopback(listen) && !absl::GetFlag(FLAGS_insecure)) {
    return Fail(absl::StrCat("refusing to listen on ", listen,
                             " without TLS or tokens, which this build does not have yet; "
                             "listen on 127.0.0.1, or pass --insecure on a trusted network"));
  }

  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty()) {
    absl::Status valid = rog::CheckMetricsAddress(metrics_listen);
    if (!valid.ok()) return Fail(std::string(valid.message()));
    if (!IsLoopback(metrics_listen) && !absl::GetFlag(FLAGS_insecure)) {
      return Fail(absl::StrCat("refusing to serve metrics on ", metrics_listen,
                               " beyond loopback: the endpoint has no TLS or authentication and "
                               "names every worker; use 127.0.0.1, or pass --insecure on a "
                               "trusted network"));
    }
  }

  // Signals are taken by one thread with sigwait; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<rog::Engine>> engine = rog::Engine::Start(options);
  if (!engine.ok()) return Fail(std::string(engine.status().message()));

  // Metrics first: a bad address stops rogd before any worker connects.
  std::unique_ptr<rog::MetricsServer> metrics;
  if (!metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<rog::MetricsServer>> started =
        rog::MetricsServer::Start(metrics_listen, engine->get());
    if (!started.ok()) return Fail(std::string(started.status().message()));
    metrics = *std::move(started);
    const size_t colon = metrics_listen.rfind(':');
    spdlog::info("serving Prometheus metrics on http://{}:{}/metrics",
                 metrics_listen.substr(0, colon), metrics->port());
  }

  rog::TrainerService trainer(engine->get());
  rog::AdminService admin(engine->get());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&trainer);
  builder.RegisterService(&admin);
  // gRPC sets SO_REUSEPORT by default: a second rogd on the same port would
  // start and split the workers between two servers. Fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  // Workers ping every second to find dead links (BUILDING.md): allow it.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return Fail(absl::StrCat("cannot listen on ", listen,
                             " (address in use, or not an address of this machine?)"));
  }
  spdlog::info(
      "rogd {} serving on port {}: sync={} S={} mta={:.3f} codec={} workers={} lease={}",
      rog::kRogVersion, port, std::string(rog::SyncPolicyName(options.policy)), options.staleness,
      options.policy == rog::SyncPolicy::kRog ? rog::MinimumTransmissionAmount(options.staleness)
                                              : 1.0,
      std::string(rog::CodecName(options.codec)), options.team_size, absl::FormatDuration(lease));
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }

  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("{} received: stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  // Scrapes ask the engine thread, which stops below.
  metrics.reset();
  // Streams end first, so that no worker goes on training against a server
  // on its way out; what they sent until then is in the final checkpoint,
  // and what was unacknowledged they resend to the next rogd.
  (*engine)->EndStreams("rogd is shutting down; reconnect to the next rogd");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  absl::Status s = (*engine)->Shutdown();
  if (!s.ok()) {
    spdlog::error("final checkpoint failed: {}", std::string(s.message()));
    return 1;
  }
  spdlog::info("stopped");
  return 0;
}
