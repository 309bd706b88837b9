#include "tools/bench/figures.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "common/link_use.h"

namespace rog {

RobotFigures Summarise(const RobotRun& run) {
  RobotFigures f;
  f.id = run.id;
  if (!run.acc.empty()) f.final_accuracy = run.acc.back().accuracy;
  if (run.iters.empty()) return f;
  const IterRecord& first = run.iters.front();
  const double begin =
      first.unix_s - first.stall_s - first.detached_s - first.compute_s - first.transmit_s;
  f.span_s = std::max(1e-9, run.iters.back().unix_s - begin);
  for (const IterRecord& r : run.iters) f.iterations += r.no_iteration ? 0 : 1;
  f.iterations_per_s = f.iterations / f.span_s;
  for (const IterRecord& r : run.iters) {
    f.compute_s += r.compute_s;
    f.real_compute_s += r.no_iteration ? 0 : r.real_compute_s;
    f.transmit_s += r.transmit_s;
    f.stall_s += r.stall_s;
    f.detached_s += r.detached_s;
    f.local_steps += r.local_step ? 1 : 0;
    f.stalls += r.stalled ? 1 : 0;
    f.disconnects += r.disconnected ? 1 : 0;
    f.bytes_up += r.bytes_up;
    f.bytes_down += r.bytes_down;
    f.payload_up += r.payload_up;
    f.payload_down += r.payload_down;
  }
  const std::vector<PushRecord> derived =
      run.pushes.empty() ? PushesFromIters(run.iters) : std::vector<PushRecord>();
  const std::vector<PushRecord>& pushes = run.pushes.empty() ? derived : run.pushes;
  UplinkUse use;
  for (const PushRecord& p : pushes) {
    if (p.window_s > 0) {
      f.overshoots_s.push_back(p.overshoot_s);
      f.windows_s.push_back(p.window_s);
      if (p.late_bytes == 0) f.on_time_overshoots_s.push_back(p.overshoot_s);
    }
    // Pushes from files without ack_s cannot be measured this way (see
    // RobotFigures); those from before ID.pushes.csv waited in EndStep for
    // their acks, so their transmit time is their start to last ack.
    use.AddPush(p.start_unix - run.trace_start_unix, p.ack_s, p.acked_bytes, run.link_delay_s);
  }
  if (run.trace) {
    f.transmit_bytes_up = use.bytes();
    f.transmit_capacity_up = use.Capacity(*run.trace, run.trace_scale);
  }
  return f;
}

std::vector<std::pair<double, double>> TeamAccuracy(const std::vector<RobotRun>& runs) {
  std::vector<std::pair<double, double>> curve;
  if (runs.empty()) return curve;
  size_t n = SIZE_MAX;
  // The last evaluation follows the final sync: not part of the curve.
  for (const RobotRun& r : runs) n = std::min(n, r.acc.empty() ? 0 : r.acc.size() - 1);
  for (size_t k = 0; k < n; ++k) {
    double t = 0, a = 0;
    for (const RobotRun& r : runs) {
      t += r.acc[k].elapsed_s;
      a += r.acc[k].accuracy;
    }
    curve.emplace_back(t / runs.size(), a / runs.size());
  }
  return curve;
}

std::optional<double> TimeToAccuracy(const std::vector<std::pair<double, double>>& curve,
                                     double target) {
  for (size_t i = 0; i < curve.size(); ++i) {
    if (curve[i].second < target) continue;
    if (i == 0) return curve[0].first;
    const auto [t0, a0] = curve[i - 1];
    const auto [t1, a1] = curve[i];
    return t0 + (t1 - t0) * (target - a0) / std::max(1e-12, a1 - a0);
  }
  return std::nullopt;
}

std::optional<double> Quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * v.size());
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return v[std::min(i, v.size() - 1)];
}

