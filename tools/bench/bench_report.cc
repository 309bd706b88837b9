// Turns one tools/bench.sh results folder into summary.md, CSV time series
// and a gnuplot script (tools/bench.sh runs gnuplot on it).
//
// The folder holds one subfolder per policy (bsp, ssp, rog), each with
// robotN.iters.csv, robotN.acc.csv and robotN.pushes.csv (fmnist_worker --csv_dir) and
// relayN.log (trace_relay's log, which says when it started replaying).
// With --study, the patience study's folders instead (tools/bench.sh
// --study=patience): TIMELINE/POLICY-pSECONDS[-lSTEPS]/, each like a policy
// folder plus workers.json (`rogctl workers --json` at the run's end).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/trace.h"
#include "tools/bench/figures.h"
#include "tools/bench/patience_study.h"
#include "tools/bench/power_model.h"
#include "tools/bench/records.h"
#include "tools/bench/relay_log.h"
#include "tools/bench/repeats.h"
#include "tools/bench/report_text.h"
#include "tools/bench/summary.h"
#include "tools/bench/workers_json.h"

ABSL_FLAG(std::string, results, "", "the results folder tools/bench.sh filled (required)");
ABSL_FLAG(std::string, traces, "tools/traces", "folder of the traces the links replayed");
ABSL_FLAG(std::string, trace_prefix, "outdoors-fast-w",
          "robotN's link replayed TRACES/<prefix>N.tsv");
ABSL_FLAG(double, scale, 1, "the trace scale the links used");
ABSL_FLAG(double, time_scale, 1, "the factor on the traces' time axis the links used");
ABSL_FLAG(int, staleness, 4, "S of SSP and ROG");
ABSL_FLAG(double, adapt_seconds, 0, "seconds of adaptation per policy");
ABSL_FLAG(std::string, profile, "", "the bench.sh profile, for the settings list");
ABSL_FLAG(std::string, command, "tools/bench.sh", "the command that made the results");
ABSL_FLAG(std::string, cpu, "", "the CPU the run had, for the settings list");
ABSL_FLAG(std::string, delay, "5ms", "the one-way delay the links added, for the settings list");
ABSL_FLAG(std::string, links, "",
          "how the links were emulated, for the settings list (default: user-space relays with "
          "--delay)");
ABSL_FLAG(std::string, team, "", "rogd's team settings (patience, detach speedup), for the list");
ABSL_FLAG(double, target, -1, "accuracy target; below 0: BSP's final accuracy");
ABSL_FLAG(std::string, simulator, "", "a file with //tools/sim's output for the same settings");
ABSL_FLAG(double, patience, 0, "with --study: the main patience, whose ROG run the goals use");
ABSL_FLAG(bool, repeats, false,
          "the results folder holds rep1/, rep2/, ... each a bench.sh results folder of the same "
          "settings: write its summary.md over the repeats (mean and range)");
ABSL_FLAG(std::string, title, "", "with --repeats: the summary's title");
ABSL_FLAG(std::string, settings_file, "",
          "with --repeats: a file of more settings lines for the summary, one per line");
ABSL_FLAG(std::string, codec, "fp32", "the codec the runs used, for the settings list");
ABSL_FLAG(bool, paper_goals, false,
          "with --repeats: check the paper's figures as goals (ROG/BSP >= 2.12x, ROG/SSP >= "
          "1.76x, time to BSP's accuracy <= 0.5x BSP's, accuracy within 0.5 points)");
ABSL_FLAG(std::string, power_model, "tools/bench/power_model.txt",
          "the power model of the energy estimate (modelled, not measured): one 'STATE WATTS' "
          "line per state (compute, transmit, stall, detached, other), with its sources; empty: "
          "no energy figures");
ABSL_FLAG(bool, study, false,
          "the patience study (tools/bench.sh --study=patience): read RESULTS/TIMELINE/"
          "POLICY-pSECONDS[-lSTEPS]/ runs and write patience.md, team_*.dat and plots.gp");

namespace fs = std::filesystem;

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "bench_report: %s\n", message.c_str());
  return 1;
}

absl::StatusOr<std::string> Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status Write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", p.string()));
  return absl::OkStatus();
}

