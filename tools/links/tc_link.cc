// tc_link: replays a bandwidth trace onto kernel links, as the optional
// alternative to trace_relay's user-space link (tools/run.sh --links=tc).
//
// Each --target=NETNS:DEV names one end of a veth pair in a network
// namespace the caller created; tc_link sets a token bucket filter (tbf) as
// the device's root qdisc and changes its rate sample by sample from its
// start, looped, at --scale x the trace. A device's egress is one direction
// of the link, so a robot's link is the two ends of its veth pair, both
// following the same trace (as trace_relay's two directions do). The queue
// is small, like a WiFi link's: past it the kernel drops and TCP backs off.
// The link's frames carry TCP's acknowledgements of the other direction
// too, as WiFi's airtime does; trace_relay does not count those.
// tbf has no propagation delay, and a rate of 0 is not possible: samples of
// 0 run at --min_rate_kbit.
//
// It runs `tc` (one `tc -batch` per target, inside the namespace with
// `ip netns exec`), so it needs what tc needs: root, or CAP_NET_ADMIN.
// Exit status: 0 after SIGTERM/SIGINT, 2 for bad flags, a bad trace or a
// qdisc tc refuses to set, 1 if a tc process dies while replaying.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "common/trace.h"
#include "tools/links/link_cli.h"

