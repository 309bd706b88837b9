#include "tools/bench/power_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace rog {
namespace {

// The states in the file's order, each with its field.
const std::pair<const char*, double PowerModel::*> kStates[] = {
    {"compute", &PowerModel::compute_w}, {"transmit", &PowerModel::transmit_w},
    {"stall", &PowerModel::stall_w},     {"detached", &PowerModel::detached_w},
    {"other", &PowerModel::other_w},
};
constexpr int kStateCount = sizeof(kStates) / sizeof(kStates[0]);

// One "STATE WATTS" line into `m`, marking the state in `seen`.
absl::Status ParseStateLine(absl::string_view line, PowerModel* m, bool* seen) {
  std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.size() != 2) return absl::InvalidArgumentError("expected 'STATE WATTS'");
  double watts = 0;
  if (!absl::SimpleAtod(words[1], &watts) || !std::isfinite(watts) || watts < 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", words[1], "' is not a power in watts"));
  }
  for (int k = 0; k < kStateCount; ++k) {
    if (words[0] != kStates[k].first) continue;
    if (seen[k]) return absl::InvalidArgumentError(absl::StrCat(words[0], " given twice"));
    seen[k] = true;
    m->*kStates[k].second = watts;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown state '", words[0], "' (compute, transmit, stall, detached, other)"));
}

}  // namespace

absl::StatusOr<PowerModel> ParsePowerModel(absl::string_view text, absl::string_view name) {
  PowerModel m;
  bool seen[kStateCount] = {};
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    absl::Status s = ParseStateLine(line, &m, seen);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, " line ", n, ": ", s.message()));
    }
  }
  for (int k = 0; k < kStateCount; ++k) {
    if (!seen[k]) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": no line for ", kStates[k].first));
    }
  }
  return m;
}

std::string PowerModelLine(const PowerModel& m) {
  std::string line;
  for (const auto& [state, field] : kStates) {
    absl::StrAppend(&line, line.empty() ? "" : ", ", state, absl::StrFormat(" %g W", m.*field));
  }
  return line;
}

double MeanWatts(const PowerModel& m, double compute, double transmit, double stall,
                 double detached) {
  const double other = std::max(0.0, 1.0 - compute - transmit - stall - detached);
  return compute * m.compute_w + transmit * m.transmit_w + stall * m.stall_w +
         detached * m.detached_w + other * m.other_w;
}

std::optional<PolicyEnergy> EnergyToTarget(const PolicyFigures& p, const PowerModel& m,
                                           std::optional<double> target) {
  if (!target) return std::nullopt;
  const std::optional<double> t = TimeToAccuracy(p.team_accuracy, *target);
  if (!t) return std::nullopt;
  PolicyEnergy e;
  e.team = *t * MeanWatts(m, p.compute_share, p.transmit_share, p.stall_share, p.detached_share);
  e.min = e.max = e.team;
  bool first = true;
  for (const RobotFigures& r : p.robots) {
    if (!(r.span_s > 0)) continue;
    const double j = *t * MeanWatts(m, r.compute_s / r.span_s, r.transmit_s / r.span_s,
                                    r.stall_s / r.span_s, r.detached_s / r.span_s);
    e.min = first ? j : std::min(e.min, j);
    e.max = first ? j : std::max(e.max, j);
    first = false;
  }
  return e;
}

std::optional<EnergyRatio> RogEnergyRatio(const std::vector<PolicyFigures>& policies,
                                          const PowerModel& m, std::optional<double> target) {
  std::optional<double> rog;
  std::optional<EnergyRatio> best;
  double best_j = 0;
  for (const PolicyFigures& p : policies) {
    const std::optional<PolicyEnergy> e = EnergyToTarget(p, m, target);
    if (!e) continue;
    if (p.policy == "rog") {
      rog = e->team;
    } else if ((p.policy == "bsp" || p.policy == "ssp") && (!best || e->team < best_j)) {
      best = EnergyRatio{0, p.policy};
      best_j = e->team;
    }
  }
  if (!rog || !best || !(best_j > 0)) return std::nullopt;
  best->ratio = *rog / best_j;
  return best;
}

}  // namespace rog
