#include "tools/bench/bench_report_lib.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/link_use.h"

namespace rog {
namespace {

// Splits `text` into data lines (the header checked and skipped), each into
// exactly `columns` fields.
absl::StatusOr<std::vector<std::vector<absl::string_view>>> CsvRows(absl::string_view text,
                                                                    absl::string_view name,
                                                                    absl::string_view header) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || absl::StripTrailingAsciiWhitespace(lines[0]) != header) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the first line must be the header '", header,
                     "'; is this a file fmnist_worker --csv_dir wrote?"));
  }
  const size_t columns = std::count(header.begin(), header.end(), ',') + 1;
  std::vector<std::vector<absl::string_view>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripTrailingAsciiWhitespace(lines[i]), ',');
    if (f.size() != columns) {
      // A robot killed mid-write leaves a short last line: skip only that.
      if (i + 1 == lines.size()) break;
      return absl::InvalidArgumentError(
          absl::StrCat(name, " line ", i + 1, ": ", f.size(), " fields, expected ", columns));
    }
    rows.push_back(std::move(f));
  }
  return rows;
}

template <typename T>
absl::Status Field(absl::string_view s, absl::string_view name, size_t line, T* out) {
  bool ok;
  if constexpr (std::is_same_v<T, double>) {
    ok = absl::SimpleAtod(s, out) && std::isfinite(*out);
  } else {
    ok = absl::SimpleAtoi(s, out);
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " line ", line, ": '", s, "' is not a number"));
}

constexpr absl::string_view kIterHeader =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
    "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s";
// Since team patience: two more columns.
constexpr absl::string_view kIterHeaderPatience =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
    "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s,detached_s,"
    "kind";
// Since EndStep stopped waiting for acknowledgements: the push's figures
// moved to ID.pushes.csv.
constexpr absl::string_view kIterHeaderPushes =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
    "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind";
// Since --compute_time: the compute before padding, one more column.
constexpr absl::string_view kIterHeaderReal =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
    "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind,real_compute_s";
constexpr absl::string_view kPushHeader =
    "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected";
// Since PushStats::late_bytes: one more column.
constexpr absl::string_view kPushHeaderLate =
    "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,late_bytes";
// Since PushStats::ack_seconds: two more columns.
constexpr absl::string_view kPushHeaderAck =
    "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,late_bytes,"
    "ack_s,acked_bytes";
constexpr absl::string_view kAccHeader = "unix_s,elapsed_s,iteration,accuracy";

}  // namespace

absl::StatusOr<std::vector<IterRecord>> ParseIterCsv(absl::string_view text,
                                                     absl::string_view name) {
  if (absl::StartsWith(text, kIterHeaderPushes)) {
    const bool real = absl::StartsWith(text, kIterHeaderReal);
    auto rows = CsvRows(text, name, real ? kIterHeaderReal : kIterHeaderPushes);
    if (!rows.ok()) return rows.status();
    std::vector<IterRecord> out;
    for (size_t i = 0; i < rows->size(); ++i) {
      const auto& f = (*rows)[i];
      IterRecord r;
      int stalled = 0, disconnected = 0, kind = 0;
      const size_t line = i + 2;
      for (absl::Status s :
           {Field(f[0], name, line, &r.unix_s), Field(f[1], name, line, &r.iteration),
            Field(f[2], name, line, &r.stall_s), Field(f[3], name, line, &stalled),
            Field(f[4], name, line, &r.compute_s), Field(f[5], name, line, &r.transmit_s),
            Field(f[6], name, line, &r.window_s), Field(f[7], name, line, &r.rows_up),
            Field(f[8], name, line, &r.bytes_up), Field(f[9], name, line, &r.payload_up),
            Field(f[10], name, line, &r.rows_down), Field(f[11], name, line, &r.bytes_down),
            Field(f[12], name, line, &r.payload_down), Field(f[13], name, line, &disconnected),
            Field(f[14], name, line, &r.detached_s), Field(f[15], name, line, &kind)}) {
        if (!s.ok()) return s;
      }
      if (kind < 0 || kind > 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " line ", line, ": kind must be 0, 1 or 2, not ", kind));
      }
      r.stalled = stalled != 0;
      r.disconnected = disconnected != 0;
      r.local_step = kind == 1;
      r.no_iteration = kind == 2;
      r.real_compute_s = r.compute_s;
      if (real) {
        absl::Status st = Field(f[16], name, line, &r.real_compute_s);
        if (!st.ok()) return st;
      }
      out.push_back(r);
    }
    return out;
  }
  const bool patience = absl::StartsWith(text, kIterHeaderPatience);
  auto rows = CsvRows(text, name, patience ? kIterHeaderPatience : kIterHeader);
  if (!rows.ok()) return rows.status();
  std::vector<IterRecord> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& f = (*rows)[i];
    IterRecord r;
    int stalled = 0, disconnected = 0;
    const size_t line = i + 2;
    for (absl::Status s :
         {Field(f[0], name, line, &r.unix_s), Field(f[1], name, line, &r.iteration),
          Field(f[2], name, line, &r.stall_s), Field(f[3], name, line, &stalled),
          Field(f[4], name, line, &r.compute_s), Field(f[5], name, line, &r.transmit_s),
          Field(f[6], name, line, &r.window_s), Field(f[7], name, line, &r.overshoot_s),
          Field(f[8], name, line, &r.rows_up), Field(f[9], name, line, &r.bytes_up),
          Field(f[10], name, line, &r.payload_up), Field(f[11], name, line, &r.rows_down),
          Field(f[12], name, line, &r.bytes_down), Field(f[13], name, line, &r.payload_down),
          Field(f[14], name, line, &disconnected), Field(f[15], name, line, &r.busy_s)}) {
      if (!s.ok()) return s;
    }
    r.stalled = stalled != 0;
    r.disconnected = disconnected != 0;
    if (patience) {
      int kind = 0;
      for (absl::Status s :
           {Field(f[16], name, line, &r.detached_s), Field(f[17], name, line, &kind)}) {
        if (!s.ok()) return s;
      }
      if (kind < 0 || kind > 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " line ", line, ": kind must be 0, 1 or 2, not ", kind));
      }
      r.local_step = kind == 1;
      r.no_iteration = kind == 2;
    }
    r.real_compute_s = r.compute_s;
    out.push_back(r);
  }
  return out;
}

