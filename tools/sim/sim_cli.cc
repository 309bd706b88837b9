// rog sim: the deterministic simulator (rogd's engine core and the SDK's
// protocol on simulated links, sim/simulator.h) on the command line. Runs
// the same workload under each policy given in --sync and prints one table,
// so the policies are compared on identical traces, seeds, model and
// compute. sim.cc and fmnist_sim.cc are its two mains.
#include "tools/sim/sim_cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/codec.h"
#include "common/goodput.h"
#include "common/mta.h"
#include "common/staleness.h"
#include "common/trace.h"
#include "sim/rate_bound.h"
#include "sim/simulator.h"

ABSL_FLAG(std::string, sync, "bsp,ssp,rog", "Policies to run, comma-separated: bsp, ssp, rog");
ABSL_FLAG(uint32_t, staleness, 4, "Staleness bound S for ssp and rog (bsp uses 0)");
ABSL_FLAG(uint32_t, workers, 4, "Number of workers (1..64)");
ABSL_FLAG(std::string, traces, "tools/traces",
          "Bandwidth traces: a directory (its *.tsv files whose name contains "
          "--trace_filter, sorted) or comma-separated files; one per worker, cycled");
ABSL_FLAG(std::string, trace_filter, "fast",
          "With a --traces directory: use files whose name contains this");
ABSL_FLAG(double, trace_scale, 1.0, "Scale factor applied to every trace's rate");
ABSL_FLAG(double, trace_time_scale, 1.0,
          "Multiply every trace's time axis (0.2: each sample lasts a fifth of its time), as "
          "the links' --time_scale does");
ABSL_FLAG(double, seconds, 300, "Simulated training time in seconds");
ABSL_FLAG(uint64_t, seed, 1,
          "Random seed (compute jitter, updates, initial values; fmnist_sim: also the "
          "pretrained model's cache file, the degradation, the shards and the batches, as "
          "fmnist_worker's --seed)");
ABSL_FLAG(double, compute_seconds, 1.0, "Mean compute time per iteration, seconds");
ABSL_FLAG(double, solve_trace_scale, 0,
          "If > 0: print the --trace_scale at which pushing plus pulling the whole model "
          "(--model, --codec) at the traces' time-weighted median rate takes this multiple of "
          "--compute_seconds, then exit (tools/bench.sh --profile=paper uses 0.67)");
ABSL_FLAG(double, compute_jitter, 0.1, "Compute time jitter, ± fraction (uniform)");
ABSL_FLAG(std::string, codec, "fp32", "Row codec: fp32, bf16, int8, sign");
ABSL_FLAG(std::string, model, "cnn",
          "Synthetic model layout: cnn (1.7 MB), fmnist (the main job's CNN, 82 KB), convmlp "
          "(fmnist_worker --model=convmlp, 3.2 MB) or tiny; fmnist_sim: fmnist (its "
          "default) or convmlp");
ABSL_FLAG(uint32_t, batch_bytes, 16384, "Largest payload of one row batch, bytes");
ABSL_FLAG(double, batch_seconds, rog::kDefaultBatchSeconds,
          "Each row batch carries at most this many seconds of its link's measured goodput (at "
          "least 2 KiB, at most --batch_bytes; rogd's and the SDK's default); 0: --batch_bytes");
ABSL_FLAG(bool, return_after_share, true,
          "ROG: EndIteration returns once the MTA share is on its way; the rest of the window "
          "streams in the background (the SDK's ProtocolOptions::return_after_share)");
ABSL_FLAG(bool, share_in_background, true,
          "ROG, with --return_after_share: the MTA share streams in the background too, so "
          "EndIteration waits for the mandatory rows alone (the SDK's "
          "ProtocolOptions::share_in_background)");
ABSL_FLAG(std::string, drain, "",
          "What each worker's final flush pushes of what it still holds once training ends "
          "(the SDK's WorkerOptions::drain, Worker::Finish): average (ROG: 1/N of it, the rest "
          "leaves its replica) or sum (all of it). Empty: average in fmnist_sim (the SDK's "
          "default), sum with integer updates (their conservation check is exact only then)");
ABSL_FLAG(bool, stale_weight, false,
          "Each worker's update weighted per row by 1 / (1 + s), s the iterations of the team's "
          "updates the row lacked when the iteration began (StaleWeight in "
          "common/protocol_rules.h). Rejected for the SDK: it lowered the final model "
          "(issue 58, results/2026-12-04-stale-weight-55016c8). fmnist_sim only: the integer "
          "updates' checks are exact only unweighted");
