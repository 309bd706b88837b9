// trace_relay: puts one robot worker behind its own replayed WiFi link.
//
// Listens on 127.0.0.1 and relays every connection to --upstream (rogd)
// through a RateProxy whose rate, in both directions, follows a bandwidth
// trace (tools/traces/README.md): sample by sample from the relay's
// start, looped, at --scale × the trace. The worker connects to the relay's
// port (written to --listen_port_file once listening) instead of to rogd.
//
// Exit status: 0 after SIGTERM/SIGINT, 2 for bad flags, a missing or bad
// trace, a non-loopback upstream or a port that cannot be listened on.
//
// Flags are parsed here rather than with absl flags so that every mistake
// exits 2 with one clear line (absl exits 1 for an unknown flag).
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/trace.h"
#include "tools/links/link_cli.h"
#include "tools/links/rate_proxy.h"

namespace {

constexpr double kBytesPerMbit = 1e6 / 8;

const std::vector<rog::FlagSpec> kFlags = {
    {"upstream", nullptr, "host:port to relay to, on loopback (e.g. rogd's 127.0.0.1:7070)"},
    {"trace", nullptr, "bandwidth trace to replay: lines 'seconds<TAB>mbit_per_s', looped"},
    {"listen", "127.0.0.1:0", "address to listen on, 127.0.0.1:PORT; port 0 picks a free one"},
    {"listen_port_file", "", "write the bound port here once listening (tmp file + rename)"},
    {"scale", "1.0", "factor applied to every trace value (> 0)"},
    rog::kTimeScaleFlag,
    {"delay", "5ms", "one-way propagation delay added in each direction (e.g. 5ms, 0)"},
    {"queue_bytes", "16384", "link queue per connection and direction, bytes (> 0)"},
    {"queue_time", "10ms",
     "... or this much link time at the current rate, if more (e.g. 10ms; 0: bytes alone)"},
    {"min_rate_bytes", "0", "floor on the rate, bytes/s; 0 lets a 0 Mbit/s sample stall the link"},
    {"log_every", "0", "print rate and bytes forwarded per direction every SECONDS; 0 = never"},
};

void PrintHelp() {
  std::printf(
      "trace_relay: relays TCP connections to --upstream through a link whose rate\n"
      "follows a bandwidth trace (both directions, sample by sample, looped).\n"
      "Usage: trace_relay --upstream=127.0.0.1:7070 --trace=PATH [--flag=value ...]\n"
      "Exits 0 on SIGTERM/SIGINT, 2 on bad flags or a bad trace.\n\nFlags:\n%s",
      rog::FlagsHelp(kFlags).c_str());
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "trace_relay: %s\n", message.c_str());
  return 2;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || absl::StartsWith(host, "127.");
}

// "host:port" with a port in [min_port, 65535].
bool SplitHostPort(const std::string& address, int min_port, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = address.substr(0, colon);
  return absl::SimpleAtoi(address.substr(colon + 1), port) && *port >= min_port && *port <= 65535;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The link the relay emulates and where it listens, from the flags.
struct RelaySettings {
  std::string upstream;
  std::string listen;
  int listen_port = 0;
  double scale = 0;
  absl::Duration delay;
  absl::Duration queue_time;
  uint64_t queue_bytes = 0;
  double min_rate = 0;
  double log_every = 0;
};

// Checks --upstream and --listen into `s`; the error names the flag.
absl::Status ParseAddresses(const std::map<std::string, std::string>& flags, RelaySettings* s) {
  s->upstream = flags.at("upstream");
  std::string host;
  int port = 0;
  if (!SplitHostPort(s->upstream, 1, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--upstream=", s->upstream, " is not host:port"));
  }
  if (!IsLoopbackHost(host)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--upstream=", s->upstream,
                     " is not on loopback; the relay only forwards to 127.0.0.0/8 or "
                     "localhost"));
  }
  s->listen = flags.at("listen");
  if (!SplitHostPort(s->listen, 0, &host, &s->listen_port) ||
      (host != "127.0.0.1" && host != "localhost")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen=", s->listen, " must be 127.0.0.1:PORT (port 0: a free one)"));
  }
  return absl::OkStatus();
}

