// rogd: ROG's parameter server daemon. See docs/operations.md ("Running rogd").
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/codec.h"
#include "common/goodput.h"
#include "common/mta.h"
#include "common/protocol_rules.h"
#include "common/staleness.h"
#include "grpcpp/grpcpp.h"
#include "security/credential_files.h"
#include "server/auth.h"
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
ABSL_FLAG(absl::Duration, patience, absl::Milliseconds(500),
          "team patience, at least (0 = off, the paper's behaviour); the patience is the larger "
          "of this and --patience_iterations times the team's compute time per iteration. ROG's "
          "window never exceeds it and leaves out links too slow to move their MTA share within "
          "it; a worker that keeps another waiting at the staleness bound longer is detached (it "
          "keeps streaming rows but no longer holds the team back; at twice the patience if its "
          "uplink brought its MTA share within the patience) until its link moves its MTA "
          "share within half the patience for 1 s and it has paused (finished the iteration it "
          "was computing); under every policy, judged on the same MTA "
          "share (that of --staleness)");
ABSL_FLAG(double, patience_iterations, rog::kPatienceIterations,
          "with --patience: the patience in the team's own units, this many times the attached "
          "workers' median compute time per iteration when that is longer than --patience, so "
          "that one default serves 5 ms and 5 s iterations (0: --patience alone)");
ABSL_FLAG(double, detach_speedup, 0,
          "team pace, with --patience (0 = off): also detach the worker on the slowest link "
          "once the team would run at least this many times the iterations per second without "
          "it (estimated from compute time per iteration and each link's time for its share); it "
          "reattaches when the team with it would run at least as fast; e.g. 1.25");
ABSL_FLAG(uint32_t, detached_local_steps, 0,
          "iterations a detached worker may train on its own data before it pauses (its "
          "updates are pushed as its link allows)");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "folder for the checkpoint (rogd.ckpt), writable by rogd; created with its missing "
          "parents (mode 0700) if it does not exist; restored on start if present; empty: none");
ABSL_FLAG(absl::Duration, checkpoint_interval, absl::Minutes(5),
          "time between checkpoints (also written on SIGTERM/SIGINT); 0 = only then");
ABSL_FLAG(std::string, init, "",
          "checkpoint file to start from (otherwise the first worker's hello brings the model)");
ABSL_FLAG(uint64_t, max_message_bytes, 4 << 20, "largest message accepted from a worker, bytes");
ABSL_FLAG(uint32_t, batch_bytes, 16 * 1024,
          "largest payload of one downlink row batch, bytes (see --batch_seconds)");
ABSL_FLAG(double, batch_seconds, rog::kDefaultBatchSeconds,
          "each downlink row batch carries at most this many seconds of the worker's measured "
          "downlink goodput (at least 2 KiB, at most --batch_bytes), so a slow link cuts a window "
          "and answers a stalled worker within milliseconds; 0: every batch up to --batch_bytes");

// Resource limits against a hostile or broken client (docs/operations.md
// "Resource limits"); each refusal is a RESOURCE_EXHAUSTED (or
// DEADLINE_EXCEEDED) status naming the flag, counted by reason in `rogctl
// status`.
ABSL_FLAG(uint32_t, max_batch_rows, 65536,
          "most rows one uplink row batch may list (rog::Worker's default batches carry at most "
          "4096)");
ABSL_FLAG(uint64_t, max_stream_uplink_bytes, 16 << 20,
          "memory one worker stream may hold in decoded row batches waiting for the engine, "
          "bytes: past it rogd stops reading the stream until the engine catches up; a single "
          "batch decoding to more is refused");
ABSL_FLAG(uint64_t, max_stream_backlog_bytes, 4 << 20,
          "downlink bytes (row batches, acks, directives) queued for one worker stream that its "
          "worker has not read: past it the stream ends (the worker stopped reading)");
ABSL_FLAG(uint32_t, max_streams, 256, "worker streams open at once, before or after their hello");
ABSL_FLAG(uint32_t, max_streams_per_worker, 4,
          "worker streams open at once under one worker id (a reconnecting worker briefly "
          "needs 2)");