absl::StatusOr<std::vector<AccRecord>> ParseAccCsv(absl::string_view text, absl::string_view name) {
  auto rows = CsvRows(text, name, kAccHeader);
  if (!rows.ok()) return rows.status();
  std::vector<AccRecord> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& f = (*rows)[i];
    AccRecord r;
    const size_t line = i + 2;
    for (absl::Status s :
         {Field(f[0], name, line, &r.unix_s), Field(f[1], name, line, &r.elapsed_s),
          Field(f[2], name, line, &r.iteration), Field(f[3], name, line, &r.accuracy)}) {
      if (!s.ok()) return s;
    }
    out.push_back(r);
  }
  return out;
}

absl::StatusOr<std::vector<PushRecord>> ParsePushCsv(absl::string_view text,
                                                     absl::string_view name) {
  const bool late = absl::StartsWith(text, kPushHeaderLate);
  const bool ack = absl::StartsWith(text, kPushHeaderAck);
  auto rows = CsvRows(text, name, ack ? kPushHeaderAck : late ? kPushHeaderLate : kPushHeader);
  if (!rows.ok()) return rows.status();
  std::vector<PushRecord> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& f = (*rows)[i];
    PushRecord r;
    int disconnected = 0;
    const size_t line = i + 2;
    for (absl::Status s :
         {Field(f[0], name, line, &r.start_unix), Field(f[1], name, line, &r.iteration),
          Field(f[2], name, line, &r.window_s), Field(f[3], name, line, &r.bytes),
          Field(f[4], name, line, &r.payload), Field(f[5], name, line, &r.busy_s),
          Field(f[6], name, line, &r.overshoot_s), Field(f[7], name, line, &disconnected)}) {
      if (!s.ok()) return s;
    }
    if (late) {
      absl::Status s = Field(f[8], name, line, &r.late_bytes);
      if (!s.ok()) return s;
    }
    if (ack) {
      for (absl::Status s :
           {Field(f[9], name, line, &r.ack_s), Field(f[10], name, line, &r.acked_bytes)}) {
        if (!s.ok()) return s;
      }
    }
    r.disconnected = disconnected != 0;
    out.push_back(r);
  }
  return out;
}

std::vector<PushRecord> PushesFromIters(const std::vector<IterRecord>& iters) {
  std::vector<PushRecord> out;
  for (const IterRecord& r : iters) {
    if (r.no_iteration || (r.transmit_s <= 0 && r.bytes_up == 0)) continue;
    PushRecord p;
    p.start_unix = r.unix_s - r.transmit_s;
    p.iteration = r.iteration;
    p.window_s = r.window_s;
    p.bytes = r.bytes_up;
    p.payload = r.payload_up;
    // EndStep waited for the acks then: the push ended within it.
    p.busy_s = std::min(r.busy_s, r.transmit_s);
    // EndIteration returned at its last ack then, with every byte acked.
    p.ack_s = r.transmit_s;
    p.acked_bytes = r.bytes_up;
    p.overshoot_s = r.overshoot_s;
    p.disconnected = r.disconnected;
    out.push_back(p);
  }
  return out;
}

absl::StatusOr<double> RelayStartUnix(absl::string_view relay_log) {
  constexpr absl::string_view kMark = "trace time 0 at unix ";
  const size_t at = relay_log.find(kMark);
  if (at == absl::string_view::npos) {
    return absl::NotFoundError(absl::StrCat("no '", kMark, "' in the relay's log"));
  }
  absl::string_view rest = relay_log.substr(at + kMark.size());
  rest = rest.substr(0, rest.find_first_of(" \n"));
  double t;
  if (!absl::SimpleAtod(rest, &t)) {
    return absl::InvalidArgumentError(absl::StrCat("bad start time '", rest, "' in relay log"));
  }
  return t;
}

