#include "tools/bench/simulator_output.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "tools/bench/report_text.h"

namespace rog {

std::map<std::string, double> SimulatedUtilisation(const std::string& simulator) {
  std::map<std::string, double> out;
  static constexpr char kKey[] = "the benchmark's link utilisation):";
  const size_t at = simulator.find(kKey);
  if (at == std::string::npos) return out;
  const size_t begin = at + sizeof(kKey) - 1;
  const size_t end = simulator.find('\n', begin);
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(simulator).substr(begin, end == std::string::npos ? end : end - begin),
           ',', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> f = absl::StrSplit(part, ' ', absl::SkipEmpty());
    if (f.size() != 2) continue;
    absl::string_view number = f[1];
    double pct = 0;
    if (absl::ConsumeSuffix(&number, "%") && absl::SimpleAtod(number, &pct) && pct >= 0) {
      out[std::string(f[0])] = pct / 100;
    }
  }
  return out;
}

std::map<std::string, double> SimulatedThroughput(const std::string& simulator) {
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(simulator, '\n')) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 2 || (f[0] != "bsp" && f[0] != "ssp" && f[0] != "rog")) continue;
    double its = 0;
    if (out.count(std::string(f[0])) == 0 && absl::SimpleAtod(f[1], &its) && its >= 0) {
      out[std::string(f[0])] = its;
    }
  }
  return out;
}

void AppendSimulator(std::string* md, const std::string& simulator) {
  if (simulator.empty()) return;
  absl::StrAppend(md,
                  "\n## The simulator on the same settings\n\n"
                  "`//tools/sim` with the same model layout, codec, traces, scales, S and the "
                  "measured mean compute time per iteration:\n\n```\n",
                  simulator, simulator.back() == '\n' ? "" : "\n", "```\n");
}

void AppendRigCheck(std::string* md, const std::vector<PolicyFigures>& policies, int staleness,
                    const std::string& simulator) {
  const std::map<std::string, double> sim = SimulatedUtilisation(simulator);
  const std::map<std::string, double> sim_its = SimulatedThroughput(simulator);
  std::vector<std::string> labels, measured, simulated, its;
  std::vector<std::string> unbounded;
  for (const PolicyFigures& p : policies) {
    const auto it = sim.find(p.policy);
    if (it == sim.end() || p.link_utilisation <= 0) continue;
    if (p.link_utilisation >= kRigShortfall * it->second) continue;
    const auto sim_it = sim_its.find(p.policy);
    const bool known = sim_it != sim_its.end() && sim_it->second > 0;
    if (known && p.iterations_per_s >= sim_it->second) {
      unbounded.push_back(absl::StrFormat("%s (utilisation %s against %s, %.3f it/s against %.3f)",
                                          PolicyLabel(p, staleness), Pct(p.link_utilisation),
                                          Pct(it->second), p.iterations_per_s, sim_it->second));
      continue;
    }
    labels.push_back(PolicyLabel(p, staleness));
    measured.push_back(Pct(p.link_utilisation));
    simulated.push_back(Pct(it->second));
    its.push_back(known ? absl::StrFormat("%.3f against %.3f", p.iterations_per_s, sim_it->second)
                        : absl::StrFormat("%.3f (not simulated)", p.iterations_per_s));
  }
  if (!labels.empty()) {
    absl::StrAppend(
        md, "\n**This machine did not carry the links' rates** under ", absl::StrJoin(labels, ", "),
        ": link utilisation ", absl::StrJoin(measured, ", "), " against the simulator's ",
        absl::StrJoin(simulated, ", "), " on the same traces (below ",
        absl::StrFormat("%.0f%%", 100 * kRigShortfall), " of it)",
        sim_its.empty() ? "" : absl::StrCat(", and iterations/s ", absl::StrJoin(its, ", ")),
        ". At these rates this machine (rogd, the robots and their links share its "
        "cores), not the links' rates, bounded those policies, so their throughput and the ratios "
        "above are the machine's as much as the protocols'. Lower --scale to measure the "
        "protocols.\n");
  }
  if (!unbounded.empty()) {
    absl::StrAppend(
        md, "\nLink utilisation below ", absl::StrFormat("%.0f%%", 100 * kRigShortfall),
        " of the simulator's, but throughput at or above it: ", absl::StrJoin(unbounded, "; "),
        ". The throughput shows no limit of this machine; the utilisation figure "
        "(from acknowledgements) and the simulator disagree there.\n");
  }
}

}  // namespace rog