ABSL_FLAG(absl::Duration, hello_timeout, absl::Seconds(10),
          "time a new worker stream has to send its Hello before it is closed");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(30),
          "rogd pings every worker connection every 2 s and drops one whose ping goes unanswered "
          "this long, so that a worker whose link died without closing its connection is "
          "disconnected and its --lease starts. A ping waits behind the bytes queued on the link: "
          "on a live link of a few KB/s that takes seconds, so keep it well above them");
ABSL_FLAG(uint32_t, max_workers, 256,
          "worker records kept, evicted ones included (each holds a copy of the model): a hello "
          "with a new worker id beyond it is refused");
ABSL_FLAG(uint64_t, max_model_bytes, uint64_t{1} << 30,
          "largest model (fp32 bytes of all tensors) a first worker's hello may register; "
          "rogd holds the global model and a pending copy per worker, about this times "
          "(workers + 1), plus a version per row and worker (--max_state_bytes bounds the "
          "whole)");
ABSL_FLAG(uint64_t, max_state_bytes, uint64_t{8} << 30,
          "memory the model state may take: a copy of the model per worker plus versions per "
          "row, worker and copy (rows x workers^2 x 8 bytes); a first model or a new worker "
          "record that would need more is refused (rogctl status shows the state, per worker, and "
          "how many workers the limit allows)");
ABSL_FLAG(uint32_t, max_rows, 1u << 20,
          "most rows a model may have (rogd keeps versions per row and worker for every "
          "worker's copy)");
ABSL_FLAG(std::string, port_file, "",
          "write the port actually bound to this file once serving (for scripts and tests)");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9470; port 0 "
          "picks a free one); beyond loopback only with --insecure; empty: no metrics");
ABSL_FLAG(std::string, log_level, "info", "log level: debug, info, warn or error");
ABSL_FLAG(bool, insecure, false,
          "listen beyond loopback with neither TLS nor tokens (a network you trust only)");

// Security (docs/operations.md "Security"): TLS, mutual TLS and bearer tokens.
// Tokens come from files, never from the command line.
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate (chain) rogd presents: serve TLS; needs --tls_key");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert (unencrypted, mode 600)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificate(s): require client certificates signed by it (mutual TLS); needs "
          "--tls_cert");
ABSL_FLAG(std::string, worker_token_file, "",
          "file holding the token workers must present (authorization: Bearer); needs "
          "--admin_token_file");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding the token Admin calls (rogctl) must present; a different one from the "
          "workers'");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "rogd: %s\n", message.c_str());
  return 2;
}

// Creates `dir` and its missing parents, each with mode 0700 (the
// checkpoint holds the whole model), as etcd and Prometheus create their
// data folders. Empty when it now exists; else what stopped it and what to
// do.
std::string CreateCheckpointDir(const std::string& dir) {
  std::string path;
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    if (part.empty()) {
      if (path.empty()) path = "/";
      continue;
    }
    path = path.empty() || path == "/" ? absl::StrCat(path, part) : absl::StrCat(path, "/", part);
    if (::mkdir(path.c_str(), 0700) == 0) {
      spdlog::info("created {} (mode 0700) for --checkpoint_dir", path);
    } else if (errno != EEXIST) {
      const std::string parent = path.substr(0, path.find_last_of('/') + 1);
      return absl::StrCat("--checkpoint_dir=", dir, " does not exist and rogd cannot create ", path,
                          " (", std::strerror(errno), "): ",
                          errno == EACCES || errno == EROFS
                              ? absl::StrCat(parent.empty() ? "." : parent,
                                             " is not writable by rogd; create the folder "
                                             "yourself (mkdir -p ",
                                             dir, ", owned by rogd's user)")
                              : "pass a folder rogd may create or write",
                          " or pass another folder");
    }
  }
  return "";
}