absl::StatusOr<double> RelayDelaySeconds(absl::string_view relay_log) {
  const absl::string_view first = relay_log.substr(0, relay_log.find('\n'));
  if (absl::StrContains(first, "no added delay")) return 0.0;  // tc_link
  constexpr absl::string_view kMark = ", delay ";
  const size_t at = first.find(kMark);
  if (at == absl::string_view::npos) {
    return absl::NotFoundError("no ', delay ' in the relay log's first line");
  }
  absl::string_view rest = first.substr(at + kMark.size());
  rest = rest.substr(0, rest.find(','));
  absl::Duration d;
  if (!absl::ParseDuration(rest, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("bad delay '", rest, "' in relay log"));
  }
  return absl::ToDoubleSeconds(d);
}

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

std::string Ratio(double num, double den) {
  if (!(den > 0)) return "n/a";
  return absl::StrFormat("%.2f×", num / den);
}

namespace {

const PolicyFigures* Find(const std::vector<PolicyFigures>& ps, absl::string_view name) {
  for (const PolicyFigures& p : ps) {
    if (p.policy == name) return &p;
  }
  return nullptr;
}

std::string Pct(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

std::string Ms(std::optional<double> s) { return s ? absl::StrFormat("%.0f ms", *s * 1000) : "–"; }

// The simulator's output for the same settings, quoted as it is.
void AppendSimulator(std::string* md, const std::string& simulator) {
  if (simulator.empty()) return;
  absl::StrAppend(md,
                  "\n## The simulator on the same settings\n\n"
                  "`//tools/sim` with the same model layout, codec, traces, scales, S and the "
                  "measured mean compute time per iteration:\n\n```\n",
                  simulator, simulator.back() == '\n' ? "" : "\n", "```\n");
}

std::string Label(const PolicyFigures& p, int staleness) {
  if (p.policy == "bsp") return "BSP";
  return absl::StrCat(p.policy == "ssp" ? "SSP" : "ROG", "(", staleness, ")");
}

// A warning under the table where a policy's measured link utilisation fell
// well short of the simulator's (kRigShortfall) and so did its throughput:
// its throughput is then the machine's as much as the protocol's. A policy
// short on utilisation alone gets a line saying its throughput shows no
// such limit.
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
                                          Label(p, staleness), Pct(p.link_utilisation),
                                          Pct(it->second), p.iterations_per_s, sim_it->second));
      continue;
    }
    labels.push_back(Label(p, staleness));
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

// The accuracy times to target are measured to: --target, else BSP's final
// accuracy (none without either).
std::optional<double> TargetAccuracy(const BenchSettings& settings, const PolicyFigures* bsp) {
  std::optional<double> target = settings.target;
  if (!target && bsp != nullptr && bsp->final_accuracy >= 0) target = bsp->final_accuracy;
  return target;
}

// A "time to target" cell: "–" without a target.
std::string TimeToTargetCell(const std::vector<std::pair<double, double>>& curve,
                             std::optional<double> target) {
  std::string ttt = "–";
  if (target) {
    auto t = TimeToAccuracy(curve, *target);
    ttt = t ? absl::StrFormat("%.0f s", *t) : "not reached";
  }
  return ttt;
}

// A "final accuracy" cell: mean (min–max) over robots, "–" if none.
std::string FinalAccuracyCell(const PolicyFigures& p) {
  std::string acc = "–";
  if (p.final_accuracy >= 0) {
    acc = absl::StrFormat("%.4f (%.4f–%.4f)", p.final_accuracy, p.final_accuracy_min,
                          p.final_accuracy_max);
  }
  return acc;
}

// The summary's first paragraph: ROG's throughput ratios and its stalls
// against BSP's and SSP's.
void AppendRogComparison(std::string* md, const PolicyFigures* bsp, const PolicyFigures* ssp,
                         const PolicyFigures& rog) {
  absl::StrAppend(md, "Training throughput: **ROG/BSP ",
                  bsp ? Ratio(rog.iterations_per_s, bsp->iterations_per_s) : "n/a",
                  "**, **ROG/SSP ",
                  ssp ? Ratio(rog.iterations_per_s, ssp->iterations_per_s) : "n/a",
                  "** (iterations per second per robot).");
  auto fewer = [&](const PolicyFigures* base, absl::string_view name) -> std::string {
    if (base == nullptr || base->stalls == 0) return "";
    const double d = 1.0 - static_cast<double>(rog.stalls) / base->stalls;
    return absl::StrFormat("%.1f%% %s than %s", 100 * std::abs(d), d >= 0 ? "fewer" : "more", name);
  };
  std::string vs_bsp = fewer(bsp, "BSP"), vs_ssp = fewer(ssp, "SSP");
  if (!vs_bsp.empty() || !vs_ssp.empty()) {
    absl::StrAppend(md, " Stall occurrences under ROG: ", vs_bsp,
                    !vs_bsp.empty() && !vs_ssp.empty() ? ", " : "", vs_ssp, ".");
  }
  absl::StrAppend(md, "\n\n");
}

