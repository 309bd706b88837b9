// TLS, mutual TLS and bearer tokens against real rogd processes on
// loopback (docs/operations.md "Security"). Certificates are made at test time by
// tools/make_certs.sh (openssl): the team's CA, rogd's certificate for
// localhost and 127.0.0.1, client certificates, one signed by another CA,
// and expired ones (`openssl ca` with past -startdate/-enddate).
//
// Every refused attempt is checked for its status and for leaving rogd as
// it was: no worker registered, no model, nothing counted as rejected, the
// model unchanged. Each attempt is bounded (a few seconds); rogd dies with
// the test (rogd_harness.h).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "client/worker.h"
#include "test/testing/rogctl_runner.h"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"

namespace rog {
namespace {

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return absl::StrCat(srcdir, "/", workspace, "/", path);
  }
  return path;
}

// The certificates and tokens of a team, made once per test binary.
struct Files {
  std::string dir;    // the team's CA, certificates, tokens
  std::string other;  // another CA and what it signed
  std::string ca() const { return dir + "/ca.pem"; }
  std::string pem(const std::string& name) const { return dir + "/" + name + ".pem"; }
  std::string key(const std::string& name) const { return dir + "/" + name + ".key"; }
  std::string worker_token() const { return dir + "/worker.token"; }
  std::string admin_token() const { return dir + "/admin.token"; }
  std::string wrong_token() const { return dir + "/wrong.token"; }
};

const Files& Certs() {
  static const Files files = [] {
    Files f;
    f.dir = MakeTempDir("team");
    f.other = MakeTempDir("other");
    const std::string script = "timeout 60 " + Runfile("tools/make_certs.sh");
    const std::string past = " --start=20200101000000Z --end=20200201000000Z ";
    const std::vector<std::string> commands = {
        absl::StrCat(script, " ", f.dir, " server localhost 127.0.0.1"),
        absl::StrCat(script, " ", f.dir, " client robot1 robot2 intruder admin"),
        absl::StrCat(script, " ", f.dir, " tokens"),
        // Signed by the team's CA, but expired.
        absl::StrCat(script, past, f.dir, " client expired"),
        absl::StrCat(script, past, f.dir, " server expired-server localhost 127.0.0.1"),
        // Another CA: a client rogd does not trust, a server nobody trusts.
        absl::StrCat(script, " --ca_name='Other CA' ", f.other, " client stranger"),
        absl::StrCat(script, " ", f.other, " server localhost 127.0.0.1"),
    };
    for (const std::string& c : commands) {
      INFO(c);
      REQUIRE(std::system((c + " >/dev/null").c_str()) == 0);
    }
    std::ofstream(f.wrong_token()) << "0123456789abcdef0123456789abcdef\n";
    chmod(f.wrong_token().c_str(), 0600);
    return f;
  }();
  return files;
}

std::vector<std::string> MutualTlsFlags(const Files& f) {
  return {"--tls_cert=" + f.pem("localhost"), "--tls_key=" + f.key("localhost"),
          "--tls_ca=" + f.ca(), "--worker_token_file=" + f.worker_token(),
          "--admin_token_file=" + f.admin_token()};
}

// Worker settings: TLS with the team's CA, client certificate `cert` (none
// if empty), token file `token` (none if empty).
WorkerOptions Tls(const Files& f, const std::string& cert, const std::string& token) {
  WorkerOptions o;
  o.tls_ca_file = f.ca();
  if (!cert.empty()) {
    o.tls_cert_file = f.pem(cert);
    o.tls_key_file = f.key(cert);
  }
  o.token_file = token;
  return o;
}

ClientSecurity AdminTls(const Files& f, const std::string& cert, const std::string& token) {
  ClientSecurity s;
  s.tls_ca_file = f.ca();
  if (!cert.empty()) {
    s.tls_cert_file = f.pem(cert);
    s.tls_key_file = f.key(cert);
  }
  s.token_file = token;
  return s;
}

// A worker `id` tries to join rogd at `address` with `o`, and waits at
// most `seconds` to start its first iteration; returns how that went.
absl::Status TryJoin(const std::string& address, const std::string& id, WorkerOptions o,
                     double seconds) {
  o.server = address;
  o.worker_id = id;
  o.backoff_max = 0.5;
  const Layout layout = TestLayout();
  absl::StatusOr<std::unique_ptr<Worker>> w = Worker::Start(o, layout, TestInitial(layout));
  if (!w.ok()) return w.status();
  std::vector<float> params(layout.total_numel());
  return (*w)->BeginIteration(absl::MakeSpan(params), seconds);
}

