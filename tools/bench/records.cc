#include "tools/bench/records.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tools/bench/csv_table.h"

namespace rog {
namespace {

// The record's kind: 0 an iteration, 1 a local step taken detached, 2 no
// iteration (BeginStep's wait when the adaptation time ran out).
absl::Status ReadKind(absl::string_view s, IterRecord* r) {
  int kind = 0;
  if (absl::Status status = ParseCsvNumber(s, &kind); !status.ok()) return status;
  if (kind < 0 || kind > 2) {
    return absl::InvalidArgumentError(absl::StrCat("kind must be 0, 1 or 2, not ", kind));
  }
  r->local_step = kind == 1;
  r->no_iteration = kind == 2;
  return absl::OkStatus();
}

// Files before --compute_time padded nothing: all of the compute was real.
void RealComputeIsCompute(IterRecord* r) { r->real_compute_s = r->compute_s; }

// ID.iters.csv: every column it has had, and its versions.
const CsvKind<IterRecord>& IterCsv() {
  static const auto* kind = new CsvKind<IterRecord>{
      {{"unix_s", &IterRecord::unix_s},
       {"iteration", &IterRecord::iteration},
       {"stall_s", &IterRecord::stall_s},
       {"stalled", &IterRecord::stalled},
       {"compute_s", &IterRecord::compute_s},
       {"transmit_s", &IterRecord::transmit_s},
       {"window_s", &IterRecord::window_s},
       {"overshoot_s", &IterRecord::overshoot_s},
       {"rows_up", &IterRecord::rows_up},
       {"bytes_up", &IterRecord::bytes_up},
       {"payload_up", &IterRecord::payload_up},
       {"rows_down", &IterRecord::rows_down},
       {"bytes_down", &IterRecord::bytes_down},
       {"payload_down", &IterRecord::payload_down},
       {"disconnected", &IterRecord::disconnected},
       {"busy_s", &IterRecord::busy_s},
       {"detached_s", &IterRecord::detached_s},
       {"kind", ReadKind},
       {"real_compute_s", &IterRecord::real_compute_s, RealComputeIsCompute}},
      {
          // While EndStep waited for its push's acknowledgements: the push's
          // figures in every iteration.
          "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
          "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s",
          // Since team patience: the detached wait and the record's kind.
          "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
          "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s,detached_s,"
          "kind",
          // Since EndStep stopped waiting for acknowledgements: the push's
          // figures moved to ID.pushes.csv.
          "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
          "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind",
          // Since --compute_time: the compute before padding.
          "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
          "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind,"
          "real_compute_s",
      }};
  return *kind;
}

// ID.pushes.csv: every column it has had, and its versions.
const CsvKind<PushRecord>& PushCsv() {
  static const auto* kind = new CsvKind<PushRecord>{
      {{"start_unix_s", &PushRecord::start_unix},
       {"iteration", &PushRecord::iteration},
       {"window_s", &PushRecord::window_s},
       {"bytes", &PushRecord::bytes},
       {"payload", &PushRecord::payload},
       {"busy_s", &PushRecord::busy_s},
       {"overshoot_s", &PushRecord::overshoot_s},
       {"disconnected", &PushRecord::disconnected},
       {"late_bytes", &PushRecord::late_bytes},
       {"ack_s", &PushRecord::ack_s},
       {"acked_bytes", &PushRecord::acked_bytes}},
      {
          "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected",
          // Since PushStats::late_bytes.
          "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,"
          "late_bytes",
          // Since PushStats::ack_seconds (ack_s < 0 before).
          "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,"
          "late_bytes,ack_s,acked_bytes",
      }};
  return *kind;
}

// ID.acc.csv: one version so far.
const CsvKind<AccRecord>& AccCsv() {
  static const auto* kind = new CsvKind<AccRecord>{{{"unix_s", &AccRecord::unix_s},
                                                    {"elapsed_s", &AccRecord::elapsed_s},
                                                    {"iteration", &AccRecord::iteration},
                                                    {"accuracy", &AccRecord::accuracy}},
                                                   {"unix_s,elapsed_s,iteration,accuracy"}};
  return *kind;
}

}  // namespace

absl::StatusOr<std::vector<IterRecord>> ParseIterCsv(absl::string_view text,
                                                     absl::string_view name) {
  return ReadCsv(text, name, IterCsv());
}

absl::StatusOr<std::vector<AccRecord>> ParseAccCsv(absl::string_view text, absl::string_view name) {
  return ReadCsv(text, name, AccCsv());
}

absl::StatusOr<std::vector<PushRecord>> ParsePushCsv(absl::string_view text,
                                                     absl::string_view name) {
  return ReadCsv(text, name, PushCsv());
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
