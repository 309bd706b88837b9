// scale_study: one point of the scale study (tools/scale/README.md). N
// synthetic workers (synthetic_worker.h) in this process against one real
// rogd on loopback: the first brings the model, the others join and
// receive it; rogd writes a checkpoint; the team then runs SSP iterations
// for --seconds; one more worker joins while the team runs and leaves once
// it holds the model. rogd's CPU and memory are read from /proc
// at each phase's ends, its engine queue delay from Admin.GetStatus. Prints
// one JSON object; tools/scale/scale_study.sh runs the points and writes
// the table. With --baseline it prints this machine's memcpy, summation
// and loopback TCP figures instead.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"
#include "tools/scale/baselines.h"
#include "tools/scale/proc_stats.h"
#include "tools/scale/scale_models.h"
#include "tools/scale/synthetic_worker.h"

ABSL_FLAG(std::string, server, "127.0.0.1:7070", "rogd's address (host:port)");
ABSL_FLAG(int, rogd_pid, 0, "rogd's process id, whose CPU and memory /proc shows (required)");
ABSL_FLAG(uint32_t, workers, 4, "team size N (rogd must run with --workers=N)");
ABSL_FLAG(std::string, model, "convmlp",
          "model layout: convmlp (3.2 MB), vit25m (97 MB), "
          "vit100m (403 MB)");
ABSL_FLAG(uint32_t, staleness, 4, "rogd's --staleness (rogd must run --sync=ssp)");
ABSL_FLAG(double, compute_seconds, 0,
          "each worker sleeps this long per iteration, standing for its compute (0: none, the "
          "team runs as fast as rogd and this process let it)");
ABSL_FLAG(double, seconds, 10, "length of the steady phase the team's iterations are timed over");
ABSL_FLAG(bool, join, true, "measure one more worker joining while the team runs");
ABSL_FLAG(double, join_timeout, 60,
          "seconds the joining worker may take to receive the model before it gives up");
ABSL_FLAG(bool, checkpoint, true, "ask rogd for a checkpoint at the end (needs --checkpoint_dir)");
ABSL_FLAG(uint64_t, batch_bytes, 16 * 1024, "largest payload of an uplink batch (SDK default)");
ABSL_FLAG(bool, baseline, false, "print this machine's memcpy, summation and TCP figures only");
ABSL_FLAG(int, repeats, 3, "with --baseline: repeats of each figure (the best is printed)");

namespace rog {
namespace {

constexpr double kGB = 1e9;

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

// Admin.GetStatus; an empty reply if rogd did not answer.
pb::StatusReply Status(pb::Admin::Stub& admin) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(600));
  pb::StatusReply reply;
  admin.GetStatus(&ctx, pb::StatusRequest(), &reply);
  return reply;
}

// The engine queue delay's quantile `q` over the events between two replies.
double DelayBetween(const pb::StatusReply& a, const pb::StatusReply& b, double q) {
  std::vector<uint64_t> d(b.engine_queue_delay_counts_size(), 0);
  for (int k = 0; k < b.engine_queue_delay_counts_size(); ++k) {
    const uint64_t before =
        k < a.engine_queue_delay_counts_size() ? a.engine_queue_delay_counts(k) : 0;
    d[k] = b.engine_queue_delay_counts(k) - before;
  }
  // The same buckets as server/queue_delay.h: 1e-6 * 2^(k/4) s.
  uint64_t total = 0;
  for (uint64_t c : d) total += c;
  if (total == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::max(1.0, std::ceil(q * total)));
  uint64_t seen = 0;
  for (size_t k = 0; k < d.size(); ++k) {
    seen += d[k];
    if (seen >= rank) return 1e-6 * std::exp2(static_cast<double>(k) / 4);
  }
  return 0;
}

// The longest time any worker went between two completed iterations
// within [from, to] (a gap that spans `from` counts).
double MaxGap(const std::vector<std::unique_ptr<SyntheticWorker>>& team, double from, double to) {
  double gap = 0;
  for (const auto& w : team) {
    const std::vector<double> t = w->iteration_times();
    double last = from;
    for (double x : t) {
      if (x < from) {
        last = x;
        continue;
      }
      if (x > to) break;
      gap = std::max(gap, x - last);
      last = x;
    }
    gap = std::max(gap, to - last);
  }
  return gap;
}

// Iterations completed within [from, to], leaving out each worker's first
// `free` (the bound lets a worker run S + 1 iterations before it needs
// anything of the others: they measure this process, not rogd).
size_t IterationsIn(const std::vector<std::unique_ptr<SyntheticWorker>>& team, double from,
                    double to, size_t free = 0) {
  size_t n = 0;
  for (const auto& w : team) {
    const std::vector<double> t = w->iteration_times();
    for (size_t k = free; k < t.size(); ++k) n += t[k] >= from && t[k] <= to;
  }
  return n;
}