// The checkpoint folder must exist (rogd creates it if it can) and be
// writable when rogd starts, not only when the first checkpoint is due
// (minutes later, or at the final one on SIGTERM, when it is too late to
// keep what the team trained). Returns an empty string when it is usable,
// else what is wrong and what to do. access(2) answers for this process, so
// a read-only file system or a systemd ReadWritePaths= that leaves the
// folder out is caught too.
std::string CheckpointDirProblem(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOTDIR) {
      return absl::StrCat("--checkpoint_dir=", dir,
                          ": a part of that path is a file, not a folder; pass a folder");
    }
    if (errno != ENOENT) return absl::StrCat("--checkpoint_dir=", dir, ": ", std::strerror(errno));
    if (std::string e = CreateCheckpointDir(dir); !e.empty()) return e;
    if (::stat(dir.c_str(), &st) != 0) {
      return absl::StrCat("--checkpoint_dir=", dir, ": ", std::strerror(errno));
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::StrCat("--checkpoint_dir=", dir,
                        " is not a folder; pass the folder that holds (or will hold) rogd.ckpt");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::StrCat("--checkpoint_dir=", dir, " is not writable by rogd (",
                        std::strerror(errno), "); fix its owner or mode, or pass another folder");
  }
  return "";
}

bool IsLoopback(const std::string& address) {
  return absl::StartsWith(address, "127.") || absl::StartsWith(address, "localhost:") ||
         absl::StartsWith(address, "[::1]:");
}

// What rogd serves with: gRPC credentials and the token check.
struct Security {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<rog::TokenAuth> tokens;  // null: no tokens asked for
  bool tls = false;
  std::vector<std::string> warnings;  // logged once logging is set up
  std::string summary;                // one line for the log
};

