// The model that fault tests with real worker processes train, and the
// exact conservation check they end with.
//
// Every row has 128 elements. Elements 0..95 are markers: worker process
// (incarnation) number m adds 1 to element m of every row per iteration,
// nothing else does. Elements 96..127 carry noise: incarnation m adds
// Noise(m, k, row, e), a small integer, in its iteration k. Sums stay exact
// in fp32 (|values| stay far below 2^24).
//
// A worker pushes a row's whole accumulator (fp32, lossless), and rogd
// applies one worker's batches in sequence order, so what rogd holds of
// incarnation m in row r is exactly its iterations 1..j for some j: the
// marker element tells j, and the noise elements must then equal the sum
// of Noise over k = 1..j. An update applied twice, or lost from the middle,
// breaks this (a double-applied run of L iterations hides only when L is a
// multiple of every noise period, the 32 primes 5..139).
#ifndef ROG_TEST_FAULT_FAULT_MODEL_H_
#define ROG_TEST_FAULT_FAULT_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/layout.h"

namespace rog {

constexpr int kFaultMarkers = 96;  // incarnations one run can tell apart
constexpr int kFaultWidth = 128;   // elements per row

// "w" {64, 128} (64 rows) and "b" {128} (one row): 65 rows, 33 KB.
Layout FaultLayout();

// Incarnation `marker`'s update of its iteration k (k = 1, 2, ...).
void FaultUpdate(const Layout& layout, int marker, uint64_t k, absl::Span<float> out);

// One worker process: its marker, how many iterations it computed (an
// upper bound for a killed one: it announces an iteration before handing
// it to the SDK), and whether it ended with Sync and Close (then every one
// of them must be in rogd's model).
struct Incarnation {
  std::string id;
  int marker = 0;
  uint64_t computed = 0;
  bool finished = false;
};

struct ConservationReport {
  bool ok = true;
  std::string problems;  // the first few, one a line
  // Over rows: iterations computed, and those rogd does not hold (lost by
  // design: computed by a killed process and never applied).
  uint64_t row_updates_computed = 0;
  uint64_t row_updates_lost = 0;
  std::string summary;  // a line per killed incarnation: what it lost
};

// Checks global − initial (initial = zeros) against the incarnations.
ConservationReport CheckFaultConservation(const Layout& layout, absl::Span<const float> global,
                                          const std::vector<Incarnation>& incarnations);

}  // namespace rog

#endif  // ROG_TEST_FAULT_FAULT_MODEL_H_