struct Totals {
  uint64_t up = 0, down = 0;
};
Totals Bytes(const std::vector<std::unique_ptr<SyntheticWorker>>& team) {
  Totals t;
  for (const auto& w : team) {
    t.up += w->bytes_up();
    t.down += w->bytes_down();
  }
  return t;
}

// Accumulates the JSON object's fields in order.
class Json {
 public:
  Json& Add(const std::string& key, double v) { return Raw(key, Num(v)); }
  Json& Str(const std::string& key, const std::string& v) {
    std::string e;
    for (char c : v) e += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return Raw(key, "\"" + e + "\"");
  }
  Json& Raw(const std::string& key, const std::string& v) {
    absl::StrAppend(&s_, s_.empty() ? "{" : ",", "\"", key, "\":", v);
    return *this;
  }
  std::string Done() const { return s_ + "}"; }

 private:
  std::string s_;
};

int PrintBaselines() {
  const Baselines b = MeasureBaselines(absl::GetFlag(FLAGS_repeats));
  std::printf("%s\n", Json()
                          .Add("memcpy_gbps", b.memcpy_bytes_per_second / kGB)
                          .Add("sum_gbps", b.sum_bytes_per_second / kGB)
                          .Add("tcp_loopback_gbps", b.tcp_bytes_per_second / kGB)
                          .Done()
                          .c_str());
  return 0;
}

// Runs `fn(i)` for every worker on a thread each; the first error.
template <typename Fn>
absl::Status ForEach(size_t n, size_t first, Fn fn) {
  std::vector<absl::Status> result(n);
  std::vector<std::thread> threads;
  for (size_t i = first; i < n; ++i) threads.emplace_back([&, i] { result[i] = fn(i); });
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : result) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

struct Point {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::Admin::Stub> admin;
  pid_t pid = 0;
  std::unique_ptr<SyntheticModel> model;
  std::vector<std::unique_ptr<SyntheticWorker>> team;
  Json out;
};

// Phase 1: the first worker uploads the model, the others join at once
// and each receives it (full resync).
absl::Status Form(Point& p) {
  const size_t n = p.team.size();
  const ProcSample idle = ReadProc(p.pid);
  double t0 = SteadySeconds();
  if (absl::Status s = p.team[0]->Join(nullptr); !s.ok()) return s;
  const double upload = SteadySeconds() - t0;
  const ProcSample uploaded = ReadProc(p.pid);
  const Totals before = Bytes(p.team);
  std::vector<double> resync(n, 0);
  t0 = SteadySeconds();
  absl::Status s = ForEach(n, 1, [&](size_t i) { return p.team[i]->Join(&resync[i]); });
  if (!s.ok()) {
    // E.g. rogd refused a worker past --max_state_bytes: what it held then.
    const ProcSample at = ReadProc(p.pid);
    p.out.Add("formation_seconds", SteadySeconds() - t0)
        .Add("rss_at_refusal_bytes", at.rss_bytes)
        .Add("peak_rss_bytes", at.peak_rss_bytes);
    return s;
  }
  const double wall = SteadySeconds() - t0;
  const ProcSample joined = ReadProc(p.pid);
  const Totals after = Bytes(p.team);
  std::vector<double> r(resync.begin() + 1, resync.end());
  std::sort(r.begin(), r.end());
  const double sent = static_cast<double>(after.down - before.down);
  p.out.Add("rss_idle_bytes", idle.rss_bytes)
      .Add("upload_seconds", upload)
      .Add("rss_after_upload_bytes", uploaded.rss_bytes)
      .Add("resync_workers", static_cast<double>(n - 1))
      .Add("resync_wall_seconds", wall)
      .Add("resync_median_seconds", r.empty() ? 0 : r[r.size() / 2])
      .Add("resync_max_seconds", r.empty() ? 0 : r.back())
      .Add("resync_bytes_sent", sent)
      .Add("resync_cpu_seconds", joined.cpu_seconds - uploaded.cpu_seconds)
      .Add("resync_engine_cpu_seconds", joined.engine_seconds - uploaded.engine_seconds)
      .Add("rss_after_join_bytes", joined.rss_bytes);
  return ForEach(n, 0, [&](size_t i) { return p.team[i]->AwaitTeam(); });
}