// TLS from --tls_cert, --tls_key and --tls_ca (checked already to go
// together), or none: the credentials, a summary and warnings into *sec.
absl::Status LoadTls(const std::string& cert_path, const std::string& key_path,
                     const std::string& ca_path, Security* sec) {
  if (!cert_path.empty()) {
    rog::CertificateInfo info;
    absl::StatusOr<std::string> cert = rog::ReadCertificateFile(cert_path, "--tls_cert", &info);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = rog::ReadKeyFile(key_path, "--tls_key");
    if (!key.ok()) return key.status();
    if (absl::Status s = rog::CheckKeyPair(*cert, *key, "--tls_cert", "--tls_key"); !s.ok()) {
      return s;
    }
    if (const std::string problem = rog::ValidityProblem(info, absl::Now()); !problem.empty()) {
      sec->warnings.push_back(
          absl::StrCat("--tls_cert=", cert_path, " (", info.subject, ") is ", problem,
                       ": clients will refuse it; renew it, or check this machine's clock"));
    }
    if (const std::string loose = rog::LooseModeWarning(key_path, "--tls_key"); !loose.empty()) {
      sec->warnings.push_back(loose);
    }
    grpc::SslServerCredentialsOptions ssl(
        ca_path.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                        : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    sec->summary = absl::StrCat("TLS as ", info.subject);
    if (!ca_path.empty()) {
      rog::CertificateInfo ca_info;
      absl::StatusOr<std::string> ca = rog::ReadCertificateFile(ca_path, "--tls_ca", &ca_info);
      if (!ca.ok()) return ca.status();
      if (const std::string problem = rog::ValidityProblem(ca_info, absl::Now());
          !problem.empty()) {
        sec->warnings.push_back(absl::StrCat("--tls_ca=", ca_path, " (", ca_info.subject, ") is ",
                                             problem,
                                             ": every client certificate will be refused"));
      }
      ssl.pem_root_certs = *ca;
      sec->summary = absl::StrCat("mutual TLS as ", info.subject,
                                  ", client certificates signed by ", ca_info.subject);
    }
    sec->credentials = grpc::SslServerCredentials(ssl);
    sec->tls = true;
  } else {
    sec->credentials = grpc::InsecureServerCredentials();
    sec->summary = "no TLS";
  }
  return absl::OkStatus();
}

// Tokens from --worker_token_file and --admin_token_file, and what they
// mean together with TLS and the listening address.
absl::Status LoadTokens(bool loopback, const std::string& ca_path, Security* sec) {
  const std::string worker_path = absl::GetFlag(FLAGS_worker_token_file);
  const std::string admin_path = absl::GetFlag(FLAGS_admin_token_file);
  std::string worker_token, admin_token;
  if (!worker_path.empty()) {
    absl::StatusOr<std::string> t = rog::ReadTokenFile(worker_path, "--worker_token_file");
    if (!t.ok()) return t.status();
    worker_token = *t;
  }
  if (!admin_path.empty()) {
    absl::StatusOr<std::string> t = rog::ReadTokenFile(admin_path, "--admin_token_file");
    if (!t.ok()) return t.status();
    admin_token = *t;
  }
  if (absl::Status s = rog::CheckTokenFlags(!worker_path.empty(), !admin_path.empty(), worker_token,
                                            admin_token);
      !s.ok()) {
    return s;
  }
  if (!worker_token.empty()) {
    for (const auto& [path, what] : {std::pair{worker_path, "--worker_token_file"},
                                     std::pair{admin_path, "--admin_token_file"}}) {
      if (const std::string loose = rog::LooseModeWarning(path, what); !loose.empty()) {
        sec->warnings.push_back(loose);
      }
    }
    sec->tokens = std::make_unique<rog::TokenAuth>(worker_token, admin_token);
    absl::StrAppend(&sec->summary, "; tokens for workers and for admin calls");
    if (!sec->tls && !loopback) {
      sec->warnings.push_back(
          "tokens without TLS travel in clear text beyond loopback: anyone who sees the traffic "
          "can reuse them; add --tls_cert and --tls_key");
    }
  } else {
    absl::StrAppend(&sec->summary, "; no tokens");
    if (sec->tls && ca_path.empty() && !loopback) {
      sec->warnings.push_back(
          "TLS without --tls_ca or tokens: traffic is encrypted, but anyone who reaches rogd may "
          "join as a worker or make admin calls; add --tls_ca or token files");
    }
  }
  return absl::OkStatus();
}

// Reads and checks the files the security flags name.
absl::StatusOr<Security> LoadSecurity(bool loopback) {
  Security sec;
  const std::string cert_path = absl::GetFlag(FLAGS_tls_cert);
  const std::string key_path = absl::GetFlag(FLAGS_tls_key);
  const std::string ca_path = absl::GetFlag(FLAGS_tls_ca);
  if (cert_path.empty() != key_path.empty()) {
    return absl::InvalidArgumentError(
        cert_path.empty() ? "--tls_key without --tls_cert: give the certificate it belongs to"
                          : "--tls_cert without --tls_key: give the certificate's private key");
  }
  if (!ca_path.empty() && cert_path.empty()) {
    return absl::InvalidArgumentError(
        "--tls_ca requires client certificates, which only works over TLS: give --tls_cert and "
        "--tls_key too");
  }
  if (absl::Status s = LoadTls(cert_path, key_path, ca_path, &sec); !s.ok()) return s;
  if (absl::Status s = LoadTokens(loopback, ca_path, &sec); !s.ok()) return s;
  return sec;
}

// --log_level; "" or what is wrong with it.
std::string SetLogLevel() {
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
    return absl::StrCat("--log_level=", level, " is unknown; use debug, info, warn or error");
  }
  return "";
}