ABSL_FLAG(bool, push_waits_for_acks, false,
          "Experiment: a worker's EndIteration returns only once every batch it sent is "
          "acknowledged, so its transfers do not overlap its next compute (a baseline as the "
          "paper ran it; the SDK returns once the push is handed off)");
ABSL_FLAG(bool, downlink_lookahead, true,
          "ROG: while a worker computes, rogd sends it first the rows it will need to start its "
          "next iteration as soon as it holds them (rogd's EngineOptions::downlink_lookahead)");
ABSL_FLAG(bool, push_ahead, false,
          "ROG: while a worker computes, rogd asks the holders at most one iteration behind it "
          "for the rows it will need to start its next iteration (PushNow.ahead: the holder sends "
          "them first within its window, never past it) instead of waiting for its stall (rogd's "
          "EngineOptions::push_ahead)");
ABSL_FLAG(bool, ask_before_report, false,
          "A worker that finished an iteration without the rows it needs to start the next: "
          "rogd asks their holders for them then (PushNow, as its stall would) instead of when its "
          "stall report arrives behind its push (rogd's EngineOptions::ask_before_report)");
ABSL_FLAG(
    bool, send_whole_when_it_fits, false,
    "ROG: a worker at the slowest clock sends, and rogd sends it, every row of the plan when "
    "they fit the in-flight cap or the window at the measured goodput, not only the mandatory "
    "rows and the MTA share (the SDK's and rogd's send_whole_when_it_fits)");
ABSL_FLAG(double, link_delay, 0.005,
          "One-way delay of every link, each direction, seconds (tools/bench.sh's relays: 0.005)");
ABSL_FLAG(double, detach_speedup, 0,
          "With --patience: detach the slowest attached worker when the team would run this "
          "many times as many iterations per second without it (0: off)");
ABSL_FLAG(double, patience, 0,
          "Team patience in seconds, at least (0: off, the paper's behaviour); rogd's --patience. "
          "The patience is the larger of this and --patience_iterations compute times per "
          "iteration. ROG's window never exceeds it and ignores links that cannot move their MTA "
          "share within it; a worker stalled at the bound this long detaches the workers it "
          "waits for (every policy; at twice the patience those whose uplink brought their MTA "
          "share within the patience). Detached workers drain in the background and reattach, once "
          "drained, when their goodput moves their MTA share within patience/2 for 1 s. Adds the "
          "columns detached share, detaches/reattaches and late rows");
ABSL_FLAG(double, patience_iterations, rog::kPatienceIterations,
          "With --patience: rogd's --patience_iterations (0: --patience alone)");
ABSL_FLAG(uint32_t, detached_local_steps, 0,
          "With --patience: local iterations a detached worker may run per detachment "
          "(0: it pauses)");
ABSL_FLAG(double, score_every, 10,
          "fmnist_sim: seconds of training time between scores of every replica");
ABSL_FLAG(
    bool, rate_bound, false,
    "After the table, each policy's rate against how fast any protocol under its staleness "
    "bound could iterate on the same links (sim/rate_bound.h: rows moved as a fluid, no cost "
    "per message), with two schedules a protocol can run: every row in turn on every link, "
    "and the whole model pushed after each compute with the next compute after it (SSP as the "
    "paper ran it)");
ABSL_FLAG(bool, transitions, false,
          "With --patience: print each worker's detached share, and every detach and reattach with "
          "its worker and reason");

namespace {

std::string RepoPath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  // `bazel run` starts in the runfiles tree; resolve against the workspace.
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    return (std::filesystem::path(ws) / path).string();
  }
  return path;
}

absl::StatusOr<rog::Trace> LoadTrace(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read trace file ", file,
                                            "; check --traces (see tools/traces/README.md)"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return rog::Trace::Parse(text.str(), file);
}

absl::StatusOr<std::vector<rog::Trace>> LoadTraces(const std::string& spec,
                                                   const std::string& filter) {
  std::vector<std::string> files;
  const std::string path = RepoPath(spec);
  std::error_code ec;
  if (spec.find(',') == std::string::npos && std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() == ".tsv" && name.find(filter) != std::string::npos) {
        files.push_back(entry.path().string());
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      return absl::NotFoundError(absl::StrCat("no *.tsv file containing '", filter, "' in ", path,
                                              "; check --traces and --trace_filter"));
    }
  } else {
    for (absl::string_view f : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
      files.push_back(RepoPath(std::string(f)));
    }
  }
  std::vector<rog::Trace> traces;
  for (const std::string& f : files) {
    absl::StatusOr<rog::Trace> t = LoadTrace(f);
    if (!t.ok()) return t.status();
    traces.push_back(*std::move(t));
  }
  return traces;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

