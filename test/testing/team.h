// A team of rog::Workers training a test model against a real rogd, with the
// checks every integration test makes: the staleness bound at each
// iteration start and exact conservation after draining, the same checks
// the simulator makes (sim/invariants.h).
//
// Updates are small integers, so fp32 sums are exact whatever the order of
// folding. Each worker owns a marker element in every row (element m for
// marker m): only it adds there, +1 per iteration, so a replica's marker
// element counts exactly how many of that worker's iterations it holds.
#ifndef ROG_TEST_TESTING_TEAM_H_
#define ROG_TEST_TESTING_TEAM_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "client/worker.h"
#include "common/layout.h"
#include "sim/invariants.h"

namespace rog {

constexpr int kMaxMarkers = 8;

// Four tensors: two split into rows, a bias and a scalar (82 rows, 16 KB).
Layout TestLayout();
// The same tensors, larger (~660 KB): for slow links.
Layout BigLayout();
std::vector<float> TestInitial(const Layout& layout);
// Worker `marker`'s update for its iteration `k`.
std::vector<float> TestUpdate(const Layout& layout, int marker, uint64_t k);

// A start that did not hold what the bound needs of a peer: when, which
// peer, and what was missing.
struct Violation {
  absl::Time at;  // when BeginIteration returned
  std::string peer;
  std::string text;
};

struct Member {
  std::string id;
  int marker = 0;
  std::unique_ptr<Worker> worker;
  std::vector<double> sum;  // every update this member applied
  std::vector<IterationStats> stats;
  std::thread thread;
  std::string error;      // first error of its training loop
  std::string violation;  // first staleness-bound violation seen
  // Every violation (the first per start and peer, up to 100), for checks
  // that excuse peers rogd had detached (RequireClean with rogd's log).
  std::vector<Violation> violations;
  uint64_t starts_checked = 0;
  uint64_t max_lag = 0;  // largest staleness seen at a start (c - held)
};

class Team {
 public:
  // `layout` defaults to TestLayout().
  Team(std::string address, uint32_t bound, const Layout* layout = nullptr);
  ~Team();  // joins threads

  const Layout& layout() const { return layout_; }
  const std::vector<float>& initial() const { return initial_; }

  // Starts a member (a new rog::Worker) and returns it; not yet training.
  // It connects to the team's address unless options.server says otherwise.
  // Unless `checked`, the bound check ignores its marker until
  // SetJoinClock (a worker that joins mid-training starts at the team's
  // clock, known only once it is welcomed).
  Member& Add(const std::string& id, int marker, WorkerOptions options = {}, bool checked = true);
  // Trains `m` on its own thread until its clock reaches `until_clock`,
  // sleeping `compute_ms` per iteration.
  void Train(Member& m, uint64_t until_clock, double compute_ms = 1);
  void Join(Member& m);
  void JoinAll();
  // Every training loop ends after the iteration it is in (then JoinAll).
  void StopAll() { stop_ = true; }
  // A member that no longer counts for the bound (evicted, closed).
  void Detach(int marker);
  // The bound check counts a member's iterations from its join clock.
  void SetJoinClock(int marker, uint64_t clock);

  // Flush every member, then Sync every member.
  std::string Drain(double timeout_seconds = 60);
  // "" when global == initial + sum of every member's updates (including
  // `extra` sums of members already gone) and every live replica == global;
  // else what differs.
  std::string CheckConservation(const std::vector<float>& global,
                                const std::vector<std::vector<double>>& extra = {});

  std::vector<std::unique_ptr<Member>>& members() { return members_; }

 private:
  void Loop(Member* m, uint64_t until_clock, double compute_ms);
  // The bound check at an iteration start: one violation per peer whose
  // iterations the start lacks (empty: none).
  std::vector<Violation> CheckStart(Member* m, uint64_t clock, const std::vector<float>& params);

  std::string address_;
  uint32_t bound_;
  Layout layout_;
  std::vector<float> initial_;
  std::mutex mu_;
  std::map<int, uint64_t> join_clock_;  // attached members by marker
  std::map<int, std::string> ids_;      // every member's id by marker
  std::atomic<bool> stop_{false};
  // By marker: the clock each iteration it computed ended at.
  std::map<int, IterationLog> computed_;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace rog

#endif  // ROG_TEST_TESTING_TEAM_H_
