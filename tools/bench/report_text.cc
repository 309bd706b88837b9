#include "tools/bench/report_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

std::string FinalAccuracyCell(const PolicyFigures& p) {
  std::string acc = "–";
  if (p.final_accuracy >= 0) {
    acc = absl::StrFormat("%.4f (%.4f–%.4f)", p.final_accuracy, p.final_accuracy_min,
                          p.final_accuracy_max);
  }
  return acc;
}

}  // namespace rog
