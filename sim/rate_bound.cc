#include "sim/rate_bound.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/staleness.h"
#include "common/trace.h"

namespace rog {
namespace {

// A runaway guard: no worker computes more iterations than this.
constexpr double kMaxIterations = 1e7;

absl::Status CheckConfig(const SimConfig& c, double start) {
  if (c.workers < 1 || c.workers > 64) {
    return absl::InvalidArgumentError("workers must be between 1 and 64");
  }
  if (!(c.seconds > 0) || !std::isfinite(c.seconds) || !(c.compute_seconds > 0) ||
      !(c.trace_scale > 0) || !std::isfinite(c.trace_scale)) {
    return absl::InvalidArgumentError("seconds, compute_seconds and trace_scale must be > 0");
  }
  if (!(c.link_delay >= 0) || !std::isfinite(c.link_delay)) {
    return absl::InvalidArgumentError("link_delay must be >= 0 seconds");
  }
  if (!(start >= 0) || !std::isfinite(start)) {
    return absl::InvalidArgumentError(absl::StrCat("start must be >= 0 seconds, got ", start));
  }
  double fastest = 1;
  for (double f : c.compute_factors) {
    if (!(f > 0) || !std::isfinite(f)) {
      return absl::InvalidArgumentError("compute_factors must all be > 0");
    }
    fastest = std::min(fastest, f);
  }
  if (c.seconds / (c.compute_seconds * fastest) > kMaxIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat("seconds / compute_seconds must be at most ", kMaxIterations, " iterations"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RateBound> ComputeRateBound(const SimConfig& config, const Layout& layout,
                                           RateSchedule schedule, double start) {
  if (absl::Status s = CheckConfig(config, start); !s.ok()) return s;
  static const Trace kDefaultTrace = Trace::Constant(100);  // as the simulator's
  const size_t n = config.workers;
  double model = 0;  // the whole model, encoded, one way
  for (const RowInfo& r : layout.rows()) model += EncodedSize(config.engine.codec, r.numel);
  const uint32_t bound = EffectiveBound(config.engine.policy, config.engine.staleness);
  const double d = config.link_delay;
  const double end = start + config.seconds;

  std::vector<const Trace*> trace(n);
  std::vector<double> compute(n);
  for (size_t w = 0; w < n; ++w) {
    trace[w] = config.traces.empty() ? &kDefaultTrace : &config.traces[w % config.traces.size()];
    compute[w] =
        config.compute_seconds * (config.compute_factors.empty()
                                      ? 1.0
                                      : config.compute_factors[w % config.compute_factors.size()]);
  }
  // When the whole model, sent from t on worker w's link, has crossed it.
  auto crossed = [&](size_t w, double t) {
    return trace[w]->TransferEnd(t, model, config.trace_scale);
  };
  // done[w][k]: when worker w completed k iterations; pushed[w][k]: when its
  // push of them was sent (kWholeModelPushes).
  std::vector<std::vector<double>> done(n, std::vector<double>{start});
  std::vector<std::vector<double>> pushed(n, std::vector<double>{start});
  // When worker w's replica holds worker v's updates up to j in every row.
  auto ready = [&](size_t v, size_t w, uint64_t j) {
    const double t = done[v][j];
    switch (schedule) {
      case RateSchedule::kAnyProtocol:
        return std::max(crossed(v, t) + 2 * d, crossed(w, t + d) + d);
      case RateSchedule::kRowsInTurn:
        return crossed(w, crossed(v, t) + d) + d;
      case RateSchedule::kWholeModelPushes:
        return std::max(pushed[v][j] + 2 * d, crossed(w, t + d) + d);
    }
    return t;
  };
  // Level by level: starting iteration k + 1 needs other workers' iteration
  // NeededVersion(k, B) <= k, which the levels before computed.
  for (uint64_t k = 0;; ++k) {
    bool all_past = true;
    for (size_t w = 0; w < n; ++w) all_past = all_past && done[w][k] >= end;
    if (all_past) break;
    for (size_t w = 0; w < n; ++w) {
      double begin =
          schedule == RateSchedule::kWholeModelPushes && k > 0 ? pushed[w][k] : done[w][k];
      if (const uint64_t j = NeededVersion(k, bound); j > 0) {
        for (size_t v = 0; v < n; ++v) {
          if (v != w) begin = std::max(begin, ready(v, w, j));
        }
      }
      done[w].push_back(begin + compute[w]);
      if (schedule == RateSchedule::kWholeModelPushes) {
        pushed[w].push_back(crossed(w, done[w].back()));
      }
    }
  }
  RateBound out;
  out.iterations.resize(n);
  double iterations = 0, computing = 0;
  for (size_t w = 0; w < n; ++w) {
    // done[w] rises, and done[w][0] == start is not an iteration.
    const auto past = std::upper_bound(done[w].begin(), done[w].end(), end);
    out.iterations[w] = static_cast<uint64_t>(past - done[w].begin()) - 1;
    iterations += out.iterations[w];
    computing += out.iterations[w] * compute[w];
  }
  out.iterations_per_second = iterations / n / config.seconds;
  out.compute_share = computing / (n * config.seconds);
  return out;
}

}  // namespace rog
