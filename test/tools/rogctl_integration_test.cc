// The rogctl binary against a real rogd with a team of rog::Workers: its
// tables, its JSON and every error path with its exit code. Each rogctl run
// is bounded by `timeout`; rogd dies with the test (see rogd_harness.h).
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "test/testing/rogctl_runner.h"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"

namespace rog {
namespace {

using Run = RogctlRun;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

#define SHOW(run) \
  INFO("exit " << (run).code << "\nstdout:\n" << (run).out << "stderr:\n" << (run).err)

TEST_CASE("rogctl reports a rogd training a team, as tables and JSON", "[rogctl]") {
  const std::string ckpt_dir = MakeTempDir("ckpt");
  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=2",
                                  "--checkpoint_dir=" + ckpt_dir, "--checkpoint_interval=0"});
  REQUIRE(rogd.ok());
  const std::string server = "--server=" + (*rogd)->address();
  INFO((*rogd)->log());

  {  // Before the first worker: no model.
    Run status = Rogctl({server, "status"});
    SHOW(status);
    CHECK(status.code == 0);
    CHECK(absl::StrContains(status.out, "none yet"));
    CHECK(absl::StrContains(status.out, "0 connected"));
    Run json = Rogctl({server, "--json", "status"});
    SHOW(json);
    CHECK(json.code == 0);
    CHECK(absl::StrContains(json.out, "\"has_model\":false"));
    Run staleness = Rogctl({server, "staleness"});
    SHOW(staleness);
    CHECK(staleness.code == 4);
    CHECK(absl::StrContains(staleness.err, "no model yet"));
    CHECK(absl::StrContains(staleness.err, "start a worker"));
    CHECK(staleness.out.empty());
    Run workers = Rogctl({server, "workers"});
    CHECK(workers.code == 0);
    CHECK(workers.out == "no workers have connected yet\n");
  }

  Team team((*rogd)->address(), 2);
  team.Add("w0", 0);
  team.Add("w1", 1);
  team.Train(*team.members()[0], 10, 1);
  team.Train(*team.members()[1], 10, 4);
  team.JoinAll();
  for (auto& m : team.members()) {
    INFO(m->id);
    REQUIRE(m->error == "");
    CHECK(m->violation == "");
  }
  REQUIRE(WaitForTeamAt((*rogd)->address(), 2, 10));

  Run status = Rogctl({server, "status"});
  SHOW(status);
  CHECK(status.code == 0);
  CHECK(absl::StrContains(status.out, "rog S=2 MTA=0.50 codec=fp32"));
  CHECK(absl::StrContains(status.out, "4 tensors, 82 rows"));
  CHECK(absl::StrContains(status.out, "2 connected, "));
  CHECK(absl::StrContains(status.out, "team ready       yes"));
  CHECK(absl::StrContains(status.out, "max 10"));
  CHECK(absl::StrContains(status.out, "last checkpoint  none"));
  CHECK(absl::StrContains(status.out, "rejected         none"));

  Run status_json = Rogctl({server, "status", "--json"});
  SHOW(status_json);
  CHECK(status_json.code == 0);
  CHECK(absl::StartsWith(status_json.out, "{\"version\":\""));
  CHECK(absl::StrContains(status_json.out, "\"sync\":\"rog\",\"staleness\":2,\"mta\":0.5,"));
  CHECK(absl::StrContains(status_json.out, "\"model\":{\"tensors\":4,\"rows\":82,"));
  CHECK(absl::StrContains(status_json.out, "\"workers\":{\"connected\":2,"));
  CHECK(absl::StrContains(status_json.out, "\"max\":10}"));
  CHECK(absl::StrContains(status_json.out, "\"team_ready\":true"));
  CHECK(absl::StrContains(status_json.out, "\"last_checkpoint\":null"));
  CHECK(absl::StrContains(status_json.out, "\"rejected\":{}"));

  Run workers = Rogctl({server, "workers"});
  SHOW(workers);
  CHECK(workers.code == 0);
  const std::vector<std::string> wl = Lines(workers.out);
  REQUIRE(wl.size() == 3);
  CHECK(absl::StartsWith(wl[0], "worker  state"));
  CHECK(absl::StartsWith(wl[1], "w0      connected"));
  CHECK(absl::StartsWith(wl[2], "w1      connected"));
  CHECK(wl[1].size() == wl[0].size());
  Run workers_json = Rogctl({server, "--json", "workers"});
  SHOW(workers_json);
  CHECK(workers_json.code == 0);
  CHECK(absl::StrContains(workers_json.out,
                          "{\"id\":\"w0\",\"state\":\"connected\",\"iteration\":10,"));
  CHECK(absl::StrContains(workers_json.out,
                          "{\"id\":\"w1\",\"state\":\"connected\",\"iteration\":10,"));
  CHECK(Count(workers_json.out, "\"rows_pushed_per_iteration\":") == 2);