// The binary's name in messages.
std::string& Program() {
  static std::string name = "sim";
  return name;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", Program().c_str(), std::string(status.message()).c_str());
  return 2;
}

// The policies of --sync, in the order given.
absl::StatusOr<std::vector<rog::SyncPolicy>> PoliciesFromFlags() {
  std::vector<rog::SyncPolicy> policies;
  for (absl::string_view p : absl::StrSplit(absl::GetFlag(FLAGS_sync), ',', absl::SkipEmpty())) {
    absl::StatusOr<rog::SyncPolicy> policy = rog::ParseSyncPolicy(p);
    if (!policy.ok()) return policy.status();
    policies.push_back(*policy);
  }
  return policies;
}

// The traces of --traces and --trace_filter, with --trace_time_scale applied.
absl::StatusOr<std::vector<rog::Trace>> TracesFromFlags() {
  absl::StatusOr<std::vector<rog::Trace>> traces =
      LoadTraces(absl::GetFlag(FLAGS_traces), absl::GetFlag(FLAGS_trace_filter));
  if (!traces.ok()) return traces.status();
  const double time_scale = absl::GetFlag(FLAGS_trace_time_scale);
  if (!(time_scale > 0) || time_scale > 100) {
    return absl::InvalidArgumentError("--trace_time_scale must be > 0 and <= 100");
  }
  for (rog::Trace& t : *traces) t = t.TimeScaled(time_scale);
  return traces;
}

// --solve_trace_scale: prints the trace scale at which moving the whole
// model both ways at the traces' median rate takes `ratio` times the compute.
int SolveTraceScale(double ratio, rog::Codec codec, const rog::Layout& layout,
                    const std::vector<rog::Trace>& traces) {
  const double compute = absl::GetFlag(FLAGS_compute_seconds);
  const double median = rog::Trace::MedianMbit(traces);
  if (!(ratio > 0) || !(compute > 0) || !(median > 0)) {
    return Fail(absl::InvalidArgumentError(
        "--solve_trace_scale needs a ratio > 0, --compute_seconds > 0 and traces whose "
        "median rate is above 0"));
  }
  uint64_t bytes = 0;
  for (const rog::RowInfo& r : layout.rows()) bytes += rog::EncodedSize(codec, r.numel);
  // Both ways: the push and the pull of every row, in the codec's bytes.
  const double seconds_at_scale_1 = 2.0 * bytes / (median * 1e6 / 8);
  const double scale = seconds_at_scale_1 / (ratio * compute);
  std::printf(
      "trace_scale %.6g: the whole model (%s, codec %s, %.3f MB encoded) pushed and pulled "
      "at the traces' median %.3f Mbit/s x %.6g takes %.3f s = %.2f x the %.3f s compute\n",
      scale, absl::GetFlag(FLAGS_model).c_str(), std::string(rog::CodecName(codec)).c_str(),
      bytes / 1e6, median, scale, seconds_at_scale_1 / scale, ratio, compute);
  return 0;
}

// rogd's options from the flags (the policy aside; the simulator sets the
// team size, the lease and the clock).
rog::EngineOptions EngineFromFlags(rog::Codec codec) {
  rog::EngineOptions e;
  e.staleness = absl::GetFlag(FLAGS_staleness);
  e.codec = codec;
  e.batch_bytes = absl::GetFlag(FLAGS_batch_bytes);
  e.batch_seconds = absl::GetFlag(FLAGS_batch_seconds);
  e.downlink_lookahead = absl::GetFlag(FLAGS_downlink_lookahead);
  e.push_ahead = absl::GetFlag(FLAGS_push_ahead);
  e.ask_before_report = absl::GetFlag(FLAGS_ask_before_report);
  e.send_whole_when_it_fits = absl::GetFlag(FLAGS_send_whole_when_it_fits);
  e.patience = absl::GetFlag(FLAGS_patience);
  e.patience_iterations = absl::GetFlag(FLAGS_patience_iterations);
  e.detach_speedup = absl::GetFlag(FLAGS_detach_speedup);
  e.detached_local_steps = absl::GetFlag(FLAGS_detached_local_steps);
  return e;
}

