#include "tools/bench/repeats.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/bench/power_model.h"
#include "tools/bench/simulator_output.h"

namespace rog {

Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    s.min = s.n == 0 ? x : std::min(s.min, x);
    s.max = s.n == 0 ? x : std::max(s.max, x);
    s.mean += x;
    ++s.n;
  }
  if (s.n > 0) s.mean /= s.n;
  return s;
}

namespace {

// "1.23× (1.10–1.31×)": the mean, then the range, each number with
// `digits` decimals after multiplying by `factor`, `unit` after each; "–"
// when empty; the mean alone when one repeat had it or all agree.
std::string SpreadText(const Spread& s, int digits, double factor = 1,
                       absl::string_view unit = "") {
  if (s.n == 0) return "–";
  const std::string mean = absl::StrFormat("%.*f%s", digits, factor * s.mean, unit);
  const std::string lo = absl::StrFormat("%.*f", digits, factor * s.min);
  const std::string hi = absl::StrFormat("%.*f", digits, factor * s.max);
  if (s.n == 1 || lo == hi) return mean;
  return absl::StrCat(mean, " (", lo, "–", hi, unit, ")");
}

// One policy's figures over the repeats, for the summary over repeats.
struct RepeatRow {
  std::string label;
  std::vector<double> ips, rog_ratio, stall, detached, ttt, ttt_share, acc;
  std::vector<double> rogd_acc;  // rogd's model once every robot had finished
  // Modelled energy to the target per robot (the team's), and on ROG's row
  // its ratio to the best baseline's within each repeat (RogEnergyRatio).
  std::vector<double> energy, energy_ratio;
  int not_reached = 0, present = 0;
  // Of ttt_share, the upper bounds: repeats whose BSP first had its own final
  // accuracy after its last evaluation (BSPTimeAtLeast).
  int share_bounds = 0;
};

// A lower bound on BSP's time to its own final accuracy when its evaluated
// curve never reached it: that accuracy is measured after the run's final
// sync, so BSP first had it after its last evaluation. None with --target
// (a fixed accuracy BSP may never reach) or without evaluations.
std::optional<double> BSPTimeAtLeast(const BenchSettings& settings, const PolicyFigures& bsp) {
  if (settings.target || bsp.team_accuracy.empty() || bsp.final_accuracy < 0) return std::nullopt;
  const double last = bsp.team_accuracy.back().first;
  if (!(last > 0)) return std::nullopt;
  return last;
}

// A repeat's modelled energy to `target` of policy `p` into its row, and
// on ROG's row the ratio to the repeat's best baseline.
void AddEnergy(const std::vector<PolicyFigures>& rep, const PolicyFigures& p,
               const BenchSettings& settings, std::optional<double> target, RepeatRow* r) {
  if (!settings.power) return;
  if (const std::optional<PolicyEnergy> e = EnergyToTarget(p, *settings.power, target)) {
    r->energy.push_back(e->team);
  }
  if (p.policy != "rog") return;
  if (const std::optional<EnergyRatio> q = RogEnergyRatio(rep, *settings.power, target)) {
    r->energy_ratio.push_back(q->ratio);
  }
}

// BSP's, SSP's and ROG's rows, each repeat's figures added to them; a ratio
// or time share is taken within its repeat.
std::vector<RepeatRow> RepeatRows(const std::vector<std::vector<PolicyFigures>>& repeats,
                                  const BenchSettings& settings) {
  const char* kPolicies[] = {"bsp", "ssp", "rog"};
  std::vector<RepeatRow> rows(3);
  for (const auto& rep : repeats) {
    const PolicyFigures* bsp = FindPolicy(rep, "bsp");
    const PolicyFigures* rog = FindPolicy(rep, "rog");
    const std::optional<double> target = TargetAccuracy(settings, bsp);
    std::optional<double> bsp_time;
    bool bsp_time_bound = false;
    if (target && bsp != nullptr) {
      bsp_time = TimeToAccuracy(bsp->team_accuracy, *target);
      if (!bsp_time) {
        bsp_time = BSPTimeAtLeast(settings, *bsp);
        bsp_time_bound = bsp_time.has_value();
      }
    }
    for (int k = 0; k < 3; ++k) {
      const PolicyFigures* p = FindPolicy(rep, kPolicies[k]);
      if (p == nullptr) continue;
      RepeatRow& r = rows[k];
      r.label = PolicyLabel(*p, settings.staleness);
      ++r.present;
      r.ips.push_back(p->iterations_per_s);
      if (rog != nullptr && p->iterations_per_s > 0) {
        r.rog_ratio.push_back(rog->iterations_per_s / p->iterations_per_s);
      }
      r.stall.push_back(p->stall_share);
      r.detached.push_back(p->detached_share);
      if (p->final_accuracy >= 0) r.acc.push_back(p->final_accuracy);
      if (p->rogd_final_accuracy >= 0) r.rogd_acc.push_back(p->rogd_final_accuracy);
      if (target) {
        std::optional<double> t = TimeToAccuracy(p->team_accuracy, *target);
        if (t) {
          r.ttt.push_back(*t);
          // Against a lower bound on BSP's time, the share is an upper bound.
          if (bsp_time && *bsp_time > 0) {
            r.ttt_share.push_back(*t / *bsp_time);
            r.share_bounds += bsp_time_bound;
          }
        } else {
          ++r.not_reached;
        }
      }
      AddEnergy(rep, *p, settings, target, &r);
    }
  }
  return rows;
}

// A row's share of BSP's time: "≤ " before it when some repeats give an
// upper bound, and how many.
std::string ShareText(const RepeatRow& r) {
  const std::string text = SpreadText(SpreadOf(r.ttt_share), 2);
  if (r.share_bounds == 0) return text;
  return absl::StrCat("≤ ", text, "; ", r.share_bounds, " of ", r.ttt_share.size(),
                      " upper bounds");
}

// rogd's model at the end, saying how many repeats had it when not all did.
std::string RogdModelCell(const RepeatRow& r) {
  const std::string cell = SpreadText(SpreadOf(r.rogd_acc), 4);
  if (static_cast<int>(r.rogd_acc.size()) >= r.present) return cell;
  return absl::StrCat(cell, " (", r.rogd_acc.size(), " of ", r.present, " repeats)");
}

// A row's modelled energy over the repeats: "–" without a power model, and
// how many repeats did not reach the target.
std::string EnergyText(const RepeatRow& r, const BenchSettings& settings) {
  if (!settings.power) return "–";
  const std::string text = SpreadText(SpreadOf(r.energy), 0, 1, " J");
  if (r.not_reached == 0) return text;
  return absl::StrCat(r.energy.empty() ? "" : text + "; ", "not reached in ", r.not_reached, " of ",
                      r.present);
}

// The energy headline: ROG/best baseline within each repeat, modelled.
std::string EnergyHeadline(const std::vector<RepeatRow>& rows, const BenchSettings& settings) {
  if (!settings.power) return "";
  return absl::StrCat(
      " Energy to ", settings.target ? "the target" : "BSP's final accuracy",
      " per robot (**modelled, not measured**: the measured time shares and a Jetson-class "
      "robot's power model, below): **ROG/best baseline ",
      SpreadText(SpreadOf(rows[2].energy_ratio), 2, 1, "×"),
      "** (within each repeat, against the baseline with the least energy that reached it).");
}

// Under the table: what the energy column models and assumes.
std::string EnergyNote(const BenchSettings& settings) {
  if (!settings.power) return "";
  return absl::StrCat(
      "\n*Energy to target per robot* is **modelled, not measured**: each repeat's time to the "
      "target × the team's mean power over the run, each state of the span at its power (",
      PowerModelLine(*settings.power),
      "; a Jetson-class robot, tools/bench/power_model.txt, with its sources). The radio is "
      "charged as transmitting only inside EndStep; a push still going on while the robot "
      "computes is charged at the compute's power.\n");
}

// Of BSP's and SSP's `value` in `rep`, the highest (or with `lowest` the
// lowest); nullopt when neither has one.
template <typename Value>
std::optional<double> BestOfBaselines(const std::vector<PolicyFigures>& rep, Value value,
                                      bool lowest) {
  std::optional<double> best;
  for (const char* name : {"bsp", "ssp"}) {
    const PolicyFigures* b = FindPolicy(rep, name);
    const std::optional<double> v = b ? value(*b) : std::nullopt;
    if (v && (!best || (lowest ? *v < *best : *v > *best))) best = v;
  }
  return best;
}

// The first paragraph over repeats: within each repeat ROG's final accuracy
// less the best baseline's (points), the same half way through the run, and
// ROG's time to the target over the quickest baseline's that reached it.
std::string RepeatAccuracyHeadline(const std::vector<std::vector<PolicyFigures>>& repeats,
                                   const BenchSettings& settings) {
  std::vector<double> final_diff, rogd_diff, half_diff, time_ratio;
  const double half = settings.adapt_seconds / 2;
  const auto rogd_model = [](const PolicyFigures& p) -> std::optional<double> {
    if (p.rogd_final_accuracy < 0) return std::nullopt;
    return p.rogd_final_accuracy;
  };
  for (const auto& rep : repeats) {
    const PolicyFigures* rog = FindPolicy(rep, "rog");
    const PolicyFigures* best = BestBaseline(rep);
    if (rog == nullptr || best == nullptr) continue;
    if (rog->final_accuracy >= 0) {
      final_diff.push_back(100 * (rog->final_accuracy - best->final_accuracy));
    }
    const std::optional<double> rm = rogd_model(*rog), bm = BestOfBaselines(rep, rogd_model, false);
    if (rm && bm) rogd_diff.push_back(100 * (*rm - *bm));
    const auto at_half = [&](const PolicyFigures& p) { return AccuracyAt(p.team_accuracy, half); };
    const std::optional<double> rh = at_half(*rog), bh = BestOfBaselines(rep, at_half, false);
    if (half > 0 && rh && bh) half_diff.push_back(100 * (*rh - *bh));
    const std::optional<double> target = TargetAccuracy(settings, FindPolicy(rep, "bsp"));
    if (!target) continue;
    const auto time_to = [&](const PolicyFigures& p) {
      return TimeToAccuracy(p.team_accuracy, *target);
    };
    const std::optional<double> rt = time_to(*rog), bt = BestOfBaselines(rep, time_to, true);
    if (rt && bt && *bt > 0) time_ratio.push_back(*rt / *bt);
  }
  return absl::StrCat(
      "The model the team ends with (accuracy at equal time; within each repeat, ROG's less "
      "the best baseline's; mean (min–max) over repeats): **ROG − best baseline ",
      SpreadText(SpreadOf(final_diff), 2, 1, " points"), "** at the end (after the final sync)",
      rogd_diff.empty()
          ? std::string()
          : absl::StrCat(", ", SpreadText(SpreadOf(rogd_diff), 2, 1, " points"),
                         " in rogd's model once every robot had finished (exported, scored on "
                         "the same images; ",
                         rogd_diff.size(), " of ", repeats.size(), " repeats)"),
      half > 0 ? absl::StrFormat(", %s half way (%.0f s)",
                                 SpreadText(SpreadOf(half_diff), 2, 1, " points"), half)
               : std::string(),
      "; ROG's time to ", settings.target ? "the target" : "BSP's final accuracy",
      " over the quickest baseline's that reached it: ",
      SpreadText(SpreadOf(time_ratio), 2, 1, "×"), " (", time_ratio.size(), " of ", repeats.size(),
      " repeats where both reached it).\n\n");
}

// The table over repeats, one row per policy run, and how to read it.
void AppendRepeatsTable(std::string* md, const std::vector<RepeatRow>& rows,
                        const BenchSettings& settings, const std::string& target_name) {
  // The energy column only with a power model (--power_model).
  const bool energy = settings.power.has_value();
  // rogd's model at the end, where tools/run.sh recorded it (team.acc).
  const bool rogd =
      std::any_of(rows.begin(), rows.end(), [](const RepeatRow& r) { return !r.rogd_acc.empty(); });
  absl::StrAppend(
      md, "| | it/s per robot | ROG's ratio to it | stall share | detached share | time to ",
      target_name, " | share of BSP's time | final accuracy |",
      rogd ? " rogd's model at the end |" : "",
      energy ? " energy to target per robot (modelled) |" : "",
      "\n| --- | --- | --- | --- | --- | --- | --- | --- |", rogd ? " --- |" : "",
      energy ? " --- |" : "", "\n");
  for (const RepeatRow& r : rows) {
    if (r.present == 0) continue;
    std::string ttt = SpreadText(SpreadOf(r.ttt), 0, 1, " s");
    if (r.not_reached > 0) {
      ttt = absl::StrCat(r.ttt.empty() ? "" : ttt + "; ", "not reached in ", r.not_reached, " of ",
                         r.present);
    }
    absl::StrAppend(md, "| ", r.label, " | ", SpreadText(SpreadOf(r.ips), 3), " | ",
                    SpreadText(SpreadOf(r.rog_ratio), 2, 1, "×"), " | ",
                    SpreadText(SpreadOf(r.stall), 1, 100, "%"), " | ",
                    SpreadText(SpreadOf(r.detached), 1, 100, "%"), " | ", ttt, " | ", ShareText(r),
                    " | ", SpreadText(SpreadOf(r.acc), 4), " |",
                    rogd ? absl::StrCat(" ", RogdModelCell(r), " |") : "",
                    energy ? absl::StrCat(" ", EnergyText(r, settings), " |") : "", "\n");
  }
  absl::StrAppend(md,
                  "\nRanges are the lowest and highest over the repeats. A ratio is ROG's "
                  "iterations/s over the policy's in the same repeat; ",
                  settings.target
                      ? "every repeat has the same target accuracy.\n"
                      : "time to BSP's final accuracy takes each repeat's own BSP run as the "
                        "target. BSP's final accuracy is measured after its final sync, so "
                        "where BSP's evaluated curve never reached it, BSP's time is later than "
                        "its last evaluation: a share of BSP's time taken against that "
                        "evaluation's time is an upper bound (\"≤\").\n",
                  rogd ? "*Final accuracy* is each robot's after its own final sync, which can "
                         "come before the others' last updates; *rogd's model at the end* is "
                         "rogd's once every robot had finished, exported and scored on the same "
                         "test images.\n"
                       : "",
                  EnergyNote(settings));
}

// The time goal's line, on ROG's row: met when ROG reached the target in
// every repeat and the mean share (an upper bound where some shares are)
// is within the goal; above the goal on bounds, it is not measured.
std::string TimeGoalLine(const RepeatRow& rog, const RepeatGoals& goals,
                         const std::string& target_name) {
  const Spread share = SpreadOf(rog.ttt_share);
  const bool within = rog.not_reached == 0 && share.n > 0 && share.mean <= goals.time_share_of_bsp;
  std::string verdict = "not measured";
  if (within) {
    verdict = "**met**";
  } else if (rog.not_reached > 0 || (share.n > 0 && rog.share_bounds == 0)) {
    verdict = "**not met**";
  }
  return absl::StrFormat(
      "- ROG's time to %s ≤ %.2f× BSP's: %s (%s%s)", target_name, goals.time_share_of_bsp, verdict,
      ShareText(rog),
      rog.not_reached > 0 ? absl::StrCat("; ROG did not reach it in ", rog.not_reached) : "");
}

// The goals, checked against the means: one line per goal set.
std::vector<std::string> RepeatGoalLines(const std::vector<RepeatRow>& rows,
                                         const RepeatGoals& goals, const std::string& target_name) {
  const Spread rog_bsp = SpreadOf(rows[0].rog_ratio);
  const Spread rog_ssp = SpreadOf(rows[1].rog_ratio);
  const auto verdict = [](bool known, bool met) -> std::string {
    return !known ? "not measured" : met ? "**met**" : "**not met**";
  };
  std::vector<std::string> lines;
  if (goals.rog_over_bsp > 0) {
    lines.push_back(absl::StrFormat("- ROG/BSP ≥ %.2f×: %s (%s)", goals.rog_over_bsp,
                                    verdict(rog_bsp.n > 0, rog_bsp.mean >= goals.rog_over_bsp),
                                    SpreadText(rog_bsp, 2, 1, "×")));
  }
  if (goals.rog_over_ssp > 0) {
    lines.push_back(absl::StrFormat("- ROG/SSP ≥ %.2f×: %s (%s)", goals.rog_over_ssp,
                                    verdict(rog_ssp.n > 0, rog_ssp.mean >= goals.rog_over_ssp),
                                    SpreadText(rog_ssp, 2, 1, "×")));
  }
  if (goals.time_share_of_bsp > 0) lines.push_back(TimeGoalLine(rows[2], goals, target_name));
  if (goals.accuracy_points > 0) {
    const Spread rog_acc = SpreadOf(rows[2].acc);
    double best = -1;
    for (int k = 0; k < 2; ++k) {
      const Spread a = SpreadOf(rows[k].acc);
      if (a.n > 0) best = std::max(best, a.mean);
    }
    lines.push_back(absl::StrFormat(
        "- final accuracy within %.1f points of the best baseline: %s (ROG %s, best baseline "
        "%.4f)",
        goals.accuracy_points,
        verdict(rog_acc.n > 0 && best >= 0, rog_acc.mean >= best - goals.accuracy_points / 100),
        SpreadText(rog_acc, 4), best));
  }
  return lines;
}

// The summary's settings section, with the compute per iteration over every run.
void AppendRepeatsSettings(std::string* md, const std::vector<std::vector<PolicyFigures>>& repeats,
                           const BenchSettings& settings) {
  absl::StrAppend(md, "\n## Settings\n\n");
  for (const std::string& m : settings.more) absl::StrAppend(md, "- ", m, "\n");
  absl::StrAppend(
      md,
      absl::StrFormat("- %d robots, S=%d, codec %s, traces %s × %g\n", settings.robots,
                      settings.staleness, settings.codec, settings.traces, settings.trace_scale),
      "- links: ", settings.links.empty() ? "user-space relays" : settings.links, "\n",
      settings.team.empty() ? "" : absl::StrCat("- rogd: ", settings.team, "\n"),
      absl::StrFormat("- %.0f s of adaptation per run\n", settings.adapt_seconds));
  std::vector<double> compute, real;
  for (const auto& rep : repeats) {
    for (const PolicyFigures& p : rep) {
      if (p.compute_per_iteration_s <= 0) continue;
      compute.push_back(p.compute_per_iteration_s);
      real.push_back(p.real_compute_per_iteration_s);
    }
  }
  if (!compute.empty()) {
    absl::StrAppend(md, "- compute per iteration: ", SpreadText(SpreadOf(compute), 1, 1e3, " ms"),
                    " over the runs (real compute before padding: ",
                    SpreadText(SpreadOf(real), 1, 1e3, " ms"), ")\n");
  }
  if (settings.power) {
    absl::StrAppend(md, "- power model (energy, modelled): ", PowerModelLine(*settings.power),
                    "\n");
  }
  absl::StrAppend(md, "- CPU: ", settings.cpu, "\n", "- command: `", settings.command, "`\n");
}

}  // namespace

