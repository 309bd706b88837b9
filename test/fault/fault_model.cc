#include "test/fault/fault_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rog {
namespace {

constexpr int kPrimes[kFaultWidth - kFaultMarkers] = {
    5,  7,  11, 13, 17, 19, 23, 29,  31,  37,  41,  43,  47,  53,  59,  61,
    67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113, 127, 131, 137, 139};

int64_t Noise(int marker, uint64_t k, uint64_t row, int e) {
  const int64_t p = kPrimes[e - kFaultMarkers];
  return static_cast<int64_t>((k + 3 * static_cast<uint64_t>(marker) + 5 * row) % p) - (p - 1) / 2;
}

// Sum of Noise over k = 1..j: every whole period sums to 0.
int64_t NoisePrefix(int marker, uint64_t j, uint64_t row, int e) {
  const uint64_t p = kPrimes[e - kFaultMarkers];
  int64_t sum = 0;
  for (uint64_t k = j - j % p + 1; k <= j; ++k) sum += Noise(marker, k, row, e);
  return sum;
}

}  // namespace

Layout FaultLayout() { return *Layout::Create({{"w", {64, kFaultWidth}}, {"b", {kFaultWidth}}}); }

void FaultUpdate(const Layout& layout, int marker, uint64_t k, absl::Span<float> out) {
  for (float& v : out) v = 0;
  for (RowId r = 0; r < layout.num_rows(); ++r) {
    float* row = out.data() + layout.row(r).offset;
    row[marker] = 1;
    for (int e = kFaultMarkers; e < kFaultWidth; ++e) {
      row[e] = static_cast<float>(Noise(marker, k, r, e));
    }
  }
}

ConservationReport CheckFaultConservation(const Layout& layout, absl::Span<const float> global,
                                          const std::vector<Incarnation>& incarnations) {
  ConservationReport report;
  int shown = 0;
  const auto problem = [&](const std::string& what) {
    report.ok = false;
    if (++shown <= 10) absl::StrAppend(&report.problems, what, "\n");
  };
  if (global.size() != layout.total_numel()) {
    problem(absl::StrCat("the model has ", global.size(), " values, the layout ",
                         layout.total_numel()));
    return report;
  }
  std::vector<const Incarnation*> by_marker(kFaultMarkers, nullptr);
  for (const Incarnation& inc : incarnations) {
    if (inc.marker < 0 || inc.marker >= kFaultMarkers || by_marker[inc.marker] != nullptr) {
      problem(absl::StrCat("incarnation ", inc.id, ": marker ", inc.marker, " unusable"));
      return report;
    }
    by_marker[inc.marker] = &inc;
  }
  std::vector<uint64_t> lost(kFaultMarkers, 0), min_j(kFaultMarkers, ~0ull),
      max_j(kFaultMarkers, 0);
  for (RowId r = 0; r < layout.num_rows(); ++r) {
    const float* row = global.data() + layout.row(r).offset;
    std::vector<uint64_t> j(kFaultMarkers, 0);
    for (int m = 0; m < kFaultMarkers; ++m) {
      const float v = row[m];
      const Incarnation* inc = by_marker[m];
      if (inc == nullptr) {
        if (v != 0) problem(absl::StrCat("row ", r, ": marker ", m, " of nobody holds ", v));
        continue;
      }
      if (v < 0 || v != std::floor(v) || v > static_cast<float>(inc->computed)) {
        problem(absl::StrCat("row ", r, ": ", inc->id, " (marker ", m, ") holds ", v,
                             " iterations, it computed ", inc->computed,
                             ": applied twice, or corrupt"));
        continue;
      }
      j[m] = static_cast<uint64_t>(v);
      if (inc->finished && j[m] != inc->computed) {
        problem(absl::StrCat("row ", r, ": ", inc->id, " (marker ", m,
                             ") finished with Sync after ", inc->computed,
                             " iterations, rogd holds ", j[m], ": lost"));
      }
      report.row_updates_computed += inc->computed;
      lost[m] += inc->computed - j[m];
      report.row_updates_lost += inc->computed - j[m];
      min_j[m] = std::min(min_j[m], j[m]);
      max_j[m] = std::max(max_j[m], j[m]);
    }
    for (int e = kFaultMarkers; e < kFaultWidth; ++e) {
      int64_t expected = 0;
      for (int m = 0; m < kFaultMarkers; ++m) {
        if (by_marker[m] != nullptr) expected += NoisePrefix(m, j[m], r, e);
      }
      if (static_cast<double>(row[e]) != static_cast<double>(expected)) {
        problem(absl::StrCat("row ", r, " element ", e, ": rogd holds ", row[e],
                             ", the updates its markers count sum to ", expected,
                             ": an update applied twice, or one lost from the middle"));
      }
    }
  }
  for (const Incarnation& inc : incarnations) {
    const int m = inc.marker;
    if (inc.finished) continue;  // lost nothing, or `problems` says what
    absl::StrAppend(&report.summary, inc.id, " (marker ", m, ", killed): computed at most ",
                    inc.computed, " iterations; rogd holds iterations 1..", min_j[m], " to 1..",
                    max_j[m], " of its rows; lost ", lost[m], " row updates (",
                    absl::StrFormat("%.2f", static_cast<double>(lost[m]) / layout.num_rows()),
                    " iterations' worth)\n");
  }
  return report;
}

}  // namespace rog