// The simulation every policy shares, from the flags (the policy aside):
// rogd's options, the SDK's (--batch_bytes, --batch_seconds and
// --send_whole_when_it_fits are rogd's and the SDK's alike) and the
// simulation's own.
absl::StatusOr<rog::SimConfig> ConfigFromFlags(rog::Codec codec,
                                               const std::vector<rog::Trace>& traces,
                                               bool learning) {
  rog::SimConfig base;
  const std::string drain = absl::GetFlag(FLAGS_drain);
  if (drain == "average") {
    base.drain = rog::DrainRule::kAverage;
  } else if (drain == "sum") {
    base.drain = rog::DrainRule::kSum;
  } else if (drain.empty()) {
    base.drain = learning ? rog::ProtocolOptions().drain : rog::DrainRule::kSum;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--drain must be average or sum (empty: the default), not '", drain, "'"));
  }
  base.stale_weight = absl::GetFlag(FLAGS_stale_weight);
  if (base.stale_weight && !learning) {
    return absl::InvalidArgumentError(
        "--stale_weight needs a learning task (tools/sim/fmnist_sim): the integer updates' "
        "conservation checks are exact only unweighted");
  }
  base.engine = EngineFromFlags(codec);
  base.batch_bytes = base.engine.batch_bytes;
  base.batch_seconds = base.engine.batch_seconds;
  base.send_whole_when_it_fits = base.engine.send_whole_when_it_fits;
  base.return_after_share = absl::GetFlag(FLAGS_return_after_share);
  base.share_in_background = absl::GetFlag(FLAGS_share_in_background);
  base.workers = absl::GetFlag(FLAGS_workers);
  base.seconds = absl::GetFlag(FLAGS_seconds);
  base.seed = absl::GetFlag(FLAGS_seed);
  base.compute_seconds = absl::GetFlag(FLAGS_compute_seconds);
  base.compute_jitter = absl::GetFlag(FLAGS_compute_jitter);
  base.traces = traces;
  base.trace_scale = absl::GetFlag(FLAGS_trace_scale);
  base.link_delay = absl::GetFlag(FLAGS_link_delay);
  base.push_waits_for_acks = absl::GetFlag(FLAGS_push_waits_for_acks);
  base.score_every = absl::GetFlag(FLAGS_score_every);
  if (!(base.engine.patience >= 0)) {
    return absl::InvalidArgumentError("--patience must be >= 0 seconds (0: off)");
  }
  if (!(base.score_every >= 0.01) || base.seconds / base.score_every > 100000) {
    return absl::InvalidArgumentError(
        "--score_every must be at least 0.01 (seconds) and leave at most 100,000 scores in "
        "--seconds");
  }
  return base;
}

// The lines above the table: the model and settings, then each worker's link.
void PrintSettings(const rog::Layout& layout, const rog::SimConfig& base) {
  std::printf(
      "model %s: %zu tensors, %zu rows, %.2f MB fp32 | %zu workers | S=%u (MTA %.3f) | "
      "codec %s | %.0f s | compute %.2f s ±%.0f%% | link delay %.0f ms | seed %llu\n",
      absl::GetFlag(FLAGS_model).c_str(), layout.tensors().size(), layout.num_rows(),
      layout.total_numel() * 4 / 1e6, base.workers, base.engine.staleness,
      rog::MinimumTransmissionAmount(base.engine.staleness),
      std::string(rog::CodecName(base.engine.codec)).c_str(), base.seconds, base.compute_seconds,
      base.compute_jitter * 100, 1e3 * base.link_delay, static_cast<unsigned long long>(base.seed));
  if (base.drain == rog::DrainRule::kAverage) {
    std::printf(
        "  drain averaged: under ROG each worker's final flush pushes 1/%zu of what it "
        "still holds\n",
        base.workers);
  }
  if (base.stale_weight) {
    std::printf(
        "  stale weight: each row's part of a worker's update weighted 1/(1 + the iterations "
        "of the team's updates it lacked)\n");
  }
  const rog::EngineOptions& e = base.engine;
  if (e.patience > 0) {
    std::printf(
        "  team patience %.3g s or %.3g compute times per iteration if longer, detached workers "
        "run up to %u local steps\n",
        e.patience, e.patience_iterations, e.detached_local_steps);
    if (e.detach_speedup > 0) {
      std::printf(
          "  team pace: the slowest link detaches when the team would run %.3gx as fast "
          "without it\n",
          e.detach_speedup);
    }
  }
  if (base.traces.empty())
    std::printf("  every worker: a constant 100 Mbit/s link (no --traces)\n");
  for (size_t w = 0; w < base.workers && !base.traces.empty(); ++w) {
    const rog::Trace& t = base.traces[w % base.traces.size()];
    std::printf("  worker %zu: %s (mean %.2f Mbit/s × %.3g)\n", w,
                std::filesystem::path(t.name()).filename().c_str(), t.mean_mbit(),
                base.trace_scale);
  }
}

