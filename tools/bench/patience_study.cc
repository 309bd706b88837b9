#include "tools/bench/patience_study.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace rog {

namespace {

// The runs' timelines, in the order they first appear.
std::vector<std::string> Timelines(const std::vector<StudyRun>& runs) {
  std::vector<std::string> timelines;
  for (const StudyRun& r : runs) {
    if (std::find(timelines.begin(), timelines.end(), r.timeline) == timelines.end()) {
      timelines.push_back(r.timeline);
    }
  }
  return timelines;
}

// The run of `policy` with `patience` on `timeline`; nullptr if there is none.
const StudyRun* FindRun(const std::vector<StudyRun>& runs, absl::string_view timeline,
                        absl::string_view policy, double patience) {
  for (const StudyRun& r : runs) {
    if (r.timeline == timeline && r.policy == policy && r.patience == patience) return &r;
  }
  return nullptr;
}

// A run's name in patience.md, e.g. "ROG(4), patience 0.5s, 2 local steps".
std::string RunName(const StudyRun& r, int staleness) {
  const std::string p = PolicyLabel(r.figures, staleness);
  if (r.patience <= 0) return absl::StrCat(p, ", no patience");
  return absl::StrCat(
      p, absl::StrFormat(", patience %gs", r.patience),
      r.local_steps > 0 ? absl::StrCat(", ", r.local_steps, " local steps") : std::string());
}

// One timeline's section: its heading, its target and a table row per run.
void AppendTimeline(std::string* md, const std::vector<StudyRun>& runs, const std::string& t,
                    int staleness, std::optional<double> target) {
  absl::StrAppend(md, "## ", t, " timeline\n\n");
  if (target) {
    absl::StrAppend(
        md, absl::StrFormat("Target accuracy: %.4f (BSP without patience, final).\n\n", *target));
  }
  absl::StrAppend(md,
                  "| run | it/s per robot | vs. no patience | stall share | detached share | "
                  "local steps | late rows | time to target | final accuracy |\n",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const StudyRun& r : runs) {
    if (r.timeline != t) continue;
    const PolicyFigures& f = r.figures;
    const StudyRun* base = FindRun(runs, t, r.policy, 0);
    const std::string ttt = TimeToTargetCell(f.team_accuracy, target);
    absl::StrAppend(md,
                    absl::StrFormat("| %s | %.2f | %s | %s | %s | %d | %s | %s | %s |\n",
                                    RunName(r, staleness), f.iterations_per_s,
                                    base != nullptr && base != &r
                                        ? Ratio(f.iterations_per_s, base->figures.iterations_per_s)
                                        : "–",
                                    Pct(f.stall_share), Pct(f.detached_share), f.local_steps,
                                    f.late_rows >= 0 ? absl::StrCat(f.late_rows) : "–", ttt,
                                    FinalAccuracyCell(f)));
  }
  absl::StrAppend(md, "\n");
}

// The goals of issue 10 on timeline `t`, for the main patience: ROG with it
// against ROG without, then against BSP; nullopt without those runs.
std::optional<std::string> TimelineGoal(const std::vector<StudyRun>& runs, const std::string& t,
                                        int staleness, double main_patience,
                                        std::optional<double> target) {
  const StudyRun* bsp0 = FindRun(runs, t, "bsp", 0);
  const StudyRun* rog0 = FindRun(runs, t, "rog", 0);
  const StudyRun* rogp = nullptr;
  for (const StudyRun& r : runs) {
    if (r.timeline != t || r.policy != "rog" || r.patience <= 0 || r.local_steps > 0) continue;
    if (rogp == nullptr || r.patience == main_patience) rogp = &r;
  }
  if (rog0 == nullptr || rogp == nullptr) return std::nullopt;
  const double ratio = rog0->figures.iterations_per_s > 0
                           ? rogp->figures.iterations_per_s / rog0->figures.iterations_per_s
                           : 0;
  std::string line =
      absl::StrFormat("%s: %s / ROG without patience = %s it/s", t, RunName(*rogp, staleness),
                      Ratio(rogp->figures.iterations_per_s, rog0->figures.iterations_per_s));
  if (t == "replayed")
    absl::StrAppend(&line, ratio >= 5 ? " (goal ≥ 5×: met)" : " (goal ≥ 5×: not met)");
  if (t == "fast")
    absl::StrAppend(&line, ratio >= 1 ? " (goal: no worse: met)" : " (goal: no worse: not met)");
  if (target && bsp0 != nullptr) {
    auto tb = TimeToAccuracy(bsp0->figures.team_accuracy, *target);
    auto tr = TimeToAccuracy(rogp->figures.team_accuracy, *target);
    absl::StrAppend(&line, "; time to BSP's final accuracy ",
                    tr ? absl::StrFormat("%.0f s", *tr) : "not reached", " vs BSP's ",
                    tb ? absl::StrFormat("%.0f s", *tb) : "not reached");
  }
  if (bsp0 != nullptr && bsp0->figures.final_accuracy >= 0 && rogp->figures.final_accuracy >= 0) {
    absl::StrAppend(&line, absl::StrFormat("; final accuracy %+.2f points vs BSP",
                                           100 * (rogp->figures.final_accuracy -
                                                  bsp0->figures.final_accuracy)));
  }
  return line;
}

// patience.md's last paragraphs: how to read it and the study's settings.
void AppendPatienceFooter(std::string* md, const BenchSettings& settings) {
  absl::StrAppend(
      md, "How to read it: *it/s per robot* as in summary.md (a detached robot that pauses ",
      "counts with its few iterations); *detached share*: BeginStep's wait while rogd had the ",
      "robot detached, over the span; *late rows*: rows rogd folded from robots while they were ",
      "detached; *time to target*: when the team's mean accuracy first reached the target.\n\n",
      "Settings: 4 robots, S=", settings.staleness, ", codec ", settings.codec, ", trace scale ",
      settings.trace_scale, ", ", settings.adapt_seconds, " s of adaptation per run, traces ",
      settings.traces, " (",
      settings.links.empty() ? absl::StrCat("relays, one-way delay ", settings.delay)
                             : settings.links,
      "); CPU: ", settings.cpu, "; command: `", settings.command, "`\n");
}

}  // namespace

std::string PatienceMarkdown(const std::vector<StudyRun>& runs, const BenchSettings& settings,
                             double main_patience) {
  std::string md = "# Team patience: each policy with and without it, on both timelines\n\n";
  std::vector<std::string> goals;
  for (const std::string& t : Timelines(runs)) {
    const StudyRun* bsp0 = FindRun(runs, t, "bsp", 0);
    std::optional<double> target;
    if (bsp0 != nullptr && bsp0->figures.final_accuracy >= 0) {
      target = bsp0->figures.final_accuracy;
    }
    AppendTimeline(&md, runs, t, settings.staleness, target);
    // The goals of issue 10, for the main patience.
    std::optional<std::string> goal =
        TimelineGoal(runs, t, settings.staleness, main_patience, target);
    if (goal) goals.push_back(*goal);
  }
  if (!goals.empty()) {
    absl::StrAppend(&md, "## Goals\n\n");
    for (const std::string& g : goals) absl::StrAppend(&md, "- ", g, "\n");
    absl::StrAppend(&md, "\n");
  }
  AppendPatienceFooter(&md, settings);
  return md;
}

}  // namespace rog