// rogd holds no worker, no model and counted nothing as rejected.
void RequireUntouched(const RogdProcess& rogd, const ClientSecurity& admin) {
  absl::StatusOr<pb::StatusReply> status = AdminStatus(rogd.address(), admin);
  INFO(rogd.log());
  REQUIRE(status.ok());
  CHECK_FALSE(status->has_model());
  CHECK(status->workers_connected() == 0);
  CHECK(status->workers_evicted() == 0);
  CHECK(status->rejected().empty());
  absl::StatusOr<pb::WorkersReply> workers = AdminWorkers(rogd.address(), admin);
  REQUIRE(workers.ok());
  CHECK(workers->workers().empty());
}

std::vector<std::string> WorkerIds(const pb::WorkersReply& w) {
  std::vector<std::string> ids;
  for (const pb::WorkerInfo& i : w.workers()) ids.push_back(i.worker_id());
  return ids;
}

// The refusals a rogd with mutual TLS and tokens must make, run in
// parallel (those refused by TLS wait out `seconds`).
void RequireWorkersRefused(const RogdProcess& rogd, double seconds) {
  const Files& f = Certs();
  const std::string a = rogd.address();
  struct Attempt {
    const char* what;
    WorkerOptions options;
    absl::StatusCode code;
    const char* says;
  };
  WorkerOptions plaintext;
  plaintext.token_file = f.worker_token();
  WorkerOptions other_ca = Tls(f, "robot2", f.worker_token());
  other_ca.tls_ca_file = f.other + "/ca.pem";
  const std::vector<Attempt> attempts = {
      {"no token", Tls(f, "robot2", ""), absl::StatusCode::kUnauthenticated, "no token"},
      {"a wrong token", Tls(f, "robot2", f.wrong_token()), absl::StatusCode::kUnauthenticated,
       "wrong token"},
      {"the admin token", Tls(f, "robot2", f.admin_token()), absl::StatusCode::kPermissionDenied,
       "the admin token does not open worker streams"},
      // TLS refusals never reach rogd's handlers: the worker keeps trying.
      {"no TLS at all", plaintext, absl::StatusCode::kDeadlineExceeded,
       "if it serves TLS (rogd --tls_cert), set tls_ca_file"},
      {"no client certificate", Tls(f, "", f.worker_token()), absl::StatusCode::kDeadlineExceeded,
       "refused this worker's"},
      {"a certificate of another CA",
       [&] {
         WorkerOptions o = Tls(f, "", f.worker_token());
         o.tls_cert_file = f.other + "/stranger.pem";
         o.tls_key_file = f.other + "/stranger.key";
         return o;
       }(),
       absl::StatusCode::kDeadlineExceeded, "refused this worker's"},
      {"an expired certificate", Tls(f, "expired", f.worker_token()),
       absl::StatusCode::kDeadlineExceeded, "refused this worker's"},
      {"trusting another CA", other_ca, absl::StatusCode::kDeadlineExceeded,
       "does not trust rogd's certificate"},
  };
  std::vector<std::future<absl::Status>> results;
  for (size_t i = 0; i < attempts.size(); ++i) {
    results.push_back(std::async(std::launch::async, [&, i] {
      return TryJoin(a, absl::StrCat("intruder", i), attempts[i].options, seconds);
    }));
  }
  for (size_t i = 0; i < attempts.size(); ++i) {
    const absl::Status s = results[i].get();
    INFO("a worker with " << attempts[i].what << ": " << s);
    CHECK(s.code() == attempts[i].code);
    CHECK(absl::StrContains(s.message(), attempts[i].says));
  }
}