// The summary's main table: one row of figures per policy.
void AppendPolicyTable(std::string* md, const std::vector<PolicyFigures>& policies, int staleness,
                       std::optional<double> target) {
  absl::StrAppend(md,
                  "| | it/s per robot | stall share | detached share | stalls | compute share | "
                  "transmit share | time to target | final accuracy | MB up / down per robot | "
                  "index overhead | link utilisation | overshoot p50 / p99 |\n",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
                  "|\n");
  for (const PolicyFigures& p : policies) {
    const std::string ttt = TimeToTargetCell(p.team_accuracy, target);
    const std::string acc = FinalAccuracyCell(p);
    absl::StrAppend(
        md, absl::StrFormat(
                "| %s | %.2f | %s | %s | %d | %s | %s | %s | %s | %.1f / %.1f | %.2f%% | %s | "
                "%s / %s%s |\n",
                Label(p, staleness), p.iterations_per_s, Pct(p.stall_share), Pct(p.detached_share),
                p.stalls, Pct(p.compute_share), Pct(p.transmit_share), ttt, acc, p.mb_up, p.mb_down,
                100 * p.index_overhead, p.link_utilisation > 0 ? Pct(p.link_utilisation) : "–",
                Ms(p.overshoot_p50), Ms(p.overshoot_p99),
                p.late_push_share > 0
                    ? absl::StrFormat("; %s without late rows (%s late)",
                                      Ms(p.on_time_overshoot_p99), Pct(p.late_push_share))
                    : std::string()));
  }
}

// For each policy with windows: its overshoot by window length.
void AppendOvershootByWindow(std::string* md, const std::vector<PolicyFigures>& policies,
                             int staleness) {
  for (const PolicyFigures& p : policies) {
    if (p.overshoot_by_window.empty()) continue;
    absl::StrAppend(md, "\nOvershoot under ", Label(p, staleness),
                    " by window length (each push's window end to the estimated arrival of its "
                    "last byte):\n\n| window | pushes | overshoot p50 | p99 |\n| --- | --- | --- | "
                    "--- |\n");
    for (const PolicyFigures::WindowBucket& b : p.overshoot_by_window) {
      const std::string range = std::isinf(b.up_to)
                                    ? absl::StrFormat("over %s", Ms(b.from))
                                    : absl::StrFormat("%s to %s", Ms(b.from), Ms(b.up_to));
      absl::StrAppend(
          md, absl::StrFormat("| %s | %d | %s | %s |\n", range, b.pushes, Ms(b.p50), Ms(b.p99)));
    }
  }
}

// rogd's split of the stall share by cause, if any policy has it.
void AppendStallCauses(std::string* md, const std::vector<PolicyFigures>& policies, int staleness) {
  bool causes = false;
  for (const PolicyFigures& p : policies) causes = causes || p.stall_cause_s.size() == kStallCauses;
  if (!causes) return;
  absl::StrAppend(
      md,
      "\nStall share by what the stalled robot waited for, as rogd saw it (`rogctl workers`; "
      "from the robot's stall report to its release): a peer still computing the iteration the "
      "bound needs, rogd's ask to a peer that has the rows (PushNow, until the first row asked "
      "arrives; – where rogd predates it), the rest of a peer's push, rogd's delivery of rows "
      "it holds; then the robots' own stall share less rogd's (the stall report's way to rogd, "
      "the last rows' and the release's way to the robot after rogd sent them, and waits rogd "
      "does not count as stalls, such as reconnects). The "
      "simulator's split below is on the same terms.\n\n| | peer compute | peer asked | peer "
      "uplink | downlink | not seen by rogd |\n| --- | --- | --- | --- | --- | --- |\n");
  for (const PolicyFigures& p : policies) {
    if (p.stall_cause_s.size() != kStallCauses) continue;
    double span = 0, own = 0, seen = 0;
    for (const RobotFigures& r : p.robots) {
      span += r.span_s;
      own += r.stall_s;
    }
    absl::StrAppend(md, "| ", Label(p, staleness));
    for (StallCause c : kStallPath) {
      const double s = p.stall_cause_s[c];
      seen += std::max(s, 0.0);
      absl::StrAppend(md, " | ", s < 0 ? "–" : Pct(span > 0 ? s / span : 0));
    }
    absl::StrAppend(md, " | ", Pct(span > 0 ? std::max(own - seen, 0.0) / span : 0), " |\n");
  }
}

// One line per policy with each robot's iterations/s, stall share and final
// accuracy, and its disconnects and detached share where it had any.
void AppendPerRobot(std::string* md, const std::vector<PolicyFigures>& policies, int staleness) {
  absl::StrAppend(md, "\nPer robot (iterations/s, stall share, final accuracy):\n\n");
  for (const PolicyFigures& p : policies) {
    absl::StrAppend(md, "- ", Label(p, staleness), ":");
    for (const RobotFigures& r : p.robots) {
      absl::StrAppend(
          md, absl::StrFormat(" %s %.2f it/s, %s, %.4f", r.id, r.iterations_per_s,
                              Pct(r.span_s > 0 ? r.stall_s / r.span_s : 0), r.final_accuracy));
      std::vector<std::string> notes;
      if (r.disconnects > 0) {
        notes.push_back(
            absl::StrFormat("%d disconnect%s", r.disconnects, r.disconnects == 1 ? "" : "s"));
      }
      if (r.detached_s > 0) {
        notes.push_back(absl::StrCat("detached ", Pct(r.span_s > 0 ? r.detached_s / r.span_s : 0)));
      }
      if (!notes.empty()) absl::StrAppend(md, " (", absl::StrJoin(notes, ", "), ")");
      absl::StrAppend(md, ";");
    }
    md->back() = '\n';
  }
}

