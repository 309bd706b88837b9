// The soak (tools/dev/soak.sh; not part of tools/test.sh): rogd and --workers
// fault_worker processes, each behind its own relay, for --minutes, with
// random kill -9s of workers (restarted under the same id after 0.5-6 s,
// i.e. before or after the lease) and link drops (a relay at 0 bytes/s for
// 1-15 s: the long ones outlast rogd's keepalive (2 + 5 s, --keepalive_timeout=5s here) and the
// lease, so the worker is evicted and rejoins by itself). rogd's resident memory is sampled from
// /proc into rss.csv. At the end every worker is stopped with SIGTERM (Sync, Close) and the model
// is checked for conservation (test/fault/fault_model.h), with what the kills lost. Writes
// summary.txt; exit status 0 when everything held, 1 if not, 2 for bad flags.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "test/fault/child_process.h"
#include "test/fault/fault_model.h"
#include "test/testing/rogd_harness.h"
#include "tools/links/rate_proxy.h"

ABSL_FLAG(double, minutes, 30, "how long the faults go on");
ABSL_FLAG(int, workers, 8, "worker processes (at most 16)");
ABSL_FLAG(std::string, worker_binary, "", "path of //test/fault:fault_worker");
ABSL_FLAG(std::string, out, "", "folder for rss.csv, summary.txt and the logs");
ABSL_FLAG(double, event_seconds, 15, "mean time between faults (exponentially distributed)");
ABSL_FLAG(double, link_bytes_per_sec, 1e6, "every relay's rate while up");
ABSL_FLAG(double, sample_seconds, 5, "time between memory samples");
ABSL_FLAG(uint64_t, seed, 1, "random seed of the fault schedule");
ABSL_FLAG(double, lease_seconds, 3, "rogd --lease");
ABSL_FLAG(std::string, patience, "0.5s",
          "rogd --patience (team patience: link drops detach and reattach workers too)");

namespace rog {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t LastCount(const std::string& log, const std::string& word) {
  uint64_t n = 0;
  const std::regex line("(^|\n)" + word + " ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
       ++it) {
    n = std::stoull((*it)[2].str());
  }
  return n;
}

// VmRSS of `pid` in KiB, 0 if unknown.
uint64_t RssKiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

struct Slot {
  std::string id;
  std::unique_ptr<RateProxy> link;
  std::unique_ptr<ChildProcess> process;
  int marker = -1;
  double restart_at = 0;  // > 0: dead, restart then
  double link_up_at = 0;  // > 0: link down until then
};

int Run() {
  const double minutes = absl::GetFlag(FLAGS_minutes);
  const int n = absl::GetFlag(FLAGS_workers);
  const std::string out = absl::GetFlag(FLAGS_out);
  const std::string worker_binary = absl::GetFlag(FLAGS_worker_binary);
  if (n < 1 || n > 16 || minutes <= 0 || out.empty() || worker_binary.empty()) {
    std::fprintf(stderr, "soak: need --workers=1..16, --minutes > 0, --out and --worker_binary\n");
    return 2;
  }
  const double rate = absl::GetFlag(FLAGS_link_bytes_per_sec);
  const double lease = absl::GetFlag(FLAGS_lease_seconds);
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  const auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };

  auto rogd = RogdProcess::Start({"--sync=rog", "--staleness=3", absl::StrCat("--workers=", n),
                                  absl::StrFormat("--lease=%.3fs", lease), "--keepalive_timeout=5s",
                                  "--patience=" + absl::GetFlag(FLAGS_patience)});
  if (!rogd.ok()) {
    std::fprintf(stderr, "soak: %s\n", std::string(rogd.status().message()).c_str());
    return 1;
  }
  const std::string address = (*rogd)->address();
  std::printf("soak: rogd pid %d on %s, %d workers, %.1f minutes, logs in %s\n", (*rogd)->pid(),
              address.c_str(), n, minutes, out.c_str());
  std::fflush(stdout);