// The table's two heading lines.
void PrintTableHead(bool patience) {
  // Without patience the table is exactly what it always was (tools/bench.sh
  // embeds it); with patience three columns come before the per-worker ones.
  const std::string extra_head1 =
      patience ? absl::StrFormat(" %8s %9s %8s", "detached", "detaches/", "late") : "";
  const std::string extra_head2 =
      patience ? absl::StrFormat(" %8s %9s %8s", "share", "reattach.", "rows") : "";
  std::printf("\n%-6s %7s %8s %8s %8s %7s %7s %7s %8s %8s %8s %8s%s %s\n", "policy", "it/s",
              "compute", "transmit", "stall", "stalls", "stale", "stale", "MB-up", "MB-down",
              "oversh.", "oversh.", extra_head1.c_str(), "per-worker it/s");
  std::printf("%-6s %7s %8s %8s %8s %7s %7s %7s %8s %8s %8s %8s%s\n", "", "", "share", "share",
              "share", "", "mean", "max", "", "", "p50 ms", "p99 ms", extra_head2.c_str());
}

// One policy's row of the table.
void PrintRow(rog::SyncPolicy policy, const rog::SimReport& r, bool patience) {
  std::vector<double> overshoots;
  std::vector<std::string> per_worker;
  double stale_sum = 0;
  uint64_t stale_max = 0;
  double compute = 0, transmit = 0;
  for (const rog::SimWorkerReport& w : r.workers) {
    compute += w.compute_seconds;
    transmit += w.transmit_seconds;
    overshoots.insert(overshoots.end(), w.overshoots.begin(), w.overshoots.end());
    per_worker.push_back(absl::StrFormat("%.3f", w.iterations / r.seconds));
    stale_sum += w.mean_staleness;
    stale_max = std::max(stale_max, w.max_staleness);
  }
  const bool has_window = !overshoots.empty();
  const double worker_seconds = r.seconds * r.workers.size();
  // Staleness is counted from the integer updates' markers: none with a
  // learning task.
  const bool counted = r.config.learning == nullptr;
  const std::string extra =
      patience ? absl::StrFormat(" %7.1f%% %9s %8d", 100 * r.detached_share(),
                                 absl::StrCat(r.detaches(), "/", r.reattaches()), r.late_rows())
               : "";
  std::printf(
      "%-6s %7.3f %7.1f%% %7.1f%% %7.1f%% %7llu %7s %7s %8.1f %8.1f %8s %8s%s %s\n",
      std::string(rog::SyncPolicyName(policy)).c_str(), r.iterations_per_second(),
      100 * compute / worker_seconds, 100 * transmit / worker_seconds, 100 * r.stall_share(),
      static_cast<unsigned long long>(r.stalls()),
      counted ? absl::StrFormat("%.2f", stale_sum / r.workers.size()).c_str() : "-",
      counted ? absl::StrCat(stale_max).c_str() : "-", r.bytes_up() / 1e6, r.bytes_down() / 1e6,
      has_window ? absl::StrFormat("%.0f", 1e3 * Percentile(overshoots, 0.5)).c_str() : "-",
      has_window ? absl::StrFormat("%.0f", 1e3 * Percentile(overshoots, 0.99)).c_str() : "-",
      extra.c_str(), absl::StrJoin(per_worker, " ").c_str());
}

// With --transitions: every detach and reattach of the run, under its row.
void PrintTransitions(const rog::SimReport& r) {
  std::vector<std::string> shares;
  for (size_t w = 0; w < r.workers.size(); ++w) {
    shares.push_back(absl::StrFormat(
        "w%zu %.1f%%", w, r.seconds > 0 ? 100 * r.workers[w].detached_seconds / r.seconds : 0.0));
  }
  std::printf("       detached share per worker: %s\n", absl::StrJoin(shares, ", ").c_str());
  for (const rog::SimTransition& t : r.transitions) {
    std::printf("       %9.3f s  w%zu %s: %s\n", t.time, t.worker,
                t.attached ? "reattached" : "detached", t.reason.c_str());
  }
}

