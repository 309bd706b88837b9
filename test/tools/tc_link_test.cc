// tools/links/tc_link on real kernel links: two network namespaces joined by a
// veth pair, each end's egress shaped by tc_link from a trace, a TCP flow
// each way through it. Needs root (network namespaces, qdiscs): tagged
// [.root], so that as another user test/catch_main.cc reports it skipped
// (tools/test.sh counts it as neither passed nor failed) instead of
// passing with nothing checked.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "test/util/link_meter.h"

namespace rog {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes per second

bool Sh(const std::string& command) {
  return std::system((command + " > /dev/null 2>&1").c_str()) == 0;
}

// Two namespaces, rogtPIDa and rogtPIDb, joined by a veth pair whose ends
// have the namespaces' names: 10.78.0.1 in a, 10.78.0.2 in b. Removed with
// the object. As tools/run.sh --links=tc does, each end sends packets of at
// most one segment: tbf cuts larger (GSO) ones and drops what exceeds its
// queue, and TCP then sat out timeouts (20-40% of a second, now and then).
struct VethPair {
  std::string a = absl::StrCat("rogt", getpid(), "a");
  std::string b = absl::StrCat("rogt", getpid(), "b");
  bool ok = false;
  VethPair() {
    ok = Sh("ip netns add " + a) && Sh("ip netns add " + b) &&
         Sh(absl::StrCat("ip link add ", a, " netns ", a, " type veth peer name ", b, " netns ",
                         b)) &&
         Sh(absl::StrCat("ip -n ", a, " addr add 10.78.0.1/30 dev ", a)) &&
         Sh(absl::StrCat("ip -n ", b, " addr add 10.78.0.2/30 dev ", b)) &&
         Sh(absl::StrCat("ip -n ", a, " link set ", a, " up")) &&
         Sh(absl::StrCat("ip -n ", b, " link set ", b, " up")) &&
         Sh(absl::StrCat("ip -n ", a, " link set ", a, " gso_max_segs 1")) &&
         Sh(absl::StrCat("ip -n ", b, " link set ", b, " gso_max_segs 1"));
  }
  ~VethPair() {
    Sh("ip netns delete " + a);
    Sh("ip netns delete " + b);
  }
};

// A TCP socket of network namespace `ns` (a socket stays in the namespace it
// was made in, whichever thread uses it); -1 on failure.
int SocketIn(const std::string& ns) {
  int fd = -1;
  std::thread t([&] {
    const int nsfd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) return;
    if (setns(nsfd, CLONE_NEWNET) == 0) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    close(nsfd);
  });
  t.join();
  return fd;
}

sockaddr_in Address(const char* ip, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, ip, &addr.sin_addr);
  return addr;
}