  Run staleness = Rogctl({server, "staleness"});
  SHOW(staleness);
  CHECK(staleness.code == 0);
  CHECK(absl::StrContains(staleness.out, "staleness bound 2, 82 rows"));
  CHECK(absl::StrContains(staleness.out, "tensor       index  w0  w1  oldest unpushed  age\n"));
  // A line per row, and one in the heat map.
  CHECK(Count(staleness.out, "\nconv.weight ") == 64 + 1);
  CHECK(Count(staleness.out, "\nfc.weight ") == 16 + 1);
  CHECK(absl::StrContains(staleness.out, "heat map"));
  CHECK(absl::StrContains(staleness.out, "(64 rows)\n"));
  CHECK(absl::StrContains(staleness.out, "(1 row)\n"));
  CHECK(!absl::StrContains(staleness.out, "\x1b["));  // stdout is a pipe: no colour

  Run top = Rogctl({server, "staleness", "--top=5", "--json"});
  SHOW(top);
  CHECK(top.code == 0);
  CHECK(absl::StartsWith(top.out, "{\"staleness_bound\":2,\"workers\":[\"w0\",\"w1\"],\"rows\":["));
  CHECK(Count(top.out, "{\"row\":") == 5);
  Run top_table = Rogctl({server, "staleness", "--top", "3"});
  CHECK(top_table.code == 0);
  CHECK(Lines(top_table.out).size() == 2 + 3);  // title, header, rows; no heat map
  Run fc = Rogctl({server, "staleness", "--tensor=fc.weight", "--worker=w1", "--json"});
  SHOW(fc);
  CHECK(fc.code == 0);
  CHECK(absl::StrContains(fc.out, "\"workers\":[\"w1\"]"));
  CHECK(Count(fc.out, "\"tensor\":\"fc.weight\"") == 16);
  CHECK(Count(fc.out, "{\"row\":") == 16);

  Run unknown_tensor = Rogctl({server, "staleness", "--tensor=nope"});
  SHOW(unknown_tensor);
  CHECK(unknown_tensor.code == 2);
  CHECK(absl::StrContains(unknown_tensor.err, "no tensor named 'nope'"));
  CHECK(absl::StrContains(unknown_tensor.err, "conv.weight, conv.bias, fc.weight, scale"));
  Run unknown_worker = Rogctl({server, "staleness", "--worker=ghost"});
  SHOW(unknown_worker);
  CHECK(unknown_worker.code == 2);
  CHECK(absl::StrContains(unknown_worker.err, "ghost"));

  // --watch refreshes until SIGINT, then exits 0; piped, snapshots follow
  // each other, with --json one object per line.
  Run watch = Rogctl({server, "--watch=0.2s", "status"}, "--preserve-status -s INT -k 5 2");
  SHOW(watch);
  CHECK(watch.code == 0);
  CHECK(Count(watch.out, "--- ") >= 3);
  CHECK(Count(watch.out, "\nsync             rog S=2") >= 3);
  Run watch_json =
      Rogctl({server, "--watch", "0.2", "--json", "workers"}, "--preserve-status -s INT -k 5 2");
  SHOW(watch_json);
  CHECK(watch_json.code == 0);
  const std::vector<std::string> snapshots = Lines(watch_json.out);
  CHECK(snapshots.size() >= 3);
  for (const std::string& line : snapshots) CHECK(absl::StartsWith(line, "{\"workers\":[{"));
  CHECK(Rogctl({server, "--watch=1s", "checkpoint"}).code == 2);
  // A --server without a port (a shell variable left empty) is a usage error.
  Run no_port = Rogctl({"--server=127.0.0.1:", "status"});
  CHECK(no_port.code == 2);
  CHECK(no_port.err.find("is not HOST:PORT") != std::string::npos);

  Run checkpoint = Rogctl({server, "checkpoint"});
  SHOW(checkpoint);
  CHECK(checkpoint.code == 0);
  CHECK(absl::StrContains(checkpoint.out, "checkpoint written: " + ckpt_dir + "/rogd.ckpt"));
  Run checkpoint_json = Rogctl({server, "checkpoint", "--json"});
  SHOW(checkpoint_json);
  CHECK(checkpoint_json.code == 0);
  CHECK(
      absl::StartsWith(checkpoint_json.out, "{\"path\":\"" + ckpt_dir + "/rogd.ckpt\",\"bytes\":"));
  Run after = Rogctl({server, "status", "--json"});
  CHECK(absl::StrContains(after.out, "\"last_checkpoint\":{\"unix\":"));
  CHECK(absl::StrContains(after.out, "\"path\":\"" + ckpt_dir + "/rogd.ckpt\""));
}