// Prints a line if the run broke the staleness bound or lost updates, and
// returns false; with a lossy codec, where neither is checked, prints what
// the replicas differ by and returns true.
bool CheckInvariants(const rog::SimConfig& cfg, const rog::SimReport& r) {
  if (cfg.learning != nullptr) {
    // Real steps: no markers to count versions with, and float sums.
    std::printf(
        "       learning task: bound not checked; replica error %g, sum error %g (largest "
        "update element %g)\n",
        r.max_replica_error, r.max_sum_error, r.max_update_element);
    return true;
  }
  if (!rog::IsLossless(cfg.engine.codec)) {
    // The simulator counts versions exactly only without coding losses:
    // it does not check the bound, and a replica differs by what the codec
    // has not sent yet.
    std::printf("       lossy codec: bound not checked; replica error %g, sum error %g\n",
                r.max_replica_error, r.max_sum_error);
    return true;
  }
  if (r.bound_violations == 0 && r.max_replica_error == 0 && r.max_sum_error == 0) return true;
  std::printf("       ! bound violations %llu of %llu checks, replica error %g, sum error %g\n",
              static_cast<unsigned long long>(r.bound_violations),
              static_cast<unsigned long long>(r.bound_checks), r.max_replica_error,
              r.max_sum_error);
  return false;
}

// With a learning task: the team's mean score over time, at the end of the
// training time, and of rogd's model after the drain.
void PrintScores(const rog::SimReport& r) {
  std::vector<std::string> curve;
  double last = -1;
  for (const rog::SimScore& s : r.scores) {
    if (s.time == last) continue;
    last = s.time;
    curve.push_back(absl::StrFormat("%g s %.4f", s.time, r.team_score(s.time)));
  }
  std::printf("       score, team mean: %s\n", absl::StrJoin(curve, ", ").c_str());
  std::printf(
      "       score at the end of training %.4f (mean of the replicas), after the drain %.4f "
      "(rogd's model)\n",
      r.team_score(r.seconds), r.final_score);
  std::printf(
      "       rogd's model when training stopped %.4f; with the drain's updates averaged over the "
      "workers instead of summed %.4f\n",
      r.stopped_score, r.averaged_drain_score);
}

// The first score time at which the team's mean reached `target` (-1:
// never during the training time).
double TimeToScore(const rog::SimReport& r, double target) {
  for (const rog::SimScore& s : r.scores) {
    if (r.team_score(s.time) >= target) return s.time;
  }
  return -1;
}

// With a learning task and BSP among the policies: when each policy's team
// first reached BSP's final score (as the benchmark's "time to BSP's final
// accuracy", at the scores' resolution).
void PrintTimesToBspScore(const std::vector<std::pair<rog::SyncPolicy, rog::SimReport>>& runs) {
  double target = -1;
  for (const auto& [policy, r] : runs) {
    if (policy == rog::SyncPolicy::kBsp) target = r.final_score;
  }
  if (target < 0) return;
  std::printf("time to BSP's final score %.4f (team mean, every %g s):", target,
              runs.front().second.config.score_every);
  for (const auto& [policy, r] : runs) {
    const double t = TimeToScore(r, target);
    std::printf(" %s %s", std::string(rog::SyncPolicyName(policy)).c_str(),
                t < 0 ? "not reached" : absl::StrFormat("%g s", t).c_str());
  }
  std::printf("\n");
}

// One policy's line of the stall causes table.
std::string StallCauses(rog::SyncPolicy policy, const rog::SimReport& r) {
  const double worker_seconds = r.seconds * r.workers.size();
  double cause[rog::kStallCauses] = {0, 0, 0, 0};
  double stall = 0, report = 0;
  for (const rog::SimWorkerReport& w : r.workers) {
    for (int c = 0; c < rog::kStallCauses; ++c) cause[c] += w.stall_cause_seconds[c];
    stall += w.stall_seconds;
    report += w.stall_report_seconds;
  }
  std::string line = absl::StrFormat("%-6s", std::string(rog::SyncPolicyName(policy)));
  double seen = 0;
  for (rog::StallCause c : rog::kStallPath) {
    absl::StrAppend(&line, absl::StrFormat(" %13.1f%%", 100 * cause[c] / worker_seconds));
    seen += cause[c];
  }
  // What rogd did not see: the reports' way, and the rest (the last rows'
  // way after rogd sent them).
  const double rows_way = std::max(0.0, stall - seen - report);
  absl::StrAppend(&line, absl::StrFormat(" %13.1f%% %13.1f%%", 100 * report / worker_seconds,
                                         100 * rows_way / worker_seconds));
  return line;
}