TEST_CASE("tc_link: a veth pair's throughput tracks a real robot trace second by second, both ways",
          "[tc_link][.root]") {
  // Asked for by name or tag as another user: fail, not pass unchecked.
  if (geteuid() != 0) FAIL("tc_link_test creates network namespaces and qdiscs: run it as root");
  // 6.05 s of tools/traces/outdoors-fast-w1.tsv (from 22.0 s), as
  // trace_relay_test replays it, at scale 1.
  const double kMbitOf[] = {22.0321, 16.2975, 7.3662,  8.4678,  16.6639, 11.1372,
                            13.2620, 14.1422, 15.2763, 14.4992, 56.6086};
  const int kN = 11;
  const double kStep = 0.55;
  std::string text = "# seconds\tmbit_per_s (outdoors-fast-w1.tsv from 22.0 s)\n";
  for (int i = 0; i < kN; ++i) absl::StrAppend(&text, i * kStep, "\t", kMbitOf[i], "\n");
  const std::string trace = WriteTmpFile("tc-w1-segment.tsv", text);
  auto capacity = [&](double from, double to) {
    double bytes = 0;
    for (int i = 0; i < kN; ++i) {
      const double lo = std::max(from, i * kStep), hi = std::min(to, (i + 1) * kStep);
      if (hi > lo) bytes += (hi - lo) * kMbitOf[i] * kMbit;
    }
    return bytes;
  };

  VethPair veth;
  REQUIRE(veth.ok);
  const int listener = SocketIn(veth.a);
  const int client = SocketIn(veth.b);
  REQUIRE(listener >= 0);
  REQUIRE(client >= 0);
  sockaddr_in addr = Address("10.78.0.1", 0);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(listen(listener, 1) == 0);
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const sockaddr_in server = Address("10.78.0.1", ntohs(addr.sin_port));
  REQUIRE(connect(client, reinterpret_cast<const sockaddr*>(&server), sizeof(server)) == 0);
  const int accepted = accept(listener, nullptr, nullptr);
  REQUIRE(accepted >= 0);

  // a's end carries a -> b ("down"), b's end b -> a ("up").
  ChildProcess link({TestBinary("tools/links/tc_link"), "--trace=" + trace,
                     absl::StrCat("--target=", veth.a, ":", veth.a),
                     absl::StrCat("--target=", veth.b, ":", veth.b)},
                    TmpDir() + "/tc_link.log");
  REQUIRE(link.started());
  double t0 = -1;
  for (double end = Now() + 10; Now() < end && t0 < 0;) {
    if (link.log().find("trace time 0") != std::string::npos) t0 = Now();
    if (!link.running()) break;
    SleepFor(0.002);
  }
  INFO(link.log());
  REQUIRE(t0 >= 0);
  Arrivals up, down;
  const double end = t0 + 6.1;
  std::vector<std::thread> flows;
  flows.emplace_back([&] { Flood(client, end); });
  flows.emplace_back([&] { Receive(accepted, -1, end, &up); });
  flows.emplace_back([&] { Flood(accepted, end); });
  flows.emplace_back([&] { Receive(client, -1, end, &down); });
  for (std::thread& f : flows) f.join();
  for (int k = 0; k < 6; ++k) {
    const double expected = capacity(k, k + 1);
    const double got_up = up.Between(t0 + k, t0 + k + 1);
    const double got_down = down.Between(t0 + k, t0 + k + 1);
    INFO("second " << k << " (" << expected / kMbit << " Mbit/s): up " << got_up / expected
                   << ", down " << got_down / expected << " of the trace");
    CHECK(got_up == Approx(expected).epsilon(0.10));
    CHECK(got_down == Approx(expected).epsilon(0.10));
  }
  close(client);
  close(accepted);
  close(listener);
  link.Signal(SIGTERM);
  CHECK(link.Wait(5) == 0);
  CHECK(link.log().find("SIGTERM received") != std::string::npos);
}

TEST_CASE("tc_link: bad flags, a bad trace and a device tc cannot shape exit 2 saying why",
          "[tc_link]") {
  const std::string trace = WriteTmpFile("tc-ok.tsv", "# seconds\tmbit_per_s\n0\t5\n1\t7\n");
  auto refused = [](std::vector<std::string> flags) {
    flags.insert(flags.begin(), TestBinary("tools/links/tc_link"));
    ChildProcess p(flags, TmpDir() + "/tc_link-refused.log");
    REQUIRE(p.started());
    const int status = p.Wait(10);
    return std::make_pair(status, p.log());
  };
  auto [s1, out1] = refused({"--trace=" + trace});
  CHECK(s1 == 2);
  CHECK(out1.find("--target is required") != std::string::npos);
  auto [s2, out2] = refused({"--trace=/nonexistent.tsv", "--target=x:y"});
  CHECK(s2 == 2);
  CHECK(out2.find("cannot read trace file /nonexistent.tsv") != std::string::npos);
  auto [s3, out3] = refused({"--trace=" + trace, "--target=x:y", "--scale=0"});
  CHECK(s3 == 2);
  CHECK(out3.find("--scale=0 must be a number > 0") != std::string::npos);
  auto [s4, out4] = refused({"--trace=" + trace, "--target=rog-no-such-netns:eth9"});
  CHECK(s4 == 2);
  CHECK(out4.find("cannot set a tbf qdisc on eth9 in network namespace rog-no-such-netns") !=
        std::string::npos);
  auto [s5, out5] = refused({"--trace=" + trace, "--target=x:y", "--colour=red"});
  CHECK(s5 == 2);
  CHECK(out5.find("unknown flag --colour") != std::string::npos);
}

}  // namespace
}  // namespace rog
