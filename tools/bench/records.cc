#include "tools/bench/records.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rog {
namespace {

// Splits `text` into data lines (the header checked and skipped), each into
// exactly `columns` fields.
absl::StatusOr<std::vector<std::vector<absl::string_view>>> CsvRows(absl::string_view text,
                                                                    absl::string_view name,
                                                                    absl::string_view header) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || absl::StripTrailingAsciiWhitespace(lines[0]) != header) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the first line must be the header '", header,
                     "'; is this a file fmnist_worker --csv_dir wrote?"));
  }
  const size_t columns = std::count(header.begin(), header.end(), ',') + 1;
  std::vector<std::vector<absl::string_view>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripTrailingAsciiWhitespace(lines[i]), ',');
    if (f.size() != columns) {
      // A robot killed mid-write leaves a short last line: skip only that.
      if (i + 1 == lines.size()) break;
      return absl::InvalidArgumentError(
          absl::StrCat(name, " line ", i + 1, ": ", f.size(), " fields, expected ", columns));
    }
    rows.push_back(std::move(f));
  }
  return rows;
}

template <typename T>
absl::Status Field(absl::string_view s, absl::string_view name, size_t line, T* out) {
  bool ok;
  if constexpr (std::is_same_v<T, double>) {
    ok = absl::SimpleAtod(s, out) && std::isfinite(*out);
  } else {
    ok = absl::SimpleAtoi(s, out);
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " line ", line, ": '", s, "' is not a number"));
}

constexpr absl::string_view kIterHeader =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
    "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s";
// Since team patience: two more columns.
constexpr absl::string_view kIterHeaderPatience =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
    "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s,detached_s,"
    "kind";
// Since EndStep stopped waiting for acknowledgements: the push's figures
// moved to ID.pushes.csv.
constexpr absl::string_view kIterHeaderPushes =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
    "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind";
// Since --compute_time: the compute before padding, one more column.
constexpr absl::string_view kIterHeaderReal =
    "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
    "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind,real_compute_s";
constexpr absl::string_view kPushHeader =
    "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected";
// Since PushStats::late_bytes: one more column.
constexpr absl::string_view kPushHeaderLate =
    "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,late_bytes";
// Since PushStats::ack_seconds: two more columns.
constexpr absl::string_view kPushHeaderAck =
    "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,late_bytes,"
    "ack_s,acked_bytes";
constexpr absl::string_view kAccHeader = "unix_s,elapsed_s,iteration,accuracy";

}  // namespace

absl::StatusOr<std::vector<IterRecord>> ParseIterCsv(absl::string_view text,
                                                     absl::string_view name) {
  if (absl::StartsWith(text, kIterHeaderPushes)) {
    const bool real = absl::StartsWith(text, kIterHeaderReal);
    auto rows = CsvRows(text, name, real ? kIterHeaderReal : kIterHeaderPushes);
    if (!rows.ok()) return rows.status();
    std::vector<IterRecord> out;
    for (size_t i = 0; i < rows->size(); ++i) {
      const auto& f = (*rows)[i];
      IterRecord r;
      int stalled = 0, disconnected = 0, kind = 0;
      const size_t line = i + 2;
      for (absl::Status s :
           {Field(f[0], name, line, &r.unix_s), Field(f[1], name, line, &r.iteration),
            Field(f[2], name, line, &r.stall_s), Field(f[3], name, line, &stalled),
            Field(f[4], name, line, &r.compute_s), Field(f[5], name, line, &r.transmit_s),
            Field(f[6], name, line, &r.window_s), Field(f[7], name, line, &r.rows_up),
            Field(f[8], name, line, &r.bytes_up), Field(f[9], name, line, &r.payload_up),
            Field(f[10], name, line, &r.rows_down), Field(f[11], name, line, &r.bytes_down),
            Field(f[12], name, line, &r.payload_down), Field(f[13], name, line, &disconnected),
            Field(f[14], name, line, &r.detached_s), Field(f[15], name, line, &kind)}) {
        if (!s.ok()) return s;
      }
      if (kind < 0 || kind > 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " line ", line, ": kind must be 0, 1 or 2, not ", kind));
      }
      r.stalled = stalled != 0;
      r.disconnected = disconnected != 0;
      r.local_step = kind == 1;
      r.no_iteration = kind == 2;
      r.real_compute_s = r.compute_s;
      if (real) {
        absl::Status st = Field(f[16], name, line, &r.real_compute_s);
        if (!st.ok()) return st;
      }
      out.push_back(r);
    }
    return out;
  }
  const bool patience = absl::StartsWith(text, kIterHeaderPatience);
  auto rows = CsvRows(text, name, patience ? kIterHeaderPatience : kIterHeader);
  if (!rows.ok()) return rows.status();
  std::vector<IterRecord> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& f = (*rows)[i];
    IterRecord r;
    int stalled = 0, disconnected = 0;
    const size_t line = i + 2;
    for (absl::Status s :
         {Field(f[0], name, line, &r.unix_s), Field(f[1], name, line, &r.iteration),
          Field(f[2], name, line, &r.stall_s), Field(f[3], name, line, &stalled),
          Field(f[4], name, line, &r.compute_s), Field(f[5], name, line, &r.transmit_s),
          Field(f[6], name, line, &r.window_s), Field(f[7], name, line, &r.overshoot_s),
          Field(f[8], name, line, &r.rows_up), Field(f[9], name, line, &r.bytes_up),
          Field(f[10], name, line, &r.payload_up), Field(f[11], name, line, &r.rows_down),
          Field(f[12], name, line, &r.bytes_down), Field(f[13], name, line, &r.payload_down),
          Field(f[14], name, line, &disconnected), Field(f[15], name, line, &r.busy_s)}) {
      if (!s.ok()) return s;
    }
    r.stalled = stalled != 0;
    r.disconnected = disconnected != 0;
    if (patience) {
      int kind = 0;
      for (absl::Status s :
           {Field(f[16], name, line, &r.detached_s), Field(f[17], name, line, &kind)}) {
        if (!s.ok()) return s;
      }
      if (kind < 0 || kind > 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " line ", line, ": kind must be 0, 1 or 2, not ", kind));
      }
      r.local_step = kind == 1;
      r.no_iteration = kind == 2;
    }
    r.real_compute_s = r.compute_s;
    out.push_back(r);
  }
  return out;
}