// Phase 2, the team iterating for --seconds: rogd's CPU per byte, the
// team's rate, the engine's queue delay. `ta`, `tb`: the phase's ends.
void Steady(Point& p, double* ta, double* tb) {
  const size_t n = p.team.size();
  const pb::StatusReply sa = Status(*p.admin);
  const ProcSample a = ReadProc(p.pid);
  const Totals ba = Bytes(p.team);
  const double own_a = OwnCpuSeconds();
  *ta = SteadySeconds();
  std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds)));
  *tb = SteadySeconds();
  const pb::StatusReply sb = Status(*p.admin);
  const ProcSample b = ReadProc(p.pid);
  const Totals bb = Bytes(p.team);
  const size_t its = IterationsIn(p.team, *ta, *tb, absl::GetFlag(FLAGS_staleness) + 1);
  uint64_t min_clock = UINT64_MAX;
  for (const auto& w : p.team) min_clock = std::min(min_clock, w->iterations());
  p.out.Add("steady_seconds", *tb - *ta)
      .Add("steady_iterations", static_cast<double>(its))
      .Add("steady_all_iterations", static_cast<double>(IterationsIn(p.team, *ta, *tb)))
      .Add("min_clock_at_end", static_cast<double>(min_clock))
      .Add("rogd_threads", b.threads)
      // Past each worker's first S + 1: iterations that needed rogd.
      .Add("team_iterations_per_second", static_cast<double>(its) / n / (*tb - *ta))
      .Add("steady_bytes_up", static_cast<double>(bb.up - ba.up))
      .Add("steady_bytes_down", static_cast<double>(bb.down - ba.down))
      .Add("steady_cpu_seconds", b.cpu_seconds - a.cpu_seconds)
      .Add("steady_engine_cpu_seconds", b.engine_seconds - a.engine_seconds)
      .Add("steady_writer_cpu_seconds", b.writer_seconds - a.writer_seconds)
      .Add("steady_client_cpu_seconds", OwnCpuSeconds() - own_a)
      .Add("steady_engine_events", static_cast<double>(sb.engine_events() - sa.engine_events()))
      .Add("steady_queue_delay_p50", DelayBetween(sa, sb, 0.5))
      .Add("steady_queue_delay_p99", DelayBetween(sa, sb, 0.99))
      .Add("steady_max_gap_seconds", MaxGap(p.team, *ta, *tb))
      .Add("rss_steady_bytes", b.rss_bytes);
}

// Phase 3: one more worker joins while the team runs, receives the model
// and leaves; how long that took and how long it held the team.
absl::Status JoinDuring(Point& p, double tb) {
  const pb::StatusReply sa = Status(*p.admin);
  SyntheticWorker joiner(p.channel, *p.model, "joiner", absl::GetFlag(FLAGS_staleness));
  double resync = 0;
  const double t0 = SteadySeconds();
  const absl::Status s = joiner.Join(&resync, absl::GetFlag(FLAGS_join_timeout));
  const bool timed_out = s.code() == absl::StatusCode::kDeadlineExceeded;
  if (!s.ok() && !timed_out) return s;
  const double joined = SteadySeconds();
  if (!timed_out) {
    if (absl::Status left = joiner.Leave(); !left.ok()) return left;
  }
  const double tc = SteadySeconds();
  const pb::StatusReply sb = Status(*p.admin);
  p.out.Add("join_timed_out", timed_out ? 1 : 0)
      .Add("join_resync_seconds", timed_out ? joined - t0 : resync)
      .Add("join_leave_seconds", tc - joined)
      .Add("join_max_gap_seconds", MaxGap(p.team, t0, tc))
      .Add("join_iterations", static_cast<double>(IterationsIn(p.team, t0, tc)))
      .Add("join_queue_delay_p99", DelayBetween(sa, sb, 0.99))
      .Add("join_queue_delay_max_bucket", DelayBetween(sa, sb, 1.0))
      .Add("rss_after_join_phase_bytes", ReadProc(p.pid).rss_bytes);
  (void)tb;
  return absl::OkStatus();
}

// Phase 4: the team stopped, rogd writes a checkpoint.
void CheckpointNow(Point& p) {
  grpc::ClientContext ctx;
  pb::CheckpointReply reply;
  const ProcSample a = ReadProc(p.pid);
  const double t0 = SteadySeconds();
  const grpc::Status s = p.admin->Checkpoint(&ctx, pb::CheckpointRequest(), &reply);
  const double wall = SteadySeconds() - t0;
  const ProcSample b = ReadProc(p.pid);
  p.out.Add("checkpoint_ok", s.ok() ? 1 : 0)
      .Str("checkpoint_error", s.ok() ? "" : s.error_message())
      .Add("checkpoint_seconds", reply.seconds())
      .Add("checkpoint_call_seconds", wall)
      .Add("checkpoint_bytes", static_cast<double>(reply.bytes()))
      .Add("checkpoint_cpu_seconds", b.cpu_seconds - a.cpu_seconds);
}