// tools/run.sh's team.acc in a policy's folder: rogd's model once every
// robot had finished, scored (one number in [0, 1]); none before it wrote it.
absl::Status ReadRogdModel(const fs::path& dir, rog::PolicyFigures* p) {
  const fs::path path = dir / "team.acc";
  if (!fs::exists(path)) return absl::OkStatus();
  auto text = Read(path);
  if (!text.ok()) return text.status();
  double acc = -1;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*text), &acc) || !(acc >= 0 && acc <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(),
                     ": expected one accuracy between 0 and 1 (tools/run.sh "
                     "writes it), not '",
                     absl::StripAsciiWhitespace(*text),
                     "'; delete the file to report that run without rogd's final model"));
  }
  p->rogd_final_accuracy = acc;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<rog::RobotRun>> LoadPolicy(const fs::path& dir,
                                                      const std::string& trace_prefix) {
  std::vector<rog::RobotRun> runs;
  for (int n = 1;; ++n) {
    const std::string id = absl::StrCat("robot", n);
    const fs::path iters = dir / (id + ".iters.csv");
    if (!fs::exists(iters)) break;
    rog::RobotRun run;
    run.id = id;
    auto it_text = Read(iters);
    if (!it_text.ok()) return it_text.status();
    auto it = rog::ParseIterCsv(*it_text, iters.string());
    if (!it.ok()) return it.status();
    run.iters = std::move(*it);
    const fs::path accp = dir / (id + ".acc.csv");
    auto acc_text = Read(accp);
    if (!acc_text.ok()) return acc_text.status();
    auto acc = rog::ParseAccCsv(*acc_text, accp.string());
    if (!acc.ok()) return acc.status();
    run.acc = std::move(*acc);
    // Robots since EndStep stopped waiting for acks record their pushes
    // apart; older files carry them in the iterations.
    const fs::path pushes = dir / (id + ".pushes.csv");
    if (fs::exists(pushes)) {
      auto text = Read(pushes);
      if (!text.ok()) return text.status();
      auto p = rog::ParsePushCsv(*text, pushes.string());
      if (!p.ok()) return p.status();
      run.pushes = std::move(*p);
    }
    // The link: its trace and when the relay started replaying it.
    auto log = Read(dir / absl::StrCat("relay", n, ".log"));
    const fs::path trace_path =
        fs::path(absl::GetFlag(FLAGS_traces)) / absl::StrCat(trace_prefix, n, ".tsv");
    auto trace_text = Read(trace_path);
    if (log.ok() && trace_text.ok()) {
      auto start = rog::RelayStartUnix(*log);
      auto trace = rog::Trace::Parse(*trace_text, trace_path.string());
      if (!start.ok()) return start.status();
      if (!trace.ok()) return trace.status();
      run.trace = trace->TimeScaled(absl::GetFlag(FLAGS_time_scale));
      run.trace_start_unix = *start;
      // Logs before the delay was printed: the relays' 5 ms default then.
      run.link_delay_s = rog::RelayDelaySeconds(*log).value_or(0.005);
      run.trace_scale = absl::GetFlag(FLAGS_scale);
    }
    runs.push_back(std::move(run));
  }
  if (runs.empty()) {
    return absl::NotFoundError(absl::StrCat("no robot1.iters.csv in ", dir.string()));
  }
  return runs;
}

// accuracy.csv (every evaluation of every robot), team_<policy>.dat (the
// team curve against time and iterations) and breakdown.dat (seconds per
// robot computing, transmitting, stalled, other).
absl::Status WriteSeries(const fs::path& out, const std::vector<rog::PolicyFigures>& figures,
                         const std::vector<std::vector<rog::RobotRun>>& runs) {
  std::string all = "policy,robot,elapsed_s,iteration,accuracy,final\n";
  for (size_t p = 0; p < runs.size(); ++p) {
    std::string team = "# elapsed_s mean_iteration mean_accuracy\n";
    const auto& rs = runs[p];
    size_t n = figures[p].team_accuracy.size();
    for (size_t k = 0; k < n; ++k) {
      double it = 0;
      for (const auto& r : rs) it += r.acc[k].iteration;
      absl::StrAppend(&team, absl::StrFormat("%.3f %.1f %.4f\n", figures[p].team_accuracy[k].first,
                                             it / rs.size(), figures[p].team_accuracy[k].second));
    }
    absl::Status s = Write(out / absl::StrCat("team_", figures[p].policy, ".dat"), team);
    if (!s.ok()) return s;
    for (const auto& r : rs) {
      for (size_t k = 0; k < r.acc.size(); ++k) {
        absl::StrAppend(&all, absl::StrFormat("%s,%s,%.3f,%d,%.4f,%d\n", figures[p].policy, r.id,
                                              r.acc[k].elapsed_s, r.acc[k].iteration,
                                              r.acc[k].accuracy, k + 1 == r.acc.size() ? 1 : 0));
      }
    }
  }
  absl::Status s = Write(out / "accuracy.csv", all);
  if (!s.ok()) return s;
  std::string bars = "# policy compute_s transmit_s stall_s other_s (mean per robot)\n";
  for (const auto& f : figures) {
    double c = 0, t = 0, st = 0, span = 0;
    for (const auto& r : f.robots) {
      c += r.compute_s;
      t += r.transmit_s;
      st += r.stall_s;
      span += r.span_s;
    }
    const double n = std::max<size_t>(1, f.robots.size());
    absl::StrAppend(&bars, absl::StrFormat("%s %.2f %.2f %.2f %.2f\n", f.policy, c / n, t / n,
                                           st / n, std::max(0.0, span - c - t - st) / n));
  }
  return Write(out / "breakdown.dat", bars);
}