TEST_CASE("rogctl's error paths exit with their codes and say what to do", "[rogctl]") {
  SECTION("no rogd at --server: exit 3") {
    const std::string address = absl::StrCat("127.0.0.1:", FreePort());
    for (const char* command : {"status", "workers", "staleness", "checkpoint"}) {
      Run run = Rogctl({"--server=" + address, "--timeout=3s", command});
      SHOW(run);
      CHECK(run.code == 3);
      CHECK(absl::StrContains(run.err, "cannot reach rogd at " + address + ": is it running?"));
      CHECK(absl::StrContains(run.err, "--server"));
    }
  }
  SECTION("a port that accepts but never answers: exit 3 after --timeout") {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(listen(fd, 8) == 0);  // the kernel accepts; nobody speaks HTTP/2
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const std::string address = absl::StrCat("127.0.0.1:", ntohs(a.sin_port));
    Run run = Rogctl({"--server=" + address, "--timeout=1s", "status"});
    close(fd);
    SHOW(run);
    CHECK(run.code == 3);
    CHECK(absl::StrContains(run.err, "rogd at " + address));
    CHECK(absl::StrContains(run.err, "--timeout"));
  }
  SECTION("checkpoint without --checkpoint_dir: rogd's reason, exit 4") {
    auto rogd = RogdProcess::Start({"--workers=1"});
    REQUIRE(rogd.ok());
    Run run = Rogctl({"--server=" + (*rogd)->address(), "checkpoint"});
    SHOW(run);
    CHECK(run.code == 4);
    CHECK(absl::StrContains(run.err, "rogd runs without --checkpoint_dir"));
  }
  SECTION("mta needs no rogd and matches the paper") {
    Run run = Rogctl({"--server=127.0.0.1:1", "mta", "--staleness=2..8", "--json"});
    SHOW(run);
    REQUIRE(run.code == 0);
    std::vector<double> values;
    const std::string key = "\"mta\":";
    for (size_t at = run.out.find(key); at != std::string::npos; at = run.out.find(key, at + 1)) {
      const char c = run.out[at + key.size()];
      if (c >= '0' && c <= '9') values.push_back(std::atof(run.out.c_str() + at + key.size()));
    }
    const std::vector<double> paper = {0.50, 0.38, 0.32, 0.28, 0.25, 0.22, 0.20};
    REQUIRE(values.size() == paper.size());
    for (size_t i = 0; i < paper.size(); ++i) {
      INFO("S=" << i + 2 << " mta " << values[i]);
      CHECK(std::round(values[i] * 100) / 100 == Approx(paper[i]));
    }
    Run table = Rogctl({"mta", "--staleness=4"});
    CHECK(table.code == 0);
    CHECK(table.out == "S   MTA\n4  0.32\n");
    Run missing = Rogctl({"mta"});
    CHECK(missing.code == 2);
    CHECK(absl::StrContains(missing.err, "--staleness"));
  }
  SECTION("usage errors: exit 2 and what to use") {
    Run none = Rogctl({});
    CHECK(none.code == 2);
    CHECK(absl::StrContains(none.err, "status, workers, staleness, checkpoint, export, mta"));
    Run bogus = Rogctl({"frobnicate"});
    CHECK(bogus.code == 2);
    CHECK(absl::StrContains(bogus.err, "unknown command 'frobnicate'"));
    CHECK(absl::StrContains(bogus.err, "rogctl --help"));
    Run flag = Rogctl({"--colour", "status"});
    CHECK(flag.code == 2);
    CHECK(absl::StrContains(flag.err, "unknown flag --colour"));
    Run value = Rogctl({"staleness", "--top=many"});
    CHECK(value.code == 2);
    CHECK(absl::StrContains(value.err, "--top"));
    Run misplaced = Rogctl({"status", "--tensor=x"});
    CHECK(misplaced.code == 2);
    Run help = Rogctl({"--help"});
    CHECK(help.code == 0);
    for (const char* command : {"status", "workers", "staleness", "checkpoint", "export", "mta"}) {
      INFO(command);
      CHECK(absl::StrContains(help.out, absl::StrCat("\n  ", command, " ")));
    }
  }
}

}  // namespace
}  // namespace rog