// The engine's settings from the flags; "" or what is wrong with them.
std::string ParseEngineOptions(rog::EngineOptions* out) {
  rog::EngineOptions& options = *out;
  absl::StatusOr<rog::SyncPolicy> policy = rog::ParseSyncPolicy(absl::GetFlag(FLAGS_sync));
  if (!policy.ok()) return absl::StrCat("--sync: ", policy.status().message());
  options.policy = *policy;
  options.staleness = absl::GetFlag(FLAGS_staleness);
  if (options.policy != rog::SyncPolicy::kBsp && options.staleness == 0) {
    return "--staleness must be at least 1 for ssp and rog (use --sync=bsp for a barrier)";
  }
  if (options.staleness > 1000000) return "--staleness must be at most 1000000";
  absl::StatusOr<rog::Codec> codec = rog::ParseCodec(absl::GetFlag(FLAGS_codec));
  if (!codec.ok()) return absl::StrCat("--codec: ", codec.status().message());
  options.codec = *codec;
  options.team_size = absl::GetFlag(FLAGS_workers);
  if (options.team_size < 1 || options.team_size > 1024) {
    return "--workers must be between 1 and 1024";
  }
  const absl::Duration lease = absl::GetFlag(FLAGS_lease);
  if (lease <= absl::ZeroDuration()) return "--lease must be positive, e.g. 30s";
  options.lease_seconds = absl::ToDoubleSeconds(lease);
  const absl::Duration patience = absl::GetFlag(FLAGS_patience);
  if (patience < absl::ZeroDuration() || patience > absl::Hours(1)) {
    return "--patience must be between 0 (off) and 1h, e.g. 1s or 500ms";
  }
  options.patience = absl::ToDoubleSeconds(patience);
  options.patience_iterations = absl::GetFlag(FLAGS_patience_iterations);
  if (!(options.patience_iterations >= 0 && options.patience_iterations <= 1000)) {
    return "--patience_iterations must be between 0 (--patience alone) and 1000, e.g. 4";
  }
  options.detach_speedup = absl::GetFlag(FLAGS_detach_speedup);
  if (!(options.detach_speedup == 0 ||
        (options.detach_speedup > 1 && options.detach_speedup <= 100))) {
    return "--detach_speedup must be 0 (off) or a factor above 1 and at most 100, e.g. 1.25";
  }
  options.detached_local_steps = absl::GetFlag(FLAGS_detached_local_steps);
  if (options.detached_local_steps > 1000000) {
    return "--detached_local_steps must be at most 1000000";
  }
  const std::string dir = absl::GetFlag(FLAGS_checkpoint_dir);
  if (!dir.empty()) {
    const std::string problem = CheckpointDirProblem(dir);
    if (!problem.empty()) return problem;
    options.checkpoint_path = dir + "/rogd.ckpt";
  }
  const absl::Duration interval = absl::GetFlag(FLAGS_checkpoint_interval);
  if (interval < absl::ZeroDuration()) return "--checkpoint_interval must not be negative";
  options.checkpoint_interval = absl::ToDoubleSeconds(interval);
  options.init_path = absl::GetFlag(FLAGS_init);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (options.max_message_bytes < 64 * 1024 || options.max_message_bytes > (1u << 30)) {
    return "--max_message_bytes must be between 65536 and 1073741824";
  }
  options.layout_limits.max_model_bytes = absl::GetFlag(FLAGS_max_model_bytes);
  if (options.layout_limits.max_model_bytes < 4) return "--max_model_bytes must be at least 4";
  options.max_state_bytes = absl::GetFlag(FLAGS_max_state_bytes);
  options.layout_limits.max_rows = absl::GetFlag(FLAGS_max_rows);
  if (options.layout_limits.max_rows < 1 || options.layout_limits.max_rows > (1u << 24)) {
    return "--max_rows must be between 1 and 16777216";
  }
  options.batch_bytes = absl::GetFlag(FLAGS_batch_bytes);
  if (options.batch_bytes < 256 || options.batch_bytes > options.max_message_bytes / 2) {
    return "--batch_bytes must be at least 256 and at most half of --max_message_bytes";
  }
  options.batch_seconds = absl::GetFlag(FLAGS_batch_seconds);
  if (absl::Status s =
          rog::CheckBatchSeconds(options.batch_seconds, "--batch_seconds", "--batch_bytes");
      !s.ok()) {
    return std::string(s.message());
  }
  options.max_workers = absl::GetFlag(FLAGS_max_workers);
  if (options.max_workers < options.team_size) {
    return absl::StrCat("--max_workers (", options.max_workers, ") must be at least --workers (",
                        options.team_size, ")");
  }
  return "";
}