std::string GnuplotScript(const std::vector<rog::PolicyFigures>& figures) {
  std::string plot_t, plot_i;
  for (const auto& f : figures) {
    const std::string sep = plot_t.empty() ? "" : ", ";
    absl::StrAppend(&plot_t, sep, "'team_", f.policy, ".dat' using 1:3 with linespoints title '",
                    f.policy, "'");
    absl::StrAppend(&plot_i, sep, "'team_", f.policy, ".dat' using 2:3 with linespoints title '",
                    f.policy, "'");
  }
  return absl::StrCat(
      "# Made by //tools/bench:bench_report; run with gnuplot in the results folder.\n",
      "set terminal pngcairo size 900,540 noenhanced\n", "set grid\n", "set key bottom right\n",
      "set ylabel 'accuracy on degraded test images (team mean)'\n",
      "set output 'accuracy_time.png'\n", "set xlabel 'wall-clock time (s)'\n",
      "set title 'Accuracy against wall-clock time'\n", "plot ", plot_t, "\n",
      "set output 'accuracy_iterations.png'\n", "set xlabel 'iterations (team mean)'\n",
      "set title 'Accuracy against iterations'\n", "plot ", plot_i, "\n",
      "set output 'time_breakdown.png'\n", "set title 'Where each robot''s time went'\n",
      "set ylabel 'seconds per robot'\n", "set xlabel ''\n", "set key outside right top\n",
      "set style data histograms\n", "set style histogram rowstacked\n",
      "set style fill solid 0.8 border -1\n", "set boxwidth 0.6\n",
      "plot 'breakdown.dat' using 2:xtic(1) title 'compute', '' using 3 title 'transmit', "
      "'' using 4 title 'stall', '' using 5 title 'other'\n");
}

// The settings list every summary prints, from the flags; `traces` names
// the trace files, `robots` the team size.
rog::BenchSettings SettingsFromFlags(std::string traces, int robots) {
  rog::BenchSettings settings;
  settings.staleness = absl::GetFlag(FLAGS_staleness);
  settings.codec = absl::GetFlag(FLAGS_codec);
  settings.trace_scale = absl::GetFlag(FLAGS_scale);
  settings.traces = std::move(traces);
  settings.adapt_seconds = absl::GetFlag(FLAGS_adapt_seconds);
  settings.robots = robots;
  settings.cpu = absl::GetFlag(FLAGS_cpu);
  settings.delay = absl::GetFlag(FLAGS_delay);
  settings.links = absl::GetFlag(FLAGS_links);
  settings.team = absl::GetFlag(FLAGS_team);
  settings.profile = absl::GetFlag(FLAGS_profile);
  settings.command = absl::GetFlag(FLAGS_command);
  if (absl::GetFlag(FLAGS_target) >= 0) settings.target = absl::GetFlag(FLAGS_target);
  return settings;
}

// The power model named by --power_model into `settings` (none when the
// flag is empty).
absl::Status LoadPowerModel(rog::BenchSettings* settings) {
  const std::string path = absl::GetFlag(FLAGS_power_model);
  if (path.empty()) return absl::OkStatus();
  auto text = Read(path);
  if (!text.ok()) {
    return absl::NotFoundError(
        absl::StrCat(text.status().message(), " (--power_model; empty for no energy figures)"));
  }
  auto model = rog::ParsePowerModel(*text, path);
  if (!model.ok()) return model.status();
  settings->power = *model;
  return absl::OkStatus();
}

// The simulator's output named by --simulator ("" without the flag).
absl::StatusOr<std::string> SimulatorText() {
  if (absl::GetFlag(FLAGS_simulator).empty()) return std::string();
  return Read(absl::GetFlag(FLAGS_simulator));
}