absl::StatusOr<std::vector<AccRecord>> ParseAccCsv(absl::string_view text, absl::string_view name) {
  auto rows = CsvRows(text, name, kAccHeader);
  if (!rows.ok()) return rows.status();
  std::vector<AccRecord> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& f = (*rows)[i];
    AccRecord r;
    const size_t line = i + 2;
    for (absl::Status s :
         {Field(f[0], name, line, &r.unix_s), Field(f[1], name, line, &r.elapsed_s),
          Field(f[2], name, line, &r.iteration), Field(f[3], name, line, &r.accuracy)}) {
      if (!s.ok()) return s;
    }
    out.push_back(r);
  }
  return out;
}

absl::StatusOr<std::vector<PushRecord>> ParsePushCsv(absl::string_view text,
                                                     absl::string_view name) {
  const bool late = absl::StartsWith(text, kPushHeaderLate);
  const bool ack = absl::StartsWith(text, kPushHeaderAck);
  auto rows = CsvRows(text, name, ack ? kPushHeaderAck : late ? kPushHeaderLate : kPushHeader);
  if (!rows.ok()) return rows.status();
  std::vector<PushRecord> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& f = (*rows)[i];
    PushRecord r;
    int disconnected = 0;
    const size_t line = i + 2;
    for (absl::Status s :
         {Field(f[0], name, line, &r.start_unix), Field(f[1], name, line, &r.iteration),
          Field(f[2], name, line, &r.window_s), Field(f[3], name, line, &r.bytes),
          Field(f[4], name, line, &r.payload), Field(f[5], name, line, &r.busy_s),
          Field(f[6], name, line, &r.overshoot_s), Field(f[7], name, line, &disconnected)}) {
      if (!s.ok()) return s;
    }
    if (late) {
      absl::Status s = Field(f[8], name, line, &r.late_bytes);
      if (!s.ok()) return s;
    }
    if (ack) {
      for (absl::Status s :
           {Field(f[9], name, line, &r.ack_s), Field(f[10], name, line, &r.acked_bytes)}) {
        if (!s.ok()) return s;
      }
    }
    r.disconnected = disconnected != 0;
    out.push_back(r);
  }
  return out;
}

std::vector<PushRecord> PushesFromIters(const std::vector<IterRecord>& iters) {
  std::vector<PushRecord> out;
  for (const IterRecord& r : iters) {
    if (r.no_iteration || (r.transmit_s <= 0 && r.bytes_up == 0)) continue;
    PushRecord p;
    p.start_unix = r.unix_s - r.transmit_s;
    p.iteration = r.iteration;
    p.window_s = r.window_s;
    p.bytes = r.bytes_up;
    p.payload = r.payload_up;
    // EndStep waited for the acks then: the push ended within it.
    p.busy_s = std::min(r.busy_s, r.transmit_s);
    // EndIteration returned at its last ack then, with every byte acked.
    p.ack_s = r.transmit_s;
    p.acked_bytes = r.bytes_up;
    p.overshoot_s = r.overshoot_s;
    p.disconnected = r.disconnected;
    out.push_back(p);
  }
  return out;
}

}  // namespace rog