// What each column of the summary means.
void AppendHowToRead(std::string* md, const BenchSettings& settings, std::optional<double> target) {
  absl::StrAppend(
      md, "\nHow to read it:\n\n",
      "- *it/s per robot*: iterations over the span from a robot's first iteration start to "
      "its last iteration end, averaged over robots. Shares split that span: compute (forward, "
      "backward, optimizer step), transmit (inside EndStep, until the rows it waits for are on "
      "their way), "
      "stall (BeginStep blocked by the staleness bound or a reconnect), detached (BeginStep "
      "waiting while rogd had the robot detached by its patience or the team's pace: idle like a "
      "stall, counted apart); the rest is evaluation.\n",
      "- *time to target*: when the team's mean accuracy on degraded test images (the k-th "
      "evaluation of every robot averaged) first reached ",
      target ? absl::StrFormat("%.4f", *target) : std::string("the target"),
      settings.target ? " (--target)" : " (BSP's final accuracy)",
      "; *final accuracy*: mean (min–max) over robots after each robot's final sync.\n",
      "- *index overhead*: row batch bytes that are not row values (row ids, counts, version "
      "lags, batch header) over the row values, both directions; gRPC/HTTP/2/TCP framing not "
      "included.\n",
      "- *link utilisation*: uplink row batch bytes over what the trace let the link carry "
      "while a push was under way: from its start to its last acknowledgement less the path's "
      "minimum round trip, overlapping pushes counted once.\n",
      "- *overshoot*: from the end of ROG's window to the estimated arrival of the push's last "
      "byte at rogd (its acknowledgement less half the path's minimum round trip). ATP cuts "
      "only optional rows: rows the staleness bound made mandatory, or that a stalled robot "
      "asked for, go whatever the window. Where some pushes sent such rows after their window "
      "closed (*late*), the cell also gives p99 over the other pushes and the late share.\n");
}

// The summary's settings list, with each policy's compute per iteration.
void AppendSummarySettings(std::string* md, const std::vector<PolicyFigures>& policies,
                           const BenchSettings& settings) {
  absl::StrAppend(
      md, "\nSettings:\n\n",
      absl::StrFormat("- %d robots, S=%d (SSP and ROG), codec %s, trace scale %g\n",
                      settings.robots, settings.staleness, settings.codec, settings.trace_scale),
      "- traces: ", settings.traces, "; links: ",
      settings.links.empty()
          ? absl::StrCat("user-space relays, one-way delay ", settings.delay, " each way")
          : settings.links,
      "\n", settings.team.empty() ? "" : absl::StrCat("- rogd: ", settings.team, "\n"),
      absl::StrFormat("- %.0f s of adaptation per policy, profile %s\n", settings.adapt_seconds,
                      settings.profile));
  for (const PolicyFigures& p : policies) {
    if (p.compute_per_iteration_s <= 0) continue;
    absl::StrAppend(md,
                    absl::StrFormat("- compute per iteration under %s: %.1f ms (mean; real compute "
                                    "before any --compute_time padding: %.1f ms)\n",
                                    Label(p, settings.staleness), 1e3 * p.compute_per_iteration_s,
                                    1e3 * p.real_compute_per_iteration_s));
  }
  absl::StrAppend(md, "- CPU: ", settings.cpu, "\n", "- command: `", settings.command, "`\n");
}

}  // namespace

std::string SummaryMarkdown(const std::vector<PolicyFigures>& policies,
                            const BenchSettings& settings, const std::string& simulator) {
  std::string md = "# ROG benchmark: BSP, SSP and ROG on replayed robot WiFi traces\n\n";
  const PolicyFigures* bsp = Find(policies, "bsp");
  const PolicyFigures* ssp = Find(policies, "ssp");
  const PolicyFigures* rog = Find(policies, "rog");
  const std::optional<double> target = TargetAccuracy(settings, bsp);

  if (rog != nullptr) AppendRogComparison(&md, bsp, ssp, *rog);
  AppendPolicyTable(&md, policies, settings.staleness, target);
  AppendRigCheck(&md, policies, settings.staleness, simulator);
  AppendOvershootByWindow(&md, policies, settings.staleness);
  AppendStallCauses(&md, policies, settings.staleness);
  AppendPerRobot(&md, policies, settings.staleness);
  AppendHowToRead(&md, settings, target);
  AppendSummarySettings(&md, policies, settings);
  AppendSimulator(&md, simulator);
  return md;
}

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

Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    s.min = s.n == 0 ? x : std::min(s.min, x);
    s.max = s.n == 0 ? x : std::max(s.max, x);
    s.mean += x;
    ++s.n;
  }
  if (s.n > 0) s.mean /= s.n;
  return s;
}

