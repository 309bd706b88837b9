// ServerState and WorkerState together: the fold, the per-worker copies and
// the conservation invariant, driven by hand without a network.
#include <vector>

#include "catch2/catch.hpp"
#include "common/server_state.h"
#include "common/worker_state.h"

namespace rog {
namespace {

Layout TwoRowLayout() {
  auto l = Layout::Create({{"w", {2, 3}}}, 1);  // rows of 3 elements
  REQUIRE(l.ok());
  return *l;
}

TEST_CASE("a fold reaches the global rows and every other worker's copy", "[server_state]") {
  const Layout layout = TwoRowLayout();
  ServerState s(layout, std::vector<float>(6, 10.0f), 3);
  const std::vector<float> u = {1, 2, 3};
  s.Fold(0, 1, u, 2);
  CHECK(s.global_row(1)[2] == 13.0f);
  CHECK(s.global_row(0)[0] == 10.0f);
  CHECK(s.versions().Get(1, 0) == 2);
  CHECK(s.pending(0, 1)[0] == 0.0f);  // not its own
  CHECK(s.pending(1, 1)[1] == 2.0f);
  CHECK(s.pending(2, 1)[2] == 3.0f);
  CHECK_FALSE(s.HasPending(0, 1));
  CHECK(s.HasPending(1, 1));
  CHECK_FALSE(s.HasPending(1, 0));
  CHECK(s.PendingMagnitude(1, 1) == Approx(2.0));

  std::string payload;
  std::vector<float> decoded(3);
  CHECK(s.TakeDownlink(1, 1, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  CHECK(payload.size() == 12);
  CHECK(decoded == u);
  CHECK_FALSE(s.HasPending(1, 1));
  CHECK(s.pending(1, 1)[0] == 0.0f);
  CHECK(s.copy_versions(1).Get(1, 0) == 2);
  CHECK(s.HasPending(2, 1));  // worker 2 still has it coming
  CHECK(s.copy_bytes() == 3 * 6 * 4);
}

TEST_CASE("a take whose batch never arrived is undone exactly, later folds kept",
          "[server_state]") {
  const Layout layout = TwoRowLayout();
  ServerState s(layout, std::vector<float>(6, 10.0f), 3);
  s.Fold(0, 1, std::vector<float>{1, 2, 3}, 2);
  std::string payload;
  std::vector<float> decoded(3);
  TakenRow taken;
  CHECK(s.TakeDownlink(1, 1, Codec::kFp32, &payload, absl::MakeSpan(decoded), &taken) == 2);
  CHECK(taken.row == 1);
  CHECK(taken.delta == std::vector<float>{1, 2, 3});
  CHECK(taken.versions == std::vector<uint64_t>{0, 0, 0});
  CHECK_FALSE(s.HasPending(1, 1));
  // Another fold while the batch is on its way, then it is lost.
  s.Fold(2, 1, std::vector<float>{4, 4, 4}, 1);
  s.Untake(1, taken);
  CHECK(s.pending(1, 1)[0] == 5.0f);
  CHECK(s.pending(1, 1)[2] == 7.0f);
  CHECK(s.copy_versions(1).Get(1, 0) == 0);
  CHECK(s.copy_versions(1).Get(1, 2) == 0);
  CHECK(s.HasPending(1, 1));

  // A count-0 fold's row (no version rises) stays pending after the undo.
  ServerState z(layout, std::vector<float>(6, 0.0f), 2);
  z.Fold(0, 0, std::vector<float>{1, 1, 1}, 0);
  REQUIRE(z.HasPending(1, 0));
  TakenRow zero;
  payload.clear();
  z.TakeDownlink(1, 0, Codec::kFp32, &payload, absl::MakeSpan(decoded), &zero);
  CHECK_FALSE(z.HasPending(1, 0));
  z.Untake(1, zero);
  CHECK(z.HasPending(1, 0));
  CHECK(z.pending(1, 0)[1] == 1.0f);
}

TEST_CASE("a worker's replica takes its own update at once and pushes the accumulation",
          "[worker_state]") {
  const Layout layout = TwoRowLayout();
  WorkerState w(layout, std::vector<float>(6, 0.0f));
  w.ApplyLocalUpdate(std::vector<float>{1, 1, 1, 2, 2, 2});
  w.ApplyLocalUpdate(std::vector<float>{1, 1, 1, -2, -2, -2});
  CHECK(w.clock() == 2);
  CHECK(w.replica()[0] == 2.0f);
  CHECK(w.unpushed(0) == 2);
  CHECK(w.AccumulatorMagnitude(0) == Approx(2.0));
  CHECK(w.AccumulatorMagnitude(1) == Approx(0.0));
  std::string payload;
  std::vector<float> decoded(3);
  CHECK(w.TakeUplink(0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  CHECK(decoded == std::vector<float>{2, 2, 2});
  CHECK(w.unpushed(0) == 0);
  CHECK(w.pushed_version(0) == 2);
  CHECK(w.accumulator_row(0)[0] == 0.0f);
  CHECK(w.unpushed(1) == 2);
  CHECK_FALSE(w.HasAllUpTo(1));
  w.ApplyDownlink(0, std::vector<float>{5, 5, 5}, 3);
  w.ApplyDownlink(1, std::vector<float>{0, 0, 0}, 1);
  CHECK(w.replica()[1] == 7.0f);
  CHECK(w.HasAllUpTo(1));
  CHECK_FALSE(w.HasAllUpTo(2));
}

TEST_CASE("two workers exchanging integer updates conserve every update exactly",
          "[server_state][worker_state]") {
  const Layout layout = TwoRowLayout();
  const std::vector<float> init = {1, 2, 3, 4, 5, 6};
  ServerState s(layout, init, 2);
  std::vector<WorkerState> w;
  w.emplace_back(layout, init);
  w.emplace_back(layout, init);
  std::vector<double> sum(6, 0);
  std::vector<float> decoded(3);
  std::string payload;
  for (int it = 0; it < 20; ++it) {
    for (int k = 0; k < 2; ++k) {
      std::vector<float> u(6);
      for (int j = 0; j < 6; ++j) u[j] = static_cast<float>((it * 7 + j * 3 + k * 5) % 9 - 4);
      for (int j = 0; j < 6; ++j) sum[j] += u[j];
      w[k].ApplyLocalUpdate(u);
      // Push only row (it + k) % 2 this time: the other stays accumulated.
      const RowId r = (it + k) % 2;
      payload.clear();
      const uint32_t count = w[k].TakeUplink(r, Codec::kFp32, &payload, absl::MakeSpan(decoded));
      s.Fold(k, r, decoded, count);
    }
  }
  // Drain: push everything, deliver everything.
  for (int k = 0; k < 2; ++k) {
    for (RowId r = 0; r < 2; ++r) {
      if (w[k].unpushed(r) == 0) continue;
      const uint32_t count = w[k].TakeUplink(r, Codec::kFp32, &payload, absl::MakeSpan(decoded));
      s.Fold(k, r, decoded, count);
    }
  }
  for (int k = 0; k < 2; ++k) {
    for (RowId r = 0; r < 2; ++r) {
      s.TakeDownlink(k, r, Codec::kFp32, &payload, absl::MakeSpan(decoded));
      w[k].ApplyDownlink(r, decoded, 20);
    }
  }
  for (int j = 0; j < 6; ++j) {
    CAPTURE(j);
    CHECK(s.global()[j] - init[j] == sum[j]);
    CHECK(w[0].replica()[j] == s.global()[j]);
    CHECK(w[1].replica()[j] == s.global()[j]);
  }
  CHECK(s.versions().Get(0, 0) == 20);
  CHECK(s.versions().Get(1, 1) == 20);
}

TEST_CASE("KeepHeld keeps a fraction of the accumulators and takes the rest out of the replica",
          "[worker_state]") {
  const Layout layout = TwoRowLayout();
  WorkerState w(layout, std::vector<float>(6, 1.0f));
  w.ApplyLocalUpdate(std::vector<float>{4, 4, 4, 8, 8, 8});
  std::string payload;
  std::vector<float> decoded(3);
  REQUIRE(w.TakeUplink(0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 1);
  w.ApplyLocalUpdate(std::vector<float>{4, 4, 4, -4, -4, -4});
  // Held: row 0 {4,4,4} (one iteration), row 1 {4,4,4} (two).
  w.KeepHeld(0.25);
  CHECK(w.accumulator_row(0)[0] == 1.0f);
  CHECK(w.accumulator_row(1)[2] == 1.0f);
  // The replica: initial 1, plus what was pushed (4), plus what is kept.
  CHECK(w.replica_row(0)[0] == 1.0f + 4.0f + 1.0f);
  CHECK(w.replica_row(1)[0] == 1.0f + 1.0f);
  // The rows still count as unpushed and go with their next push.
  CHECK(w.unpushed(0) == 1);
  CHECK(w.unpushed(1) == 2);
  REQUIRE(w.TakeUplink(1, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  CHECK(decoded == std::vector<float>{1, 1, 1});
  w.KeepHeld(1.0);  // keeps everything: nothing changes
  CHECK(w.accumulator_row(0)[1] == 1.0f);
}

TEST_CASE("a weighted local update: each row's part weighted, the replica and accumulator alike",
          "[worker_state]") {
  const Layout layout = TwoRowLayout();
  WorkerState w(layout, std::vector<float>(6, 1.0f));
  w.ApplyLocalUpdate(std::vector<float>{4, 4, 4, 3, 3, 3}, std::vector<float>{0.25f, 1.0f / 3});
  CHECK(w.clock() == 1);
  CHECK(w.replica_row(0)[0] == 2.0f);
  CHECK(w.accumulator_row(0)[2] == 1.0f);
  CHECK(w.replica_row(1)[1] == 1.0f + 3.0f * (1.0f / 3));
  CHECK(w.accumulator_row(1)[1] == 3.0f * (1.0f / 3));
  // What is pushed is what the replica received.
  std::string payload;
  std::vector<float> decoded(3);
  REQUIRE(w.TakeUplink(1, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 1);
  CHECK(decoded[0] == w.replica_row(1)[0] - 1.0f);
  CHECK_FALSE(w.HasResidual(1));
}

}  // namespace
}  // namespace rog
