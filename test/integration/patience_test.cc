// Team patience (rogd --patience) end to end: a real rogd, three rog::Workers,
// one of them behind a user-space link (RateProxy) that drops to near zero
// for a while, as a robot behind an obstacle. Each case is bounded: workers
// give up after 60 s, rogd is killed with the test.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"
#include "test/testing/team_checks.h"
#include "test/util/rate_proxy.h"

namespace rog {
namespace {

// The link's rate when it is up, and in the dip: the big layout (660 KB)
// needs 66 s per model at 10 KB/s, 0.17 s at 4 MB/s.
constexpr double kUp = 4e6;
constexpr double kDip = 10e3;

struct Dip {
  std::string sync;
  uint32_t bound = 2;
  std::string patience = "1s";
  uint32_t local_steps = 0;
  // Break b's connection once it has taken its local steps: reconnecting
  // while detached must not give it a fresh allowance.
  bool reconnect = false;
  // The link's rate in the dip. At kDip keepalive pings wait seconds behind
  // the worker's backlog, and a reconnecting worker's resync of the big
  // layout would take over a minute; the reconnect case needs a faster dip.
  double dip = kDip;
};

// Three workers training the big layout: a and c on loopback, b behind
// its own link (up at kUp), each to `until` iterations.
struct Obstacle {
  std::unique_ptr<RateProxy> link_b;
  Layout layout = BigLayout();
  std::unique_ptr<Team> team;
  Member* a = nullptr;
  Member* b = nullptr;
  Member* c = nullptr;