// Checks the link's flags (rate scale, delay, queue, rate floor) and
// --log_every into `s`; the error names the flag.
absl::Status ParseLink(const std::map<std::string, std::string>& flags, RelaySettings* s) {
  const std::string& scale = flags.at("scale");
  if (!absl::SimpleAtod(scale, &s->scale) || !std::isfinite(s->scale) || s->scale <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--scale=", scale, " must be a number > 0"));
  }
  const std::string& delay = flags.at("delay");
  if (!absl::ParseDuration(delay, &s->delay) || s->delay < absl::ZeroDuration() ||
      s->delay > absl::Seconds(10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--delay=", delay, " must be a duration between 0 and 10s, e.g. 5ms"));
  }
  const std::string& queue = flags.at("queue_bytes");
  if (!absl::SimpleAtoi(queue, &s->queue_bytes) || s->queue_bytes == 0 ||
      s->queue_bytes > (1u << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--queue_bytes=", queue, " must be an integer between 1 and 1073741824"));
  }
  const std::string& queue_time = flags.at("queue_time");
  if (!absl::ParseDuration(queue_time, &s->queue_time) || s->queue_time < absl::ZeroDuration() ||
      s->queue_time > absl::Seconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--queue_time=", queue_time, " must be a duration between 0 and 10s, e.g. 10ms"));
  }
  const std::string& min_rate = flags.at("min_rate_bytes");
  if (!absl::SimpleAtod(min_rate, &s->min_rate) || !std::isfinite(s->min_rate) || s->min_rate < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--min_rate_bytes=", min_rate, " must be a number >= 0 (bytes per second)"));
  }
  const std::string& log_every = flags.at("log_every");
  if (!absl::SimpleAtod(log_every, &s->log_every) || !std::isfinite(s->log_every) ||
      s->log_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_every=", log_every, " must be seconds >= 0"));
  }
  return absl::OkStatus();
}

// The link's rate at trace time `t`, bytes per second.
double RateAt(const rog::Trace& trace, const RelaySettings& s, double t) {
  return std::max(s.min_rate, trace.MbitAt(t) * s.scale * kBytesPerMbit);
}

// The line that says what the relay replays, and when its trace time 0 was.
void PrintStartLine(const rog::RateProxy& proxy, const RelaySettings& s,
                    const std::map<std::string, std::string>& flags, const rog::Trace& trace) {
  std::fprintf(
      stderr,
      "trace_relay: 127.0.0.1:%d -> %s, trace %s (%zu samples, period %.3f s, mean "
      "%.3f Mbit/s) x %g, time x %s, delay %s, queue %llu bytes or %s, trace time 0 at unix "
      "%.6f\n",
      proxy.port(), s.upstream.c_str(), flags.at("trace").c_str(), trace.samples(), trace.period(),
      trace.mean_mbit(), s.scale, flags.at("time_scale").c_str(),
      absl::FormatDuration(s.delay).c_str(), static_cast<unsigned long long>(s.queue_bytes),
      absl::FormatDuration(s.queue_time).c_str(), rog::UnixSeconds());
}

// Writes `port` to `port_file` (a tmp file, then renamed), if one is given.
absl::Status WritePortFile(const std::string& port_file, int port) {
  if (port_file.empty()) return absl::OkStatus();
  const std::string tmp = port_file + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), port_file.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", port_file));
  }
  return absl::OkStatus();
}

// The bytes forwarded each way at the last --log_every line, and when.
struct Logged {
  uint64_t bytes[2] = {0, 0};
  double at = 0;
};