// One policy's uplink utilisation while pushing, as the benchmark's "link
// utilisation" (UplinkUse): "ssp 44.3%".
std::string UplinkUtilisation(rog::SyncPolicy policy, const rog::SimReport& r) {
  uint64_t bytes = 0;
  double capacity = 0;
  for (const rog::SimWorkerReport& w : r.workers) {
    bytes += w.uplink_acked_bytes;
    capacity += w.uplink_capacity_bytes;
  }
  return absl::StrFormat("%s %s", std::string(rog::SyncPolicyName(policy)),
                         capacity > 0 ? absl::StrFormat("%.1f%%", 100 * bytes / capacity) : "-");
}

// The iterations per second of BSP, SSP and ROG (0: not run).
struct Throughputs {
  double bsp = 0, ssp = 0, rog = 0;
};

// The lines below the table: stall causes, ROG's ratios and the invariants.
void PrintSummary(const std::vector<std::string>& causes, const std::vector<std::string>& uses,
                  const Throughputs& ips, bool patience, bool lossless, bool learning, bool ok) {
  std::printf(
      "\nstall share by what the stalled worker waited for: a peer still computing the\n"
      "iteration the bound needs, rogd's ask to a peer that has the rows (PushNow, until the\n"
      "first row asked arrives), the rest of a peer's push, rogd's delivery of rows it holds;\n"
      "then what rogd did not see: the stall report's way to rogd, and the rest (the last\n"
      "rows' way after rogd sent them)\n"
      "policy  peer compute    peer asked   peer uplink      downlink  report's way    rows' "
      "way\n");
  for (const std::string& line : causes) std::printf("%s\n", line.c_str());
  std::printf(
      "\nuplink utilisation while pushing (bytes acknowledged over what the link could\n"
      "carry from each push's start to its last acknowledgement, less the round trip's\n"
      "propagation; the benchmark's link utilisation): %s\n\n",
      absl::StrJoin(uses, ", ").c_str());
  if (ips.rog > 0 && ips.bsp > 0) std::printf("ROG/BSP throughput: %.2fx\n", ips.rog / ips.bsp);
  if (ips.rog > 0 && ips.ssp > 0) std::printf("ROG/SSP throughput: %.2fx\n", ips.rog / ips.ssp);
  if (learning) {
    std::printf(
        "invariants: not checked with a learning task (the staleness bound and exact "
        "conservation are checked with integer updates, //tools/sim)\n");
    return;
  }
  if (!lossless) {
    std::printf(
        "invariants: not checked with a lossy codec (the staleness bound and exact "
        "conservation are checked with fp32)\n");
    return;
  }
  std::printf(
      "invariants (staleness bound at every compute start%s, exact conservation after "
      "draining): %s\n",
      patience ? " among attached workers" : "", ok ? "hold" : "VIOLATED");
}

// --rate_bound: each policy's simulated rate against the rate bounds of its
// staleness rule on the same links, from the traces' time its team started.
absl::Status PrintRateBounds(const std::vector<std::pair<rog::SyncPolicy, double>>& runs,
                             const std::vector<double>& starts, const rog::Layout& layout,
                             const rog::SimConfig& base) {
  std::printf(
      "\nrate bound on the same links, it/s (sim/rate_bound.h: rows moved as a fluid, no cost\n"
      "per message, no jitter): any protocol under the policy's staleness bound; every row in\n"
      "turn, oldest first, on every link; the whole model pushed after each compute, the next\n"
      "compute once it crossed (SSP as the paper ran it, --push_waits_for_acks)\n"
      "policy  bound  simulated  any protocol (compute)  rows in turn  whole-model pushes  "
      "simulated/any\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    rog::SimConfig cfg = base;
    cfg.engine.policy = runs[i].first;
    double rate[3] = {0, 0, 0}, compute = 0;
    const rog::RateSchedule schedules[3] = {rog::RateSchedule::kAnyProtocol,
                                            rog::RateSchedule::kRowsInTurn,
                                            rog::RateSchedule::kWholeModelPushes};
    for (int s = 0; s < 3; ++s) {
      absl::StatusOr<rog::RateBound> b =
          rog::ComputeRateBound(cfg, layout, schedules[s], starts[i]);
      if (!b.ok()) return b.status();
      rate[s] = b->iterations_per_second;
      if (s == 0) compute = b->compute_share;
    }
    std::printf("%-6s  %5u  %9.3f  %12.3f (%5.1f%%)  %12.3f  %18.3f  %12.1f%%\n",
                std::string(rog::SyncPolicyName(cfg.engine.policy)).c_str(),
                rog::EffectiveBound(cfg.engine.policy, cfg.engine.staleness), runs[i].second,
                rate[0], 100 * compute, rate[1], rate[2], 100 * runs[i].second / rate[0]);
  }
  return absl::OkStatus();
}