  static std::unique_ptr<Obstacle> Start(RogdProcess& rogd, uint32_t bound, uint64_t until) {
    auto o = std::make_unique<Obstacle>();
    RateProxy::Options link;
    link.rate_bytes_per_sec = kUp;
    auto proxy = RateProxy::Start(rogd.address(), link);
    if (!proxy.ok()) return nullptr;
    o->link_b = std::move(*proxy);
    o->team = std::make_unique<Team>(rogd.address(), bound, &o->layout);
    o->a = &o->team->Add("a", 0);
    WorkerOptions options;
    options.server = o->link_b->address();
    o->b = &o->team->Add("b", 1, options);
    o->c = &o->team->Add("c", 2);
    for (Member* m : {o->a, o->b, o->c}) o->team->Train(*m, until, 5);
    return o;
  }
};

TEST_CASE("a robot behind an obstacle is detached, the team goes on, it reattaches, nothing lost",
          "[patience]") {
  for (const Dip& d : {Dip{"rog", 2}, Dip{"ssp", 2}, Dip{"bsp", 0}, Dip{"rog", 2, "1s", 3},
                       Dip{"rog", 2, "1s", 3, true, 100e3}}) {
    DYNAMIC_SECTION(d.sync << " local_steps=" << d.local_steps
                           << (d.reconnect ? " reconnect" : "")) {
      auto rogd =
          RogdProcess::Start({absl::StrCat("--sync=", d.sync), "--staleness=2", "--workers=3",
                              "--lease=60s", absl::StrCat("--patience=", d.patience),
                              absl::StrCat("--detached_local_steps=", d.local_steps)});
      REQUIRE(rogd.ok());
      auto o = Obstacle::Start(**rogd, d.bound, 80);
      REQUIRE(o != nullptr);
      Team& team = *o->team;
      Member &a = *o->a, &b = *o->b, &c = *o->c;
      auto& link_b = o->link_b;
      REQUIRE(WaitFor(30, [&] { return b.worker->clock() >= 5; }));

      // The obstacle. b's own iterations stop counting for the others'
      // bound check from here (it leaves the bound once detached). On a
      // loaded machine rogd may already have detached (and reattached) b
      // for being slow before the dip: what follows looks only at the log
      // from the dip on.
      team.Detach(1);
      const auto since = [&](size_t from, const char* what) {
        const std::string log = (*rogd)->log();
        return from < log.size() && log.find(what, from) != std::string::npos;
      };
      link_b->SetRate(d.dip);
      const uint64_t a_at_dip = a.worker->clock();
      // Detached before the dip and not reattached since counts too.
      REQUIRE(WaitFor(30, [&] {
        absl::StatusOr<pb::WorkersReply> w = AdminWorkers((*rogd)->address());
        return w.ok() && FindWorker(*w, "b") != nullptr && FindWorker(*w, "b")->detached();
      }));
      // The others keep training while b's link carries a model a minute.
      INFO((*rogd)->log());
      REQUIRE(WaitFor(40, [&] { return a.worker->clock() >= a_at_dip + 20; }));
      CHECK(c.worker->clock() >= a_at_dip + 10);
      absl::StatusOr<pb::WorkersReply> during = AdminWorkers((*rogd)->address());
      REQUIRE(during.ok());
      REQUIRE(FindWorker(*during, "b") != nullptr);
      CHECK(FindWorker(*during, "b")->detached());
      CHECK(FindWorker(*during, "b")->detaches() >= 1);
      CHECK(FindWorker(*during, "a")->detached() == false);
      // The directive reaches b behind what its link still carries.
      CHECK(WaitFor(30, [&] { return b.worker->detached(); }));

      if (d.reconnect) {
        // b takes its local steps (counted from the iteration rogd detached
        // it at), then pauses.
        const std::string log = (*rogd)->log();
        const std::string mark = "detached worker b at iteration ";
        const size_t at = log.rfind(mark);
        REQUIRE(at != std::string::npos);
        const uint64_t detached_at = std::stoull(log.substr(at + mark.size()));
        REQUIRE(WaitFor(40, [&] { return b.worker->clock() >= detached_at + d.local_steps; }));
        absl::SleepFor(absl::Seconds(1));
        const uint64_t paused_at = b.worker->clock();
        CHECK(paused_at == detached_at + d.local_steps);
        // Fast enough to resync the model in a few seconds, still far too
        // slow to reattach (its share within half the patience).
        link_b->SetRate(200e3);
        const uint64_t accepted = link_b->accepted_connections();
        link_b->ResetConnections();
        REQUIRE(WaitFor(30, [&] { return link_b->accepted_connections() > accepted; }));
        // Time for a fresh allowance to show, had rogd given one.
        absl::SleepFor(absl::Seconds(8));
        CHECK(b.worker->detached());
        CHECK(b.worker->clock() == paused_at);
        // The team finishes: nothing flows to b any more, so only rogd's
        // probes can show that its link has recovered.
        team.Join(a);
        team.Join(c);
      }

      // The link recovers: b reattaches by itself and trains to the end.
      const size_t detached_at = (*rogd)->log().rfind("detached worker b");
      link_b->SetRate(kUp);
      REQUIRE(WaitFor(40, [&] { return since(detached_at, "reattached worker b"); }));
      if (d.reconnect) {
        // The reattachment after the dip came from probes.
        const std::string log = (*rogd)->log().substr(detached_at);
        CHECK(log.find("reattached worker b") != std::string::npos);
        CHECK(log.find(" 0 probes)") == std::string::npos);
      }
      team.JoinAll();
      RequireClean(team, (*rogd)->log());
      absl::StatusOr<pb::WorkersReply> after = AdminWorkers((*rogd)->address());
      REQUIRE(after.ok());
      const pb::WorkerInfo* bi = FindWorker(*after, "b");
      REQUIRE(bi != nullptr);
      CHECK(bi->reattaches() >= 1);
      CHECK(bi->detached_seconds() > 0);
      uint64_t local = 0;
      for (const IterationStats& s : b.stats) local += s.detached ? 1 : 0;
      // Local steps while detached: at most the allowance per detachment.
      CHECK(local <= d.local_steps * bi->detaches());
      if (d.local_steps > 0) CHECK(local >= 1);
      RequireConserved(team, **rogd);
    }
  }
}

TEST_CASE(
    "team pace: a robot on a slow but live link is detached only with --detach_speedup, the "
    "others speed up, it reattaches when its link recovers, nothing lost",
    "[patience]") {
  // Every robot behind its own link at kUp; b's drops to kSlow, where its
  // share (the big layout's 660 KB x MTA 0.5) takes about a second: within
  // the patience, so only the team's pace can detach it.
  constexpr double kSlow = 330e3;
  for (const char* speedup : {"0", "1.5"}) {
    DYNAMIC_SECTION("detach_speedup=" << speedup) {
      const bool pace = std::string(speedup) != "0";
      auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=2", "--workers=3", "--lease=60s",
                                      "--patience=3s", absl::StrCat("--detach_speedup=", speedup)});
      REQUIRE(rogd.ok());
      std::vector<std::unique_ptr<RateProxy>> links;
      RateProxy::Options up;
      up.rate_bytes_per_sec = kUp;
      for (int i = 0; i < 3; ++i) {
        auto link = RateProxy::Start((*rogd)->address(), up);
        REQUIRE(link.ok());
        links.push_back(std::move(*link));
      }
      const Layout layout = BigLayout();
      Team team((*rogd)->address(), 2, &layout);
      std::vector<Member*> m;
      for (int i = 0; i < 3; ++i) {
        WorkerOptions options;
        options.server = links[i]->address();
        m.push_back(&team.Add(std::string(1, static_cast<char>('a' + i)), i, options));
      }
      for (Member* w : m) team.Train(*w, 400, 5);
      Member &a = *m[0], &b = *m[1];
      REQUIRE(WaitFor(30, [&] { return b.worker->clock() >= 10; }));
      team.Detach(1);  // b's iterations no longer count for the bound check
      links[1]->SetRate(kSlow);
      const uint64_t a_before = a.worker->clock();
      absl::SleepFor(absl::Seconds(8));
      const uint64_t a_slow = a.worker->clock() - a_before;
      INFO((*rogd)->log());
      WARN("detach_speedup=" << speedup << ": a made " << a_slow
                             << " iterations in the 8 s b's link was slow");
      if (pace) {
        // Events, not a rate: on a loaded machine the team's pace and the
        // detach come later, but they must come. (How much faster the team
        // goes without b is printed above and measured by the benchmark;
        // the rule itself is checked on a fake clock in engine_test.)
        // The pace's own detachment: one line naming b and the speedup.
        REQUIRE(WaitFor(60, [&] {
          for (absl::string_view line : absl::StrSplit((*rogd)->log(), '\n')) {
            if (absl::StrContains(line, "detached worker b") &&
                absl::StrContains(line, "--detach_speedup=1.5")) {
              return true;
            }
          }
          return false;
        }));
        // Detached, b no longer holds the team at the bound: a gets further
        // ahead of it than S=2 (plus the iteration in progress) would allow.
        CHECK(WaitFor(60, [&] { return a.worker->clock() > b.worker->clock() + 3; }));
      } else {
        CHECK_FALSE(absl::StrContains((*rogd)->log(), "detached worker"));
        // An upper bound only, so a slow machine cannot fail it: b's share
        // takes about a second on its link, and a stays within the bound of
        // b, so the team cannot make more than about 8 + S iterations.
        CHECK(a_slow <= 16);
      }
      links[1]->SetRate(kUp);
      if (pace) {
        REQUIRE(
            WaitFor(40, [&] { return absl::StrContains((*rogd)->log(), "reattached worker b"); }));
        CHECK(absl::StrContains((*rogd)->log(), "and with the team's pace"));
      }
      team.JoinAll();
      RequireClean(team, (*rogd)->log());
      RequireConserved(team, **rogd);
    }
  }
}