// A --log_every line: the rate and the bytes forwarded each way since the last.
void LogThroughput(const rog::RateProxy& proxy, double now, Logged* logged) {
  using Dir = rog::RateProxy::Direction;
  const uint64_t up = proxy.bytes_forwarded(Dir::kUp);
  const uint64_t down = proxy.bytes_forwarded(Dir::kDown);
  const double span = std::max(1e-9, now - logged->at);
  std::fprintf(stderr,
               "trace_relay: t=%.1fs rate %.3f Mbit/s; up %llu bytes (%.3f Mbit/s), down "
               "%llu bytes (%.3f Mbit/s); %d connections\n",
               now, proxy.rate(Dir::kUp) / kBytesPerMbit, static_cast<unsigned long long>(up),
               (up - logged->bytes[0]) / span / kBytesPerMbit,
               static_cast<unsigned long long>(down),
               (down - logged->bytes[1]) / span / kBytesPerMbit, proxy.open_connections());
  std::fflush(stderr);
  logged->bytes[0] = up;
  logged->bytes[1] = down;
  logged->at = now;
}

// Sets the proxy's rate sample by sample from `start` and logs every
// --log_every, until SIGTERM or SIGINT; returns the signal.
int Replay(rog::RateProxy& proxy, const rog::Trace& trace, const RelaySettings& s,
           std::chrono::steady_clock::time_point start, const sigset_t& signals) {
  double next_change = trace.NextChange(0);
  double next_log = s.log_every > 0 ? s.log_every : INFINITY;
  Logged logged;
  for (;;) {
    double now = Seconds(std::chrono::steady_clock::now() - start);
    if (now >= next_change) {
      // Evaluated at `now` (past the boundary), not at the boundary itself,
      // so that rounding cannot pick the sample before.
      proxy.SetRate(RateAt(trace, s, now));
      next_change = trace.NextChange(now);
    }
    if (now >= next_log) {
      LogThroughput(proxy, now, &logged);
      while (next_log <= now) next_log += s.log_every;
    }
    const double wait = std::max(0.0, std::min(next_change, next_log) - now);
    const timespec timeout = rog::SigwaitTimeout(wait);
    const int got = sigtimedwait(&signals, nullptr, &timeout);
    if (got == SIGTERM || got == SIGINT) return got;
  }
}

// Closes the relay and says how many bytes it forwarded each way.
void Stop(std::unique_ptr<rog::RateProxy> proxy, int signal) {
  using Dir = rog::RateProxy::Direction;
  const uint64_t up = proxy->bytes_forwarded(Dir::kUp);
  const uint64_t down = proxy->bytes_forwarded(Dir::kDown);
  proxy.reset();  // closes the listener and every connection
  std::fprintf(stderr, "trace_relay: %s received: stopped; forwarded up %llu, down %llu bytes\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT", static_cast<unsigned long long>(up),
               static_cast<unsigned long long>(down));
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
  RelaySettings settings;
  absl::Status parsed = ParseAddresses(flags, &settings);
  if (parsed.ok()) parsed = ParseLink(flags, &settings);
  if (!parsed.ok()) return Fail(std::string(parsed.message()));
  absl::StatusOr<rog::Trace> trace = rog::ReadTraceFlags(flags);
  if (!trace.ok()) return Fail(std::string(trace.status().message()));

  // Signals are taken by this thread with sigtimedwait; every other thread
  // (the proxy's) blocks them, so they must be blocked before it starts.
  const sigset_t signals = rog::BlockStopSignals();

  rog::RateProxy::Options options;
  options.rate_bytes_per_sec = RateAt(*trace, settings, 0);
  options.delay_seconds = absl::ToDoubleSeconds(settings.delay);
  options.queue_bytes = settings.queue_bytes;
  options.queue_seconds = absl::ToDoubleSeconds(settings.queue_time);
  options.listen_port = settings.listen_port;
  absl::StatusOr<std::unique_ptr<rog::RateProxy>> proxy =
      rog::RateProxy::Start(settings.upstream, options);
  if (!proxy.ok()) {
    return Fail(absl::StrCat("cannot start on ", settings.listen, ": ", proxy.status().message()));
  }
  const auto start = std::chrono::steady_clock::now();
  PrintStartLine(**proxy, settings, flags, *trace);
  absl::Status written = WritePortFile(flags.at("listen_port_file"), (*proxy)->port());
  if (!written.ok()) return Fail(std::string(written.message()));
  std::fflush(stderr);

  const int signal = Replay(**proxy, *trace, settings, start, signals);
  Stop(*std::move(proxy), signal);
  return 0;
}
