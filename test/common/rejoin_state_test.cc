// The team-change and recovery operations of ServerState and WorkerState:
// joining and rejoining (AddWorker, RaiseVersion, SetActive, TakeValues,
// ApplyValues, Rebase), undoing an unacknowledged push (ReturnUplink) and
// checkpoints (Export, Restore). Every value is an integer-valued float, so
// every sum is exact and every check is an equality.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/codec.h"
#include "common/layout.h"
#include "common/server_state.h"
#include "common/version_store.h"
#include "common/worker_state.h"

namespace rog {
namespace {

using Floats = std::vector<float>;

// Rows 0 and 1: "w"[0] and "w"[1], 3 elements each (offsets 0 and 3);
// row 2: "b", 2 elements (offset 6). 8 elements in all.
Layout ThreeRowLayout() {
  auto l = Layout::Create({{"w", {2, 3}}, {"b", {2}}}, 4);
  REQUIRE(l.ok());
  REQUIRE(l->num_rows() == 3);
  REQUIRE(l->row(2).offset == 6);
  REQUIRE(l->total_numel() == 8);
  return *l;
}

Floats Vec(absl::Span<const float> s) { return Floats(s.begin(), s.end()); }

Floats DecodeFp32(const std::string& bytes, size_t n) {
  Floats out(n);
  REQUIRE(Decode(Codec::kFp32, bytes, absl::MakeSpan(out)).ok());
  return out;
}

bool MessageHas(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

// ---------------------------------------------------------------------------
// ServerState

TEST_CASE("AddWorker adds a column at the join version, an up-to-date copy, nothing pending",
          "[server_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  ServerState s(layout, Floats(8, 0.0f), 2);
  s.Fold(0, 0, Floats{1, 2, 3}, 3);
  s.Fold(1, 1, Floats{4, 5, 6}, 2);

  CHECK(s.AddWorker(5) == 2);
  REQUIRE(s.num_workers() == 3);
  CHECK(s.active(2));
  CHECK(s.copy_bytes() == 3 * 8 * 4);
  for (RowId r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(s.versions().Get(r, 2) == 5);
    CHECK(s.copy_versions(0).Get(r, 2) == 5);  // nobody waits for the newcomer
    CHECK(s.copy_versions(1).Get(r, 2) == 5);
    CHECK(s.pending(2, r) == Floats(layout.row(r).numel, 0.0f));
    CHECK_FALSE(s.HasPending(2, r));
  }
  // The newcomer's copy holds the current versions of every worker.
  CHECK(s.copy_versions(2).raw() == s.versions().raw());
  CHECK(s.copy_versions(2).Get(0, 0) == 3);
  CHECK(s.copy_versions(2).Get(1, 1) == 2);
  // Existing columns, copies and pending updates are untouched.
  CHECK(s.versions().Get(0, 0) == 3);
  CHECK(s.versions().Get(1, 1) == 2);
  CHECK(s.versions().Get(2, 0) == 0);
  CHECK(s.pending(1, 0) == Floats{1, 2, 3});
  CHECK(s.pending(0, 1) == Floats{4, 5, 6});
  CHECK(s.HasPending(0, 1));
  CHECK_FALSE(s.HasPending(0, 0));
  CHECK(s.HasPending(1, 0));
  CHECK_FALSE(s.HasPending(1, 2));

  // Its folds reach the others like anyone's; its own copy stays clean.
  s.Fold(2, 0, Floats{10, 20, 30}, 1);
  CHECK(s.versions().Get(0, 2) == 6);
  CHECK(s.versions().Get(1, 2) == 5);
  CHECK(s.copy_versions(2).Get(0, 2) == 6);
  CHECK(s.global_row(0) == Floats{11, 22, 33});
  CHECK(s.pending(0, 0) == Floats{10, 20, 30});
  CHECK(s.pending(1, 0) == Floats{11, 22, 33});
  CHECK(s.pending(2, 0) == Floats{0, 0, 0});
  CHECK(s.HasPending(0, 0));
  CHECK_FALSE(s.HasPending(2, 0));

  // Worker 0 is sent exactly the newcomer's one iteration of row 0.
  std::string payload;
  Floats decoded(3);
  CHECK(s.TakeDownlink(0, 0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 1);
  CHECK(decoded == Floats{10, 20, 30});
  // The newcomer is owed worker 1's row-1 update by a full resync, not a
  // downlink: its downlink of row 1 includes nothing.
  CHECK(s.TakeDownlink(2, 1, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 0);
  CHECK(decoded == Floats{0, 0, 0});
}

TEST_CASE("AddWorker at version 0 on an empty team", "[server_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  ServerState s(layout, Floats{1, 2, 3, 4, 5, 6, 7, 8}, 0);
  CHECK(s.copy_bytes() == 0);
  CHECK(s.AddWorker(0) == 0);
  CHECK(s.AddWorker(0) == 1);
  REQUIRE(s.num_workers() == 2);
  s.Fold(0, 2, Floats{1, 1}, 1);
  CHECK(s.global_row(2) == Floats{8, 9});
  CHECK(s.pending(1, 2) == Floats{1, 1});
  CHECK(s.HasPending(1, 2));
  CHECK_FALSE(s.HasPending(0, 2));
}

TEST_CASE("RaiseVersion raises the worker's column and the copies that were up to date",
          "[server_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  ServerState s(layout, Floats(8, 1.0f), 3);
  s.Fold(0, 0, Floats{1, 1, 1}, 2);
  std::string payload;
  Floats decoded(3);
  CHECK(s.TakeDownlink(1, 0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  // Worker 1's copy of row 0 holds worker 0's 2 iterations, worker 2's none.
  REQUIRE(s.copy_versions(1).Get(0, 0) == 2);
  REQUIRE(s.copy_versions(2).Get(0, 0) == 0);
  const Floats global_before = s.global();

  s.RaiseVersion(0, 4);
  for (RowId r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(s.versions().Get(r, 0) == 4);
    CHECK(s.versions().Get(r, 1) == 0);  // other columns untouched
    CHECK(s.versions().Get(r, 2) == 0);
    CHECK(s.copy_versions(0).Get(r, 0) == 4);  // its own copy
    CHECK(s.copy_versions(1).Get(r, 0) == 4);  // was up to date everywhere
  }
  // Worker 2 lacked worker 0's row-0 update: it keeps its lag.
  CHECK(s.copy_versions(2).Get(0, 0) == 0);
  CHECK(s.HasPending(2, 0));
  CHECK(s.pending(2, 0) == Floats{1, 1, 1});
  // Rows 1 and 2 had nothing folded: every copy rises, nothing is pending.
  CHECK(s.copy_versions(2).Get(1, 0) == 4);
  CHECK(s.copy_versions(2).Get(2, 0) == 4);
  CHECK_FALSE(s.HasPending(1, 0));
  CHECK_FALSE(s.HasPending(1, 1));
  CHECK_FALSE(s.HasPending(2, 1));
  CHECK_FALSE(s.HasPending(2, 2));
  CHECK(s.global() == global_before);  // versions only, no values

  // Never lowers: a lower or equal version changes nothing.
  const std::vector<uint64_t> versions_before = s.versions().raw();
  s.RaiseVersion(0, 3);
  s.RaiseVersion(0, 4);
  CHECK(s.versions().raw() == versions_before);

  // Only rows below the new version move.
  s.Fold(0, 1, Floats{2, 2, 2}, 3);  // row 1 of worker 0: 7
  s.RaiseVersion(0, 5);
  CHECK(s.versions().Get(0, 0) == 5);
  CHECK(s.versions().Get(1, 0) == 7);
  CHECK(s.versions().Get(2, 0) == 5);
  // Worker 2's copy of row 1 lacked those 3 iterations: stays at 4.
  CHECK(s.copy_versions(2).Get(1, 0) == 4);
  CHECK(s.copy_versions(2).Get(2, 0) == 5);

  // Worker 2 is then sent exactly what it lacks: 5 - 0 iterations of row 0.
  CHECK(s.TakeDownlink(2, 0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 5);
  CHECK(decoded == Floats{1, 1, 1});
}

TEST_CASE("an inactive worker holds no pending update and folds skip it",
          "[server_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  ServerState s(layout, Floats(8, 0.0f), 3);
  s.Fold(0, 0, Floats{1, 2, 3}, 1);
  REQUIRE(s.pending(1, 0) == Floats{1, 2, 3});

  s.SetActive(1, false);
  CHECK_FALSE(s.active(1));
  CHECK(s.active(0));
  CHECK(s.active(2));
  CHECK(s.copy_bytes() == 2 * 8 * 4);

  s.Fold(0, 1, Floats{4, 5, 6}, 1);
  s.Fold(2, 0, Floats{7, 8, 9}, 1);
  CHECK(s.global_row(0) == Floats{8, 10, 12});
  CHECK(s.global_row(1) == Floats{4, 5, 6});
  CHECK(s.pending(0, 0) == Floats{7, 8, 9});
  CHECK(s.pending(0, 1) == Floats{0, 0, 0});
  CHECK(s.pending(2, 0) == Floats{1, 2, 3});
  CHECK(s.pending(2, 1) == Floats{4, 5, 6});
  CHECK(s.versions().Get(0, 2) == 1);
  CHECK(s.versions().Get(1, 0) == 1);
  CHECK_FALSE(s.active(1));  // a fold does not give it a copy back

  // Reactivated: an empty copy, none of the updates folded before or while
  // it was out; only folds from now on accumulate.
  s.SetActive(1, true);
  CHECK(s.active(1));
  CHECK(s.copy_bytes() == 3 * 8 * 4);
  for (RowId r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(s.pending(1, r) == Floats(layout.row(r).numel, 0.0f));
  }
  // Its versions still lag: it is owed a full resync (TakeValues).
  CHECK(s.HasPending(1, 0));
  CHECK(s.HasPending(1, 1));
  CHECK_FALSE(s.HasPending(1, 2));
  s.Fold(0, 2, Floats{5, 5}, 1);
  CHECK(s.pending(1, 2) == Floats{5, 5});
  CHECK(s.pending(1, 0) == Floats{0, 0, 0});

  // SetActive(true) on an active worker also empties its copy.
  REQUIRE(s.pending(2, 2) == Floats{5, 5});
  s.SetActive(2, true);
  CHECK(s.active(2));
  CHECK(s.pending(2, 2) == Floats{0, 0});
  CHECK(s.pending(2, 1) == Floats{0, 0, 0});
}

TEST_CASE("TakeValues sends the global row and brings the copy up to date",
          "[server_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  ServerState s(layout, Floats{1, 2, 3, 4, 5, 6, 7, 8}, 2);
  s.Fold(0, 0, Floats{1, 2, 3}, 2);
  s.Fold(0, 2, Floats{10, 20}, 1);
  REQUIRE(s.HasPending(1, 0));

  std::string payload = "xy";  // appends
  s.TakeValues(1, 0, &payload);
  REQUIRE(payload.size() == 2 + 12);
  CHECK(payload.substr(0, 2) == "xy");
  CHECK(DecodeFp32(payload.substr(2), 3) == Floats{2, 4, 6});
  CHECK(s.pending(1, 0) == Floats{0, 0, 0});
  CHECK(s.copy_versions(1).Get(0, 0) == 2);
  CHECK_FALSE(s.HasPending(1, 0));
  // Other rows are not touched.
  CHECK(s.HasPending(1, 2));
  CHECK(s.pending(1, 2) == Floats{10, 20});
  CHECK(s.copy_versions(1).Get(2, 0) == 0);
  // The global rows and the versions are not changed by a resync.
  CHECK(s.global() == Floats{2, 4, 6, 4, 5, 6, 17, 28});
  CHECK(s.versions().Get(0, 0) == 2);

  s.TakeValues(1, 2, &payload);
  REQUIRE(payload.size() == 2 + 12 + 8);
  CHECK(DecodeFp32(payload.substr(14), 2) == Floats{17, 28});
  CHECK_FALSE(s.HasPending(1, 2));
  CHECK(s.pending(1, 2) == Floats{0, 0});
  // Then nothing more is owed: a downlink includes no iteration.
  Floats decoded(2);
  std::string down;
  CHECK(s.TakeDownlink(1, 2, Codec::kFp32, &down, absl::MakeSpan(decoded)) == 0);
  CHECK(decoded == Floats{0, 0});

  // An inactive worker can be resynced too; it stays without a copy.
  s.Fold(0, 1, Floats{1, 1, 1}, 4);
  s.SetActive(1, false);
  std::string p2;
  s.TakeValues(1, 1, &p2);
  CHECK(DecodeFp32(p2, 3) == Floats{5, 6, 7});
  CHECK(s.copy_versions(1).Get(1, 0) == 4);
  CHECK_FALSE(s.HasPending(1, 1));
  CHECK_FALSE(s.active(1));
}

// A state exercising everything Export carries: folds, a partial downlink,
// a joined worker, an inactive one.
std::unique_ptr<ServerState> BusyState(const Layout& layout) {
  auto s = std::make_unique<ServerState>(layout, Floats{1, 2, 3, 4, 5, 6, 7, 8}, 3);
  s->Fold(0, 0, Floats{1, 2, 3}, 2);
  s->Fold(1, 1, Floats{-1, -2, -3}, 1);
  s->Fold(2, 2, Floats{4, 4}, 3);
  std::string payload;
  Floats decoded(3);
  s->TakeDownlink(1, 0, Codec::kFp32, &payload, absl::MakeSpan(decoded));
  s->SetActive(2, false);
  s->AddWorker(6);
  s->Fold(3, 0, Floats{5, 5, 5}, 1);
  return s;
}

void CheckSameParts(const ServerState::Parts& a, const ServerState::Parts& b) {
  CHECK(a.global == b.global);
  CHECK(a.versions.num_rows() == b.versions.num_rows());
  CHECK(a.versions.num_workers() == b.versions.num_workers());
  CHECK(a.versions.raw() == b.versions.raw());
  CHECK(a.pending == b.pending);
  REQUIRE(a.copies.size() == b.copies.size());
  for (size_t w = 0; w < a.copies.size(); ++w) {
    CAPTURE(w);
    CHECK(a.copies[w].num_workers() == b.copies[w].num_workers());
    CHECK(a.copies[w].raw() == b.copies[w].raw());
  }
}

TEST_CASE("Export then Restore rebuilds the same state", "[server_state][checkpoint]") {
  const Layout layout = ThreeRowLayout();
  std::unique_ptr<ServerState> s = BusyState(layout);
  const ServerState::Parts parts = s->Export();

  // What Export carries, concretely.
  CHECK(parts.global == Floats{7, 9, 11, 3, 3, 3, 11, 12});
  CHECK(parts.versions.num_workers() == 4);
  CHECK(parts.versions.Get(0, 0) == 2);
  CHECK(parts.versions.Get(0, 3) == 7);
  CHECK(parts.versions.Get(2, 2) == 3);
  REQUIRE(parts.pending.size() == 4);
  CHECK(parts.pending[2].empty());  // inactive
  CHECK(parts.pending[1] == Floats{5, 5, 5, 0, 0, 0, 4, 4});
  CHECK(parts.pending[3] == Floats(8, 0.0f));
  REQUIRE(parts.copies.size() == 4);
  CHECK(parts.copies[1].Get(0, 0) == 2);

  auto restored = ServerState::Restore(layout, parts);
  REQUIRE(restored.ok());
  ServerState& r = **restored;
  CHECK(r.num_workers() == 4);
  CHECK(r.global() == s->global());
  CHECK(r.copy_bytes() == s->copy_bytes());
  CHECK(r.layout().fingerprint() == layout.fingerprint());
  for (size_t w = 0; w < 4; ++w) {
    CAPTURE(w);
    CHECK(r.active(w) == s->active(w));
    for (RowId row = 0; row < 3; ++row) {
      CAPTURE(row);
      CHECK(r.HasPending(w, row) == s->HasPending(w, row));
      if (r.active(w)) CHECK(Vec(r.pending(w, row)) == Vec(s->pending(w, row)));
    }
  }
  CHECK_FALSE(r.active(2));
  CheckSameParts(r.Export(), parts);

  // Both behave the same from here on.
  for (ServerState* x : {s.get(), &r}) {
    x->Fold(1, 0, Floats{1, 0, -1}, 1);
    x->SetActive(2, true);
    x->Fold(0, 2, Floats{2, 2}, 1);
    std::string payload;
    x->TakeValues(2, 1, &payload);
  }
  CheckSameParts(r.Export(), s->Export());
  CHECK(r.pending(2, 2) == Floats{2, 2});
  CHECK(r.pending(0, 0) == Floats{6, 5, 4});
}

TEST_CASE("Restore refuses parts that do not fit the layout or the team",
          "[server_state][checkpoint]") {
  const Layout layout = ThreeRowLayout();
  const ServerState::Parts good = BusyState(layout)->Export();
  REQUIRE(ServerState::Restore(layout, good).ok());

  struct Case {
    const char* what;
    void (*damage)(ServerState::Parts*);
    const char* message;
  };
  const Case cases[] = {
      {"global too short", [](ServerState::Parts* p) { p->global.pop_back(); },
       "global model has 7 values, the layout 8"},
      {"global too long", [](ServerState::Parts* p) { p->global.push_back(0); },
       "global model has 9 values, the layout 8"},
      {"versions with a row too many",
       [](ServerState::Parts* p) { p->versions = VersionStore(4, 4); }, "rows"},
      {"a pending copy missing", [](ServerState::Parts* p) { p->pending.pop_back(); }, "team size"},
      {"a pending copy too many", [](ServerState::Parts* p) { p->pending.emplace_back(); },
       "team size"},
      {"a copy's versions missing", [](ServerState::Parts* p) { p->copies.pop_back(); },
       "team size"},
      {"a pending copy of the wrong size", [](ServerState::Parts* p) { p->pending[1].pop_back(); },
       "worker 1's copy has the wrong size"},
      {"a copy's versions with too few rows",
       [](ServerState::Parts* p) { p->copies[3] = VersionStore(2, 4); },
       "worker 3's versions have the wrong shape"},
      {"a copy's versions with too few workers",
       [](ServerState::Parts* p) { p->copies[0] = VersionStore(3, 3); },
       "worker 0's versions have the wrong shape"},
      {"versions of fewer workers than the copies",
       [](ServerState::Parts* p) { p->versions = VersionStore(3, 3); }, "team size"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ServerState::Parts parts = good;
    c.damage(&parts);
    auto r = ServerState::Restore(layout, std::move(parts));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(MessageHas(r.status(), c.message));
  }

  // Parts of another layout.
  auto other = Layout::Create({{"w", {2, 3}}}, 4);
  REQUIRE(other.ok());
  auto r = ServerState::Restore(*other, good);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(MessageHas(r.status(), "global model has 8 values, the layout 6"));
}

// ---------------------------------------------------------------------------
// WorkerState

TEST_CASE("ApplyValues sets the replica row to the values plus the accumulator",
          "[worker_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  WorkerState w(layout, Floats{1, 2, 3, 4, 5, 6, 7, 8}, 4);
  w.ApplyLocalUpdate(Floats{1, 2, 3, 4, 5, 6, 7, 8});
  w.ApplyLocalUpdate(Floats{1, 1, 1, 1, 1, 1, 1, 1});
  std::string payload;
  Floats decoded(3);
  REQUIRE(w.TakeUplink(1, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  REQUIRE(w.accumulator_row(0) == Floats{2, 3, 4});
  REQUIRE(w.accumulator_row(1) == Floats{0, 0, 0});

  w.ApplyValues(0, Floats{100, 200, 300}, 9);
  CHECK(w.replica_row(0) == Floats{102, 203, 304});
  CHECK(w.known_version(0) == 9);
  // Nothing else moves: not the accumulator, the clock, what is unpushed.
  CHECK(w.accumulator_row(0) == Floats{2, 3, 4});
  CHECK(w.clock() == 6);
  CHECK(w.unpushed(0) == 2);
  CHECK(w.replica_row(1) == Floats{9, 11, 13});
  CHECK(w.replica_row(2) == Floats{15, 17});
  CHECK(w.known_version(1) == 4);

  // A row with nothing unpushed becomes the values exactly.
  w.ApplyValues(1, Floats{-1, -2, -3}, 9);
  CHECK(w.replica_row(1) == Floats{-1, -2, -3});
  CHECK_FALSE(w.HasAllUpTo(9));
  w.ApplyValues(2, Floats{0, 0}, 9);
  CHECK(w.replica_row(2) == Floats{8, 9});
  CHECK(w.replica() == Floats{102, 203, 304, -1, -2, -3, 8, 9});
  CHECK(w.HasAllUpTo(9));
  CHECK_FALSE(w.HasAllUpTo(10));

  // The values replace what the replica held, they are not added to it.
  w.ApplyValues(1, Floats{-1, -2, -3}, 9);
  CHECK(w.replica_row(1) == Floats{-1, -2, -3});
}

TEST_CASE("ReturnUplink restores the accumulator and the unpushed count exactly",
          "[worker_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  WorkerState w(layout, Floats(8, 0.0f), 10);
  w.ApplyLocalUpdate(Floats{1, 2, 3, 4, 5, 6, 7, 8});
  w.ApplyLocalUpdate(Floats{1, 0, -1, 0, 0, 0, 1, 1});
  const Floats replica = w.replica();
  REQUIRE(w.accumulator_row(0) == Floats{2, 2, 2});
  REQUIRE(w.unpushed(0) == 2);

  std::string payload;
  Floats decoded(3);
  CHECK(w.TakeUplink(0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  REQUIRE(w.accumulator_row(0) == Floats{0, 0, 0});
  REQUIRE(w.unpushed(0) == 0);
  w.ReturnUplink(0, decoded, 2);
  CHECK(w.accumulator_row(0) == Floats{2, 2, 2});
  CHECK(w.unpushed(0) == 2);
  CHECK(w.pushed_version(0) == 10);
  CHECK(w.clock() == 12);
  CHECK(w.replica() == replica);  // the replica already held it
  CHECK(w.HasResidual(0));
  // Other rows untouched.
  CHECK(w.accumulator_row(1) == Floats{4, 5, 6});
  CHECK(w.unpushed(1) == 2);

  // The next push carries it all again.
  CHECK(w.TakeUplink(0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 2);
  CHECK(decoded == Floats{2, 2, 2});
}

TEST_CASE("several unacknowledged pushes undone in reverse order", "[worker_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  WorkerState w(layout, Floats(8, 0.0f));
  std::string payload;
  Floats a(2), b(2), c(2);

  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 1, 2});  // clock 1
  CHECK(w.TakeUplink(2, Codec::kFp32, &payload, absl::MakeSpan(a)) == 1);
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 10, 20});  // clock 2
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 30, 40});  // clock 3
  CHECK(w.TakeUplink(2, Codec::kFp32, &payload, absl::MakeSpan(b)) == 2);
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 100, 200});  // clock 4
  CHECK(w.TakeUplink(2, Codec::kFp32, &payload, absl::MakeSpan(c)) == 1);
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 1000, 2000});  // clock 5, not pushed
  CHECK(a == Floats{1, 2});
  CHECK(b == Floats{40, 60});
  CHECK(c == Floats{100, 200});
  REQUIRE(w.accumulator_row(2) == Floats{1000, 2000});
  REQUIRE(w.pushed_version(2) == 4);

  w.ReturnUplink(2, c, 1);
  CHECK(w.accumulator_row(2) == Floats{1100, 2200});
  CHECK(w.pushed_version(2) == 3);
  CHECK(w.unpushed(2) == 2);
  w.ReturnUplink(2, b, 2);
  CHECK(w.accumulator_row(2) == Floats{1140, 2260});
  CHECK(w.pushed_version(2) == 1);
  CHECK(w.unpushed(2) == 4);
  w.ReturnUplink(2, a, 1);
  CHECK(w.accumulator_row(2) == Floats{1141, 2262});
  CHECK(w.pushed_version(2) == 0);
  CHECK(w.unpushed(2) == 5);
  CHECK(w.replica_row(2) == Floats{1141, 2262});

  // One push now carries all five iterations.
  Floats all(2);
  CHECK(w.TakeUplink(2, Codec::kFp32, &payload, absl::MakeSpan(all)) == 5);
  CHECK(all == Floats{1141, 2262});
  CHECK_FALSE(w.HasResidual(2));
}

TEST_CASE("ReturnUplink after a lossy push restores the accumulator exactly",
          "[worker_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  WorkerState w(layout, Floats(8, 0.0f));
  // 257 and 513 are not bf16 values: the codec leaves a residual.
  w.ApplyLocalUpdate(Floats{257, 513, 3, 0, 0, 0, 0, 0});
  std::string payload;
  Floats decoded(3);
  CHECK(w.TakeUplink(0, Codec::kBf16, &payload, absl::MakeSpan(decoded)) == 1);
  CHECK(decoded[0] != 257.0f);
  CHECK(w.HasResidual(0));
  CHECK(w.accumulator_row(0)[0] + decoded[0] == 257.0f);
  w.ReturnUplink(0, decoded, 1);
  CHECK(w.accumulator_row(0) == Floats{257, 513, 3});
  CHECK(w.unpushed(0) == 1);
}

TEST_CASE("Rebase moves the clock, leaves nothing unpushed and keeps the accumulator",
          "[worker_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  WorkerState w(layout, Floats(8, 0.0f));
  w.ApplyLocalUpdate(Floats{1, 1, 1, 2, 2, 2, 0, 0});
  w.ApplyLocalUpdate(Floats{1, 1, 1, 2, 2, 2, 0, 0});
  w.ApplyLocalUpdate(Floats{1, 1, 1, 2, 2, 2, 0, 0});
  std::string payload;
  Floats decoded(3);
  CHECK(w.TakeUplink(0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 3);
  w.ApplyLocalUpdate(Floats{5, 0, 0, 1, 1, 1, 0, 0});  // clock 4
  REQUIRE(w.unpushed(0) == 1);
  REQUIRE(w.unpushed(1) == 4);
  const Floats replica = w.replica();

  w.Rebase(10);
  CHECK(w.clock() == 10);
  for (RowId r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(w.unpushed(r) == 0);
    CHECK(w.pushed_version(r) == 10);
  }
  CHECK(w.accumulator_row(0) == Floats{5, 0, 0});
  CHECK(w.accumulator_row(1) == Floats{7, 7, 7});
  CHECK(w.accumulator_row(2) == Floats{0, 0});
  CHECK(w.replica() == replica);
  CHECK(w.HasResidual(0));
  CHECK(w.HasResidual(1));
  CHECK_FALSE(w.HasResidual(2));

  // The next push of a row sends the kept values, covering no iteration.
  CHECK(w.TakeUplink(1, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 0);
  CHECK(decoded == Floats{7, 7, 7});
  CHECK_FALSE(w.HasResidual(1));
  CHECK(w.HasResidual(0));  // until its own push

  // Counting resumes from the new clock.
  w.ApplyLocalUpdate(Floats(8, 1.0f));
  CHECK(w.clock() == 11);
  CHECK(w.unpushed(0) == 1);
  CHECK(w.accumulator_row(0) == Floats{6, 1, 1});
  CHECK(w.TakeUplink(0, Codec::kFp32, &payload, absl::MakeSpan(decoded)) == 1);
  CHECK(decoded == Floats{6, 1, 1});
  CHECK_FALSE(w.HasResidual(0));

  // Rebasing to an earlier clock (rejoining behind where it was).
  w.Rebase(2);
  CHECK(w.clock() == 2);
  CHECK(w.unpushed(0) == 0);
  CHECK(w.unpushed(2) == 0);
  CHECK(w.accumulator_row(2) == Floats{1, 1});
}

TEST_CASE("HasResidual is whether the row's accumulator holds anything non-zero",
          "[worker_state]") {
  const Layout layout = ThreeRowLayout();
  WorkerState w(layout, Floats(8, 3.0f));
  for (RowId r = 0; r < 3; ++r) CHECK_FALSE(w.HasResidual(r));  // the replica is not residual

  // One non-zero element, the last of row 1: only row 1.
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 1, 0, 0});
  CHECK_FALSE(w.HasResidual(0));
  CHECK(w.HasResidual(1));
  CHECK_FALSE(w.HasResidual(2));
  // Cancelled exactly: nothing left.
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, -1, 0, 0});
  CHECK_FALSE(w.HasResidual(1));
  CHECK(w.unpushed(1) == 2);  // iterations unpushed, but no residual
  // Negative values count as much as positive ones.
  w.ApplyLocalUpdate(Floats{0, 0, 0, -2, 0, 0, 0, 0});
  CHECK(w.HasResidual(1));
  CHECK_FALSE(w.HasResidual(0));
  w.ApplyLocalUpdate(Floats{0, 0, 0, 2, 0, 0, 0, 0});
  CHECK_FALSE(w.HasResidual(1));

  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 0, 4});
  CHECK(w.HasResidual(2));
  std::string payload;
  Floats decoded(2);
  w.TakeUplink(2, Codec::kFp32, &payload, absl::MakeSpan(decoded));
  CHECK_FALSE(w.HasResidual(2));

