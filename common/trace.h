// A bandwidth trace: link capacity over time, replayed in a loop.
//
// Text format (tools/traces/README.md): lines `seconds<TAB>mbit_per_s`,
// blank lines and lines starting with '#' ignored. Times start at 0 and rise
// strictly; each value holds until the next line's time. The last value
// holds for the mean sample interval, then the trace starts over.
#ifndef ROG_COMMON_TRACE_H_
#define ROG_COMMON_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rog {

class Trace {
 public:
  // Parses `text`; `name` names the source in error messages, which give the
  // line number and what was wrong. A trace whose every value is 0 is refused
  // (nothing could ever cross it).
  static absl::StatusOr<Trace> Parse(absl::string_view text, absl::string_view name);

  // A trace of one constant rate, for tests and what-if runs.
  static Trace Constant(double mbit_per_s);

  // The same samples with every time multiplied by `k` (> 0, finite): the
  // link changes k times as often for k < 1. For running a team whose
  // compute is scaled by k against the traces' time axis scaled alike.
  Trace TimeScaled(double k) const;

  // The time-weighted median rate over one period of every trace (each
  // trace weighted by its period), Mbit/s: half of the traces' time runs
  // at or below it. 0 for no traces.
  static double MedianMbit(const std::vector<Trace>& traces);

  const std::string& name() const { return name_; }
  double period() const { return period_; }
  size_t samples() const { return times_.size(); }
  double mean_mbit() const;
  // Capacity at time t (t >= 0; looped), Mbit/s.
  double MbitAt(double t) const;
  // Bytes the link can carry in [t0, t1] at `scale` × the trace.
  double BytesBetween(double t0, double t1, double scale) const;
  // When `bytes` sent back to back from `start` have crossed the link at
  // `scale` × the trace. REQUIRES: scale > 0, bytes >= 0.
  double TransferEnd(double start, double bytes, double scale) const;
  // When the sample in force at time t (t >= 0; looped) ends and the next
  // one starts: always > t. For replaying the trace sample by sample.
  double NextChange(double t) const;

 private:
  Trace() = default;
  size_t SegmentAt(double t_in_period) const;
  double SegmentEnd(size_t i) const { return i + 1 < times_.size() ? times_[i + 1] : period_; }

  std::string name_;
  std::vector<double> times_;
  std::vector<double> mbit_;
  double period_ = 0;
  double bytes_per_period_ = 0;  // at scale 1
};

}  // namespace rog

#endif  // ROG_COMMON_TRACE_H_