PolicyFigures CombinePolicy(const std::string& policy, const std::vector<RobotRun>& runs) {
  PolicyFigures p;
  p.policy = policy;
  double span = 0, compute = 0, transmit = 0, stall = 0, detached = 0, acc = 0;
  uint64_t bytes = 0, payload = 0;
  double tx_bytes = 0, tx_capacity = 0, real_compute = 0;
  uint64_t iterations = 0;
  int with_acc = 0;
  std::vector<double> overshoots, on_time;
  for (const RobotRun& r : runs) {
    RobotFigures f = Summarise(r);
    span += f.span_s;
    compute += f.compute_s;
    transmit += f.transmit_s;
    stall += f.stall_s;
    detached += f.detached_s;
    p.local_steps += f.local_steps;
    p.stalls += f.stalls;
    p.iterations_per_s += f.iterations_per_s / runs.size();
    p.mb_up += f.bytes_up / 1e6 / runs.size();
    p.mb_down += f.bytes_down / 1e6 / runs.size();
    bytes += f.bytes_up + f.bytes_down;
    payload += f.payload_up + f.payload_down;
    tx_bytes += f.transmit_bytes_up;
    tx_capacity += f.transmit_capacity_up;
    overshoots.insert(overshoots.end(), f.overshoots_s.begin(), f.overshoots_s.end());
    on_time.insert(on_time.end(), f.on_time_overshoots_s.begin(), f.on_time_overshoots_s.end());
    if (f.final_accuracy >= 0) {
      acc += f.final_accuracy;
      ++with_acc;
      p.final_accuracy_min = p.final_accuracy_min < 0
                                 ? f.final_accuracy
                                 : std::min(p.final_accuracy_min, f.final_accuracy);
      p.final_accuracy_max = std::max(p.final_accuracy_max, f.final_accuracy);
    }
    real_compute += f.real_compute_s;
    iterations += f.iterations;
    p.robots.push_back(std::move(f));
  }
  if (iterations > 0) {
    p.compute_per_iteration_s = compute / iterations;
    p.real_compute_per_iteration_s = real_compute / iterations;
  }
  if (span > 0) {
    p.stall_share = stall / span;
    p.compute_share = compute / span;
    p.transmit_share = transmit / span;
    p.detached_share = detached / span;
  }
  if (with_acc > 0) p.final_accuracy = acc / with_acc;
  if (payload > 0) p.index_overhead = static_cast<double>(bytes - payload) / payload;
  if (tx_capacity > 0) p.link_utilisation = tx_bytes / tx_capacity;
  p.overshoot_p50 = Quantile(overshoots, 0.5);
  p.overshoot_p99 = Quantile(overshoots, 0.99);
  // Windows from a few tens of milliseconds (fast links) to seconds.
  const double kWindowBuckets[] = {0.05, 0.2, 1.0, 5.0, INFINITY};
  std::vector<std::vector<double>> by_window(std::size(kWindowBuckets));
  for (const RobotFigures& f : p.robots) {
    for (size_t k = 0; k < f.overshoots_s.size() && k < f.windows_s.size(); ++k) {
      size_t b = 0;
      while (f.windows_s[k] > kWindowBuckets[b] && b + 1 < std::size(kWindowBuckets)) ++b;
      by_window[b].push_back(f.overshoots_s[k]);
    }
  }
  for (size_t b = 0; b < by_window.size(); ++b) {
    if (by_window[b].empty()) continue;
    p.overshoot_by_window.push_back(PolicyFigures::WindowBucket{
        b == 0 ? 0 : kWindowBuckets[b - 1], kWindowBuckets[b], by_window[b].size(),
        Quantile(by_window[b], 0.5), Quantile(by_window[b], 0.99)});
  }
  p.on_time_overshoot_p99 = Quantile(on_time, 0.99);
  if (!overshoots.empty()) {
    p.late_push_share = 1.0 - static_cast<double>(on_time.size()) / overshoots.size();
  }
  p.team_accuracy = TeamAccuracy(runs);
  return p;
}

}  // namespace rog
