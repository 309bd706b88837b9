// Importance and row selection for ATP, uplink and downlink alike.
//
// Importance = urgency × magnitude. Uplink: urgency is the iterations since
// the row was last pushed, magnitude the mean |accumulated update|.
// Downlink: urgency is the staleness of the worker's copy of the row,
// magnitude the mean |pending update|. A row one iteration from violating the
// staleness bound is mandatory (infinite importance).
//
// A selection orders rows: mandatory rows first, then the rest by importance.
// Its MTA prefix is the shortest prefix whose wire bytes reach the MTA share
// of the model; rows after it are speculative. Senders always send the
// mandatory rows and stream the rest in order until their byte or time
// budget runs out.
#ifndef ROG_COMMON_SELECTION_H_
#define ROG_COMMON_SELECTION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/layout.h"

namespace rog {

struct RowCandidate {
  RowId row;
  bool mandatory;
  double importance;    // ignored when mandatory
  uint64_t wire_bytes;  // encoded payload plus index bytes of this row
};

// urgency × magnitude; 0 when either is 0.
inline double Importance(uint64_t urgency, double magnitude) {
  return static_cast<double>(urgency) * magnitude;
}

// Mean absolute value of a row; 0 for an empty row.
double MeanAbs(absl::Span<const float> values);

// Uplink: whether a row whose accumulator holds `unpushed` iterations must be
// pushed now under bound `bound` (it would violate the bound one iteration
// from now). Under bound 0 every row with anything unpushed is mandatory.
inline bool UplinkMandatory(uint64_t unpushed, uint32_t bound) {
  return unpushed > 0 && unpushed >= bound;
}

// Downlink: whether a worker that has completed `iteration` iterations must
// receive a row whose copy holds version `copy_min` (lowest over the other
// workers) now, given the server holds newer data: the copy would violate
// the bound at the start after next.
inline bool DownlinkMandatory(uint64_t copy_min, uint64_t iteration, uint32_t bound) {
  return copy_min + bound < iteration + 1;
}

// Experiment (issue 58): the share of a row's accumulator a worker pushes
// when it covers `iterations` iterations in a team of `team` workers,
// 1 / (1 + (team - 1)(k - 1)/k): the first iteration summed, the rest
// averaged. 1 for k <= 1 or team <= 1.
inline double HeldUpdateKeep(uint64_t iterations, size_t team) {
  if (iterations <= 1 || team <= 1) return 1.0;
  const double k = static_cast<double>(iterations);
  return 1.0 / (1.0 + static_cast<double>(team - 1) * (k - 1) / k);
}

struct Selection {
  std::vector<RowCandidate> order;  // mandatory first, then importance, descending
  size_t mandatory = 0;             // order[0, mandatory) are mandatory
  size_t mta_end = 0;               // order[0, mta_end) is the MTA share
  uint64_t mta_bytes = 0;           // wire bytes of order[0, mta_end)
};

// Orders `candidates` (ties broken by row id, so the result is deterministic)
// and marks the MTA share: mandatory rows count towards it, then rows in
// order until their wire bytes reach mta_fraction × model_wire_bytes.
Selection SelectRows(std::vector<RowCandidate> candidates, double mta_fraction,
                     uint64_t model_wire_bytes);

}  // namespace rog

#endif  // ROG_COMMON_SELECTION_H_