// The patience study's runs as read: each run's figures, and its robots'
// records under the name TIMELINE_POLICY-pSECONDS[-lSTEPS], in the same order.
struct StudyResults {
  std::vector<rog::StudyRun> runs;
  std::vector<std::pair<std::string, std::vector<rog::RobotRun>>> robot_runs;
};

// Reads one run's folder, RESULTS/TIMELINE/POLICY-pSECONDS[-lSTEPS], into `study`.
absl::Status LoadStudyRun(const fs::path& dir, const char* timeline, StudyResults* study) {
  rog::StudyRun run;
  run.timeline = timeline;
  const std::string name = dir.filename().string();
  std::vector<std::string> parts = absl::StrSplit(name, '-');
  if (parts.size() < 2 || parts[1].empty() || parts[1][0] != 'p' ||
      !absl::SimpleAtod(parts[1].substr(1), &run.patience) ||
      (parts.size() > 2 && (parts[2].empty() || parts[2][0] != 'l' ||
                            !absl::SimpleAtoi(parts[2].substr(1), &run.local_steps)))) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir.string(), ": expected POLICY-pSECONDS[-lSTEPS]"));
  }
  run.policy = parts[0];
  auto r = LoadPolicy(dir, absl::StrCat("outdoors-", timeline, "-w"));
  if (!r.ok()) return r.status();
  run.figures = rog::CombinePolicy(run.policy, *r);
  if (auto json = Read(dir / "workers.json"); json.ok()) {
    auto late = rog::LateRowsFromWorkersJson(*json);
    if (!late.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir.string(), "/workers.json: ", late.status().message()));
    }
    run.figures.late_rows = *late;
  }
  study->robot_runs.emplace_back(absl::StrCat(timeline, "_", name), std::move(*r));
  study->runs.push_back(std::move(run));
  return absl::OkStatus();
}

// Reads every run of RESULTS/fast/ and RESULTS/replayed/, in name order.
absl::Status LoadStudy(const fs::path& results, StudyResults* study) {
  for (const char* timeline : {"fast", "replayed"}) {
    if (!fs::is_directory(results / timeline)) continue;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(results / timeline)) {
      if (e.is_directory()) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& dir : dirs) {
      absl::Status s = LoadStudyRun(dir, timeline, study);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// The runs in patience.md's order.
std::vector<rog::StudyRun> SortedStudyRuns(const std::vector<rog::StudyRun>& runs) {
  // Runs without patience first within a timeline, then by patience.
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto key = [&](const rog::StudyRun& r) {
      const int p = r.policy == "bsp" ? 0 : r.policy == "ssp" ? 1 : 2;
      return std::make_tuple(r.timeline == "fast" ? 0 : 1, r.patience > 0 ? 1 : 0, p, r.patience,
                             r.local_steps);
    };
    return key(runs[a]) < key(runs[b]);
  });
  std::vector<rog::StudyRun> sorted;
  for (size_t i : order) sorted.push_back(runs[i]);
  return sorted;
}

// team_TIMELINE_RUN.dat for every run and plots.gp, which plots them.
absl::Status WriteStudyPlots(const fs::path& results, const StudyResults& study) {
  // Accuracy against wall-clock time, one plot per timeline.
  std::string gp =
      "# Made by //tools/bench:bench_report --study; run with gnuplot in the results folder.\n"
      "set terminal pngcairo size 900,540 noenhanced\nset grid\nset key bottom right\n"
      "set ylabel 'accuracy on degraded test images (team mean)'\n"
      "set xlabel 'wall-clock time (s)'\n";
  for (const char* timeline : {"fast", "replayed"}) {
    std::string plot;
    for (size_t k = 0; k < study.robot_runs.size(); ++k) {
      if (study.runs[k].timeline != timeline) continue;
      const auto curve = rog::TeamAccuracy(study.robot_runs[k].second);
      std::string dat = "# elapsed_s mean_accuracy\n";
      for (const auto& [t, a] : curve) absl::StrAppend(&dat, absl::StrFormat("%.3f %.4f\n", t, a));
      const std::string file = absl::StrCat("team_", study.robot_runs[k].first, ".dat");
      absl::Status w = Write(results / file, dat);
      if (!w.ok()) return w;
      absl::StrAppend(&plot, plot.empty() ? "" : ", ", "'", file,
                      "' using 1:2 with linespoints title '",
                      study.robot_runs[k].first.substr(std::string(timeline).size() + 1), "'");
    }
    if (plot.empty()) continue;
    absl::StrAppend(&gp, "set output 'patience_", timeline, ".png'\n",
                    "set title 'Accuracy against wall-clock time, ", timeline, " timeline'\n",
                    "plot ", plot, "\n");
  }
  return Write(results / "plots.gp", gp);
}

