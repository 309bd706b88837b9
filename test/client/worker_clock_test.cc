// rog::Worker on a clock the test moves (WorkerOptions::clock): its
// timeouts pass in the clock's time, not in real time, so a test of them
// does not depend on how fast the machine is. No rogd: nothing listens at
// the worker's address.
#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/types/span.h"
#include "catch2/catch.hpp"
#include "client/worker.h"
#include "common/clock.h"
#include "common/goodput.h"
#include "common/layout.h"

namespace rog {
namespace {

std::unique_ptr<Worker> Unconnected(std::shared_ptr<FakeClock> clock) {
  auto layout = Layout::Create({{"w", {2, 3}}}, 1);
  REQUIRE(layout.ok());
  WorkerOptions o;
  o.server = "127.0.0.1:1";  // nothing listens: the worker keeps retrying
  o.worker_id = "clocked";
  o.clock = std::move(clock);
  auto w = Worker::Start(o, *layout, std::vector<float>(6, 0.0f));
  REQUIRE(w.ok());
  return *std::move(w);
}

// The public header spells the default as a number (it does not include
// common/goodput.h); it must be the protocol's, and the range is checked
// by the shared rule, in the option's own name.
TEST_CASE("Worker::Start takes the protocol's batch_seconds and refuses one out of range",
          "[worker]") {
  CHECK(WorkerOptions().batch_seconds == kDefaultBatchSeconds);
  auto layout = Layout::Create({{"w", {2, 3}}}, 1);
  REQUIRE(layout.ok());
  WorkerOptions o;
  o.server = "127.0.0.1:1";
  o.worker_id = "bounded";
  o.batch_seconds = 2;
  auto w = Worker::Start(o, *layout, std::vector<float>(6, 0.0f));
  REQUIRE_FALSE(w.ok());
  INFO(w.status().message());
  CHECK(w.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(
      absl::StrContains(w.status().message(), "batch_seconds is 2: give 0 (a fixed batch_bytes)"));
}

TEST_CASE("BeginIteration's timeout passes on the worker's clock", "[worker][clock]") {
  auto clock = std::make_shared<FakeClock>();
  std::unique_ptr<Worker> w = Unconnected(clock);
  std::vector<float> params(6);
  auto begun = std::async(std::launch::async,
                          [&] { return w->BeginIteration(absl::MakeSpan(params), 5.0); });
  // The clock has not moved: however long this takes, the call still waits.
  CHECK(begun.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  clock->Advance(4.9);
  CHECK(begun.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  clock->Advance(0.2);
  const absl::Status s = begun.get();
  INFO(s.message());
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(absl::StrContains(s.message(), "within 5 s"));
}

TEST_CASE("Flush's timeout passes on the worker's clock", "[worker][clock]") {
  auto clock = std::make_shared<FakeClock>();
  std::unique_ptr<Worker> w = Unconnected(clock);
  auto flushed = std::async(std::launch::async, [&] { return w->Flush(30.0); });
  CHECK(flushed.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  clock->Advance(31);
  const absl::Status s = flushed.get();
  INFO(s.message());
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace rog
