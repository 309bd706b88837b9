// Property tests of the protocol logic on the deterministic simulator: many
// seeds, random links (including near-dead stretches), all three policies.
#include "common/simulator.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace rog {
namespace {

// A random trace: 0.5 s samples, rates spanning 0 to 80 Mbit/s with runs
// near zero, like a robot driving behind obstacles.
Trace RandomTrace(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::string text = "# seconds\tmbit_per_s\n";
  for (int i = 0; i < 120; ++i) {
    double mbit = 80 * u(rng) * u(rng);
    if (u(rng) < 0.1) mbit = u(rng) < 0.5 ? 0.0 : 0.05;
    absl::StrAppend(&text, i * 0.5, "\t", mbit, "\n");
  }
  absl::StrAppend(&text, 120 * 0.5, "\t5\n");
  auto t = Trace::Parse(text, absl::StrCat("random-", seed));
  REQUIRE(t.ok());
  return *t;
}

SimConfig RandomConfig(SyncPolicy policy, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919);
  SimConfig c;
  c.policy = policy;
  c.seed = seed;
  c.workers = 2 + rng() % 4;
  c.staleness = rng() % 5;
  c.seconds = 20 + rng() % 20;
  c.compute_seconds = 0.05 + 0.01 * (rng() % 20);
  c.compute_factors = {1.0, 1.5, 0.8, 2.0};
  c.batch_bytes = 256 + rng() % 4096;
  for (size_t w = 0; w < c.workers; ++w) c.traces.push_back(RandomTrace(seed * 31 + w));
  c.trace_scale = 0.002 + 0.01 * (rng() % 10);  // the tiny model needs slow links to matter
  return c;
}

Layout Tiny() {
  auto l = SyntheticLayout("tiny");
  REQUIRE(l.ok());
  return *l;
}

TEST_CASE(
    "conservation: with fp32 every replica equals the global model after draining and "
    "global - initial is the sum of all updates",
    "[simulator][property]") {
  const Layout layout = Tiny();
  const SyncPolicy policy = GENERATE(SyncPolicy::kBsp, SyncPolicy::kSsp, SyncPolicy::kRog);
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    SimConfig c = RandomConfig(policy, seed);
    CAPTURE(SyncPolicyName(policy), seed, c.workers, c.staleness, c.trace_scale);
    absl::StatusOr<SimReport> r = RunSimulation(c, layout);
    REQUIRE(r.ok());
    uint64_t iterations = 0;
    for (const auto& w : r->workers) iterations += w.iterations;
    CHECK(iterations > 0);
    CHECK(r->max_replica_error == 0.0);
    CHECK(r->max_sum_error == 0.0);
  }
}

TEST_CASE("the staleness bound holds at every compute start", "[simulator][property]") {
  const Layout layout = Tiny();
  const SyncPolicy policy = GENERATE(SyncPolicy::kBsp, SyncPolicy::kSsp, SyncPolicy::kRog);
  for (uint64_t seed = 100; seed < 125; ++seed) {
    SimConfig c = RandomConfig(policy, seed);
    CAPTURE(SyncPolicyName(policy), seed, c.workers, c.staleness);
    absl::StatusOr<SimReport> r = RunSimulation(c, layout);
    REQUIRE(r.ok());
    CHECK(r->bound_checks > 0);
    CHECK(r->bound_violations == 0);
    // The counters say how many iterations of each other worker a replica
    // holds; at a compute start none may be more than the bound behind the
    // worker's own clock.
    const uint32_t bound = policy == SyncPolicy::kBsp ? 0 : c.staleness;
    for (const auto& w : r->workers) CHECK(w.max_staleness <= bound);
  }
}