namespace {

// "1.23× (1.10–1.31×)": the mean, then the range, each number with
// `digits` decimals after multiplying by `factor`, `unit` after each; "–"
// when empty; the mean alone when one repeat had it or all agree.
std::string SpreadText(const Spread& s, int digits, double factor = 1,
                       absl::string_view unit = "") {
  if (s.n == 0) return "–";
  const std::string mean = absl::StrFormat("%.*f%s", digits, factor * s.mean, unit);
  const std::string lo = absl::StrFormat("%.*f", digits, factor * s.min);
  const std::string hi = absl::StrFormat("%.*f", digits, factor * s.max);
  if (s.n == 1 || lo == hi) return mean;
  return absl::StrCat(mean, " (", lo, "–", hi, unit, ")");
}

// One policy's figures over the repeats, for the summary over repeats.
struct RepeatRow {
  std::string label;
  std::vector<double> ips, rog_ratio, stall, detached, ttt, ttt_share, acc;
  int not_reached = 0, present = 0;
  // Of ttt_share, the upper bounds: repeats whose BSP first had its own final
  // accuracy after its last evaluation (BSPTimeAtLeast).
  int share_bounds = 0;
};

// A lower bound on BSP's time to its own final accuracy when its evaluated
// curve never reached it: that accuracy is measured after the run's final
// sync, so BSP first had it after its last evaluation. None with --target
// (a fixed accuracy BSP may never reach) or without evaluations.
std::optional<double> BSPTimeAtLeast(const BenchSettings& settings, const PolicyFigures& bsp) {
  if (settings.target || bsp.team_accuracy.empty() || bsp.final_accuracy < 0) return std::nullopt;
  const double last = bsp.team_accuracy.back().first;
  if (!(last > 0)) return std::nullopt;
  return last;
}

// BSP's, SSP's and ROG's rows, each repeat's figures added to them; a ratio
// or time share is taken within its repeat.
std::vector<RepeatRow> RepeatRows(const std::vector<std::vector<PolicyFigures>>& repeats,
                                  const BenchSettings& settings) {
  const char* kPolicies[] = {"bsp", "ssp", "rog"};
  std::vector<RepeatRow> rows(3);
  for (const auto& rep : repeats) {
    const PolicyFigures* bsp = Find(rep, "bsp");
    const PolicyFigures* rog = Find(rep, "rog");
    const std::optional<double> target = TargetAccuracy(settings, bsp);
    std::optional<double> bsp_time;
    bool bsp_time_bound = false;
    if (target && bsp != nullptr) {
      bsp_time = TimeToAccuracy(bsp->team_accuracy, *target);
      if (!bsp_time) {
        bsp_time = BSPTimeAtLeast(settings, *bsp);
        bsp_time_bound = bsp_time.has_value();
      }
    }
    for (int k = 0; k < 3; ++k) {
      const PolicyFigures* p = Find(rep, kPolicies[k]);
      if (p == nullptr) continue;
      RepeatRow& r = rows[k];
      r.label = Label(*p, settings.staleness);
      ++r.present;
      r.ips.push_back(p->iterations_per_s);
      if (rog != nullptr && p->iterations_per_s > 0) {
        r.rog_ratio.push_back(rog->iterations_per_s / p->iterations_per_s);
      }
      r.stall.push_back(p->stall_share);
      r.detached.push_back(p->detached_share);
      if (p->final_accuracy >= 0) r.acc.push_back(p->final_accuracy);
      if (target) {
        std::optional<double> t = TimeToAccuracy(p->team_accuracy, *target);
        if (t) {
          r.ttt.push_back(*t);
          // Against a lower bound on BSP's time, the share is an upper bound.
          if (bsp_time && *bsp_time > 0) {
            r.ttt_share.push_back(*t / *bsp_time);
            r.share_bounds += bsp_time_bound;
          }
        } else {
          ++r.not_reached;
        }
      }
    }
  }
  return rows;
}

// A row's share of BSP's time: "≤ " before it when some repeats give an
// upper bound, and how many.
std::string ShareText(const RepeatRow& r) {
  const std::string text = SpreadText(SpreadOf(r.ttt_share), 2);
  if (r.share_bounds == 0) return text;
  return absl::StrCat("≤ ", text, "; ", r.share_bounds, " of ", r.ttt_share.size(),
                      " upper bounds");
}

// The table over repeats, one row per policy run, and how to read it.
void AppendRepeatsTable(std::string* md, const std::vector<RepeatRow>& rows,
                        const BenchSettings& settings, const std::string& target_name) {
  absl::StrAppend(
      md, "| | it/s per robot | ROG's ratio to it | stall share | detached share | time to ",
      target_name,
      " | share of BSP's time | final accuracy |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const RepeatRow& r : rows) {
    if (r.present == 0) continue;
    std::string ttt = SpreadText(SpreadOf(r.ttt), 0, 1, " s");
    if (r.not_reached > 0) {
      ttt = absl::StrCat(r.ttt.empty() ? "" : ttt + "; ", "not reached in ", r.not_reached, " of ",
                         r.present);
    }
    absl::StrAppend(md, "| ", r.label, " | ", SpreadText(SpreadOf(r.ips), 3), " | ",
                    SpreadText(SpreadOf(r.rog_ratio), 2, 1, "×"), " | ",
                    SpreadText(SpreadOf(r.stall), 1, 100, "%"), " | ",
                    SpreadText(SpreadOf(r.detached), 1, 100, "%"), " | ", ttt, " | ", ShareText(r),
                    " | ", SpreadText(SpreadOf(r.acc), 4), " |\n");
  }
  absl::StrAppend(md,
                  "\nRanges are the lowest and highest over the repeats. A ratio is ROG's "
                  "iterations/s over the policy's in the same repeat; ",
                  settings.target
                      ? "every repeat has the same target accuracy.\n"
                      : "time to BSP's final accuracy takes each repeat's own BSP run as the "
                        "target. BSP's final accuracy is measured after its final sync, so "
                        "where BSP's evaluated curve never reached it, BSP's time is later than "
                        "its last evaluation: a share of BSP's time taken against that "
                        "evaluation's time is an upper bound (\"≤\").\n");
}

// The time goal's line, on ROG's row: met when ROG reached the target in
// every repeat and the mean share (an upper bound where some shares are)
// is within the goal; above the goal on bounds, it is not measured.
std::string TimeGoalLine(const RepeatRow& rog, const RepeatGoals& goals,
                         const std::string& target_name) {
  const Spread share = SpreadOf(rog.ttt_share);
  const bool within = rog.not_reached == 0 && share.n > 0 && share.mean <= goals.time_share_of_bsp;
  std::string verdict = "not measured";
  if (within) {
    verdict = "**met**";
  } else if (rog.not_reached > 0 || (share.n > 0 && rog.share_bounds == 0)) {
    verdict = "**not met**";
  }
  return absl::StrFormat(
      "- ROG's time to %s ≤ %.2f× BSP's: %s (%s%s)", target_name, goals.time_share_of_bsp, verdict,
      ShareText(rog),
      rog.not_reached > 0 ? absl::StrCat("; ROG did not reach it in ", rog.not_reached) : "");
}

// The goals, checked against the means: one line per goal set.
std::vector<std::string> RepeatGoalLines(const std::vector<RepeatRow>& rows,
                                         const RepeatGoals& goals, const std::string& target_name) {
  const Spread rog_bsp = SpreadOf(rows[0].rog_ratio);
  const Spread rog_ssp = SpreadOf(rows[1].rog_ratio);
  const auto verdict = [](bool known, bool met) -> std::string {
    return !known ? "not measured" : met ? "**met**" : "**not met**";
  };
  std::vector<std::string> lines;
  if (goals.rog_over_bsp > 0) {
    lines.push_back(absl::StrFormat("- ROG/BSP ≥ %.2f×: %s (%s)", goals.rog_over_bsp,
                                    verdict(rog_bsp.n > 0, rog_bsp.mean >= goals.rog_over_bsp),
                                    SpreadText(rog_bsp, 2, 1, "×")));
  }
  if (goals.rog_over_ssp > 0) {
    lines.push_back(absl::StrFormat("- ROG/SSP ≥ %.2f×: %s (%s)", goals.rog_over_ssp,
                                    verdict(rog_ssp.n > 0, rog_ssp.mean >= goals.rog_over_ssp),
                                    SpreadText(rog_ssp, 2, 1, "×")));
  }
  if (goals.time_share_of_bsp > 0) lines.push_back(TimeGoalLine(rows[2], goals, target_name));
  if (goals.accuracy_points > 0) {
    const Spread rog_acc = SpreadOf(rows[2].acc);
    double best = -1;
    for (int k = 0; k < 2; ++k) {
      const Spread a = SpreadOf(rows[k].acc);
      if (a.n > 0) best = std::max(best, a.mean);
    }
    lines.push_back(absl::StrFormat(
        "- final accuracy within %.1f points of the best baseline: %s (ROG %s, best baseline "
        "%.4f)",
        goals.accuracy_points,
        verdict(rog_acc.n > 0 && best >= 0, rog_acc.mean >= best - goals.accuracy_points / 100),
        SpreadText(rog_acc, 4), best));
  }
  return lines;
}

// The summary's settings section, with the compute per iteration over every run.
void AppendRepeatsSettings(std::string* md, const std::vector<std::vector<PolicyFigures>>& repeats,
                           const BenchSettings& settings) {
  absl::StrAppend(md, "\n## Settings\n\n");
  for (const std::string& m : settings.more) absl::StrAppend(md, "- ", m, "\n");
  absl::StrAppend(
      md,
      absl::StrFormat("- %d robots, S=%d, codec %s, traces %s × %g\n", settings.robots,
                      settings.staleness, settings.codec, settings.traces, settings.trace_scale),
      "- links: ", settings.links.empty() ? "user-space relays" : settings.links, "\n",
      settings.team.empty() ? "" : absl::StrCat("- rogd: ", settings.team, "\n"),
      absl::StrFormat("- %.0f s of adaptation per run\n", settings.adapt_seconds));
  std::vector<double> compute, real;
  for (const auto& rep : repeats) {
    for (const PolicyFigures& p : rep) {
      if (p.compute_per_iteration_s <= 0) continue;
      compute.push_back(p.compute_per_iteration_s);
      real.push_back(p.real_compute_per_iteration_s);
    }
  }
  if (!compute.empty()) {
    absl::StrAppend(md, "- compute per iteration: ", SpreadText(SpreadOf(compute), 1, 1e3, " ms"),
                    " over the runs (real compute before padding: ",
                    SpreadText(SpreadOf(real), 1, 1e3, " ms"), ")\n");
  }
  absl::StrAppend(md, "- CPU: ", settings.cpu, "\n", "- command: `", settings.command, "`\n");
}

}  // namespace

