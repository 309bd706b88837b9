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

}  // namespace rog