// The patience study: every RESULTS/TIMELINE/POLICY-pSECONDS[-lSTEPS] run.
int Study(const fs::path& results) {
  StudyResults study;
  absl::Status s = LoadStudy(results, &study);
  if (!s.ok()) return Fail(std::string(s.message()));
  if (study.runs.empty()) {
    return Fail(absl::StrCat("no fast/ or replayed/ runs in ", results.string()));
  }
  const std::vector<rog::StudyRun> sorted = SortedStudyRuns(study.runs);
  const rog::BenchSettings settings = SettingsFromFlags(
      absl::StrCat(absl::GetFlag(FLAGS_traces), "/outdoors-{fast,replayed}-w{1..4}.tsv"), 4);
  s = Write(results / "patience.md",
            rog::PatienceMarkdown(sorted, settings, absl::GetFlag(FLAGS_patience)));
  if (!s.ok()) return Fail(std::string(s.message()));
  s = WriteStudyPlots(results, study);
  if (!s.ok()) return Fail(std::string(s.message()));
  std::printf("bench_report: wrote %s/patience.md, team_*.dat, plots.gp\n",
              results.string().c_str());
  return 0;
}

// A profile with repeats: RESULTS/repN/{bsp,ssp,rog}.
int Repeats(const fs::path& results) {
  std::vector<fs::path> reps;
  for (int n = 1; fs::is_directory(results / absl::StrCat("rep", n)); ++n) {
    reps.push_back(results / absl::StrCat("rep", n));
  }
  if (reps.empty()) return Fail(absl::StrCat("no rep1/ in ", results.string()));
  std::vector<std::vector<rog::PolicyFigures>> figures;
  std::string gp =
      "# Made by //tools/bench:bench_report --repeats; run with gnuplot in the results folder.\n"
      "set terminal pngcairo size 900,540 noenhanced\nset grid\nset key bottom right\n"
      "set ylabel 'accuracy on degraded test images (team mean)'\n"
      "set xlabel 'wall-clock time (s)'\nset output 'accuracy_time.png'\n"
      "set title 'Accuracy against wall-clock time, every repeat'\n";
  std::string plot;
  int robots = 0;
  for (size_t r = 0; r < reps.size(); ++r) {
    std::vector<rog::PolicyFigures> rep;
    int color = 0;
    for (const char* policy : {"bsp", "ssp", "rog"}) {
      ++color;
      if (!fs::is_directory(reps[r] / policy)) continue;
      auto runs = LoadPolicy(reps[r] / policy, absl::GetFlag(FLAGS_trace_prefix));
      if (!runs.ok()) return Fail(std::string(runs.status().message()));
      robots = static_cast<int>(runs->size());
      rep.push_back(rog::CombinePolicy(policy, *runs));
      if (absl::Status t = ReadRogdModel(reps[r] / policy, &rep.back()); !t.ok()) {
        return Fail(std::string(t.message()));
      }
      std::string dat = "# elapsed_s mean_accuracy\n";
      for (const auto& [t, a] : rep.back().team_accuracy) {
        absl::StrAppend(&dat, absl::StrFormat("%.3f %.4f\n", t, a));
      }
      const std::string file = absl::StrCat("team_", policy, "_rep", r + 1, ".dat");
      absl::Status w = Write(results / file, dat);
      if (!w.ok()) return Fail(std::string(w.message()));
      absl::StrAppend(&plot, plot.empty() ? "" : ", ", "'", file,
                      "' using 1:2 with linespoints linecolor ", color, " title '", policy,
                      " repeat ", r + 1, "'");
    }
    figures.push_back(std::move(rep));
  }
  rog::BenchSettings settings =
      SettingsFromFlags(absl::StrCat(absl::GetFlag(FLAGS_traces), "/",
                                     absl::GetFlag(FLAGS_trace_prefix), "{1..", robots, "}.tsv"),
                        robots);
  if (absl::Status s = LoadPowerModel(&settings); !s.ok()) return Fail(std::string(s.message()));
  if (!absl::GetFlag(FLAGS_settings_file).empty()) {
    auto text = Read(absl::GetFlag(FLAGS_settings_file));
    if (!text.ok()) return Fail(std::string(text.status().message()));
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      settings.more.emplace_back(line);
    }
  }
  rog::RepeatGoals goals;
  if (absl::GetFlag(FLAGS_paper_goals)) {
    goals.rog_over_bsp = 2.12;
    goals.rog_over_ssp = 1.76;
    goals.time_share_of_bsp = 0.5;
    goals.accuracy_points = 0.5;
    goals.source = "the paper's figures";
  }
  const absl::StatusOr<std::string> sim = SimulatorText();
  if (!sim.ok()) return Fail(std::string(sim.status().message()));
  const std::string title = absl::GetFlag(FLAGS_title).empty()
                                ? std::string("ROG benchmark over repeats")
                                : absl::GetFlag(FLAGS_title);
  absl::StrAppend(&gp, "plot ", plot, "\n");
  for (absl::Status s :
       {Write(results / "summary.md", rog::RepeatsMarkdown(figures, settings, goals, title, *sim)),
        Write(results / "plots.gp", gp)}) {
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  std::printf("bench_report: wrote %s/summary.md, team_*_rep*.dat, plots.gp\n",
              results.string().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes summary.md, accuracy.csv, team_<policy>.dat, breakdown.dat and plots.gp into a "
      "tools/bench.sh results folder.\nUsage: bench_report --results=DIR [--traces=DIR] "
      "[--scale=X] ...");
  absl::ParseCommandLine(argc, argv);
  const fs::path results = absl::GetFlag(FLAGS_results);
  if (results.empty()) return Fail("--results is required (a tools/bench.sh results folder)");
  if (absl::GetFlag(FLAGS_study)) return Study(results);
  if (const double k = absl::GetFlag(FLAGS_time_scale); !(k > 0) || k > 100) {
    return Fail("--time_scale must be > 0 and <= 100 (the links' --time_scale)");
  }
  if (absl::GetFlag(FLAGS_repeats)) return Repeats(results);
  std::vector<rog::PolicyFigures> figures;
  std::vector<std::vector<rog::RobotRun>> runs;
  for (const char* policy : {"bsp", "ssp", "rog"}) {
    if (!fs::is_directory(results / policy)) continue;
    auto r = LoadPolicy(results / policy, absl::GetFlag(FLAGS_trace_prefix));
    if (!r.ok()) return Fail(std::string(r.status().message()));
    figures.push_back(rog::CombinePolicy(policy, *r));
    if (absl::Status t = ReadRogdModel(results / policy, &figures.back()); !t.ok()) {
      return Fail(std::string(t.message()));
    }
    if (auto json = Read(results / policy / "workers.json"); json.ok()) {
      auto causes = rog::StallCausesFromWorkersJson(*json);
      if (!causes.ok()) {
        return Fail(absl::StrCat(policy, "/workers.json: ", causes.status().message()));
      }
      figures.back().stall_cause_s = std::move(*causes);
    }
    runs.push_back(std::move(*r));
  }
  if (figures.empty()) {
    return Fail(absl::StrCat("no bsp/, ssp/ or rog/ folder in ", results.string()));
  }
  const int robots = static_cast<int>(runs[0].size());
  rog::BenchSettings settings =
      SettingsFromFlags(absl::StrCat(absl::GetFlag(FLAGS_traces), "/",
                                     absl::GetFlag(FLAGS_trace_prefix), "{1..", robots, "}.tsv"),
                        robots);
  if (absl::Status s = LoadPowerModel(&settings); !s.ok()) return Fail(std::string(s.message()));
  const absl::StatusOr<std::string> sim = SimulatorText();
  if (!sim.ok()) return Fail(std::string(sim.status().message()));
  // figures.tsv: each policy's iterations/s per robot at full precision,
  // for scripts (bench.sh --study=regime); summary.md rounds them.
  std::string tsv;
  for (const auto& f : figures) {
    absl::StrAppend(&tsv, absl::StrFormat("%s\t%.6f\n", f.policy, f.iterations_per_s));
  }
  for (absl::Status s :
       {Write(results / "summary.md", rog::SummaryMarkdown(figures, settings, *sim)),
        WriteSeries(results, figures, runs), Write(results / "plots.gp", GnuplotScript(figures)),
        Write(results / "figures.tsv", tsv)}) {
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  std::printf(
      "bench_report: wrote %s/summary.md, accuracy.csv, team_*.dat, breakdown.dat, plots.gp\n",
      results.string().c_str());
  return 0;
}
