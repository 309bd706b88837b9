// rogd --metrics_listen against a real rogd with two rog::Workers on
// loopback: scraped over HTTP (a small GET written here, no new
// dependency), checked against the admin service and by `promtool check
// metrics` (Debian's prometheus package; the test fails when it is missing).
// Every socket has a timeout; rogd dies with the test (rogd_harness.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "grpcpp/grpcpp.h"
#include "rog.grpc.pb.h"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"
#include "test/util/prometheus_text.h"

namespace rog {
namespace {

struct HttpReply {
  std::string error;  // empty when a reply arrived
  int status = 0;
  std::string headers;
  std::string body;
};

// GET http://127.0.0.1:port/path, HTTP/1.0, at most 10 s.
HttpReply HttpGet(int port, const std::string& path) {
  HttpReply reply;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    reply.error = absl::StrCat("cannot connect to 127.0.0.1:", port);
    return reply;
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1:", port,
                                           "\r\nAccept: text/plain\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    reply.error = "cannot send the request";
    return reply;
  }
  std::string raw;
  char buf[16384];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) {
      reply.error = "no complete reply within 10 s";
      break;
    }
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (!reply.error.empty()) return reply;
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos || !absl::StartsWith(raw, "HTTP/1.")) {
    reply.error = "not an HTTP reply: " + raw.substr(0, 200);
    return reply;
  }
  reply.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  reply.headers = raw.substr(0, end);
  reply.body = raw.substr(end + 4);
  return reply;
}

std::map<std::string, double> Samples(const std::string& text) { return PrometheusSamples(text); }

double Get(const std::map<std::string, double>& samples, const std::string& series) {
  auto it = samples.find(series);
  return it == samples.end() ? std::nan("") : it->second;
}

struct Promtool {
  int code = -1;
  std::string output;
};

// `promtool check metrics` on `text`; code -1 when promtool is missing.
Promtool CheckMetrics(const std::string& text) {
  Promtool result;
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return result;
  static int counter = 0;
  const std::string path = absl::StrCat(MakeTempDir("scrape"), "/metrics", counter++, ".txt");
  std::ofstream(path) << text;
  const std::string cmd = "timeout -k 5 30 promtool check metrics < '" + path + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) result.output.append(buf, n);
  const int status = pclose(p);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

#define REQUIRE_PROMTOOL_OK(text)                                                               \
  do {                                                                                          \
    const Promtool check = CheckMetrics(text);                                                  \
    INFO("promtool check metrics exit " << check.code << ":\n" << check.output);                \
    if (check.code == -1) {                                                                     \
      FAIL("promtool not found on PATH: install Debian's prometheus package (tools/setup.sh)"); \
    }                                                                                           \
    REQUIRE(check.code == 0);                                                                   \
    CHECK(check.output.empty());                                                                \
  } while (0)

// The metrics port from rogd's log ("serving Prometheus metrics on ...").
int MetricsPort(const std::string& log) {
  std::smatch m;
  static const std::regex line("serving Prometheus metrics on http://127\\.0\\.0\\.1:([0-9]+)/");
  return std::regex_search(log, m, line) ? std::atoi(m[1].str().c_str()) : 0;
}

HttpReply Scrape(int port) {
  HttpReply r = HttpGet(port, "/metrics");
  INFO(r.error << "\n" << r.headers << "\n" << r.body);
  REQUIRE(r.error == "");
  REQUIRE(r.status == 200);
  REQUIRE(absl::StrContains(r.headers, "Content-Type: text/plain"));
  return r;
}

