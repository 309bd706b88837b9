#include "common/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rog {
namespace {
constexpr double kBytesPerMbit = 1e6 / 8;
}  // namespace

absl::StatusOr<Trace> Trace::Parse(absl::string_view text, absl::string_view name) {
  Trace t;
  t.name_ = std::string(name);
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    double time = 0;
    double mbit = 0;
    if (fields.size() != 2 || !absl::SimpleAtod(fields[0], &time) ||
        !absl::SimpleAtod(fields[1], &mbit)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ":", line_no, ": expected 'seconds<TAB>mbit_per_s', got '", line, "'"));
    }
    if (!std::isfinite(time) || !std::isfinite(mbit) || mbit < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", line_no, ": time and rate must be finite and the rate >= 0"));
    }
    if (t.times_.empty() ? time != 0 : time <= t.times_.back()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", line_no, ": times must start at 0 and rise strictly; got ", time,
                       t.times_.empty() ? "" : absl::StrCat(" after ", t.times_.back())));
    }
    t.times_.push_back(time);
    t.mbit_.push_back(mbit);
  }
  if (t.times_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no samples"));
  }
  const size_t n = t.times_.size();
  t.period_ = n == 1 ? 1.0 : t.times_.back() + t.times_.back() / static_cast<double>(n - 1);
  for (size_t i = 0; i < n; ++i) {
    t.bytes_per_period_ += t.mbit_[i] * kBytesPerMbit * (t.SegmentEnd(i) - t.times_[i]);
  }
  if (!(t.bytes_per_period_ > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": every rate is 0; nothing could cross this link"));
  }
  return t;
}

Trace Trace::Constant(double mbit_per_s) {
  Trace t;
  t.name_ = absl::StrCat("constant-", mbit_per_s);
  t.times_ = {0.0};
  t.mbit_ = {mbit_per_s};
  t.period_ = 1.0;
  t.bytes_per_period_ = mbit_per_s * kBytesPerMbit;
  return t;
}

Trace Trace::TimeScaled(double k) const {
  Trace t = *this;
  if (!(k > 0) || !std::isfinite(k)) return t;
  for (double& time : t.times_) time *= k;
  t.period_ *= k;
  t.bytes_per_period_ *= k;
  return t;
}

double Trace::MedianMbit(const std::vector<Trace>& traces) {
  std::vector<std::pair<double, double>> segments;  // (rate, duration)
  double total = 0;
  for (const Trace& t : traces) {
    for (size_t i = 0; i < t.times_.size(); ++i) {
      const double d = t.SegmentEnd(i) - t.times_[i];
      segments.emplace_back(t.mbit_[i], d);
      total += d;
    }
  }
  if (segments.empty()) return 0;
  std::sort(segments.begin(), segments.end());
  double seen = 0;
  for (const auto& [rate, d] : segments) {
    seen += d;
    if (seen >= total / 2) return rate;
  }
  return segments.back().first;
}

double Trace::mean_mbit() const { return bytes_per_period_ / kBytesPerMbit / period_; }

size_t Trace::SegmentAt(double tp) const {
  auto it = std::upper_bound(times_.begin(), times_.end(), tp);
  return it == times_.begin() ? 0 : static_cast<size_t>(it - times_.begin()) - 1;
}

double Trace::MbitAt(double t) const {
  return mbit_[SegmentAt(std::fmod(std::max(0.0, t), period_))];
}

double Trace::NextChange(double t) const {
  t = std::max(0.0, t);
  const double base = t - std::fmod(t, period_);
  const double end = base + SegmentEnd(SegmentAt(t - base));
  return end > t ? end : std::nextafter(t, INFINITY);
}

double Trace::BytesBetween(double t0, double t1, double scale) const {
  if (t1 <= t0) return 0;
  double bytes = 0;
  double t = t0;
  // Whole periods at once, then segment by segment.
  const double whole = std::floor((t1 - t0) / period_);
  bytes += whole * bytes_per_period_;
  t += whole * period_;
  while (t < t1) {
    const double base = t - std::fmod(t, period_);
    const size_t i = SegmentAt(t - base);
    const double end = std::min(t1, base + SegmentEnd(i));
    if (end <= t) {
      // t sits on a sample boundary that rounding placed in the sample
      // before it: step past it. (Stopping here, as this once did, dropped
      // the rest of the interval, so a link's capacity read low and its
      // utilisation above 100%.)
      t = std::nextafter(t, INFINITY);
      continue;
    }
    bytes += mbit_[i] * kBytesPerMbit * (end - t);
    t = end;
  }
  return bytes * scale;
}

double Trace::TransferEnd(double start, double bytes, double scale) const {
  double left = bytes / scale;  // in unscaled bytes
  double t = std::max(0.0, start);
  if (left <= 0) return t;
  const double whole = std::floor(left / bytes_per_period_);
  if (whole >= 1) {
    // Skip whole periods but keep at least a sliver for the segment walk.
    const double skip = whole - 1;
    left -= skip * bytes_per_period_;
    t += skip * period_;
  }
  for (int guard = 0; guard < 10000000; ++guard) {
    const double base = t - std::fmod(t, period_);
    const size_t i = SegmentAt(t - base);
    double end = base + SegmentEnd(i);
    if (end <= t) end = std::nextafter(t, INFINITY);
    const double rate = mbit_[i] * kBytesPerMbit;
    const double can = rate * (end - t);
    if (can >= left && rate > 0) return t + left / rate;
    left -= can;
    t = end;
  }
  std::abort();  // unreachable: every period carries bytes_per_period_ > 0
}

}  // namespace rog