  std::vector<Incarnation> incarnations;
  std::vector<Slot> slots(n);
  int next_marker = 0;
  int kills = 0, drops = 0, restarts = 0;
  const auto start_worker = [&](Slot& s) -> bool {
    s.marker = next_marker++;
    // Keepalive as short as it was when the soak was written (1 + 2 s), so
    // that long drops still break connections from both ends.
    auto p = ChildProcess::Start(
        {worker_binary, "--server=" + s.link->address(), "--id=" + s.id, "--keepalive_timeout=2",
         absl::StrCat("--marker=", s.marker), "--compute_ms=20"},
        absl::StrCat(out, "/", s.id, "-", s.marker, ".log"));
    if (!p.ok()) return false;
    s.process = *std::move(p);
    s.restart_at = 0;
    return true;
  };
  for (int i = 0; i < n; ++i) {
    Slot& s = slots[i];
    s.id = absl::StrCat("w", i);
    RateProxy::Options link;
    link.rate_bytes_per_sec = rate;
    auto proxy = RateProxy::Start(address, link);
    if (!proxy.ok()) return 1;
    s.link = *std::move(proxy);
    if (!start_worker(s)) return 1;
  }

  std::ofstream csv(out + "/rss.csv");
  csv << "seconds,rss_kib,workers_connected,workers_evicted,min_iteration,max_iteration,kills,"
         "link_drops\n";
  std::vector<std::pair<double, uint64_t>> samples;
  const double t0 = Now();
  const double end = t0 + minutes * 60;
  double next_sample = t0;
  double next_event = t0 + 10;  // let the team form first
  std::exponential_distribution<double> gap(1.0 / absl::GetFlag(FLAGS_event_seconds));
  std::string failure;
  while (Now() < end && failure.empty()) {
    const double now = Now();
    for (Slot& s : slots) {
      if (s.restart_at > 0 && now >= s.restart_at) {
        if (!start_worker(s)) failure = "cannot restart a worker";
        ++restarts;
      }
      if (s.link_up_at > 0 && now >= s.link_up_at) {
        s.link->SetRate(rate);
        s.link_up_at = 0;
      }
      if (s.restart_at == 0 && s.process && !s.process->running()) {
        failure = absl::StrCat(s.id, " (marker ", s.marker, ") exited by itself with status ",
                               s.process->Wait(0), ": ", s.process->log().substr(0, 2000));
      }
    }
    if (now >= next_event) {
      next_event = now + gap(rng);
      Slot& s = slots[rng() % n];
      const bool can_kill = next_marker < kFaultMarkers && s.restart_at == 0;
      if (can_kill && rng() % 2 == 0) {
        s.process->Signal(SIGKILL);
        s.process->Wait(5);
        incarnations.push_back({absl::StrCat(s.id, " (killed)"), s.marker,
                                LastCount(s.process->log(), "iteration"), false});
        s.process.reset();
        s.restart_at = now + uniform(0.5, 2 * lease);
        ++kills;
        std::printf(
            "soak: %6.0f s: kill -9 %s (marker %d) at its iteration %lu; restart in %.1f s\n",
            now - t0, s.id.c_str(), s.marker,
            static_cast<unsigned long>(incarnations.back().computed), s.restart_at - now);
      } else if (s.link_up_at == 0) {
        s.link->SetRate(0);
        s.link_up_at = now + uniform(1, 15);
        ++drops;
        std::printf("soak: %6.0f s: link of %s down for %.1f s\n", now - t0, s.id.c_str(),
                    s.link_up_at - now);
      }
      std::fflush(stdout);
    }
    if (now >= next_sample) {
      next_sample += absl::GetFlag(FLAGS_sample_seconds);
      const uint64_t rss = RssKiB((*rogd)->pid());
      absl::StatusOr<pb::StatusReply> st = AdminStatus(address);
      csv << absl::StrFormat(
          "%.1f,%lu,%d,%d,%lu,%lu,%d,%d\n", now - t0, rss, st.ok() ? st->workers_connected() : -1,
          st.ok() ? st->workers_evicted() : -1, st.ok() ? st->min_iteration() : 0,
          st.ok() ? st->max_iteration() : 0, kills, drops);
      csv.flush();
      samples.emplace_back(now - t0, rss);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  // Everything up again, then every worker drains and leaves.
  std::printf("soak: faults over after %.0f s; draining\n", Now() - t0);
  std::fflush(stdout);
  for (Slot& s : slots) {
    s.link->SetRate(rate);
    s.link_up_at = 0;
    if (s.restart_at > 0 && !start_worker(s)) failure = "cannot restart a worker";
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (Slot& s : slots) s.process->Signal(SIGTERM);
  for (Slot& s : slots) {
    const int status = s.process->Wait(180);
    const uint64_t finished = LastCount(s.process->log(), "finished");
    if (status != 0 && failure.empty()) {
      failure = absl::StrCat(s.id, " (marker ", s.marker, ") did not finish (status ", status,
                             "): ", s.process->log().substr(0, 2000));
    }
    incarnations.push_back({s.id, s.marker, finished, true});
  }
  const uint64_t end_rss = RssKiB((*rogd)->pid());
  samples.emplace_back(Now() - t0, end_rss);
  absl::StatusOr<std::vector<float>> global = AdminExport(address);
  ConservationReport report;
  if (!global.ok()) {
    report.ok = false;
    report.problems = absl::StrCat("export: ", global.status().message());
  } else {
    report = CheckFaultConservation(FaultLayout(), *global, incarnations);
  }
  uint64_t iterations = 0;
  for (const Incarnation& inc : incarnations) iterations += inc.computed;

  // Memory: first and last samples, the peak, and the growth from the
  // second quarter (the team formed) to the last.
  uint64_t peak = 0;
  for (const auto& [t, rss] : samples) peak = std::max(peak, rss);
  const auto mean = [&](double from, double to) {
    double sum = 0;
    int count = 0;
    for (const auto& [t, rss] : samples) {
      if (t >= from && t < to) {
        sum += static_cast<double>(rss);
        ++count;
      }
    }
    return count > 0 ? sum / count : 0.0;
  };
  const double span = minutes * 60;
  const double early = mean(span * 0.25, span * 0.5);
  const double late = mean(span * 0.75, span + 1);
  const double growth_kib = late - early;
  const bool growing = growth_kib > 4096 && growth_kib > 0.1 * early;
  std::ostringstream summary;
  summary << absl::StrFormat(
      "soak: %.1f minutes, %d workers, %d kill -9s (%d restarts), %d link drops, %zu worker "
      "processes, %lu iterations computed\n",
      minutes, n, kills, restarts, drops, incarnations.size(), iterations);
  summary << absl::StrFormat(
      "rogd RSS: start %.1f MiB, peak %.1f MiB, end %.1f MiB; mean %.1f MiB in the second "
      "quarter, %.1f MiB in the last: %s (%+.1f MiB)\n",
      samples.front().second / 1024.0, peak / 1024.0, end_rss / 1024.0, early / 1024.0,
      late / 1024.0, growing ? "GROWING" : "no growth", growth_kib / 1024.0);
  summary << absl::StrFormat(
      "conservation: %s; lost by design (computed by killed processes, never acknowledged): %lu "
      "of %lu row updates (%.4f%%)\n",
      report.ok ? "holds (global − initial = every applied update, none twice)" : "BROKEN",
      report.row_updates_lost, report.row_updates_computed,
      report.row_updates_computed > 0
          ? 100.0 * report.row_updates_lost / report.row_updates_computed
          : 0.0);
  summary << report.summary << report.problems;
  if (!failure.empty()) summary << "failure: " << failure << "\n";
  std::printf("%s", summary.str().c_str());
  std::ofstream(out + "/summary.txt") << summary.str();
  std::ofstream(out + "/rogd.log") << (*rogd)->log();
  return report.ok && failure.empty() ? 0 : 1;
}

}  // namespace
}  // namespace rog

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return rog::Run();
}