namespace {

constexpr double kBytesPerMbit = 1e6 / 8;
// Packets on a veth are at most 1514 bytes (GSO packets are cut to fit the
// bucket): the bucket holds two, or 2 ms of the rate if more.
constexpr double kMinBurst = 2 * 1514;
constexpr double kBurstSeconds = 0.002;
constexpr double kFrameBytes = 1514, kPayloadBytes = 1448;

const std::vector<rog::FlagSpec> kFlags = {
    {"trace", nullptr, "bandwidth trace to replay: lines 'seconds<TAB>mbit_per_s', looped"},
    {"target", nullptr,
     "NETNS:DEV, a device whose egress follows the trace (NETNS empty or '-': this namespace)",
     true},
    {"scale", "1.0", "factor applied to every trace value (> 0)"},
    rog::kTimeScaleFlag,
    {"queue_bytes", "32768", "queue of each direction, bytes; packets past it are dropped"},
    {"min_rate_kbit", "8", "floor on the rate, kbit/s (tbf cannot stop a link entirely)"},
};

void PrintHelp() {
  std::printf(
      "tc_link: replays a bandwidth trace onto kernel links: a tbf qdisc on each\n"
      "--target device (one end of a veth pair in a network namespace), its rate\n"
      "changed sample by sample, looped. Needs root (or CAP_NET_ADMIN) and tc.\n"
      "Usage: tc_link --trace=PATH --target=NETNS:DEV [--target=NETNS:DEV ...]\n"
      "Exits 0 on SIGTERM/SIGINT, 2 on bad flags, a bad trace or a refused qdisc.\n\n"
      "Flags:\n%s",
      rog::FlagsHelp(kFlags).c_str());
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tc_link: %s\n", message.c_str());
  return 2;
}

struct Target {
  std::string netns;  // "" = this namespace
  std::string dev;
  FILE* batch = nullptr;  // a `tc -force -batch -` reading commands
};

// The tc command line for `target`, as an argv.
std::vector<std::string> TcArgs(const Target& target, std::vector<std::string> rest) {
  std::vector<std::string> args;
  if (!target.netns.empty()) args = {"ip", "netns", "exec", target.netns};
  args.push_back("tc");
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

std::string Shell(const std::vector<std::string>& args) {
  std::vector<std::string> quoted;
  for (const std::string& a : args) quoted.push_back("'" + a + "'");
  return absl::StrJoin(quoted, " ");
}

// "qdisc VERB dev DEV root tbf ..." for a goodput of `bytes_per_sec`: tbf
// counts whole frames, so the rate is raised by the headers of a full-size
// TCP segment (14 + 20 + 32 bytes around 1448 of payload) for the payload
// to move at the trace's rate, as trace_relay's does. "replace" makes the
// qdisc; "change" keeps its queue (a new qdisc would drop it every sample).
// The queue's size stays the same at every rate: shrinking it under what it
// holds dropped bursts of packets and TCP sat out seconds of timeouts
// (measured through this link: 32 KiB tracked the trace within 8% every
// second, 64 KiB or 10-50 ms of the rate lost up to 20% in some seconds).
std::string QdiscCommand(const char* verb, const std::string& dev, double bytes_per_sec,
                         double queue_bytes) {
  const double wire = bytes_per_sec * kFrameBytes / kPayloadBytes;
  const double burst = std::max(kMinBurst, wire * kBurstSeconds);
  const double limit = queue_bytes;
  return absl::StrCat("qdisc ", verb, " dev ", dev, " root tbf rate ",
                      static_cast<uint64_t>(std::llround(wire * 8)), "bit burst ",
                      static_cast<uint64_t>(burst), "b limit ", static_cast<uint64_t>(limit), "b");
}

// Runs tc once and waits; "" on success, else what tc said.
std::string RunTc(const Target& target, const std::string& command) {
  std::vector<std::string> rest = absl::StrSplit(command, ' ', absl::SkipEmpty());
  const std::string line = Shell(TcArgs(target, rest)) + " 2>&1";
  FILE* p = popen(line.c_str(), "r");
  if (p == nullptr) return "cannot run tc";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = pclose(p);
  if (status == 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? absl::StrCat("tc exited with status ", status) : out;
}

// The links' shape, from the flags.
struct LinkSettings {
  double scale = 0;
  uint64_t queue_bytes = 0;
  double min_kbit = 0;
};

// Checks --scale, --queue_bytes and --min_rate_kbit into `s`; the error
// names the flag.
absl::Status ParseLinkSettings(const std::map<std::string, std::string>& flags, LinkSettings* s) {
  const std::string& scale = flags.at("scale");
  if (!absl::SimpleAtod(scale, &s->scale) || !std::isfinite(s->scale) || s->scale <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--scale=", scale, " must be a number > 0"));
  }
  const std::string& queue = flags.at("queue_bytes");
  if (!absl::SimpleAtoi(queue, &s->queue_bytes) || s->queue_bytes < 4096 ||
      s->queue_bytes > (1u << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--queue_bytes=", queue, " must be an integer between 4096 and 1073741824"));
  }
  const std::string& min_kbit = flags.at("min_rate_kbit");
  if (!absl::SimpleAtod(min_kbit, &s->min_kbit) || !std::isfinite(s->min_kbit) || s->min_kbit < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("--min_rate_kbit=", min_kbit, " must be a number >= 8 (kbit/s)"));
  }
  return absl::OkStatus();
}

// The devices of --target (NETNS:DEV, comma-separated).
absl::StatusOr<std::vector<Target>> ParseTargets(const std::string& spec) {
  std::vector<Target> targets;
  for (absl::string_view t : absl::StrSplit(spec, ',')) {
    const size_t colon = t.find(':');
    Target target;
    target.netns = std::string(colon == absl::string_view::npos ? "" : t.substr(0, colon));
    target.dev = std::string(colon == absl::string_view::npos ? t : t.substr(colon + 1));
    if (target.netns == "-") target.netns.clear();
    if (target.dev.empty() || target.dev.size() > 15 ||
        target.dev.find_first_of("' /") != std::string::npos ||
        target.netns.find_first_of("' /") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--target=", t,
                       " must be NETNS:DEV, a network namespace and a device name of at "
                       "most 15 characters"));
    }
    targets.push_back(target);
  }
  return targets;
}

// The links' goodput at trace time `t`, bytes per second.
double RateAt(const rog::Trace& trace, const LinkSettings& s, double t) {
  const double floor = s.min_kbit * 1000 / 8;
  return std::max(floor, trace.MbitAt(t) * s.scale * kBytesPerMbit);
}

// Sets each target's first qdisc.
absl::Status SetFirstQdiscs(const std::vector<Target>& targets, double bytes_per_sec,
                            uint64_t queue_bytes) {
  // The first qdisc synchronously, so that a missing device, namespace or
  // permission is an error here and not a line lost in a batch.
  for (const Target& t : targets) {
    const std::string said = RunTc(t, QdiscCommand("replace", t.dev, bytes_per_sec, queue_bytes));
    if (!said.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot set a tbf qdisc on ", t.dev,
                       t.netns.empty() ? "" : absl::StrCat(" in network namespace ", t.netns), ": ",
                       said, " (tc_link needs root, or CAP_NET_ADMIN, and tc)"));
    }
  }
  return absl::OkStatus();
}

