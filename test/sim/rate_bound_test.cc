// The rate bound (sim/rate_bound.h): its schedules on constant links, where
// the rate follows in closed form, and against the simulator on the robots'
// traces, which no policy may outrun.
#include "sim/rate_bound.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "common/codec.h"

namespace rog {
namespace {

Layout TinyLayout() {
  absl::StatusOr<Layout> layout = SyntheticLayout("tiny");
  REQUIRE(layout.ok());
  return *layout;
}

double ModelBytes(const Layout& layout, Codec codec) {
  double bytes = 0;
  for (const RowInfo& r : layout.rows()) bytes += EncodedSize(codec, r.numel);
  return bytes;
}

// Two workers on constant links that move the whole tiny model one way in
// `model_seconds`; compute 1 s per iteration; 1000 s.
SimConfig ConstantLinks(SyncPolicy policy, uint32_t staleness, double model_seconds) {
  SimConfig c;
  c.engine.policy = policy;
  c.engine.staleness = staleness;
  c.workers = 2;
  c.seconds = 1000;
  c.compute_seconds = 1;
  c.link_delay = 0;
  const double mbit = ModelBytes(TinyLayout(), c.engine.codec) * 8 / 1e6 / model_seconds;
  c.traces = {Trace::Constant(mbit)};
  return c;
}

double Rate(const SimConfig& c, RateSchedule schedule) {
  absl::StatusOr<RateBound> b = ComputeRateBound(c, TinyLayout(), schedule);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  return b->iterations_per_second;
}

TEST_CASE("on fast links every schedule runs at the compute's pace", "[rate_bound]") {
  const SimConfig c = ConstantLinks(SyncPolicy::kSsp, 4, 0.01);
  for (RateSchedule s : {RateSchedule::kAnyProtocol, RateSchedule::kRowsInTurn}) {
    CHECK(Rate(c, s) == Approx(1.0).epsilon(0.005));
  }
  // The push is the compute's: 1.01 s per iteration.
  CHECK(Rate(c, RateSchedule::kWholeModelPushes) == Approx(1 / 1.01).epsilon(0.005));
}

// On a link that moves the model in L = 2 s, with compute C = 1 s and bound
// B, a team in step starts iteration k + 1 once iteration k - B crossed:
// T(k + 1) = max(T(k), T(k - B) + delay) + C, a period of
// (delay + C) / (B + 1) when that is longer than C.
TEST_CASE("on a slow link each schedule's rate is its own closed form", "[rate_bound]") {
  const SimConfig ssp = ConstantLinks(SyncPolicy::kSsp, 1, 2);
  // Any protocol: the model crosses both ways at once, delay L: (2 + 1) / 2.
  CHECK(Rate(ssp, RateSchedule::kAnyProtocol) == Approx(1 / 1.5).epsilon(0.01));
  // Rows in turn: up, then down, delay 2L: (4 + 1) / 2.
  CHECK(Rate(ssp, RateSchedule::kRowsInTurn) == Approx(1 / 2.5).epsilon(0.01));
  // The whole model after each compute: the push holds the next compute,
  // a period of L + C.
  CHECK(Rate(ssp, RateSchedule::kWholeModelPushes) == Approx(1 / 3.0).epsilon(0.01));

  // BSP (B = 0): every iteration waits for the last one's delay.
  const SimConfig bsp = ConstantLinks(SyncPolicy::kBsp, 1, 2);
  CHECK(Rate(bsp, RateSchedule::kAnyProtocol) == Approx(1 / 3.0).epsilon(0.01));
  CHECK(Rate(bsp, RateSchedule::kRowsInTurn) == Approx(1 / 5.0).epsilon(0.01));
}

TEST_CASE("the links' delay counts once each way", "[rate_bound]") {
  SimConfig c = ConstantLinks(SyncPolicy::kRog, 1, 2);
  c.link_delay = 0.25;
  // Any protocol: L = 2 + 2 × 0.25 = 2.5, (2.5 + 1) / 2.
  CHECK(Rate(c, RateSchedule::kAnyProtocol) == Approx(1 / 1.75).epsilon(0.01));
  // Rows in turn: 2 + 0.25 + 2 + 0.25 = 4.5, (4.5 + 1) / 2.
  CHECK(Rate(c, RateSchedule::kRowsInTurn) == Approx(1 / 2.75).epsilon(0.01));
}

TEST_CASE("a slower robot sets its own pace, and the team's", "[rate_bound]") {
  SimConfig c = ConstantLinks(SyncPolicy::kRog, 4, 0.01);
  c.compute_factors = {1, 2};
  absl::StatusOr<RateBound> b = ComputeRateBound(c, TinyLayout(), RateSchedule::kAnyProtocol);
  REQUIRE(b.ok());
  REQUIRE(b->iterations.size() == 2);
  // Worker 1 computes 2 s per iteration; worker 0 may be 4 ahead, no more.
  CHECK(b->iterations[1] == 500);
  CHECK(b->iterations[0] >= 500);
  CHECK(b->iterations[0] <= 505);
  CHECK(b->compute_share == Approx(((b->iterations[0] * 1.0) + 1000) / 2000));
}

TEST_CASE("settings the simulator refuses are refused with the field's name", "[rate_bound]") {
  SimConfig c = ConstantLinks(SyncPolicy::kRog, 4, 1);
  c.workers = 0;
  CHECK(ComputeRateBound(c, TinyLayout(), RateSchedule::kAnyProtocol).status().message() ==
        "workers must be between 1 and 64");
  c = ConstantLinks(SyncPolicy::kRog, 4, 1);
  c.compute_seconds = 0;
  CHECK(!ComputeRateBound(c, TinyLayout(), RateSchedule::kAnyProtocol).ok());
  c = ConstantLinks(SyncPolicy::kRog, 4, 1);
  c.compute_factors = {1, -1};
  CHECK(ComputeRateBound(c, TinyLayout(), RateSchedule::kAnyProtocol).status().message() ==
        "compute_factors must all be > 0");
  c = ConstantLinks(SyncPolicy::kRog, 4, 1);
  c.compute_seconds = 1e-9;
  CHECK(!ComputeRateBound(c, TinyLayout(), RateSchedule::kAnyProtocol).ok());
  c = ConstantLinks(SyncPolicy::kRog, 4, 1);
  CHECK(!ComputeRateBound(c, TinyLayout(), RateSchedule::kAnyProtocol, -1).ok());
}

std::vector<Trace> FastTraces() {
  std::vector<Trace> traces;
  for (int w = 1; w <= 4; ++w) {
    const std::string path = absl::StrCat("tools/traces/outdoors-fast-w", w, ".tsv");
    std::ifstream in(path);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Trace> t = Trace::Parse(text.str(), path);
    REQUIRE(t.ok());
    traces.push_back(*std::move(t));
  }
  return traces;
}

// The simulator runs rogd's engine and the SDK on the same links, with
// framing, acknowledgements and whole rows: no policy may beat the bound of
// any protocol, and SSP pushing as the paper ran it (the next compute once
// the push crossed) not the bound of that way of pushing. The regime
// map's C = 0.2 s, R = 0.67 point (the 82 KB model moves one way in
// 0.67 C at the traces' median), where the links, not the compute, decide.
TEST_CASE("no simulated policy outruns the bound on the robots' traces", "[rate_bound]") {
  absl::StatusOr<Layout> layout = SyntheticLayout("fmnist");
  REQUIRE(layout.ok());
  SimConfig c;
  c.workers = 4;
  c.engine.staleness = 4;
  c.seconds = 60;
  c.compute_seconds = 0.2;
  c.compute_jitter = 0;
  c.trace_scale = 0.112596;
  c.traces = FastTraces();
  for (SyncPolicy policy : {SyncPolicy::kBsp, SyncPolicy::kSsp, SyncPolicy::kRog}) {
    c.engine.policy = policy;
    absl::StatusOr<SimReport> r = RunSimulation(c, *layout);
    REQUIRE(r.ok());
    absl::StatusOr<RateBound> any =
        ComputeRateBound(c, *layout, RateSchedule::kAnyProtocol, r->start);
    absl::StatusOr<RateBound> turn =
        ComputeRateBound(c, *layout, RateSchedule::kRowsInTurn, r->start);
    absl::StatusOr<RateBound> whole =
        ComputeRateBound(c, *layout, RateSchedule::kWholeModelPushes, r->start);
    REQUIRE(any.ok());
    REQUIRE(turn.ok());
    REQUIRE(whole.ok());
    INFO(SyncPolicyName(policy) << ": simulated " << r->iterations_per_second() << " it/s, any "
                                << any->iterations_per_second << ", rows in turn "
                                << turn->iterations_per_second << ", whole-model pushes "
                                << whole->iterations_per_second);
    CHECK(r->iterations_per_second() <= any->iterations_per_second);
    CHECK(turn->iterations_per_second <= any->iterations_per_second);
    CHECK(whole->iterations_per_second <= any->iterations_per_second);
    if (policy == SyncPolicy::kSsp) {
      SimConfig waits = c;
      waits.push_waits_for_acks = true;
      absl::StatusOr<SimReport> w = RunSimulation(waits, *layout);
      REQUIRE(w.ok());
      INFO("ssp waiting for its pushes' acks: " << w->iterations_per_second() << " it/s");
      CHECK(w->iterations_per_second() <= whole->iterations_per_second);
      CHECK(w->iterations_per_second() > 0.5 * whole->iterations_per_second);
    }
    // The links decide here: the bound is below the compute's pace.
    CHECK(any->compute_share < 1);
  }
}

}  // namespace
}  // namespace rog