// The worker streams' limits from the flags, against the engine's
// settings; "" or what is wrong with them.
std::string ParseStreamLimits(const rog::EngineOptions& options, rog::StreamLimits* out) {
  rog::StreamLimits& limits = *out;
  limits.batch.max_rows = absl::GetFlag(FLAGS_max_batch_rows);
  if (limits.batch.max_rows < 1) return "--max_batch_rows must be at least 1";
  limits.max_uplink_bytes = absl::GetFlag(FLAGS_max_stream_uplink_bytes);
  limits.batch.max_decoded_bytes = limits.max_uplink_bytes;
  if (limits.max_uplink_bytes < (64u << 10)) {
    return "--max_stream_uplink_bytes must be at least 65536";
  }
  limits.max_backlog_bytes = absl::GetFlag(FLAGS_max_stream_backlog_bytes);
  // Row batches alone may queue 256 KiB plus one batch (the engine stops
  // forming them there); the rest is for acks and directives.
  const uint64_t min_backlog = (256 << 10) + 2 * options.batch_bytes + (64 << 10);
  if (limits.max_backlog_bytes < min_backlog) {
    return absl::StrCat("--max_stream_backlog_bytes must be at least ", min_backlog,
                        " (256 KiB of row batches, two of --batch_bytes and 64 KiB)");
  }
  limits.max_streams = absl::GetFlag(FLAGS_max_streams);
  limits.max_streams_per_worker = absl::GetFlag(FLAGS_max_streams_per_worker);
  if (limits.max_streams_per_worker < 2) {
    return "--max_streams_per_worker must be at least 2 (a reconnecting worker's new "
           "stream replaces its old one, which takes a moment to end)";
  }
  if (limits.max_streams < limits.max_streams_per_worker) {
    return "--max_streams must be at least --max_streams_per_worker";
  }
  const absl::Duration hello_timeout = absl::GetFlag(FLAGS_hello_timeout);
  if (hello_timeout < absl::Milliseconds(100)) {
    return "--hello_timeout must be at least 100ms, e.g. 10s";
  }
  limits.hello_timeout_seconds = absl::ToDoubleSeconds(hello_timeout);
  const absl::Duration keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  if (keepalive_timeout < absl::Seconds(1) || keepalive_timeout > absl::Hours(1)) {
    return "--keepalive_timeout must be between 1s and 1h, e.g. 30s";
  }
  limits.max_message_bytes = options.max_message_bytes;
  if (limits.max_streams < options.team_size) {
    return absl::StrCat("--max_streams (", limits.max_streams, ") must be at least --workers (",
                        options.team_size, ")");
  }
  return "";
}

// --metrics_listen: a valid address, and beyond loopback only with
// --insecure; "" or what is wrong.
std::string CheckMetricsListen(const std::string& metrics_listen) {
  if (metrics_listen.empty()) return "";
  absl::Status valid = rog::CheckMetricsAddress(metrics_listen);
  if (!valid.ok()) return std::string(valid.message());
  if (!IsLoopback(metrics_listen) && !absl::GetFlag(FLAGS_insecure)) {
    return absl::StrCat("refusing to serve metrics on ", metrics_listen,
                        " beyond loopback: the endpoint has no TLS or authentication and "
                        "names every worker; use 127.0.0.1, or pass --insecure on a "
                        "trusted network");
  }
  return "";
}

// The gRPC server of both services on --listen; null if it cannot listen.
std::unique_ptr<grpc::Server> StartServer(const std::string& listen, const Security& security,
                                          const rog::EngineOptions& options,
                                          rog::TrainerService* trainer, rog::AdminService* admin,
                                          int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, security.credentials, port);
  builder.RegisterService(trainer);
  builder.RegisterService(admin);
  // gRPC sets SO_REUSEPORT by default: a second rogd on the same port would
  // start and split the workers between two servers. Fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Twice the limit, so that the service sees a message over it and refuses
  // it with a count and a message (StreamLimits::max_message_bytes).
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<uint64_t>(2 * options.max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  // Workers ping every second to find dead links (docs/building.md): allow it.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // A worker whose radio died leaves its TCP connection open and sends no
  // FIN: rogd pings too, and drops a connection whose ping goes unanswered
  // for --keepalive_timeout, so that its lease starts. The timeout is
  // generous because pings queue behind the backlog of a slow but live link
  // (docs/building.md, "Dead links and keepalive").
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
  builder.AddChannelArgument(
      GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
      static_cast<int>(absl::ToInt64Milliseconds(absl::GetFlag(FLAGS_keepalive_timeout))));
  return builder.BuildAndStart();
}