namespace {

// Each policy (its first repeat's figures) with its iterations/s averaged
// over the repeats and its link utilisation over those that measured one,
// for AppendRigCheck.
std::vector<PolicyFigures> MeanRigFigures(const std::vector<std::vector<PolicyFigures>>& repeats) {
  std::vector<PolicyFigures> out;
  if (repeats.empty()) return out;
  for (const PolicyFigures& first : repeats[0]) {
    PolicyFigures p = first;
    double sum = 0, its = 0;
    int n = 0, m = 0;
    for (const std::vector<PolicyFigures>& rep : repeats) {
      const PolicyFigures* q = FindPolicy(rep, first.policy);
      if (q == nullptr) continue;
      its += q->iterations_per_s;
      ++m;
      if (q->link_utilisation <= 0) continue;
      sum += q->link_utilisation;
      ++n;
    }
    p.link_utilisation = n > 0 ? sum / n : 0;
    p.iterations_per_s = m > 0 ? its / m : 0;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string RepeatsMarkdown(const std::vector<std::vector<PolicyFigures>>& repeats,
                            const BenchSettings& settings, const RepeatGoals& goals,
                            const std::string& title, const std::string& simulator) {
  std::string md = absl::StrCat("# ", title, "\n\n");
  const std::vector<RepeatRow> rows = RepeatRows(repeats, settings);
  const Spread rog_bsp = SpreadOf(rows[0].rog_ratio);
  const Spread rog_ssp = SpreadOf(rows[1].rog_ratio);
  absl::StrAppend(&md, RepeatAccuracyHeadline(repeats, settings));
  absl::StrAppend(&md, repeats.size(), repeats.size() == 1 ? " repeat" : " repeats",
                  " per policy. Training throughput (iterations per second per robot; ratios "
                  "taken within each repeat; mean (min–max)): **ROG/BSP ",
                  SpreadText(rog_bsp, 2, 1, "×"), "**, **ROG/SSP ", SpreadText(rog_ssp, 2, 1, "×"),
                  "**.", EnergyHeadline(rows, settings), "\n\n");
  const std::string target_name = settings.target
                                      ? absl::StrFormat("accuracy %.4f", *settings.target)
                                      : std::string("BSP's final accuracy");
  AppendRepeatsTable(&md, rows, settings, target_name);
  AppendRigCheck(&md, MeanRigFigures(repeats), settings.staleness, simulator);

  // The goals, checked against the means.
  const std::vector<std::string> lines = RepeatGoalLines(rows, goals, target_name);
  if (!lines.empty()) {
    absl::StrAppend(&md, "\n## Goals", goals.source.empty() ? "" : " (" + goals.source + ")",
                    "\n\n", absl::StrJoin(lines, "\n"), "\n");
  }

  AppendRepeatsSettings(&md, repeats, settings);
  AppendSimulator(&md, simulator);
  return md;
}

}  // namespace rog