TEST_CASE("lossy codecs: residuals stay bounded and drained sums converge to the true sums",
          "[simulator][property]") {
  const Layout layout = Tiny();
  const Codec codec = GENERATE(Codec::kBf16, Codec::kInt8, Codec::kSign);
  for (uint64_t seed = 200; seed < 210; ++seed) {
    SimConfig c = RandomConfig(SyncPolicy::kRog, seed);
    c.codec = codec;
    CAPTURE(CodecName(codec), seed);
    c.drain_rounds = 1;
    absl::StatusOr<SimReport> once = RunSimulation(c, layout);
    c.drain_rounds = 200;
    absl::StatusOr<SimReport> many = RunSimulation(c, layout);
    REQUIRE(once.ok());
    REQUIRE(many.ok());
    // Bounded: what an accumulator holds after draining is a residual of the
    // codec, never more than a few updates' worth.
    CHECK(once->max_residual <= 4 * (c.staleness + 2) * once->max_update_element);
    // Converging: more drain rounds leave less error, down to rounding.
    CHECK(many->max_sum_error <= once->max_sum_error);
    CHECK(many->max_sum_error <= 1e-2 * (1 + once->max_sum_error));
    CHECK(many->max_replica_error <= 1e-2 * (1 + once->max_replica_error));
  }
}

TEST_CASE("with one slow link ROG outruns BSP and SSP and stalls less", "[simulator]") {
  auto layout = SyntheticLayout("cnn");
  REQUIRE(layout.ok());
  SimConfig c;
  c.workers = 4;
  c.staleness = 4;
  c.seconds = 120;
  c.compute_seconds = 0.5;
  // 1.7 MB over 2 Mbit/s takes ~7 s; the other links are fast.
  c.traces = {Trace::Constant(2), Trace::Constant(100), Trace::Constant(100), Trace::Constant(100)};
  auto run = [&](SyncPolicy p) {
    SimConfig k = c;
    k.policy = p;
    absl::StatusOr<SimReport> r = RunSimulation(k, *layout);
    REQUIRE(r.ok());
    CHECK(r->bound_violations == 0);
    CHECK(r->max_sum_error == 0.0);
    return *r;
  };
  const SimReport bsp = run(SyncPolicy::kBsp);
  const SimReport ssp = run(SyncPolicy::kSsp);
  const SimReport rog = run(SyncPolicy::kRog);
  CAPTURE(bsp.iterations_per_second(), ssp.iterations_per_second(), rog.iterations_per_second(),
          bsp.stall_share(), ssp.stall_share(), rog.stall_share());
  CHECK(rog.iterations_per_second() > 1.5 * bsp.iterations_per_second());
  CHECK(rog.iterations_per_second() > 1.2 * ssp.iterations_per_second());
  CHECK(rog.stall_share() < ssp.stall_share());
  CHECK(rog.stall_share() < bsp.stall_share());
}

TEST_CASE("the simulator is deterministic for a seed", "[simulator]") {
  const Layout layout = Tiny();
  SimConfig c = RandomConfig(SyncPolicy::kRog, 42);
  auto a = RunSimulation(c, layout);
  auto b = RunSimulation(c, layout);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->events == b->events);
  CHECK(a->bytes_up() == b->bytes_up());
  CHECK(a->iterations_per_second() == b->iterations_per_second());
}

TEST_CASE("invalid simulator settings are refused", "[simulator]") {
  const Layout layout = Tiny();
  SimConfig c;
  c.workers = 0;
  CHECK(RunSimulation(c, layout).status().code() == absl::StatusCode::kInvalidArgument);
  c.workers = 2;
  c.seconds = -1;
  CHECK_FALSE(RunSimulation(c, layout).ok());
  CHECK_FALSE(SyntheticLayout("resnet").ok());
}

TEST_CASE("the fmnist layout is the main job's CNN", "[simulator]") {
  auto l = SyntheticLayout("fmnist");
  REQUIRE(l.ok());
  // fmnist_worker's Net: the same parameters the LibTorch adapter registers.
  CHECK(l->tensors().size() == 8);
  CHECK(l->total_numel() == 20522);
  CHECK(l->tensors()[4].name == "fc1.weight");
}

}  // namespace
}  // namespace rog