// rogd's first log lines, and --port_file.
void AnnounceStart(int port, const rog::EngineOptions& options, const Security& security) {
  spdlog::info(
      "rogd {} serving on port {}: sync={} S={} mta={:.3f} codec={} workers={} lease={} "
      "patience={}{} detached_local_steps={} detach_speedup={}",
      rog::kRogVersion, port, std::string(rog::SyncPolicyName(options.policy)), options.staleness,
      options.policy == rog::SyncPolicy::kRog ? rog::MinimumTransmissionAmount(options.staleness)
                                              : 1.0,
      std::string(rog::CodecName(options.codec)), options.team_size,
      absl::FormatDuration(absl::GetFlag(FLAGS_lease)),
      options.patience > 0 ? absl::FormatDuration(absl::GetFlag(FLAGS_patience))
                           : std::string("off"),
      options.patience > 0 ? absl::StrCat(" patience_iterations=", options.patience_iterations)
                           : std::string(),
      options.detached_local_steps,
      options.patience > 0 && options.detach_speedup > 0 ? absl::StrCat(options.detach_speedup)
                                                         : std::string("off"));
  spdlog::info("security: {}", security.summary);
  for (const std::string& w : security.warnings) spdlog::warn("{}", w);
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
}

// Serves until SIGTERM or SIGINT, then stops cleanly: streams end, the
// final checkpoint is written. rogd's exit status.
int ServeUntilSignal(const sigset_t& signals, std::unique_ptr<rog::MetricsServer> metrics,
                     rog::Engine* engine, rog::TrainerService* trainer, grpc::Server* server) {
  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("{} received: stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  // Scrapes ask the engine thread, which stops below.
  metrics.reset();
  // Streams end first, so that no worker goes on training against a server
  // on its way out; what they sent until then is in the final checkpoint,
  // and what was unacknowledged they resend to the next rogd.
  // The server shuts down once every stream has ended as the contract
  // says (TrainerService::StopAccepting): within 2.5 s, since a stream
  // whose client stopped reading is cancelled 2 s after its StreamEnd.
  trainer->StopAccepting();
  engine->EndStreams("rogd is shutting down; reconnect to the next rogd");
  if (!trainer->WaitForStreams(3)) spdlog::warn("streams still open after 3 s; closing them");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  absl::Status s = engine->Shutdown();
  if (!s.ok()) {
    spdlog::error("final checkpoint failed: {}", std::string(s.message()));
    return 1;
  }
  spdlog::info("stopped");
  return 0;
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
  if (const std::string e = SetLogLevel(); !e.empty()) return Fail(e);
  rog::EngineOptions options;
  if (const std::string e = ParseEngineOptions(&options); !e.empty()) return Fail(e);
  rog::StreamLimits limits;
  if (const std::string e = ParseStreamLimits(options, &limits); !e.empty()) return Fail(e);
  const std::string listen = absl::GetFlag(FLAGS_listen);
  absl::StatusOr<Security> security = LoadSecurity(IsLoopback(listen));
  if (!security.ok()) return Fail(std::string(security.status().message()));
  if (absl::Status s =
          rog::CheckExposure(listen, IsLoopback(listen), security->tls, security->tokens != nullptr,
                             absl::GetFlag(FLAGS_insecure));
      !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (const std::string e = CheckMetricsListen(metrics_listen); !e.empty()) return Fail(e);

  // Signals are taken by one thread with sigwait; every other thread blocks
  // them.
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
  rog::TrainerService trainer(engine->get(), limits);
  rog::AdminService admin(engine->get());
  trainer.set_token_auth(security->tokens.get());
  admin.set_token_auth(security->tokens.get());
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      StartServer(listen, *security, options, &trainer, &admin, &port);
  if (!server || port == 0) {
    return Fail(absl::StrCat("cannot listen on ", listen,
                             " (address in use, or not an address of this machine?)"));
  }
  AnnounceStart(port, options, *security);
  return ServeUntilSignal(signals, std::move(metrics), engine->get(), &trainer, server.get());
}
