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

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/trace.h"
#include "tools/link_cli.h"
#include "tools/rate_proxy.h"

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

  const std::string upstream = flags["upstream"];
  std::string host;
  int port = 0;
  if (!SplitHostPort(upstream, 1, &host, &port)) {
    return Fail(absl::StrCat("--upstream=", upstream, " is not host:port"));
  }
  if (!IsLoopbackHost(host)) {
    return Fail(absl::StrCat("--upstream=", upstream,
                             " is not on loopback; the relay only forwards to 127.0.0.0/8 or "
                             "localhost"));
  }
  const std::string listen = flags["listen"];
  int listen_port = 0;
  if (!SplitHostPort(listen, 0, &host, &listen_port) ||
      (host != "127.0.0.1" && host != "localhost")) {
    return Fail(absl::StrCat("--listen=", listen, " must be 127.0.0.1:PORT (port 0: a free one)"));
  }
  double scale = 0;
  if (!absl::SimpleAtod(flags["scale"], &scale) || !std::isfinite(scale) || scale <= 0) {
    return Fail(absl::StrCat("--scale=", flags["scale"], " must be a number > 0"));
  }
  absl::Duration delay;
  if (!absl::ParseDuration(flags["delay"], &delay) || delay < absl::ZeroDuration() ||
      delay > absl::Seconds(10)) {
    return Fail(absl::StrCat("--delay=", flags["delay"],
                             " must be a duration between 0 and 10s, e.g. 5ms"));
  }
  uint64_t queue_bytes = 0;
  if (!absl::SimpleAtoi(flags["queue_bytes"], &queue_bytes) || queue_bytes == 0 ||
      queue_bytes > (1u << 30)) {
    return Fail(absl::StrCat("--queue_bytes=", flags["queue_bytes"],
                             " must be an integer between 1 and 1073741824"));
  }
  double min_rate = 0;
  if (!absl::SimpleAtod(flags["min_rate_bytes"], &min_rate) || !std::isfinite(min_rate) ||
      min_rate < 0) {
    return Fail(absl::StrCat("--min_rate_bytes=", flags["min_rate_bytes"],
                             " must be a number >= 0 (bytes per second)"));
  }
  double log_every = 0;
  if (!absl::SimpleAtod(flags["log_every"], &log_every) || !std::isfinite(log_every) ||
      log_every < 0) {
    return Fail(absl::StrCat("--log_every=", flags["log_every"], " must be seconds >= 0"));
  }

  const std::string trace_path = flags["trace"];
  absl::StatusOr<rog::Trace> trace = rog::ReadTraceFlags(flags);
  if (!trace.ok()) return Fail(std::string(trace.status().message()));
  auto rate_at = [&](double t) {
    return std::max(min_rate, trace->MbitAt(t) * scale * kBytesPerMbit);
  };

  // Signals are taken by this thread with sigtimedwait; every other thread
  // (the proxy's) blocks them, so they must be blocked before it starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rog::RateProxy::Options options;
  options.rate_bytes_per_sec = rate_at(0);
  options.delay_seconds = absl::ToDoubleSeconds(delay);
  options.queue_bytes = queue_bytes;
  options.listen_port = listen_port;
  absl::StatusOr<std::unique_ptr<rog::RateProxy>> proxy = rog::RateProxy::Start(upstream, options);
  if (!proxy.ok()) {
    return Fail(absl::StrCat("cannot start on ", listen, ": ", proxy.status().message()));
  }
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(
      stderr,
      "trace_relay: 127.0.0.1:%d -> %s, trace %s (%zu samples, period %.3f s, mean "
      "%.3f Mbit/s) x %g, time x %s, delay %s, queue %llu bytes, trace time 0 at unix %.6f\n",
      (*proxy)->port(), upstream.c_str(), trace_path.c_str(), trace->samples(), trace->period(),
      trace->mean_mbit(), scale, flags["time_scale"].c_str(), absl::FormatDuration(delay).c_str(),
      static_cast<unsigned long long>(queue_bytes),
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  const std::string port_file = flags["listen_port_file"];
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << (*proxy)->port() << "\n";
      out.close();
      if (!out) return Fail(absl::StrCat("cannot write ", tmp));
    }
    if (std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      return Fail(absl::StrCat("cannot rename ", tmp, " to ", port_file));
    }
  }
  std::fflush(stderr);

  using Dir = rog::RateProxy::Direction;
  double next_change = trace->NextChange(0);
  double next_log = log_every > 0 ? log_every : INFINITY;
  uint64_t logged[2] = {0, 0};
  double logged_at = 0;
  int signal = 0;
  for (;;) {
    double now = Seconds(std::chrono::steady_clock::now() - start);
    if (now >= next_change) {
      // Evaluated at `now` (past the boundary), not at the boundary itself,
      // so that rounding cannot pick the sample before.
      (*proxy)->SetRate(rate_at(now));
      next_change = trace->NextChange(now);
    }
    if (now >= next_log) {
      const uint64_t up = (*proxy)->bytes_forwarded(Dir::kUp);
      const uint64_t down = (*proxy)->bytes_forwarded(Dir::kDown);
      const double span = std::max(1e-9, now - logged_at);
      std::fprintf(stderr,
                   "trace_relay: t=%.1fs rate %.3f Mbit/s; up %llu bytes (%.3f Mbit/s), down "
                   "%llu bytes (%.3f Mbit/s); %d connections\n",
                   now, (*proxy)->rate(Dir::kUp) / kBytesPerMbit,
                   static_cast<unsigned long long>(up), (up - logged[0]) / span / kBytesPerMbit,
                   static_cast<unsigned long long>(down), (down - logged[1]) / span / kBytesPerMbit,
                   (*proxy)->open_connections());
      std::fflush(stderr);
      logged[0] = up;
      logged[1] = down;
      logged_at = now;
      while (next_log <= now) next_log += log_every;
    }
    const double wait = std::max(0.0, std::min(next_change, next_log) - now);
    timespec timeout;
    timeout.tv_sec = static_cast<time_t>(wait);
    timeout.tv_nsec = static_cast<long>((wait - timeout.tv_sec) * 1e9) + 1000;
    if (timeout.tv_nsec >= 1000000000) {
      timeout.tv_sec += 1;
      timeout.tv_nsec -= 1000000000;
    }
    const int got = sigtimedwait(&signals, nullptr, &timeout);
    if (got == SIGTERM || got == SIGINT) {
      signal = got;
      break;
    }
  }
  const uint64_t up = (*proxy)->bytes_forwarded(Dir::kUp);
  const uint64_t down = (*proxy)->bytes_forwarded(Dir::kDown);
  (*proxy).reset();  // closes the listener and every connection
  std::fprintf(stderr, "trace_relay: %s received: stopped; forwarded up %llu, down %llu bytes\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT", static_cast<unsigned long long>(up),
               static_cast<unsigned long long>(down));
  return 0;
}
