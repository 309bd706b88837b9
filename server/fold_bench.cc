// fold_bench: how fast rogd's hot path, ServerState::Fold, runs compared
// with memcpy of the same bytes on the same machine, in the same process.
//
// Why: rogd's engine (server/engine.h) is a single writer. One engine thread
// owns ServerState and applies every decoded uplink row, fed by queues from
// the stream threads, which decode and validate in parallel. That design
// rests on the fold being cheap: ideally about as fast as memcpy of the bytes
// it touches (then the fold is bound by memory bandwidth and more threads
// would gain little), and in any case far faster than a robot team's links
// can deliver updates. This benchmark measures both.
//
// What it measures: Fold(w, row, update, 1) over every row of a small CNN's
// layout (MNIST-sized, the same tensors as the simulator's "cnn" model at the
// defaults: ~1.7 MB fp32, rows cut by the Layout rule), worker w taking turns
// so each worker's own copy is skipped in turn. Each fold adds the row into
// the global row and into the pending copy of each of the other N-1 workers,
// and bumps the version storage.
//   payload bytes  fp32 bytes of the folded rows (what a worker pushed)
//   touched bytes  payload × N: the rows Fold updates (global + N-1 pending),
//                  each read and written once
// Baselines, timed in the same run and interleaved with the fold runs so the
// other tenant of a shared machine affects both alike:
//   memcpy payload  memcpy of each row, in the same order, from the same
//                   update buffer into one model-sized buffer
//   memcpy touched  the same into N model-sized buffers (the bytes Fold
//                   touches; the same amount of memory touched per pass)
// Ratios are fold throughput over memcpy throughput (1.00× = as fast as
// memcpy), the median of the per-run ratios. Numbers are medians of --runs
// runs of at least --min_time each. GB = 1e9 bytes.
//
// Reading the numbers: "vs memcpy touched" answers the bandwidth question;
// near 1.00× the fold is memory-bound, well below it the loop itself is the
// limit (look at whether Fold's loops are vectorised in the opt build). The
// last line compares the absolute fold rate with a 1 Gbit/s link.
//
// The working set (a few MB to tens of MB) may sit in a large last-level
// cache rather than DRAM; both baselines use the same buffers and order, so
// the ratios hold either way. Raise --fc_units/--conv_channels to go past it.
//
// Build with optimisation: `bazel run -c opt //server:fold_bench`. Numbers
// from a debug or fastbuild build are not meaningful (the program says so).
// Times vary run to run on shared machines: compare ratios within one run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/layout.h"
#include "common/server_state.h"

ABSL_FLAG(uint32_t, workers, 4, "team size N: each fold updates the global row and N-1 copies");
ABSL_FLAG(bool, sweep, true, "also measure teams of 1, 4 and 8 workers");
ABSL_FLAG(uint32_t, runs, 5, "timed runs per measurement; medians are reported");
ABSL_FLAG(absl::Duration, min_time, absl::Milliseconds(500), "minimum length of one timed run");
ABSL_FLAG(uint32_t, conv_channels, 64,
          "output channels of conv2; fc1 takes conv_channels*7*7 inputs (model size)");
ABSL_FLAG(uint32_t, fc_units, 128, "units (rows) of fc1 (model size)");
ABSL_FLAG(bool, shuffle, true,
          "fold rows in a fixed random order (ROG picks rows by importance), not model order");

