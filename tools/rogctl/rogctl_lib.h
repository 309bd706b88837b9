// rogctl's formatting: aligned tables for people, a stable JSON schema per
// command for scripts (documented in docs/reference.md, "rogctl"), and the
// mapping from rogd's gRPC errors to exit codes and messages that say what
// to do. No I/O here, so all of it is unit-tested on hand-made protos.
#ifndef ROG_TOOLS_ROGCTL_ROGCTL_LIB_H_
#define ROG_TOOLS_ROGCTL_ROGCTL_LIB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/layout.h"
#include "rog.pb.h"

namespace rog {
namespace pb = ::rog::v1;

namespace ctl {

// Exit codes of rogctl.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;        // anything else rogd refused
constexpr int kExitUsage = 2;        // bad command, flag, tensor, worker or file
constexpr int kExitUnreachable = 3;  // no rogd at --server
constexpr int kExitNotReady = 4;     // no model yet, no --checkpoint_dir
constexpr int kExitAuth = 5;         // token missing, wrong or not the admin token; TLS refused

// Columns padded to the widest cell; the first row is the header.
// Cells are left-aligned, except those of columns marked numeric.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> numeric = {});
  void AddRow(std::vector<std::string> cells);
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> numeric_;
};

// A JSON string literal (quotes included): escapes ", \, control characters.
std::string JsonString(absl::string_view s);
// A JSON number; NaN and infinities become null.
std::string JsonNumber(double v);

// 1536 -> "1.5 KiB".
std::string HumanBytes(double bytes);
// 3725 -> "1h02m05s"; 4.2 -> "4.2s".
std::string HumanSeconds(double seconds);
std::string SyncName(pb::SyncPolicy sync);
std::string CodecName(pb::Codec codec);

// `now_unix` gives the age of the last checkpoint.
std::string StatusTable(const pb::StatusReply& s, double now_unix);
std::string StatusJson(const pb::StatusReply& s, double now_unix);

std::string WorkersTable(const pb::WorkersReply& w);
std::string WorkersJson(const pb::WorkersReply& w);

// A row's staleness: the largest over the reply's workers.
uint64_t WorstStaleness(const pb::RowStaleness& row);
// One table row per model row, then (with `heat_map`) a heat map line per
// tensor: one character per row or group of rows ('.' fresh, '1'..'9'
// iterations behind, '+' ten or more), in colour when `color`.
std::string StalenessTable(const pb::StalenessReply& r, bool heat_map, bool color);
std::string HeatMap(const pb::StalenessReply& r, bool color);
std::string StalenessJson(const pb::StalenessReply& r);

std::string CheckpointTable(const pb::CheckpointReply& c);
std::string CheckpointJson(const pb::CheckpointReply& c);

// `rogctl export`: the model as rogd streams it (Admin.Export), checked
// chunk by chunk: the first carries the layout, then consecutive rows of
// fp32 values whose sizes match the layout. Errors are DataLoss saying what
// was wrong (rogd and rogctl of different versions, or a broken rogd).
struct ExportedModel {
  Layout layout;
  std::vector<float> values;  // the global model, in row order
};

class ExportAssembler {
 public:
  absl::Status Add(const pb::ExportChunk& chunk);
  // Every row arrived: the model. Call once.
  absl::StatusOr<ExportedModel> Finish();

 private:
  std::optional<Layout> layout_;
  std::vector<float> values_;
  RowId next_row_ = 0;
};

// Whether each tensor name has a place in a LibTorch module archive, where
// "block.0.weight" is parameter "weight" of submodule "0" of submodule
// "block": parts separated by dots, none empty, and no tensor named like a
// submodule of another ("fc" next to "fc.weight"). InvalidArgument naming
// the first tensor that has none.
absl::Status CheckArchiveNames(const Layout& layout);

// What `rogctl export` wrote.
struct ExportSummary {
  std::string out;            // --out as given
  uint64_t tensors = 0;       // parameters written
  uint64_t elements = 0;      // their float32 values
  uint64_t bytes = 0;         // size of the file
  std::string template_path;  // --template, or empty
  uint64_t buffers = 0;       // buffers kept from the template
};
std::string ExportTable(const ExportSummary& e);
std::string ExportJson(const ExportSummary& e);

// "4", "2..8" or "1,2,4" -> the staleness bounds to show.
absl::StatusOr<std::vector<uint32_t>> ParseStalenessList(absl::string_view spec);
std::string MtaTable(const std::vector<uint32_t>& bounds);
std::string MtaJson(const std::vector<uint32_t>& bounds);

// What rogctl prints and exits with when an admin call fails with gRPC code
// `code` (as an int, grpc::StatusCode) and `message` from rogd.
struct Failure {
  int exit_code;
  std::string message;
};
// `tls`: rogctl talked TLS (a closed socket then means rogd refused its
// certificate).
Failure DescribeFailure(int code, absl::string_view message, absl::string_view server,
                        absl::string_view command, bool tls = false);

}  // namespace ctl
}  // namespace rog

#endif  // ROG_TOOLS_ROGCTL_ROGCTL_LIB_H_