  // A lossy push that cannot carry everything leaves a residual.
  w.ApplyLocalUpdate(Floats{0, 0, 0, 0, 0, 0, 1, 3});
  w.TakeUplink(2, Codec::kSign, &payload, absl::MakeSpan(decoded));
  CHECK(decoded == Floats{2, 2});  // mean |x| = 2, both positive
  CHECK(w.accumulator_row(2) == Floats{-1, 1});
  CHECK(w.HasResidual(2));
}

// ---------------------------------------------------------------------------
// Both sides: a worker evicted and rejoining.

TEST_CASE("an evicted worker rejoins by full resync and loses no update",
          "[server_state][worker_state][rejoin]") {
  const Layout layout = ThreeRowLayout();
  const Floats init = {1, 2, 3, 4, 5, 6, 7, 8};
  ServerState s(layout, init, 2);
  WorkerState w0(layout, init), w1(layout, init);
  std::string payload;
  const auto push = [&](WorkerState& w, size_t k, RowId r) {
    Floats d(layout.row(r).numel);
    const uint32_t count = w.TakeUplink(r, Codec::kFp32, &payload, absl::MakeSpan(d));
    s.Fold(k, r, d, count);
  };

  // Both train 2 iterations; worker 1 pushes row 0 only, then is evicted
  // with rows 1 and 2 unpushed.
  w0.ApplyLocalUpdate(Floats{1, 1, 1, 1, 1, 1, 1, 1});
  w1.ApplyLocalUpdate(Floats{2, 0, 0, 0, 3, 0, 0, 4});
  w0.ApplyLocalUpdate(Floats{1, 1, 1, 1, 1, 1, 1, 1});
  w1.ApplyLocalUpdate(Floats{2, 0, 0, 0, 3, 0, 0, 4});
  for (RowId r = 0; r < 3; ++r) push(w0, 0, r);
  push(w1, 1, 0);
  s.SetActive(1, false);
  // Worker 0 goes on to clock 5 meanwhile.
  for (int i = 0; i < 3; ++i) w0.ApplyLocalUpdate(Floats{0, 0, 0, 1, 0, 0, 0, 0});
  for (RowId r = 0; r < 3; ++r) push(w0, 0, r);
  REQUIRE(s.versions().Get(1, 0) == 5);

  // Worker 1 rejoins at clock 5.
  s.RaiseVersion(1, 5);
  s.SetActive(1, true);
  w1.Rebase(5);
  for (RowId r = 0; r < 3; ++r) {
    std::string values;
    s.TakeValues(1, r, &values);
    w1.ApplyValues(r, DecodeFp32(values, layout.row(r).numel), 5);
    CHECK_FALSE(s.HasPending(1, r));
  }
  CHECK(w1.HasAllUpTo(5));
  // Its replica: the global model plus what it never pushed.
  CHECK(w1.replica() == Floats{7, 4, 5, 9, 13, 8, 9, 18});
  CHECK(w1.HasResidual(1));
  CHECK(w1.HasResidual(2));
  CHECK(s.versions().Get(1, 1) == 5);
  CHECK(s.versions().Get(0, 1) == 5);  // 2 folded, raised to 5

  // Its kept residual goes up with its next push; worker 0 receives it.
  push(w1, 1, 1);
  push(w1, 1, 2);
  CHECK(s.versions().Get(1, 1) == 5);  // no iteration counted twice
  for (RowId r = 0; r < 3; ++r) {
    Floats d(layout.row(r).numel);
    s.TakeDownlink(0, r, Codec::kFp32, &payload, absl::MakeSpan(d));
    w0.ApplyDownlink(r, d, 5);
  }
  CHECK(s.global() == Floats{7, 4, 5, 9, 13, 8, 9, 18});
  CHECK(w0.replica() == s.global());
  CHECK(w1.replica() == s.global());
}

}  // namespace
}  // namespace rog
