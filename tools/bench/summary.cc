#include "tools/bench/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/staleness.h"
#include "tools/bench/power_model.h"
#include "tools/bench/simulator_output.h"

namespace rog {
namespace {

// The summary's first paragraph: ROG's throughput ratios and its stalls
// against BSP's and SSP's.
void AppendRogComparison(std::string* md, const PolicyFigures* bsp, const PolicyFigures* ssp,
                         const PolicyFigures& rog) {
  absl::StrAppend(md, "Training throughput: **ROG/BSP ",
                  bsp ? Ratio(rog.iterations_per_s, bsp->iterations_per_s) : "n/a",
                  "**, **ROG/SSP ",
                  ssp ? Ratio(rog.iterations_per_s, ssp->iterations_per_s) : "n/a",
                  "** (iterations per second per robot).");
  auto fewer = [&](const PolicyFigures* base, absl::string_view name) -> std::string {
    if (base == nullptr || base->stalls == 0) return "";
    const double d = 1.0 - static_cast<double>(rog.stalls) / base->stalls;
    return absl::StrFormat("%.1f%% %s than %s", 100 * std::abs(d), d >= 0 ? "fewer" : "more", name);
  };
  std::string vs_bsp = fewer(bsp, "BSP"), vs_ssp = fewer(ssp, "SSP");
  if (!vs_bsp.empty() || !vs_ssp.empty()) {
    absl::StrAppend(md, " Stall occurrences under ROG: ", vs_bsp,
                    !vs_bsp.empty() && !vs_ssp.empty() ? ", " : "", vs_ssp, ".");
  }
  absl::StrAppend(md, "\n\n");
}

// The energy paragraph under the throughput one: ROG's energy to target
// over the best baseline's, modelled (left out without a power model).
void AppendEnergyComparison(std::string* md, const std::vector<PolicyFigures>& policies,
                            const BenchSettings& settings, std::optional<double> target) {
  if (!settings.power) return;
  const std::string line = EnergyComparison(policies, settings, target);
  absl::StrAppend(md,
                  "Energy to target (**modelled, not measured**: the measured time shares "
                  "and a Jetson-class robot's power model, below): ",
                  line.empty() ? "no target accuracy." : line + ".", "\n\n");
}

// The summary's main table: one row of figures per policy.
void AppendPolicyTable(std::string* md, const std::vector<PolicyFigures>& policies,
                       const BenchSettings& settings, std::optional<double> target) {
  const int staleness = settings.staleness;
  // The energy column only with a power model (--power_model).
  const bool energy = settings.power.has_value();
  absl::StrAppend(
      md,
      "| | it/s per robot | stall share | detached share | stalls | compute share | "
      "transmit share | time to target | ",
      energy ? "energy to target per robot (modelled) | " : "",
      "final accuracy | MB up / down per robot | index overhead | link utilisation | "
      "overshoot p50 / p99 |\n",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | ",
      energy ? "--- | " : "", "\n");
  for (const PolicyFigures& p : policies) {
    const std::string ttt = TimeToTargetCell(p.team_accuracy, target);
    const std::string acc = FinalAccuracyCell(p);
    absl::StrAppend(
        md, absl::StrFormat(
                "| %s | %.2f | %s | %s | %d | %s | %s | %s | %s%s | %.1f / %.1f | %.2f%% | %s | "
                "%s / %s%s |\n",
                PolicyLabel(p, staleness), p.iterations_per_s, Pct(p.stall_share),
                Pct(p.detached_share), p.stalls, Pct(p.compute_share), Pct(p.transmit_share), ttt,
                energy ? EnergyCell(p, settings, target) + " | " : "", acc, p.mb_up, p.mb_down,
                100 * p.index_overhead, p.link_utilisation > 0 ? Pct(p.link_utilisation) : "–",
                Ms(p.overshoot_p50), Ms(p.overshoot_p99),
                p.late_push_share > 0
                    ? absl::StrFormat("; %s without late rows (%s late)",
                                      Ms(p.on_time_overshoot_p99), Pct(p.late_push_share))
                    : std::string()));
  }
}

// For each policy with windows: its overshoot by window length.
void AppendOvershootByWindow(std::string* md, const std::vector<PolicyFigures>& policies,
                             int staleness) {
  for (const PolicyFigures& p : policies) {
    if (p.overshoot_by_window.empty()) continue;
    absl::StrAppend(md, "\nOvershoot under ", PolicyLabel(p, staleness),
                    " by window length (each push's window end to the estimated arrival of its "
                    "last byte):\n\n| window | pushes | overshoot p50 | p99 |\n| --- | --- | --- | "
                    "--- |\n");
    for (const PolicyFigures::WindowBucket& b : p.overshoot_by_window) {
      const std::string range = std::isinf(b.up_to)
                                    ? absl::StrFormat("over %s", Ms(b.from))
                                    : absl::StrFormat("%s to %s", Ms(b.from), Ms(b.up_to));
      absl::StrAppend(
          md, absl::StrFormat("| %s | %d | %s | %s |\n", range, b.pushes, Ms(b.p50), Ms(b.p99)));
    }
  }
}

// rogd's split of the stall share by cause, if any policy has it.
void AppendStallCauses(std::string* md, const std::vector<PolicyFigures>& policies, int staleness) {
  bool causes = false;
  for (const PolicyFigures& p : policies) causes = causes || p.stall_cause_s.size() == kStallCauses;
  if (!causes) return;
  absl::StrAppend(
      md,
      "\nStall share by what the stalled robot waited for, as rogd saw it (`rogctl workers`; "
      "from the robot's stall report to its release): a peer still computing the iteration the "
      "bound needs, rogd's ask to a peer that has the rows (PushNow, until the first row asked "
      "arrives; – where rogd predates it), the rest of a peer's push, rogd's delivery of rows "
      "it holds; then the robots' own stall share less rogd's (the stall report's way to rogd, "
      "the last rows' and the release's way to the robot after rogd sent them, and waits rogd "
      "does not count as stalls, such as reconnects). The "
      "simulator's split below is on the same terms.\n\n| | peer compute | peer asked | peer "
      "uplink | downlink | not seen by rogd |\n| --- | --- | --- | --- | --- | --- |\n");
  for (const PolicyFigures& p : policies) {
    if (p.stall_cause_s.size() != kStallCauses) continue;
    double span = 0, own = 0, seen = 0;
    for (const RobotFigures& r : p.robots) {
      span += r.span_s;
      own += r.stall_s;
    }
    absl::StrAppend(md, "| ", PolicyLabel(p, staleness));
    for (StallCause c : kStallPath) {
      const double s = p.stall_cause_s[c];
      seen += std::max(s, 0.0);
      absl::StrAppend(md, " | ", s < 0 ? "–" : Pct(span > 0 ? s / span : 0));
    }
    absl::StrAppend(md, " | ", Pct(span > 0 ? std::max(own - seen, 0.0) / span : 0), " |\n");
  }
}

// One line per policy with each robot's iterations/s, stall share and final
// accuracy, and its disconnects and detached share where it had any.
void AppendPerRobot(std::string* md, const std::vector<PolicyFigures>& policies, int staleness) {
  absl::StrAppend(md, "\nPer robot (iterations/s, stall share, final accuracy):\n\n");
  for (const PolicyFigures& p : policies) {
    absl::StrAppend(md, "- ", PolicyLabel(p, staleness), ":");
    for (const RobotFigures& r : p.robots) {
      absl::StrAppend(
          md, absl::StrFormat(" %s %.2f it/s, %s, %.4f", r.id, r.iterations_per_s,
                              Pct(r.span_s > 0 ? r.stall_s / r.span_s : 0), r.final_accuracy));
      std::vector<std::string> notes;
      if (r.disconnects > 0) {
        notes.push_back(
            absl::StrFormat("%d disconnect%s", r.disconnects, r.disconnects == 1 ? "" : "s"));
      }
      if (r.detached_s > 0) {
        notes.push_back(absl::StrCat("detached ", Pct(r.span_s > 0 ? r.detached_s / r.span_s : 0)));
      }
      if (!notes.empty()) absl::StrAppend(md, " (", absl::StrJoin(notes, ", "), ")");
      absl::StrAppend(md, ";");
    }
    md->back() = '\n';
  }
}

// The energy column's bullet: what is modelled and what the model assumes.
std::string EnergyHowToRead(const BenchSettings& settings) {
  if (!settings.power) return "";
  return absl::StrCat(
      "- *energy to target per robot (modelled)*: **modelled, not measured**. The time to target "
      "× the robot's mean power over its run, each state of the span at its power (",
      PowerModelLine(*settings.power),
      "; a Jetson-class robot, tools/bench/power_model.txt, with its sources); the team's "
      "shares, then the range over robots. It assumes the shares of the whole run hold up to "
      "the target, and charges the radio as transmitting only inside EndStep: a push still "
      "going on while the robot computes (ROG, SSP), and rows received during a stall, are "
      "charged at the compute's or the stall's power. ROG/best baseline: over the baseline "
      "with the least energy among those that reached the target.\n");
}

// What each column of the summary means.
void AppendHowToRead(std::string* md, const BenchSettings& settings, std::optional<double> target) {
  absl::StrAppend(
      md, "\nHow to read it:\n\n",
      "- *it/s per robot*: iterations over the span from a robot's first iteration start to "
      "its last iteration end, averaged over robots. Shares split that span: compute (forward, "
      "backward, optimizer step), transmit (inside EndStep, until the rows it waits for are on "
      "their way), "
      "stall (BeginStep blocked by the staleness bound or a reconnect), detached (BeginStep "
      "waiting while rogd had the robot detached by its patience or the team's pace: idle like a "
      "stall, counted apart); the rest is evaluation.\n",
      "- *time to target*: when the team's mean accuracy on degraded test images (the k-th "
      "evaluation of every robot averaged) first reached ",
      target ? absl::StrFormat("%.4f", *target) : std::string("the target"),
      settings.target ? " (--target)" : " (BSP's final accuracy)",
      "; *final accuracy*: mean (min–max) over robots after each robot's final sync.\n",
      EnergyHowToRead(settings),
      "- *index overhead*: row batch bytes that are not row values (row ids, counts, version "
      "lags, batch header) over the row values, both directions; gRPC/HTTP/2/TCP framing not "
      "included.\n",
      "- *link utilisation*: uplink row batch bytes over what the trace let the link carry "
      "while a push was under way: from its start to its last acknowledgement less the path's "
      "minimum round trip, overlapping pushes counted once.\n",
      "- *overshoot*: from the end of ROG's window to the estimated arrival of the push's last "
      "byte at rogd (its acknowledgement less half the path's minimum round trip). ATP cuts "
      "only optional rows: rows the staleness bound made mandatory, or that a stalled robot "
      "asked for, go whatever the window. Where some pushes sent such rows after their window "
      "closed (*late*), the cell also gives p99 over the other pushes and the late share.\n");
}

// The summary's settings list, with each policy's compute per iteration.
void AppendSummarySettings(std::string* md, const std::vector<PolicyFigures>& policies,
                           const BenchSettings& settings) {
  absl::StrAppend(
      md, "\nSettings:\n\n",
      absl::StrFormat("- %d robots, S=%d (SSP and ROG), codec %s, trace scale %g\n",
                      settings.robots, settings.staleness, settings.codec, settings.trace_scale),
      "- traces: ", settings.traces, "; links: ",
      settings.links.empty()
          ? absl::StrCat("user-space relays, one-way delay ", settings.delay, " each way")
          : settings.links,
      "\n", settings.team.empty() ? "" : absl::StrCat("- rogd: ", settings.team, "\n"),
      absl::StrFormat("- %.0f s of adaptation per policy, profile %s\n", settings.adapt_seconds,
                      settings.profile));
  for (const PolicyFigures& p : policies) {
    if (p.compute_per_iteration_s <= 0) continue;
    absl::StrAppend(
        md, absl::StrFormat("- compute per iteration under %s: %.1f ms (mean; real compute "
                            "before any --compute_time padding: %.1f ms)\n",
                            PolicyLabel(p, settings.staleness), 1e3 * p.compute_per_iteration_s,
                            1e3 * p.real_compute_per_iteration_s));
  }
  if (settings.power) {
    absl::StrAppend(md, "- power model (energy, modelled): ", PowerModelLine(*settings.power),
                    "\n");
  }
  absl::StrAppend(md, "- CPU: ", settings.cpu, "\n", "- command: `", settings.command, "`\n");
}

}  // namespace

std::string SummaryMarkdown(const std::vector<PolicyFigures>& policies,
                            const BenchSettings& settings, const std::string& simulator) {
  std::string md = "# ROG benchmark: BSP, SSP and ROG on replayed robot WiFi traces\n\n";
  const PolicyFigures* bsp = FindPolicy(policies, "bsp");
  const PolicyFigures* ssp = FindPolicy(policies, "ssp");
  const PolicyFigures* rog = FindPolicy(policies, "rog");
  const std::optional<double> target = TargetAccuracy(settings, bsp);

  absl::StrAppend(&md, AccuracyHeadline(policies, settings, target));
  if (rog != nullptr) AppendRogComparison(&md, bsp, ssp, *rog);
  AppendEnergyComparison(&md, policies, settings, target);
  AppendPolicyTable(&md, policies, settings, target);
  AppendRigCheck(&md, policies, settings.staleness, simulator);
  AppendOvershootByWindow(&md, policies, settings.staleness);
  AppendStallCauses(&md, policies, settings.staleness);
  AppendPerRobot(&md, policies, settings.staleness);
  AppendHowToRead(&md, settings, target);
  AppendSummarySettings(&md, policies, settings);
  AppendSimulator(&md, simulator);
  return md;
}

}  // namespace rog
