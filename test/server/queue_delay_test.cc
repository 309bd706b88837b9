// The engine thread's queue delay histogram (server/queue_delay.h) and its
// report in Engine::Status.
#include "server/queue_delay.h"

#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "catch2/catch.hpp"
#include "server/engine.h"

namespace rog {
namespace {

TEST_CASE("each delay falls in the bucket whose bounds hold it", "[queue_delay]") {
  CHECK(QueueDelay::Bound(0) == Approx(1e-6));
  CHECK(QueueDelay::Bound(4) == Approx(2e-6));
  CHECK(QueueDelay::Bound(40) == Approx(1.024e-3));
  CHECK(std::isinf(QueueDelay::Bound(QueueDelay::kBuckets - 1)));
  CHECK(QueueDelay::Bound(QueueDelay::kBuckets - 2) > 100);
  for (int k = 1; k < QueueDelay::kBuckets - 1; ++k) {
    CAPTURE(k);
    CHECK(QueueDelay::BucketOf(QueueDelay::Bound(k)) == k);
    CHECK(QueueDelay::BucketOf(QueueDelay::Bound(k) * 0.999) == k);
    CHECK(QueueDelay::BucketOf(QueueDelay::Bound(k) * 1.001) == k + 1);
  }
  CHECK(QueueDelay::BucketOf(0) == 0);
  CHECK(QueueDelay::BucketOf(-1) == 0);
  CHECK(QueueDelay::BucketOf(std::numeric_limits<double>::quiet_NaN()) == 0);
  CHECK(QueueDelay::BucketOf(1e9) == QueueDelay::kBuckets - 1);
}

TEST_CASE("quantiles read the upper bound of their bucket, at most 19% above", "[queue_delay]") {
  QueueDelay d;
  CHECK(d.Quantile(0.5) == 0);
  for (int i = 0; i < 98; ++i) d.Record(0.001);
  d.Record(0.010);
  d.Record(1.0);
  CHECK(d.events() == 100);
  CHECK(d.max_seconds() == 1.0);
  CHECK(d.Quantile(0.5) >= 0.001);
  CHECK(d.Quantile(0.5) <= 0.001 * 1.19);
  CHECK(d.Quantile(0.99) >= 0.010);
  CHECK(d.Quantile(0.99) <= 0.010 * 1.19);
  CHECK(d.Quantile(1.0) >= 1.0);
  CHECK(d.Quantile(1.0) <= 1.19);
  CHECK(std::accumulate(d.counts().begin(), d.counts().end(), uint64_t{0}) == 100);

  // The difference of two snapshots: the delays between them only.
  const std::vector<uint64_t> before = d.counts();
  for (int i = 0; i < 10; ++i) d.Record(0.5);
  std::vector<uint64_t> between(QueueDelay::kBuckets);
  for (int k = 0; k < QueueDelay::kBuckets; ++k) between[k] = d.counts()[k] - before[k];
  CHECK(QueueDelay::Quantile(between, 0.5) >= 0.5);
  CHECK(QueueDelay::Quantile(between, 0.5) <= 0.5 * 1.19);
}

TEST_CASE("rogd's status reports the engine thread's queue delay", "[queue_delay][engine]") {
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Start(EngineOptions());
  REQUIRE(engine.ok());
  (*engine)->Status();
  const pb::StatusReply s = (*engine)->Status();
  // The first call, and this one (counted before it is handled).
  CHECK(s.engine_events() == 2);
  REQUIRE(s.engine_queue_delay_counts_size() == QueueDelay::kBuckets);
  uint64_t sum = 0;
  for (uint64_t c : s.engine_queue_delay_counts()) sum += c;
  CHECK(sum == 2);
  CHECK(s.engine_queue_delay_p50() > 0);
  CHECK(s.engine_queue_delay_p50() <= s.engine_queue_delay_p99());
  CHECK(s.engine_queue_delay_max() <= s.engine_queue_delay_p99());
  CHECK(s.engine_queue_delay_max() >= 0);
  CHECK((*engine)->Metrics().status.engine_events() == 3);
  REQUIRE((*engine)->Shutdown().ok());
}

}  // namespace
}  // namespace rog