void RequireAdminRefused(const RogdProcess& rogd) {
  const Files& f = Certs();
  struct Attempt {
    const char* what;
    ClientSecurity security;
    absl::StatusCode code;
    const char* says;
  };
  ClientSecurity stranger = AdminTls(f, "", f.admin_token());
  stranger.tls_cert_file = f.other + "/stranger.pem";
  stranger.tls_key_file = f.other + "/stranger.key";
  ClientSecurity plaintext;
  plaintext.token_file = f.admin_token();
  for (const Attempt& at : {
           Attempt{"no token", AdminTls(f, "admin", ""), absl::StatusCode::kUnauthenticated,
                   "no token"},
           Attempt{"a wrong token", AdminTls(f, "admin", f.wrong_token()),
                   absl::StatusCode::kUnauthenticated, "wrong token"},
           Attempt{"the worker token", AdminTls(f, "admin", f.worker_token()),
                   absl::StatusCode::kPermissionDenied,
                   "the worker token does not allow admin calls"},
           Attempt{"a certificate of another CA", stranger, absl::StatusCode::kUnavailable, ""},
           Attempt{"an expired certificate", AdminTls(f, "expired", f.admin_token()),
                   absl::StatusCode::kUnavailable, ""},
           Attempt{"no TLS", plaintext, absl::StatusCode::kUnavailable, ""},
       }) {
    for (int call = 0; call < 3; ++call) {
      absl::Status s = call == 0   ? AdminStatus(rogd.address(), at.security).status()
                       : call == 1 ? AdminWorkers(rogd.address(), at.security).status()
                                   : AdminExport(rogd.address(), at.security).status();
      INFO("an admin call (" << call << ") with " << at.what << ": " << s);
      CHECK(s.code() == at.code);
      CHECK(absl::StrContains(s.message(), at.says));
    }
  }
}

TEST_CASE("mutual TLS and tokens: wrong credentials are refused and change nothing", "[security]") {
  const Files& f = Certs();
  auto rogd = RogdProcess::Start(MutualTlsFlags(f));
  REQUIRE(rogd.ok());
  const ClientSecurity admin = AdminTls(f, "admin", f.admin_token());

  // Before any worker: a refused worker must not even bring the model.
  RequireWorkersRefused(**rogd, 5);
  RequireAdminRefused(**rogd);
  RequireUntouched(**rogd, admin);

  // The right credentials: a team trains over mutual TLS, nothing lost.
  Team team((*rogd)->address(), 4);
  team.Add("robot1", 0, Tls(f, "robot1", f.worker_token()));
  team.Train(*team.members()[0], 10);
  team.JoinAll();
  REQUIRE(team.members()[0]->error == "");
  REQUIRE(team.Drain() == "");
  absl::StatusOr<std::vector<float>> before = AdminExport((*rogd)->address(), admin);
  REQUIRE(before.ok());
  CHECK(team.CheckConservation(*before) == "");
  absl::StatusOr<pb::WorkersReply> workers = AdminWorkers((*rogd)->address(), admin);
  REQUIRE(workers.ok());
  REQUIRE(WorkerIds(*workers) == std::vector<std::string>{"robot1"});
  const uint64_t iteration = workers->workers(0).iteration();

  // With a model and a worker: refused attempts still change nothing.
  RequireWorkersRefused(**rogd, 5);
  RequireAdminRefused(**rogd);
  absl::StatusOr<pb::WorkersReply> after_workers = AdminWorkers((*rogd)->address(), admin);
  REQUIRE(after_workers.ok());
  CHECK(WorkerIds(*after_workers) == std::vector<std::string>{"robot1"});
  CHECK(after_workers->workers(0).iteration() == iteration);
  absl::StatusOr<pb::StatusReply> status = AdminStatus((*rogd)->address(), admin);
  REQUIRE(status.ok());
  CHECK(status->rejected().empty());
  absl::StatusOr<std::vector<float>> after = AdminExport((*rogd)->address(), admin);
  REQUIRE(after.ok());
  CHECK(*after == *before);

  // rogd's log names each refusal.
  const std::string log = (*rogd)->log();
  CHECK(absl::StrContains(log, "security: mutual TLS as CN=localhost"));
  CHECK(absl::StrContains(log, "refused a call from"));
  // Written by gRPC's TLS layer on its own threads, in no order with what
  // the clients saw.
  CHECK(
      WaitFor(10, [&] { return absl::StrContains((*rogd)->log(), "certificate verify failed"); }));
  CHECK((*rogd)->Stop() == 0);
}

