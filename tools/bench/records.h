// What a robot of the benchmark recorded (fmnist_worker --csv_dir): its
// per-iteration, per-push and per-evaluation CSV files, parsed. Pure logic,
// no I/O: bench_report.cc reads the files.
#ifndef ROG_TOOLS_BENCH_RECORDS_H_
#define ROG_TOOLS_BENCH_RECORDS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rog {

// One row of ID.iters.csv: an iteration, stamped when EndStep returned.
struct IterRecord {
  double unix_s = 0;
  uint64_t iteration = 0;
  double stall_s = 0;
  bool stalled = false;
  double compute_s = 0, transmit_s = 0, window_s = 0;
  uint64_t rows_up = 0, bytes_up = 0, payload_up = 0;
  uint64_t rows_down = 0, bytes_down = 0, payload_down = 0;
  bool disconnected = false;
  // Files written while EndStep waited for its push's acknowledgements
  // carry the push's figures here (see PushRecord); newer ones write
  // ID.pushes.csv instead and these stay 0.
  double overshoot_s = 0;
  double busy_s = 0;
  // Team patience: BeginStep's wait while rogd had the robot detached, and
  // the record's kind: an iteration, a local step taken detached, or no
  // iteration (the adaptation time ran out during BeginStep's wait; the
  // record carries that wait). Files written before patience lack both
  // columns (read as 0, an iteration).
  double detached_s = 0;
  bool local_step = false;
  bool no_iteration = false;
  // The part of compute_s spent computing, before fmnist_worker's
  // --compute_time padding (files before it: compute_s).
  double real_compute_s = 0;
};

// One row of ID.pushes.csv: an EndStep's push, written once rogd had
// acknowledged its last batch (rog::PushStats).
struct PushRecord {
  double start_unix = 0;  // EndStep's call
  uint64_t iteration = 0;
  double window_s = 0;  // 0: none
  uint64_t bytes = 0, payload = 0;
  double busy_s = 0;       // start to last ack less the minimum round trip
  double overshoot_s = 0;  // window end to the estimated arrival of its last byte
  bool disconnected = false;
  uint64_t late_bytes = 0;  // formed after the window closed (mandatory, asked for)
  // Start to last ack, and the bytes acknowledged (PushStats); ack_s < 0 in
  // files before these columns.
  double ack_s = -1;
  uint64_t acked_bytes = 0;
};

// One row of ID.acc.csv: an evaluation on degraded test images; the last
// row is the one after the robot's final sync.
struct AccRecord {
  double unix_s = 0, elapsed_s = 0;
  uint64_t iteration = 0;
  double accuracy = 0;
};

// Parse the CSV files, header line first, in any version a robot has
// written (records.cc lists each file's columns and versions). Errors name
// `name`, the line and what is wrong.
absl::StatusOr<std::vector<IterRecord>> ParseIterCsv(absl::string_view text,
                                                     absl::string_view name);
absl::StatusOr<std::vector<AccRecord>> ParseAccCsv(absl::string_view text, absl::string_view name);
absl::StatusOr<std::vector<PushRecord>> ParsePushCsv(absl::string_view text,
                                                     absl::string_view name);
// The pushes of files written before ID.pushes.csv existed, when EndStep
// returned only once its push was acknowledged: one per iteration that
// transmitted, starting transmit_s before it returned.
std::vector<PushRecord> PushesFromIters(const std::vector<IterRecord>& iters);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_RECORDS_H_