namespace {

// Each policy (its first repeat's figures) with its iterations/s averaged
// over the repeats and its link utilisation over those that measured one,
// for AppendRigCheck.
std::vector<PolicyFigures> MeanRigFigures(const std::vector<std::vector<PolicyFigures>>& repeats) {
  std::vector<PolicyFigures> out;
  if (repeats.empty()) return out;
  for (const PolicyFigures& first : repeats[0]) {
    PolicyFigures p = first;
    double sum = 0, its = 0;
    int n = 0, m = 0;
    for (const std::vector<PolicyFigures>& rep : repeats) {
      const PolicyFigures* q = Find(rep, first.policy);
      if (q == nullptr) continue;
      its += q->iterations_per_s;
      ++m;
      if (q->link_utilisation <= 0) continue;
      sum += q->link_utilisation;
      ++n;
    }
    p.link_utilisation = n > 0 ? sum / n : 0;
    p.iterations_per_s = m > 0 ? its / m : 0;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string RepeatsMarkdown(const std::vector<std::vector<PolicyFigures>>& repeats,
                            const BenchSettings& settings, const RepeatGoals& goals,
                            const std::string& title, const std::string& simulator) {
  std::string md = absl::StrCat("# ", title, "\n\n");
  const std::vector<RepeatRow> rows = RepeatRows(repeats, settings);
  const Spread rog_bsp = SpreadOf(rows[0].rog_ratio);
  const Spread rog_ssp = SpreadOf(rows[1].rog_ratio);
  absl::StrAppend(&md, repeats.size(), repeats.size() == 1 ? " repeat" : " repeats",
                  " per policy. Training throughput (iterations per second per robot; ratios "
                  "taken within each repeat; mean (min–max)): **ROG/BSP ",
                  SpreadText(rog_bsp, 2, 1, "×"), "**, **ROG/SSP ", SpreadText(rog_ssp, 2, 1, "×"),
                  "**.\n\n");
  const std::string target_name = settings.target
                                      ? absl::StrFormat("accuracy %.4f", *settings.target)
                                      : std::string("BSP's final accuracy");
  AppendRepeatsTable(&md, rows, settings, target_name);
  AppendRigCheck(&md, MeanRigFigures(repeats), settings.staleness, simulator);

  // The goals, checked against the means.
  const std::vector<std::string> lines = RepeatGoalLines(rows, goals, target_name);
  if (!lines.empty()) {
    absl::StrAppend(&md, "\n## Goals", goals.source.empty() ? "" : " (" + goals.source + ")",
                    "\n\n", absl::StrJoin(lines, "\n"), "\n");
  }

  AppendRepeatsSettings(&md, repeats, settings);
  AppendSimulator(&md, simulator);
  return md;
}

absl::StatusOr<double> SumFromWorkersJson(absl::string_view json, absl::string_view key) {
  if (!absl::StrContains(json, "\"workers\"")) {
    return absl::InvalidArgumentError("not the output of `rogctl workers --json`");
  }
  const std::string quoted = absl::StrCat("\"", key, "\":");
  double sum = 0;
  bool found = false;
  for (size_t at = json.find(quoted); at != absl::string_view::npos;
       at = json.find(quoted, at + 1)) {
    absl::string_view rest = json.substr(at + quoted.size());
    rest = rest.substr(0, rest.find_first_of(",}"));
    double v;
    if (!absl::SimpleAtod(rest, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("bad ", key, " value '", rest, "'"));
    }
    sum += v;
    found = true;
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no worker has \"", key, "\""));
  return sum;
}

absl::StatusOr<int64_t> LateRowsFromWorkersJson(absl::string_view json) {
  absl::StatusOr<double> sum = SumFromWorkersJson(json, "late_rows");
  if (absl::IsNotFound(sum.status())) return 0;  // no workers
  if (!sum.ok()) return sum.status();
  return static_cast<int64_t>(*sum);
}

absl::StatusOr<std::vector<double>> StallCausesFromWorkersJson(absl::string_view json) {
  std::vector<double> causes(kStallCauses, 0);
  for (int c = 0; c < kStallCauses; ++c) {
    const std::string key =
        absl::StrCat("stall_", StallCauseName(static_cast<StallCause>(c)), "_seconds");
    absl::StatusOr<double> sum = SumFromWorkersJson(json, key);
    if (absl::IsNotFound(sum.status())) {
      // Files from before the causes have none; from before peer_asked,
      // its time is within peer_uplink (-1: not recorded).
      if (c != kStallPeerAsked) return std::vector<double>();
      sum = -1;
    }
    if (!sum.ok()) return sum.status();
    causes[c] = *sum;
  }
  return causes;
}

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
  const std::string p = Label(r.figures, staleness);
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