// Runs every policy on the same workload and prints the table and what
// follows it; the exit status: 0 if the invariants held.
int ComparePolicies(const std::vector<rog::SyncPolicy>& policies, const rog::Layout& layout,
                    const rog::SimConfig& base) {
  const bool patience = base.engine.patience > 0;
  PrintTableHead(patience);
  Throughputs ips;
  std::vector<std::string> causes, uses;
  std::vector<std::pair<rog::SyncPolicy, rog::SimReport>> learned;
  std::vector<std::pair<rog::SyncPolicy, double>> rates;
  std::vector<double> starts;
  bool ok = true;
  for (rog::SyncPolicy policy : policies) {
    rog::SimConfig cfg = base;
    cfg.engine.policy = policy;
    absl::StatusOr<rog::SimReport> r = rog::RunSimulation(cfg, layout);
    if (!r.ok()) return Fail(r.status());
    PrintRow(policy, *r, patience);
    if (absl::GetFlag(FLAGS_transitions)) PrintTransitions(*r);
    if (cfg.learning != nullptr) {
      PrintScores(*r);
      learned.emplace_back(policy, *r);
    }
    if (!CheckInvariants(cfg, *r)) ok = false;
    causes.push_back(StallCauses(policy, *r));
    uses.push_back(UplinkUtilisation(policy, *r));
    if (policy == rog::SyncPolicy::kBsp) ips.bsp = r->iterations_per_second();
    if (policy == rog::SyncPolicy::kSsp) ips.ssp = r->iterations_per_second();
    if (policy == rog::SyncPolicy::kRog) ips.rog = r->iterations_per_second();
    rates.emplace_back(policy, r->iterations_per_second());
    starts.push_back(r->start);
  }
  PrintSummary(causes, uses, ips, patience, rog::IsLossless(base.engine.codec),
               base.learning != nullptr, ok);
  if (!learned.empty()) PrintTimesToBspScore(learned);
  if (absl::GetFlag(FLAGS_rate_bound)) {
    if (absl::Status s = PrintRateBounds(rates, starts, layout, base); !s.ok()) return Fail(s);
  }
  return ok ? 0 : 1;
}

}  // namespace

namespace rog {

int SimMain(int argc, char** argv, const std::string& program, const SimLearningMaker& learning) {
  Program() = program;
  // --help lists this file's flags (the mains declare none) and, for
  // fmnist_sim, the model's (task/fmnist/).
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) {
    return absl::StrContains(path, "tools/sim/sim_cli.cc") ||
           absl::StrContains(path, "task/fmnist/model.cc");
  };
  absl::SetFlagsUsageConfig(config);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", rest[1], "'; flags look like --name=value")));
  }
  absl::StatusOr<std::vector<SyncPolicy>> policies = PoliciesFromFlags();
  if (!policies.ok()) return Fail(policies.status());
  absl::StatusOr<Codec> codec = ParseCodec(absl::GetFlag(FLAGS_codec));
  if (!codec.ok()) return Fail(codec.status());
  absl::StatusOr<Layout> layout = SyntheticLayout(absl::GetFlag(FLAGS_model));
  if (!layout.ok()) return Fail(layout.status());
  absl::StatusOr<std::vector<Trace>> traces = TracesFromFlags();
  if (!traces.ok()) return Fail(traces.status());
  if (const double ratio = absl::GetFlag(FLAGS_solve_trace_scale); ratio != 0) {
    return SolveTraceScale(ratio, *codec, *layout, *traces);
  }
  absl::StatusOr<SimConfig> base = ConfigFromFlags(*codec, *traces, learning != nullptr);
  if (!base.ok()) return Fail(base.status());
  std::unique_ptr<SimLearning> task;
  if (learning) {
    absl::StatusOr<std::unique_ptr<SimLearning>> made =
        learning(absl::GetFlag(FLAGS_model), *layout, *base);
    if (!made.ok()) return Fail(made.status());
    task = *std::move(made);
    base->learning = task.get();
  }
  PrintSettings(*layout, *base);
  return ComparePolicies(*policies, *layout, *base);
}

}  // namespace rog
