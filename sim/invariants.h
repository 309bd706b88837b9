// The protocol's invariants as the model's values show them, checked the
// same way on the simulator's robots (sim/simulator.cc) and on real teams
// of rog::Workers against rogd (test/testing/team.h): one implementation of
// the staleness bound at every start and of conservation after the drain.
//
// Marker elements: worker m's update adds exactly 1 to element m of every
// row with more than m elements, and no other worker's update touches it,
// so a replica's element m, less its initial value, counts the iterations
// of worker m it holds, independently of any version bookkeeping. The
// other elements carry small integers, so fp32 sums stay exact in any
// order of folding.
#ifndef ROG_SIM_INVARIANTS_H_
#define ROG_SIM_INVARIANTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/layout.h"

namespace rog {

// The iterations one worker computed, each numbered by its clock once it
// ended (ascending; a reattach or rejoin that moves the worker's clock
// forward leaves a gap: the versions in it are claimed, never computed).
class IterationLog {
 public:
  // Records an iteration that ended at clock `number`. A number at or
  // below the last one starts the log anew (a new incarnation of the
  // worker, numbering from a lower clock).
  void Add(uint64_t number);
  // How many of the iterations numbered after `from` are numbered at most
  // `to`.
  uint64_t Count(uint64_t from, uint64_t to) const;

 private:
  std::vector<uint64_t> numbers_;
};

// Iterations of worker `marker` that `values` hold in `row`: its marker
// element's count. REQUIRES: row.numel > marker.
int64_t MarkerCount(absl::Span<const float> values, absl::Span<const float> initial,
                    const RowInfo& row, size_t marker);

// The bound at one start, for one peer: a replica (`values`) starting the
// iteration after clock `clock` under bound `bound` must hold, in every row
// that carries the peer's marker, each of the peer's iterations numbered
// up to clock - bound (counted from the peer's `join` clock, after which
// its iterations count).
struct PeerAtStart {
  bool ok = true;
  RowId short_row = 0;   // the first row that lacks some, when !ok
  int64_t held = 0;      // what that row holds
  uint64_t needed = 0;   // what the bound needs
  uint64_t max_lag = 0;  // largest (iterations up to `clock`) - held over the rows
  double lag_sum = 0;    // the lags of every row checked, summed
  uint64_t rows = 0;     // rows checked
};
PeerAtStart CheckPeerAtStart(const Layout& layout, absl::Span<const float> values,
                             absl::Span<const float> initial, size_t marker,
                             const IterationLog& peer, uint64_t join, uint64_t clock,
                             uint32_t bound);

// Conservation after a drain: "" when `global` is `initial` plus `sum` (every
// update any worker produced) element for element, else the first element
// that is not.
std::string ConservationProblem(absl::Span<const float> global, absl::Span<const float> initial,
                                absl::Span<const double> sum);
// Largest |global - (initial + sum)| over the elements.
double ConservationError(absl::Span<const float> global, absl::Span<const float> initial,
                         absl::Span<const double> sum);
// Largest |a - b| over the elements (a replica against the global model).
double MaxDifference(absl::Span<const float> a, absl::Span<const float> b);

}  // namespace rog

#endif  // ROG_SIM_INVARIANTS_H_