// Starts a `tc -batch` for each target, to take its rate changes.
absl::Status StartBatches(std::vector<Target>* targets) {
  for (Target& t : *targets) {
    t.batch = popen(Shell(TcArgs(t, {"-force", "-batch", "-"})).c_str(), "w");
    if (t.batch == nullptr) {
      return absl::InternalError(absl::StrCat("cannot start tc -batch for ", t.dev));
    }
  }
  return absl::OkStatus();
}

// The line that says what tc_link replays on which devices, and when its
// trace time 0 was.
void PrintStartLine(const std::vector<Target>& targets,
                    const std::map<std::string, std::string>& flags, const rog::Trace& trace,
                    const LinkSettings& s) {
  std::vector<std::string> names;
  for (const Target& t : targets) names.push_back(t.netns.empty() ? t.dev : t.netns + ":" + t.dev);
  std::fprintf(stderr,
               "tc_link: tbf on %s, trace %s (%zu samples, period %.3f s, mean %.3f Mbit/s) x %g, "
               "time x %s, queue %llu bytes, no added delay, trace time 0 at unix %.6f\n",
               absl::StrJoin(names, ", ").c_str(), flags.at("trace").c_str(), trace.samples(),
               trace.period(), trace.mean_mbit(), s.scale, flags.at("time_scale").c_str(),
               static_cast<unsigned long long>(s.queue_bytes), rog::UnixSeconds());
  std::fflush(stderr);
}

// Sends every target's tc the new rate; false if one stopped taking commands.
bool ChangeRate(const std::vector<Target>& targets, double bytes_per_sec, uint64_t queue_bytes) {
  bool ok = true;
  for (const Target& t : targets) {
    const std::string line = QdiscCommand("change", t.dev, bytes_per_sec, queue_bytes) + "\n";
    if (std::fputs(line.c_str(), t.batch) < 0 || std::fflush(t.batch) != 0) {
      std::fprintf(stderr, "tc_link: tc for %s stopped taking commands\n", t.dev.c_str());
      ok = false;
    }
  }
  return ok;
}

// Changes the rate sample by sample from `start` until SIGTERM or SIGINT
// (returned in `got`) or until a tc stops taking commands; the exit status.
int Replay(const std::vector<Target>& targets, const rog::Trace& trace, const LinkSettings& s,
           std::chrono::steady_clock::time_point start, const sigset_t& signals, int* got) {
  double next_change = trace.NextChange(0);
  for (;;) {
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (now >= next_change) {
      // Evaluated past the boundary, so that rounding cannot pick the sample before.
      if (!ChangeRate(targets, RateAt(trace, s, now), s.queue_bytes)) return 1;
      next_change = trace.NextChange(now);
    }
    const double wait = std::max(0.0, next_change - now);
    const timespec timeout = rog::SigwaitTimeout(wait);
    *got = sigtimedwait(&signals, nullptr, &timeout);
    if (*got == SIGTERM || *got == SIGINT) return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  bool help = false;
  std::string error;
  if (!rog::ParseFlags(argc, argv, kFlags, &flags, &help, &error)) return Fail(error);
  if (help) {
    PrintHelp();
    return 0;
  }
  LinkSettings settings;
  absl::Status parsed = ParseLinkSettings(flags, &settings);
  if (!parsed.ok()) return Fail(std::string(parsed.message()));
  absl::StatusOr<std::vector<Target>> targets = ParseTargets(flags["target"]);
  if (!targets.ok()) return Fail(std::string(targets.status().message()));
  absl::StatusOr<rog::Trace> trace = rog::ReadTraceFlags(flags);
  if (!trace.ok()) return Fail(std::string(trace.status().message()));

  absl::Status first = SetFirstQdiscs(*targets, RateAt(*trace, settings, 0), settings.queue_bytes);
  if (!first.ok()) return Fail(std::string(first.message()));
  const sigset_t signals = rog::BlockStopSignals();
  signal(SIGPIPE, SIG_IGN);
  absl::Status started = StartBatches(&*targets);
  if (!started.ok()) return Fail(std::string(started.message()));
  const auto start = std::chrono::steady_clock::now();
  PrintStartLine(*targets, flags, *trace, settings);

  int got = 0;
  const int code = Replay(*targets, *trace, settings, start, signals, &got);
  for (Target& t : *targets) pclose(t.batch);
  if (code == 0) {
    std::fprintf(stderr, "tc_link: %s received: stopped (the qdiscs stay until the devices go)\n",
                 got == SIGTERM ? "SIGTERM" : "SIGINT");
  }
  return code;
}
