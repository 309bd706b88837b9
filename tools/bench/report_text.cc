#include "tools/bench/report_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rog {

std::string Ratio(double num, double den) {
  if (!(den > 0)) return "n/a";
  return absl::StrFormat("%.2f×", num / den);
}

const PolicyFigures* FindPolicy(const std::vector<PolicyFigures>& ps, absl::string_view name) {
  for (const PolicyFigures& p : ps) {
    if (p.policy == name) return &p;
  }
  return nullptr;
}

std::string Pct(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

std::string Ms(std::optional<double> s) { return s ? absl::StrFormat("%.0f ms", *s * 1000) : "–"; }

std::string PolicyLabel(const PolicyFigures& p, int staleness) {
  if (p.policy == "bsp") return "BSP";
  return absl::StrCat(p.policy == "ssp" ? "SSP" : "ROG", "(", staleness, ")");
}

std::optional<double> TargetAccuracy(const BenchSettings& settings, const PolicyFigures* bsp) {
  std::optional<double> target = settings.target;
  if (!target && bsp != nullptr && bsp->final_accuracy >= 0) target = bsp->final_accuracy;
  return target;
}

std::string TimeToTargetCell(const std::vector<std::pair<double, double>>& curve,
                             std::optional<double> target) {
  std::string ttt = "–";
  if (target) {
    auto t = TimeToAccuracy(curve, *target);
    ttt = t ? absl::StrFormat("%.0f s", *t) : "not reached";
  }
  return ttt;
}

std::string EnergyCell(const PolicyFigures& p, const BenchSettings& settings,
                       std::optional<double> target) {
  if (!settings.power || !target) return "–";
  const std::optional<PolicyEnergy> e = EnergyToTarget(p, *settings.power, target);
  if (!e) return "not reached";
  const std::string team = absl::StrFormat("%.0f J", e->team);
  const std::string lo = absl::StrFormat("%.0f", e->min), hi = absl::StrFormat("%.0f", e->max);
  if (lo == hi) return team;
  return absl::StrCat(team, " (", lo, "–", hi, " J)");
}

std::string EnergyComparison(const std::vector<PolicyFigures>& policies,
                             const BenchSettings& settings, std::optional<double> target) {
  if (!settings.power || !target) return "";
  const std::optional<EnergyRatio> r = RogEnergyRatio(policies, *settings.power, target);
  std::vector<std::string> each;
  for (const PolicyFigures& p : policies) {
    const std::optional<PolicyEnergy> e = EnergyToTarget(p, *settings.power, target);
    each.push_back(absl::StrCat(PolicyLabel(p, settings.staleness), " ",
                                e ? absl::StrFormat("%.0f J", e->team) : "not reached"));
  }
  const PolicyFigures* best = r ? FindPolicy(policies, r->best) : nullptr;
  return absl::StrCat(
      "**ROG/best baseline ", r ? absl::StrFormat("%.2f×", r->ratio) : std::string("n/a"), "** (",
      best ? absl::StrCat("against ", PolicyLabel(*best, settings.staleness), "; ") : "",
      absl::StrJoin(each, ", "), " per robot)");
}

std::string FinalAccuracyCell(const PolicyFigures& p) {
  std::string acc = "–";
  if (p.final_accuracy >= 0) {
    acc = absl::StrFormat("%.4f (%.4f–%.4f)", p.final_accuracy, p.final_accuracy_min,
                          p.final_accuracy_max);
  }
  return acc;
}

std::optional<double> AccuracyAt(const std::vector<std::pair<double, double>>& curve, double t) {
  std::optional<double> at;
  for (const auto& [time, acc] : curve) {
    if (time > t) break;
    at = acc;
  }
  return at;
}

const PolicyFigures* BestBaseline(const std::vector<PolicyFigures>& policies) {
  const PolicyFigures* best = nullptr;
  for (const char* name : {"bsp", "ssp"}) {
    const PolicyFigures* p = FindPolicy(policies, name);
    if (p == nullptr || p->final_accuracy < 0) continue;
    if (best == nullptr || p->final_accuracy > best->final_accuracy) best = p;
  }
  return best;
}

namespace {

// "half way (90 s): BSP 0.61, SSP(4) 0.65, ROG(4) 0.66": each policy's team
// accuracy at half the run; empty without a run length or evaluations.
std::string HalfWayText(const std::vector<PolicyFigures>& policies, const BenchSettings& settings) {
  if (!(settings.adapt_seconds > 0)) return "";
  const double half = settings.adapt_seconds / 2;
  std::vector<std::string> each;
  for (const PolicyFigures& p : policies) {
    const std::optional<double> a = AccuracyAt(p.team_accuracy, half);
    if (a) each.push_back(absl::StrFormat("%s %.4f", PolicyLabel(p, settings.staleness), *a));
  }
  if (each.empty()) return "";
  return absl::StrFormat(" Half way (%.0f s), the team's mean: %s.", half,
                         absl::StrJoin(each, ", "));
}

// "Time to BSP's final accuracy 0.7000: BSP 100 s, SSP(4) 60 s, ROG(4) 48 s."
std::string TimeToTargetText(const std::vector<PolicyFigures>& policies,
                             const BenchSettings& settings, std::optional<double> target) {
  if (!target) return "";
  std::vector<std::string> each;
  for (const PolicyFigures& p : policies) {
    each.push_back(absl::StrCat(PolicyLabel(p, settings.staleness), " ",
                                TimeToTargetCell(p.team_accuracy, target)));
  }
  return absl::StrFormat(" Time to %s %.4f: %s.",
                         settings.target ? "the target" : "BSP's final accuracy", *target,
                         absl::StrJoin(each, ", "));
}

// " rogd's model once every robot had finished: BSP 0.70, ...": empty when
// no policy recorded it.
std::string RogdModelText(const std::vector<PolicyFigures>& policies,
                          const BenchSettings& settings) {
  std::vector<std::string> each;
  for (const PolicyFigures& p : policies) {
    if (p.rogd_final_accuracy < 0) continue;
    each.push_back(
        absl::StrFormat("%s %.4f", PolicyLabel(p, settings.staleness), p.rogd_final_accuracy));
  }
  if (each.empty()) return "";
  return absl::StrCat(
      " rogd's model once every robot had finished (exported, scored on the same images): ",
      absl::StrJoin(each, ", "), ".");
}

}  // namespace

std::string AccuracyHeadline(const std::vector<PolicyFigures>& policies,
                             const BenchSettings& settings, std::optional<double> target) {
  const PolicyFigures* rog = FindPolicy(policies, "rog");
  if (rog == nullptr) return "";
  const PolicyFigures* best = BestBaseline(policies);
  std::string lead = "no baseline's final accuracy to compare with";
  if (rog->final_accuracy >= 0 && best != nullptr) {
    lead = absl::StrFormat("**ROG − best baseline %+.2f points** (ROG(%d) %s, %s %s)",
                           100 * (rog->final_accuracy - best->final_accuracy), settings.staleness,
                           FinalAccuracyCell(*rog), PolicyLabel(*best, settings.staleness),
                           FinalAccuracyCell(*best));
  }
  return absl::StrCat(
      "The model the team ends with (accuracy at equal time: the end of the run, after each "
      "robot's final sync; mean (min–max) over robots): ",
      lead, ".", RogdModelText(policies, settings), HalfWayText(policies, settings),
      TimeToTargetText(policies, settings, target), "\n\n");
}

}  // namespace rog