// What the point has measured so far, on stderr: a point killed by its
// timeout leaves its last line (tools/scale/scale_study.sh keeps it).
void Partial(const Point& p, const std::string& phase) {
  std::fprintf(stderr, "partial after %s: %s\n", phase.c_str(), p.out.Done().c_str());
  std::fflush(stderr);
}

absl::Status RunPoint(Point& p) {
  absl::Status formed = Form(p);
  p.out.Add("rss_formed_bytes", ReadProc(p.pid).rss_bytes);
  Partial(p, "formation");
  if (!formed.ok()) return formed;
  // The checkpoint before the team runs: its time and size depend on the
  // state rogd holds, and a busy engine would queue the call.
  p.out.Add("peak_rss_before_checkpoint_bytes", ReadProc(p.pid).peak_rss_bytes);
  if (absl::GetFlag(FLAGS_checkpoint)) CheckpointNow(p);
  std::vector<absl::Status> result(p.team.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < p.team.size(); ++i) {
    threads.emplace_back([&, i] { result[i] = p.team[i]->RunIterations(); });
  }
  double ta = 0, tb = 0;
  Steady(p, &ta, &tb);
  Partial(p, "steady");
  absl::Status joined = absl::OkStatus();
  if (absl::GetFlag(FLAGS_join)) joined = JoinDuring(p, tb);
  Partial(p, "join");
  for (auto& w : p.team) w->Stop();
  for (std::thread& t : threads) t.join();
  if (!joined.ok()) return joined;
  for (const absl::Status& s : result) {
    if (!s.ok()) return s;
  }
  const ProcSample end = ReadProc(p.pid);
  p.out.Add("peak_rss_bytes", end.peak_rss_bytes).Add("rogd_cpu_seconds", end.cpu_seconds);
  // Past the figures: a worker whose goodbye waits behind a busy engine
  // for over 30 s is cancelled instead, and that is no error of the study.
  ForEach(p.team.size(), 0, [&](size_t i) {
    p.team[i]->Leave();
    return absl::OkStatus();
  }).IgnoreError();
  return absl::OkStatus();
}

int Main() {
  if (absl::GetFlag(FLAGS_baseline)) return PrintBaselines();
  Point p;
  p.pid = absl::GetFlag(FLAGS_rogd_pid);
  if (p.pid <= 0 || !ReadProc(p.pid).ok) {
    std::fprintf(stderr, "scale_study: --rogd_pid must name a running rogd\n");
    return 2;
  }
  absl::StatusOr<Layout> layout = ScaleModel(absl::GetFlag(FLAGS_model));
  if (!layout.ok()) {
    std::fprintf(stderr, "scale_study: %s\n", std::string(layout.status().message()).c_str());
    return 2;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  // One connection per worker, as robots have: distinct channel arguments
  // keep gRPC from sharing a subchannel between them.
  p.channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                        grpc::InsecureChannelCredentials(), args);
  p.admin = pb::Admin::NewStub(p.channel);
  p.model = std::make_unique<SyntheticModel>(*layout, absl::GetFlag(FLAGS_batch_bytes));
  const uint32_t n = absl::GetFlag(FLAGS_workers);
  for (uint32_t i = 0; i < n; ++i) {
    args.SetInt("rog.scale.worker", static_cast<int>(i));
    auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                             grpc::InsecureChannelCredentials(), args);
    p.team.push_back(std::make_unique<SyntheticWorker>(channel, *p.model, absl::StrCat("w", i),
                                                       absl::GetFlag(FLAGS_staleness),
                                                       absl::GetFlag(FLAGS_compute_seconds)));
  }
  const double model_bytes = static_cast<double>(layout->total_numel() * sizeof(float));
  p.out.Str("model", absl::GetFlag(FLAGS_model))
      .Add("model_bytes", model_bytes)
      .Add("rows", static_cast<double>(layout->num_rows()))
      .Add("workers", n)
      .Add("compute_seconds", absl::GetFlag(FLAGS_compute_seconds))
      .Add("design_bytes", (n + 1) * model_bytes);
  const absl::Status s = RunPoint(p);
  p.out.Str("error", s.ok() ? "" : std::string(s.message()));
  std::printf("%s\n", p.out.Done().c_str());
  return s.ok() ? 0 : 1;
}

}  // namespace
}  // namespace rog

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "One point of the scale study: N synthetic workers (no training, no replica) against one "
      "rogd on loopback; prints one JSON object of rogd's memory, CPU, queue delay, the team's "
      "rate, a join and a checkpoint. Run rogd with --sync=ssp --workers=N --patience=0 first; "
      "tools/scale/scale_study.sh runs every point.\n"
      "Usage: scale_study --server=HOST:PORT --rogd_pid=PID --workers=N --model=convmlp\n"
      "       scale_study --baseline");
  absl::ParseCommandLine(argc, argv);
  return rog::Main();
}