TEST_CASE("a robot reattached and at once behind an obstacle again reattaches when it clears",
          "[patience]") {
  // The order a loaded machine once produced (a flake run, 2026-11-24): b
  // detached for being slow, reattached, and detached again by a dip that
  // came while the rows it had missed were still on their way down. It did
  // not reattach within a minute of its link recovering then; here it must
  // within 40 s. (Not reproduced so far: this passes.)
  // Patience 3 s, so that b's recovered link (4 MB/s: the whole model in
  // 0.17 s) qualifies with room to spare against half the patience: rogd's
  // downlink estimate reads a half to a quarter of the link's rate under
  // load (0.31-0.69 s for the model with three runs of this case in
  // parallel), and with 1 s a loaded CI machine once kept it above 0.5 s
  // for 53 s (2026-11-25). The slow link and the dip still take b's
  // share far past 3 s (6.6 s and 66 s).
  auto rogd = RogdProcess::Start(
      {"--sync=ssp", "--staleness=2", "--workers=3", "--lease=60s", "--patience=3s"});
  REQUIRE(rogd.ok());
  auto o = Obstacle::Start(**rogd, 2, 100000);
  REQUIRE(o != nullptr);
  Team& team = *o->team;
  Member &a = *o->a, &b = *o->b;
  auto& link_b = o->link_b;
  const auto since = [&](size_t from, const char* what) {
    const std::string log = (*rogd)->log();
    return from < log.size() && log.find(what, from) != std::string::npos;
  };
  REQUIRE(WaitFor(30, [&] { return b.worker->clock() >= 5; }));
  // Slow: b's 660 KB share takes 6.6 s, past the patience.
  link_b->SetRate(100e3);
  REQUIRE(WaitFor(30, [&] { return since(0, "detached worker b"); }));
  link_b->SetRate(kUp);
  const size_t first = (*rogd)->log().rfind("detached worker b");
  REQUIRE(WaitFor(40, [&] { return since(first, "reattached worker b"); }));
  // At once behind an obstacle.
  link_b->SetRate(kDip);
  const size_t reattached = (*rogd)->log().rfind("reattached worker b");
  INFO((*rogd)->log());
  REQUIRE(WaitFor(30, [&] { return since(reattached, "detached worker b"); }));
  const uint64_t a_at = a.worker->clock();
  REQUIRE(WaitFor(40, [&] { return a.worker->clock() >= a_at + 20; }));
  // It clears: b must come back.
  const size_t second = (*rogd)->log().rfind("detached worker b");
  link_b->SetRate(kUp);
  const bool back = WaitFor(40, [&] { return since(second, "reattached worker b"); });
  INFO((*rogd)->log());
  CHECK(back);
  team.StopAll();
  team.JoinAll();
  RequireClean(team, (*rogd)->log());
  if (back) RequireConserved(team, **rogd);
}