// Sends a stream whose first message is not a Hello: refused as not_hello.
void SendNotHello(const std::string& address) {
  auto stub =
      pb::Trainer::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->Session(&ctx);
  pb::WorkerMessage m;
  m.mutable_progress()->set_iteration(1);
  stream->Write(m);
  stream->WritesDone();
  pb::ServerMessage reply;
  while (stream->Read(&reply)) {
  }
  const grpc::Status s = stream->Finish();
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_CASE("rogd serves Prometheus metrics of a training team", "[metrics]") {
  const std::string ckpt_dir = MakeTempDir("ckpt");
  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2",
                                  "--checkpoint_dir=" + ckpt_dir, "--checkpoint_interval=0",
                                  "--metrics_listen=127.0.0.1:0"});
  REQUIRE(rogd.ok());
  INFO((*rogd)->log());
  const int port = MetricsPort((*rogd)->log());
  REQUIRE(port > 0);

  {  // Before the first worker: no model, no worker series.
    const HttpReply r = Scrape(port);
    INFO(r.body);
    const auto m = Samples(r.body);
    CHECK(Get(m, "rog_model_loaded") == 0);
    CHECK(Get(m, "rog_team_ready") == 0);
    CHECK(Get(m, "rog_workers{state=\"connected\"}") == 0);
    CHECK(Get(m, "rog_rejected_messages_total{reason=\"not_hello\"}") == 0);
    CHECK(Get(m, "rog_rejected_messages_total{reason=\"payload_size\"}") == 0);
    CHECK(!absl::StrContains(r.body, "rog_worker_iteration"));
    CHECK(!absl::StrContains(r.body, "rog_row_staleness_iterations"));
    CHECK(!absl::StrContains(r.body, "rog_checkpoint_age_seconds"));
    REQUIRE_PROMTOOL_OK(r.body);
    CHECK(HttpGet(port, "/nothing-here").status == 404);
  }

  SendNotHello((*rogd)->address());

  Team team((*rogd)->address(), 2);
  Member& w0 = team.Add("w0", 0);
  Member& w1 = team.Add("w1", 1);
  team.Train(w0, 10, 1);
  team.Train(w1, 10, 4);
  team.JoinAll();
  for (auto& member : team.members()) {
    INFO(member->id);
    REQUIRE(member->error == "");
    CHECK(member->violation == "");
  }

  REQUIRE(WaitForTeamAt((*rogd)->address(), 2, 10));

  // Counters lie between two admin answers taken around the scrape.
  auto before = AdminWorkers((*rogd)->address());
  const HttpReply r = Scrape(port);
  auto after = AdminWorkers((*rogd)->address());
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  INFO(r.body);
  const auto m = Samples(r.body);
  CHECK(Get(m, "rog_model_loaded") == 1);
  CHECK(Get(m, "rog_model_rows") == 82);
  CHECK(Get(m, "rog_model_tensors") == 4);
  CHECK(Get(m, "rog_team_ready") == 1);
  CHECK(Get(m, "rog_staleness_bound_iterations") == 2);
  CHECK(Get(m, "rog_mta_ratio") == Approx(0.5));
  CHECK(Get(m, "rog_info{codec=\"fp32\",sync=\"rog\",version=\"0.1.0\"}") == 1);
  CHECK(Get(m, "rog_workers{state=\"connected\"}") == 2);
  CHECK(Get(m, "rog_workers{state=\"evicted\"}") == 0);
  CHECK(Get(m, "rog_rejected_messages_total{reason=\"not_hello\"}") == 1);
  CHECK(Get(m, "rog_rejected_messages_total{reason=\"bad_seq\"}") == 0);
  for (const std::string id : {"w0", "w1"}) {
    INFO(id);
    const std::string w = "worker=\"" + id + "\"";
    CHECK(Get(m, "rog_worker_iteration{" + w + "}") == 10);
    CHECK(Get(m, "rog_worker_connected{" + w + "}") == 1);
    CHECK(Get(m, "rog_worker_lag_iterations{" + w + "}") == 0);
    CHECK(Get(m, "rog_worker_compute_seconds_total{" + w + "}") > 0);
    CHECK(Get(m, "rog_worker_stall_seconds_total{" + w + "}") >= 0);
    CHECK(Get(m, "rog_worker_stalls_total{" + w + "}") >= 0);
    CHECK(Get(m, "rog_worker_goodput_bytes_per_second{direction=\"uplink\"," + w + "}") > 0);
    CHECK(Get(m, "rog_worker_last_seen_seconds{" + w + "}") >= 0);
  }
  for (int k = 0; k < 2; ++k) {
    const pb::WorkerInfo& a = before->workers(k);
    const pb::WorkerInfo& b = after->workers(k);
    const std::string w = "worker=\"" + a.worker_id() + "\"}";
    INFO(a.worker_id());
    const double up_rows = Get(m, "rog_worker_rows_total{direction=\"uplink\"," + w);
    const double down_rows = Get(m, "rog_worker_rows_total{direction=\"downlink\"," + w);
    const double up_bytes = Get(m, "rog_worker_bytes_total{direction=\"uplink\"," + w);
    const double down_bytes = Get(m, "rog_worker_bytes_total{direction=\"downlink\"," + w);
    CHECK(up_rows > 0);
    CHECK(down_rows > 0);
    CHECK(a.rows_pushed() <= up_rows);
    CHECK(up_rows <= b.rows_pushed());
    CHECK(a.rows_pulled() <= down_rows);
    CHECK(down_rows <= b.rows_pulled());
    CHECK(a.bytes_pushed() <= up_bytes);
    CHECK(up_bytes <= b.bytes_pushed());
    CHECK(a.bytes_pulled() <= down_bytes);
    CHECK(down_bytes <= b.bytes_pulled());
  }
  CHECK(Get(m, "rog_rows_total{direction=\"uplink\"}") ==
        Get(m, "rog_worker_rows_total{direction=\"uplink\",worker=\"w0\"}") +
            Get(m, "rog_worker_rows_total{direction=\"uplink\",worker=\"w1\"}"));
  // The staleness histogram: one sample per (row, attached worker),
  // cumulative buckets at 0..S and 2S.
  CHECK(Get(m, "rog_row_staleness_iterations_count") == 82 * 2);
  CHECK(Get(m, "rog_row_staleness_iterations_bucket{le=\"+Inf\"}") == 82 * 2);
  double last = 0;
  for (const char* le : {"0", "1", "2", "4", "+Inf"}) {
    INFO("le " << le);
    const double v = Get(m, absl::StrCat("rog_row_staleness_iterations_bucket{le=\"", le, "\"}"));
    CHECK(v >= last);
    last = v;
  }
  CHECK(!absl::StrContains(r.body, "rog_checkpoint_age_seconds"));
  REQUIRE_PROMTOOL_OK(r.body);

  {  // A checkpoint: its age and time appear.
    auto stub = pb::Admin::NewStub(
        grpc::CreateChannel((*rogd)->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::CheckpointReply reply;
    REQUIRE(stub->Checkpoint(&ctx, pb::CheckpointRequest(), &reply).ok());
    auto status = AdminStatus((*rogd)->address());
    REQUIRE(status.ok());
    const HttpReply c = Scrape(port);
    INFO(c.body);
    const auto cm = Samples(c.body);
    CHECK(Get(cm, "rog_checkpoint_age_seconds") >= 0);
    CHECK(Get(cm, "rog_checkpoint_age_seconds") < 60);
    CHECK(Get(cm, "rog_checkpoint_last_timestamp_seconds") ==
          Approx(status->last_checkpoint_unix()).margin(0.001));
    REQUIRE_PROMTOOL_OK(c.body);
  }

  {  // w1 leaves: its series go, the team totals keep what it moved.
    REQUIRE(w1.worker->Close(30).ok());
    team.Detach(1);
    const HttpReply g = Scrape(port);
    INFO(g.body);
    const auto gm = Samples(g.body);
    CHECK(!absl::StrContains(g.body, "worker=\"w1\""));
    CHECK(Get(gm, "rog_worker_iteration{worker=\"w0\"}") == 10);
    CHECK(Get(gm, "rog_workers{state=\"connected\"}") == 1);
    CHECK(Get(gm, "rog_workers{state=\"evicted\"}") == 1);
    CHECK(Get(gm, "rog_rows_total{direction=\"uplink\"}") >=
          Get(m, "rog_rows_total{direction=\"uplink\"}"));
    CHECK(Get(gm, "rog_bytes_total{direction=\"downlink\"}") >=
          Get(m, "rog_bytes_total{direction=\"downlink\"}"));
    CHECK(Get(gm, "rog_row_staleness_iterations_count") == 82);
    REQUIRE_PROMTOOL_OK(g.body);
  }

  // A clean stop with the metrics endpoint up.
  CHECK((*rogd)->Stop(SIGTERM) == 0);
  CHECK(HttpGet(port, "/metrics").error != "");
}

TEST_CASE("rogd without --metrics_listen serves no metrics", "[metrics]") {
  auto rogd = RogdProcess::Start({"--workers=1"});
  REQUIRE(rogd.ok());
  CHECK(!absl::StrContains((*rogd)->log(), "metrics"));
}

TEST_CASE("a bad --metrics_listen stops rogd with exit 2 and says why", "[metrics]") {
  // Occupied: a loopback port somebody listens on.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(listen(fd, 8) == 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string busy = absl::StrCat("127.0.0.1:", ntohs(a.sin_port));

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"127.0.0.1:http", "--metrics_listen=127.0.0.1:http: 'http' is not a port"},
      {"9470", "--metrics_listen=9470: no host"},
      {"0.0.0.0:9470", "refusing to serve metrics on 0.0.0.0:9470 beyond loopback"},
      {busy, "cannot serve metrics on " + busy + " (address in use"},
  };
  for (const auto& [address, message] : cases) {
    INFO(address);
    auto rogd = RogdProcess::Start({"--metrics_listen=" + address});
    REQUIRE(!rogd.ok());
    INFO(rogd.status().message());
    CHECK(absl::StrContains(rogd.status().message(), "rogd exited with status 2: "));
    CHECK(absl::StrContains(rogd.status().message(), "rogd: " + message));
  }
  close(fd);
}

}  // namespace
}  // namespace rog