TEST_CASE("rogctl: the admin token over mutual TLS works; refusals exit 5 and say why",
          "[security]") {
  const Files& f = Certs();
  auto rogd = RogdProcess::Start(MutualTlsFlags(f));
  REQUIRE(rogd.ok());
  const std::string server = "--server=" + (*rogd)->address();
  const std::vector<std::string> tls = {"--tls_ca=" + f.ca(), "--tls_cert=" + f.pem("admin"),
                                        "--tls_key=" + f.key("admin")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {server, "status"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Rogctl(args);
  };
  std::vector<std::string> good = tls;
  good.push_back("--token_file=" + f.admin_token());
  RogctlRun ok = with(good);
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK(absl::StrContains(ok.out, "workers          0 connected"));

  struct Case {
    const char* what;
    std::vector<std::string> flags;
    const char* says;
  };
  std::vector<std::string> worker_token = tls, no_token = tls, wrong = tls;
  worker_token.push_back("--token_file=" + f.worker_token());
  wrong.push_back("--token_file=" + f.wrong_token());
  std::vector<std::string> stranger = {
      "--tls_ca=" + f.ca(), "--tls_cert=" + f.other + "/stranger.pem",
      "--tls_key=" + f.other + "/stranger.key", "--token_file=" + f.admin_token()};
  std::vector<std::string> expired = {"--tls_ca=" + f.ca(), "--tls_cert=" + f.pem("expired"),
                                      "--tls_key=" + f.key("expired"),
                                      "--token_file=" + f.admin_token()};
  std::vector<std::string> other_ca = good;
  other_ca[0] = "--tls_ca=" + f.other + "/ca.pem";
  for (const Case& c : {
           Case{"the worker token", worker_token, "(PERMISSION_DENIED): the worker token"},
           Case{"no token", no_token, "(UNAUTHENTICATED): no token"},
           Case{"a wrong token", wrong, "(UNAUTHENTICATED): wrong token"},
           Case{"a certificate of another CA", stranger, "closed the connection during TLS"},
           Case{"an expired certificate", expired, "closed the connection during TLS"},
           Case{"trusting another CA", other_ca, "rogctl does not trust rogd at"},
       }) {
    RogctlRun run = with(c.flags);
    INFO("rogctl with " << c.what << ": exit " << run.code << ": " << run.err);
    CHECK(run.code == 5);
    CHECK(absl::StrContains(run.err, c.says));
    CHECK(run.out.empty());
  }
  // The expired certificate is named before rogd refuses it.
  RogctlRun run = with(expired);
  CHECK(absl::StrContains(run.err, "note: --tls_cert=" + f.pem("expired") +
                                       " (CN=expired) is expired on 2020-02-01 00:00:00 UTC"));
  // Without TLS, rogctl hints at --tls_ca.
  run = with({"--token_file=" + f.admin_token()});
  CHECK(run.code == 3);
  CHECK(absl::StrContains(run.err, "if it serves TLS (rogd --tls_cert), pass --tls_ca=FILE"));
  // A token file rogctl cannot use is a usage error, before any call.
  run = with({"--token_file=/no/such/token"});
  CHECK(run.code == 2);
  CHECK(absl::StrContains(run.err, "cannot read --token_file=/no/such/token"));
  RequireUntouched(**rogd, AdminTls(f, "admin", f.admin_token()));
}

TEST_CASE("an expired rogd certificate: rogd warns, workers and rogctl refuse it", "[security]") {
  const Files& f = Certs();
  auto rogd = RogdProcess::Start(
      {"--tls_cert=" + f.pem("expired-server"), "--tls_key=" + f.key("expired-server")});
  REQUIRE(rogd.ok());
  const absl::Status s = TryJoin((*rogd)->address(), "robot1", Tls(f, "", ""), 5);
  INFO(s);
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(absl::StrContains(s.message(), "does not trust rogd's certificate"));
  RogctlRun run = Rogctl({"--server=" + (*rogd)->address(), "--tls_ca=" + f.ca(), "status"});
  CHECK(run.code == 5);
  CHECK(absl::StrContains(run.err, "rogctl does not trust rogd"));
  CHECK(absl::StrContains((*rogd)->log(),
                          "(CN=expired-server) is expired on 2020-02-01 00:00:00 UTC: clients "
                          "will refuse it"));
  // No client could talk to it, so no worker reached it.
  CHECK_FALSE(absl::StrContains((*rogd)->log(), "connected from"));
}

TEST_CASE("tokens without TLS on loopback: metadata carries them", "[security]") {
  const Files& f = Certs();
  auto rogd = RogdProcess::Start(
      {"--worker_token_file=" + f.worker_token(), "--admin_token_file=" + f.admin_token()});
  REQUIRE(rogd.ok());
  ClientSecurity admin;
  admin.token_file = f.admin_token();
  for (const auto& [token, code] :
       {std::pair{std::string(""), absl::StatusCode::kUnauthenticated},
        std::pair{f.wrong_token(), absl::StatusCode::kUnauthenticated},
        std::pair{f.admin_token(), absl::StatusCode::kPermissionDenied}}) {
    WorkerOptions o;
    o.token_file = token;
    const absl::Status s = TryJoin((*rogd)->address(), "intruder", o, 10);
    INFO(s);
    CHECK(s.code() == code);
  }
  ClientSecurity worker_token;
  worker_token.token_file = f.worker_token();
  CHECK(AdminStatus((*rogd)->address(), worker_token).status().code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(AdminStatus((*rogd)->address()).status().code() == absl::StatusCode::kUnauthenticated);
  RequireUntouched(**rogd, admin);

  // The token as a string loaded by the caller works like the file.
  std::ifstream in(f.worker_token());
  std::string token;
  in >> token;
  WorkerOptions o;
  o.token = token;
  Team team((*rogd)->address(), 4);
  team.Add("robot1", 0, o);
  team.Train(*team.members()[0], 5);
  team.JoinAll();
  CHECK(team.members()[0]->error == "");
  absl::StatusOr<pb::WorkersReply> workers = AdminWorkers((*rogd)->address(), admin);
  REQUIRE(workers.ok());
  CHECK(WorkerIds(*workers) == std::vector<std::string>{"robot1"});
  RogctlRun run =
      Rogctl({"--server=" + (*rogd)->address(), "--token_file=" + f.admin_token(), "workers"});
  CHECK(run.code == 0);
  CHECK(absl::StrContains(run.out, "robot1"));
  run = Rogctl({"--server=" + (*rogd)->address(), "workers"});
  CHECK(run.code == 5);
  CHECK(absl::StrContains(run.err, "(UNAUTHENTICATED): no token"));
  // --watch ends at a refusal: refreshing cannot fix it (timeout would
  // end it with 124 otherwise).
  run = Rogctl({"--server=" + (*rogd)->address(), "--watch=1", "status"}, "-k 5 10");
  CHECK(run.code == 5);
  CHECK(absl::StrContains(run.err, "(UNAUTHENTICATED): no token"));
}

TEST_CASE("rogd refuses to start beyond loopback unprotected, or with unusable files",
          "[security]") {
  const Files& f = Certs();
  struct Case {
    std::vector<std::string> flags;
    const char* says;
  };
  for (const Case& c : {
           Case{{"--listen=0.0.0.0:0"},
                "refusing to listen on 0.0.0.0:0 beyond loopback with neither TLS nor tokens"},
           Case{{"--listen=[::]:0"}, "pass --insecure on a network you trust"},
           Case{{"--tls_cert=" + f.pem("localhost")}, "--tls_cert without --tls_key"},
           Case{{"--tls_ca=" + f.ca()}, "--tls_ca requires client certificates"},
           Case{{"--tls_cert=" + f.pem("localhost"), "--tls_key=" + f.key("robot1")},
                "--tls_key is not the private key of the certificate in --tls_cert"},
           Case{{"--tls_cert=" + f.key("localhost"), "--tls_key=" + f.key("localhost")},
                "holds no PEM certificate"},
           Case{{"--worker_token_file=" + f.worker_token()},
                "--worker_token_file without --admin_token_file"},
           Case{{"--worker_token_file=" + f.worker_token(),
                 "--admin_token_file=" + f.worker_token()},
                "hold the same token"},
           Case{{"--worker_token_file=/no/such/file", "--admin_token_file=" + f.admin_token()},
                "cannot read --worker_token_file=/no/such/file"},
       }) {
    auto rogd = RogdProcess::Start(c.flags);
    REQUIRE_FALSE(rogd.ok());
    INFO(rogd.status());
    CHECK(absl::StrContains(rogd.status().message(), "rogd exited with status 2"));
    CHECK(absl::StrContains(rogd.status().message(), c.says));
  }
  // Tokens on loopback without TLS are fine; rogd names what it serves with.
  auto rogd = RogdProcess::Start(
      {"--worker_token_file=" + f.worker_token(), "--admin_token_file=" + f.admin_token()});
  REQUIRE(rogd.ok());
  CHECK(absl::StrContains((*rogd)->log(),
                          "security: no TLS; tokens for workers and for admin calls"));
}

}  // namespace
}  // namespace rog