TEST_CASE("without patience the same obstacle holds the whole team at the bound", "[patience]") {
  // The control for the case above: the scenario is one patience changes.
  auto rogd = RogdProcess::Start(
      {"--sync=rog", "--staleness=2", "--workers=3", "--lease=60s", "--patience=0"});
  REQUIRE(rogd.ok());
  auto o = Obstacle::Start(**rogd, 2, 40);
  REQUIRE(o != nullptr);
  Team& team = *o->team;
  Member &a = *o->a, &b = *o->b;
  auto& link_b = o->link_b;
  REQUIRE(WaitFor(30, [&] { return b.worker->clock() >= 5; }));
  link_b->SetRate(kDip);
  // Let b's last push leave before the dip counts.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const uint64_t b_at_dip = b.worker->clock();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const uint64_t a_after = a.worker->clock(), b_after = b.worker->clock();
  INFO("b " << b_at_dip << " -> " << b_after << ", a " << a_after);
  CHECK(a_after <= b_after + 3);   // the bound: a waits for b
  CHECK(b_after <= b_at_dip + 2);  // b's link moves its share in tens of seconds
  link_b->SetRate(kUp);
  team.JoinAll();
  RequireClean(team);
  CHECK((*rogd)->log().find("detached worker") == std::string::npos);
  RequireConserved(team, **rogd);
}

}  // namespace
}  // namespace rog
