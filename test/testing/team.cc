#include "test/testing/team.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace rog {

Layout TestLayout() {
  return *Layout::Create(
      {{"conv.weight", {64, 32}}, {"conv.bias", {32}}, {"fc.weight", {16, 128}}, {"scale", {}}});
}

Layout BigLayout() {
  return *Layout::Create(
      {{"conv.weight", {512, 256}}, {"conv.bias", {256}}, {"fc.weight", {64, 512}}, {"scale", {}}});
}

std::vector<float> TestInitial(const Layout& layout) {
  std::vector<float> v(layout.total_numel());
  for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(static_cast<int>(j % 7) - 3);
  return v;
}

std::vector<float> TestUpdate(const Layout& layout, int marker, uint64_t k) {
  std::vector<float> u(layout.total_numel(), 0.0f);
  uint64_t x =
      (static_cast<uint64_t>(marker) + 1) * 0x9E3779B97F4A7C15ull + k * 0xBF58476D1CE4E5B9ull;
  for (const RowInfo& row : layout.rows()) {
    for (uint32_t j = 0; j < row.numel; ++j) {
      float v = 0;
      if (j == static_cast<uint32_t>(marker)) {
        v = 1;
      } else if (j >= kMaxMarkers) {
        x ^= x >> 31;
        x *= 0x94D049BB133111EBull;
        v = static_cast<float>(static_cast<int>((x >> 40) % 5) - 2);
      }
      u[row.offset + j] = v;
    }
  }
  return u;
}

Team::Team(std::string address, uint32_t bound, const Layout* layout)
    : address_(std::move(address)),
      bound_(bound),
      layout_(layout != nullptr ? *layout : TestLayout()),
      initial_(TestInitial(layout_)) {}

Team::~Team() { JoinAll(); }

Member& Team::Add(const std::string& id, int marker, WorkerOptions options, bool checked) {
  auto m = std::make_unique<Member>();
  m->id = id;
  m->marker = marker;
  m->sum.assign(layout_.total_numel(), 0.0);
  if (options.server.empty() || options.server == WorkerOptions().server) options.server = address_;
  options.worker_id = id;
  auto w = Worker::Start(options, layout_, initial_);
  if (!w.ok()) {
    m->error = w.status().ToString();
  } else {
    m->worker = *std::move(w);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids_[marker] = id;
    if (checked) join_clock_.emplace(marker, 0);
  }
  members_.push_back(std::move(m));
  return *members_.back();
}

void Team::Train(Member& m, uint64_t until_clock, double compute_ms) {
  Join(m);
  m.thread =
      std::thread([this, &m, until_clock, compute_ms] { Loop(&m, until_clock, compute_ms); });
}

void Team::Join(Member& m) {
  if (m.thread.joinable()) m.thread.join();
}

void Team::JoinAll() {
  for (auto& m : members_) Join(*m);
}

void Team::Detach(int marker) {
  std::lock_guard<std::mutex> lock(mu_);
  join_clock_.erase(marker);
}

void Team::SetJoinClock(int marker, uint64_t clock) {
  std::lock_guard<std::mutex> lock(mu_);
  join_clock_[marker] = clock;
}

std::vector<Violation> Team::CheckStart(Member* m, uint64_t clock,
                                        const std::vector<float>& params) {
  const absl::Time started = absl::Now();
  // Per checked marker (sim/invariants.h): its join clock and its
  // iterations, numbered by the clock each ended at (rogd moves a worker's
  // clock forward when it reattaches it: the iterations it skipped count
  // for nobody).
  std::map<int, std::pair<uint64_t, IterationLog>> checked;
  std::map<int, std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids = ids_;
    for (const auto& [marker, join] : join_clock_) checked[marker] = {join, computed_[marker]};
  }
  ++m->starts_checked;
  std::vector<Violation> violations;
  for (const auto& [marker, entry] : checked) {
    if (marker == m->marker) continue;
    const PeerAtStart p = CheckPeerAtStart(layout_, params, initial_, marker, entry.second,
                                           entry.first, clock, bound_);
    if (!p.ok) {
      violations.push_back(
          Violation{started, ids[marker],
                    absl::StrCat(m->id, " started iteration ", clock + 1, " holding ", p.held,
                                 " iterations of marker ", marker, " in row ",
                                 layout_.RowName(p.short_row), "; the bound needs ", p.needed)});
    }
    if (p.max_lag > m->max_lag) m->max_lag = p.max_lag;
  }
  return violations;
}

void Team::Loop(Member* m, uint64_t until_clock, double compute_ms) {
  if (!m->worker) return;
  std::vector<float> params(layout_.total_numel());
  while (m->worker->clock() < until_clock && !stop_) {
    absl::Status s = m->worker->BeginIteration(absl::MakeSpan(params), 60);
    if (!s.ok()) {
      m->error = s.ToString();
      return;
    }
    const uint64_t clock = m->worker->clock();
    std::vector<Violation> violations = CheckStart(m, clock, params);
    const std::vector<float> update = TestUpdate(layout_, m->marker, clock);
    {
      // Recorded before it is pushed: a peer may hold it as soon as
      // EndIteration starts.
      std::lock_guard<std::mutex> lock(mu_);
      // A new incarnation that rejoined behind its old clock numbers anew.
      computed_[m->marker].Add(clock + 1);
    }
    if (compute_ms > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int>(compute_ms * 1000)));
    }
    absl::StatusOr<IterationStats> st = m->worker->EndIteration(update);
    if (!st.ok()) {
      m->error = st.status().ToString();
      return;
    }
    for (size_t j = 0; j < update.size(); ++j) m->sum[j] += update[j];
    // A local step of a detached worker (rogd --detached_local_steps) is
    // outside the bound by design.
    if (!st->detached) {
      for (Violation& v : violations) {
        if (m->violation.empty()) m->violation = v.text;
        if (m->violations.size() < 100) m->violations.push_back(std::move(v));
      }
    }
    m->stats.push_back(*st);
  }
}

std::string Team::Drain(double timeout_seconds) {
  JoinAll();
  for (auto& m : members_) {
    if (!m->worker) continue;
    absl::Status s = m->worker->Flush(timeout_seconds);
    if (!s.ok()) return absl::StrCat(m->id, ": ", s.ToString());
  }
  for (auto& m : members_) {
    if (!m->worker) continue;
    absl::Status s = m->worker->Sync(timeout_seconds);
    if (!s.ok()) return absl::StrCat(m->id, ": ", s.ToString());
  }
  return "";
}

std::string Team::CheckConservation(const std::vector<float>& global,
                                    const std::vector<std::vector<double>>& extra) {
  std::vector<double> sum(initial_.size(), 0.0);
  for (const auto& m : members_) {
    for (size_t j = 0; j < sum.size() && j < m->sum.size(); ++j) sum[j] += m->sum[j];
  }
  for (const auto& e : extra) {
    for (size_t j = 0; j < sum.size() && j < e.size(); ++j) sum[j] += e[j];
  }
  if (std::string problem = ConservationProblem(global, initial_, sum); !problem.empty()) {
    return problem;
  }
  for (const auto& m : members_) {
    if (!m->worker) continue;
    const std::vector<float> replica = m->worker->Replica();
    if (MaxDifference(replica, global) != 0) {
      for (size_t j = 0; j < replica.size(); ++j) {
        if (replica[j] != global[j]) {
          return absl::StrCat(m->id, "'s replica[", j, "] = ", replica[j],
                              " but global = ", global[j]);
        }
      }
    }
  }
  return "";
}

}  // namespace rog