namespace {

using Clock = std::chrono::steady_clock;

volatile float g_sink;

// Tells the compiler that *p may be read: stores to it are not dead.
inline void Clobber(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

absl::StatusOr<rog::Layout> CnnLayout(int64_t channels, int64_t units) {
  return rog::Layout::Create({
      {"conv1.weight", {32, 1, 3, 3}},
      {"conv1.bias", {32}},
      {"conv2.weight", {channels, 32, 3, 3}},
      {"conv2.bias", {channels}},
      {"fc1.weight", {units, channels * 7 * 7}},
      {"fc1.bias", {units}},
      {"fc2.weight", {10, units}},
      {"fc2.bias", {10}},
  });
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Runs pass(k) for k = 0, 1, ... until min_time has passed; returns passes
// per second.
template <typename Pass>
double PassesPerSecond(Pass&& pass, absl::Duration min_time) {
  const auto limit = absl::ToChronoNanoseconds(min_time);
  const Clock::time_point start = Clock::now();
  uint64_t passes = 0;
  Clock::duration elapsed;
  do {
    pass(passes++);
    elapsed = Clock::now() - start;
  } while (elapsed < limit);
  return passes / std::chrono::duration<double>(elapsed).count();
}

struct Result {
  size_t workers = 0;
  double fold_pass_rate = 0;  // full-model passes per second, median
  double fold_min = 0, fold_max = 0;
  double copy1_pass_rate = 0;  // memcpy into 1 buffer
  double copyn_pass_rate = 0;  // memcpy into N buffers
  double ratio_payload = 0;    // median of fold / memcpy payload
  double ratio_touched = 0;    // median of fold×N / memcpy touched
};

Result Measure(const rog::Layout& layout, size_t n, const std::vector<rog::RowId>& order,
               const std::vector<float>& initial, const std::vector<float>& plus,
               const std::vector<float>& minus, uint32_t runs, absl::Duration min_time) {
  rog::ServerState state(layout, initial, n);
  const uint64_t numel = layout.total_numel();
  std::vector<float> copy1(numel, 0.0f);
  std::vector<std::vector<float>> copyn(n, std::vector<float>(numel, 0.0f));

  // Pass k: worker k % N pushes every row. The sign flips every N passes, so
  // the global and pending values stay bounded (and far from denormals).
  auto source = [&](uint64_t k) { return ((k / n) % 2 == 0 ? plus : minus).data(); };
  auto fold = [&](uint64_t k) {
    const size_t w = k % n;
    const float* u = source(k);
    for (rog::RowId row : order) {
      const rog::RowInfo& r = layout.row(row);
      state.Fold(w, row, absl::MakeConstSpan(u + r.offset, r.numel), 1);
    }
  };
  auto memcpy1 = [&](uint64_t k) {
    const float* u = source(k);
    for (rog::RowId row : order) {
      const rog::RowInfo& r = layout.row(row);
      std::memcpy(copy1.data() + r.offset, u + r.offset, r.numel * sizeof(float));
    }
    Clobber(copy1.data());
  };
  auto memcpyn = [&](uint64_t k) {
    const float* u = source(k);
    for (rog::RowId row : order) {
      const rog::RowInfo& r = layout.row(row);
      for (std::vector<float>& dst : copyn) {
        std::memcpy(dst.data() + r.offset, u + r.offset, r.numel * sizeof(float));
      }
    }
    for (std::vector<float>& dst : copyn) Clobber(dst.data());
  };

  // Warm up: fault in every page, settle the clock.
  const absl::Duration warm = min_time / 5;
  PassesPerSecond(fold, warm);
  PassesPerSecond(memcpy1, warm);
  PassesPerSecond(memcpyn, warm);

  std::vector<double> f, c1, cn, rp, rt;
  for (uint32_t i = 0; i < runs; ++i) {
    f.push_back(PassesPerSecond(fold, min_time));
    c1.push_back(PassesPerSecond(memcpy1, min_time));
    cn.push_back(PassesPerSecond(memcpyn, min_time));
    rp.push_back(f.back() / c1.back());
    rt.push_back(f.back() / cn.back());  // N×payload bytes both sides
  }

  // Everything written must be observable.
  float sum = 0;
  for (rog::RowId row = 0; row < layout.num_rows(); ++row) sum += state.global_row(row)[0];
  for (size_t w = 0; w < n; ++w) sum += state.pending(w, 0)[0];
  sum += copy1[numel - 1];
  for (const std::vector<float>& dst : copyn) sum += dst[numel / 2];
  g_sink = sum;

  Result r;
  r.workers = n;
  r.fold_pass_rate = Median(f);
  r.fold_min = *std::min_element(f.begin(), f.end());
  r.fold_max = *std::max_element(f.begin(), f.end());
  r.copy1_pass_rate = Median(c1);
  r.copyn_pass_rate = Median(cn);
  r.ratio_payload = Median(rp);
  r.ratio_touched = Median(rt);
  return r;
}

// The values every measurement starts from and pushes, and the row order.
struct Inputs {
  std::vector<float> initial, plus, minus;
  std::vector<rog::RowId> order;
};

// Random initial values and updates (minus = -plus), from one seeded
// generator, and the rows in model order or shuffled (--shuffle).
Inputs MakeInputs(const rog::Layout& layout) {
  const uint64_t numel = layout.total_numel();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> init_dist(-0.05f, 0.05f);
  std::uniform_real_distribution<float> update_dist(-1e-3f, 1e-3f);
  Inputs in;
  in.initial.resize(numel);
  in.plus.resize(numel);
  in.minus.resize(numel);
  for (float& x : in.initial) x = init_dist(rng);
  for (uint64_t i = 0; i < numel; ++i) {
    in.plus[i] = update_dist(rng);
    in.minus[i] = -in.plus[i];
  }
  in.order.resize(layout.num_rows());
  for (rog::RowId i = 0; i < in.order.size(); ++i) in.order[i] = i;
  if (absl::GetFlag(FLAGS_shuffle)) std::shuffle(in.order.begin(), in.order.end(), rng);
  return in;
}

// The lines above the table: what is measured, how, and the caches.
void PrintPreamble(const rog::Layout& layout, uint32_t runs, absl::Duration min_time) {
  const uint64_t numel = layout.total_numel();
  const double model_bytes = numel * sizeof(float);
  std::printf("fold_bench: ServerState::Fold vs memcpy, one process, interleaved runs\n");
  std::printf(
      "model: CNN layout, %zu tensors, %zu rows (largest %u floats), %llu floats = %.2f MB "
      "fp32\n",
      layout.tensors().size(), layout.num_rows(), layout.max_row_numel(),
      static_cast<unsigned long long>(numel), model_bytes / 1e6);
  std::printf("pass: every row pushed once, %s order; %u runs of >= %s each, medians\n",
              absl::GetFlag(FLAGS_shuffle) ? "shuffled" : "model", runs,
              absl::FormatDuration(min_time).c_str());
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  std::printf("cache as sysconf reports it: L2 %.1f MB, L3 %.1f MB\n", l2 > 0 ? l2 / 1e6 : 0.0,
              l3 > 0 ? l3 / 1e6 : 0.0);
  std::printf(
      "GB = 1e9 bytes; payload = fp32 bytes pushed; touched = payload x N "
      "(global + N-1 pending copies)\n\n");
}

// The table: one row per team size.
void PrintTable(const rog::Layout& layout, const std::vector<Result>& results) {
  const double model_bytes = layout.total_numel() * sizeof(float);
  std::printf("%-4s %9s %10s %16s %9s %12s %12s %12s %10s %10s\n", "N", "working", "rows/s",
              "payload GB/s", "touched", "us per", "memcpy", "memcpy", "vs memcpy", "vs memcpy");
  std::printf("%-4s %9s %10s %16s %9s %12s %12s %12s %10s %10s\n", "", "set MB", "(fold)",
              "(min-max)", "GB/s", "full push", "payload GB/s", "touched GB/s", "payload",
              "touched");
  for (const Result& r : results) {
    const double n = r.workers;
    // What a pass touches: global + N-1 pending copies + the two update
    // buffers (memcpy touched: N buffers + the same two).
    const double working = model_bytes * (n + 2) / 1e6;
    char range[32];
    std::snprintf(range, sizeof(range), "%.1f-%.1f", r.fold_min * model_bytes / 1e9,
                  r.fold_max * model_bytes / 1e9);
    std::printf("%-4zu %9.1f %10.0f %6.2f %9s %9.2f %12.1f %12.2f %12.2f %9.2f× %9.2f×\n",
                r.workers, working, r.fold_pass_rate * layout.num_rows(),
                r.fold_pass_rate * model_bytes / 1e9, range,
                r.fold_pass_rate * model_bytes * n / 1e9, 1e6 / r.fold_pass_rate,
                r.copy1_pass_rate * model_bytes / 1e9, r.copyn_pass_rate * model_bytes * n / 1e9,
                r.ratio_payload, r.ratio_touched);
  }
}

// The lines below the table: what the ratios mean, and the fold rate of
// the --workers team against a 1 Gbit/s link.
void PrintConclusion(const rog::Layout& layout, const std::vector<Result>& results,
                     uint32_t workers) {
  const double model_bytes = layout.total_numel() * sizeof(float);
  std::printf(
      "\nvs memcpy = fold throughput / memcpy throughput (median of per-run ratios); "
      "1.00× = as fast as memcpy.\n");
  for (const Result& r : results) {
    if (r.workers != workers) continue;
    const double gbps = r.fold_pass_rate * model_bytes / 1e9;
    std::printf(
        "N=%zu: one engine thread folds %.2f GB/s of fp32 updates, %.0f× what a fully "
        "used 1 Gbit/s uplink carries.\n",
        r.workers, gbps, gbps / 0.125);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Times ServerState::Fold (rogd's hot path) against memcpy of the same bytes.\n"
      "Usage: bazel run -c opt //server:fold_bench -- [--workers=N] [--sweep=false] ...");
  absl::ParseCommandLine(argc, argv);

  const uint32_t workers = absl::GetFlag(FLAGS_workers);
  const uint32_t runs = absl::GetFlag(FLAGS_runs);
  const absl::Duration min_time = absl::GetFlag(FLAGS_min_time);
  if (workers < 1 || workers > 256 || runs < 1 || min_time <= absl::ZeroDuration()) {
    std::fprintf(stderr, "fold_bench: need 1 <= --workers <= 256, --runs >= 1, --min_time > 0\n");
    return 2;
  }
  absl::StatusOr<rog::Layout> layout =
      CnnLayout(absl::GetFlag(FLAGS_conv_channels), absl::GetFlag(FLAGS_fc_units));
  if (!layout.ok()) {
    std::fprintf(stderr, "fold_bench: %s\n", layout.status().ToString().c_str());
    return 2;
  }

#ifndef NDEBUG
  const char* kDebugWarning =
      "WARNING: built without -c opt (NDEBUG unset); these numbers are not meaningful.\n";
  std::fprintf(stderr, "%s", kDebugWarning);
  std::printf("%s", kDebugWarning);
#endif

  const Inputs in = MakeInputs(*layout);
  std::set<size_t> teams = {workers};
  if (absl::GetFlag(FLAGS_sweep)) teams.insert({1, 4, 8});

  PrintPreamble(*layout, runs, min_time);
  std::vector<Result> results;
  for (size_t n : teams) {
    results.push_back(Measure(*layout, n, in.order, in.initial, in.plus, in.minus, runs, min_time));
  }
  PrintTable(*layout, results);
  PrintConclusion(*layout, results, workers);
  return 0;
}
