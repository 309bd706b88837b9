#include "tools/rogctl/rogctl_lib.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/mta.h"
#include "proto/convert.h"
#include "security/credential_files.h"

namespace rog {
namespace ctl {
namespace {

std::string Fixed(double v, int decimals) { return absl::StrFormat("%.*f", decimals, v); }

std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

std::string Rate(double bytes_per_second) {
  return absl::StrCat(HumanBytes(bytes_per_second), "/s");
}

// Building a JSON object with keys in a fixed order.
class Obj {
 public:
  Obj& Str(absl::string_view key, absl::string_view v) { return Raw(key, JsonString(v)); }
  Obj& Num(absl::string_view key, double v) { return Raw(key, JsonNumber(v)); }
  Obj& Int(absl::string_view key, uint64_t v) { return Raw(key, absl::StrCat(v)); }
  Obj& Bool(absl::string_view key, bool v) { return Raw(key, v ? "true" : "false"); }
  Obj& Raw(absl::string_view key, absl::string_view json) {
    parts_.push_back(absl::StrCat(JsonString(key), ":", json));
    return *this;
  }
  std::string Done() const { return absl::StrCat("{", absl::StrJoin(parts_, ","), "}"); }

 private:
  std::vector<std::string> parts_;
};

// Heat map character of a staleness, and its ANSI colour.
char HeatChar(uint64_t s) {
  if (s == 0) return '.';
  if (s >= 10) return '+';
  return static_cast<char>('0' + s);
}

const char* HeatColor(uint64_t s, uint32_t bound) {
  if (s == 0) return "\x1b[32m";                   // green: fresh
  if (bound == 0 || s < bound) return "\x1b[33m";  // yellow: within the bound
  return "\x1b[31m";                               // red: at the bound
}

constexpr size_t kHeatWidth = 64;

// Column order of the reply's workers, sorted by id: rogd lists them in
// join order, which differs from run to run.
std::vector<int> WorkerOrder(const pb::StalenessReply& r) {
  std::vector<int> order(r.workers_size());
  for (int i = 0; i < r.workers_size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return r.workers(a) < r.workers(b); });
  return order;
}

// Workers sorted by id, for the same reason.
std::vector<const pb::WorkerInfo*> SortedWorkers(const pb::WorkersReply& w) {
  std::vector<const pb::WorkerInfo*> out;
  for (const pb::WorkerInfo& i : w.workers()) out.push_back(&i);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto* a, const auto* b) { return a->worker_id() < b->worker_id(); });
  return out;
}

}  // namespace

Table::Table(std::vector<std::string> header, std::vector<bool> numeric)
    : numeric_(std::move(numeric)) {
  numeric_.resize(header.size(), false);
  rows_.push_back(std::move(header));
}

void Table::AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

std::string Table::Render() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (size_t r = 0; r < rows_.size(); ++r) {
    const auto& row = rows_[r];
    // An all-empty header is no header.
    if (r == 0 && std::all_of(row.begin(), row.end(), [](const auto& c) { return c.empty(); })) {
      continue;
    }
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      const bool right = c < numeric_.size() && numeric_[c];
      line += right ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : "");
    }
    out += line + "\n";
  }
  return out;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.15g", v);
}

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return absl::StrFormat("%.0f B", bytes);
  return absl::StrFormat("%.1f %s", bytes, units[u]);
}

std::string HumanSeconds(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  if (seconds < 60) return absl::StrFormat("%.1fs", seconds);
  const uint64_t t = static_cast<uint64_t>(seconds);
  const uint64_t h = t / 3600, m = (t / 60) % 60, s = t % 60;
  if (h > 0) return absl::StrFormat("%dh%02dm%02ds", h, m, s);
  return absl::StrFormat("%dm%02ds", m, s);
}

std::string SyncName(pb::SyncPolicy sync) {
  switch (sync) {
    case pb::SYNC_BSP:
      return "bsp";
    case pb::SYNC_SSP:
      return "ssp";
    case pb::SYNC_ROG:
      return "rog";
    default:
      return absl::StrCat("unknown(", static_cast<int>(sync), ")");
  }
}

std::string CodecName(pb::Codec codec) {
  switch (codec) {
    case pb::CODEC_FP32:
      return "fp32";
    case pb::CODEC_BF16:
      return "bf16";
    case pb::CODEC_INT8:
      return "int8";
    case pb::CODEC_SIGN:
      return "sign";
    default:
      return absl::StrCat("unknown(", static_cast<int>(codec), ")");
  }
}

namespace {

// The model state's memory by the design's formula, per worker record, and
// the team --max_state_bytes allows.
std::string StateMemoryText(const pb::StatusReply& s) {
  const std::string limit = absl::StrCat(HumanBytes(s.max_state_bytes()), " (--max_state_bytes)");
  if (!s.has_model()) return absl::StrCat("no model yet; at most ", limit);
  return absl::StrCat(HumanBytes(s.state_bytes()), " for ", s.worker_records(),
                      s.worker_records() == 1 ? " worker record" : " worker records",
                      ": the global rows ", HumanBytes(s.model_bytes()), ", each worker ",
                      HumanBytes(s.state_bytes_per_worker()), " (its pending copy and versions); ",
                      limit, " allows ", s.workers_within_limit(), " records");
}

}  // namespace

std::string StatusTable(const pb::StatusReply& s, double now_unix) {
  Table t({"", ""});
  t.AddRow({"version", s.version()});
  t.AddRow({"sync", absl::StrCat(SyncName(s.sync()), " S=", s.staleness(),
                                 " MTA=", Fixed(s.mta(), 2), " codec=", CodecName(s.codec()))});
  if (s.has_model()) {
    t.AddRow({"model", absl::StrCat(s.tensors(), " tensors, ", s.rows(), " rows, ",
                                    HumanBytes(s.model_bytes()))});
  } else {
    t.AddRow({"model", "none yet (it arrives with the first worker's hello)"});
  }
  t.AddRow({"worker copies", HumanBytes(s.worker_copy_bytes())});
  t.AddRow({"state memory", StateMemoryText(s)});
  t.AddRow({"uptime", HumanSeconds(s.uptime_seconds())});
  t.AddRow({"team ready", s.team_ready() ? "yes" : "no (waiting for --workers to join)"});
  t.AddRow({"workers",
            absl::StrCat(s.workers_connected(), " connected, ", s.workers_lagging(), " lagging, ",
                         s.workers_detached(), " detached, ", s.workers_evicted(), " evicted")});
  t.AddRow({"patience",
            s.patience() > 0
                ? absl::StrCat(HumanSeconds(s.patience_now()), " now: the larger of ",
                               HumanSeconds(s.patience()), " and ", s.patience_iterations(),
                               "x the team's compute time per iteration (detached workers train ",
                               s.detached_local_steps(), " local steps, then pause)")
                : "off (the slowest link sets the window; nobody is detached)"});
  if (s.patience() > 0) {
    t.AddRow({"team pace", s.detach_speedup() > 0
                               ? absl::StrCat("detach the slowest link when the team would run ",
                                              s.detach_speedup(), "x as fast without it")
                               : "off (only the patience detaches)"});
  }
  t.AddRow({"iterations", absl::StrCat("min ", s.min_iteration(), ", max ", s.max_iteration())});
  t.AddRow({"engine queue",
            absl::StrFormat("p50 %.3g ms, p99 %.3g ms, max %.3g ms over %d events since start",
                            s.engine_queue_delay_p50() * 1e3, s.engine_queue_delay_p99() * 1e3,
                            s.engine_queue_delay_max() * 1e3, s.engine_events())});
  if (s.last_checkpoint_unix() > 0) {
    t.AddRow(
        {"last checkpoint",
         absl::StrCat(s.last_checkpoint_path(), " (",
                      HumanSeconds(std::max(0.0, now_unix - s.last_checkpoint_unix())), " ago)")});
  } else {
    t.AddRow({"last checkpoint", "none"});
  }
  if (s.rejected().empty()) {
    t.AddRow({"rejected", "none"});
  } else {
    // std::map: reasons in a stable order.
    std::map<std::string, uint64_t> sorted(s.rejected().begin(), s.rejected().end());
    std::vector<std::string> parts;
    for (const auto& [reason, n] : sorted) parts.push_back(absl::StrCat(reason, "=", n));
    t.AddRow({"rejected", absl::StrJoin(parts, ", ")});
  }
  return t.Render();
}

std::string StatusJson(const pb::StatusReply& s, double now_unix) {
  std::map<std::string, uint64_t> sorted(s.rejected().begin(), s.rejected().end());
  Obj rejected;
  for (const auto& [reason, n] : sorted) rejected.Int(reason, n);
  Obj ckpt;
  if (s.last_checkpoint_unix() > 0) {
    ckpt.Num("unix", s.last_checkpoint_unix())
        .Str("path", s.last_checkpoint_path())
        .Num("age_seconds", std::max(0.0, now_unix - s.last_checkpoint_unix()));
  }
  return Obj()
             .Str("version", s.version())
             .Str("sync", SyncName(s.sync()))
             .Int("staleness", s.staleness())
             .Num("mta", s.mta())
             .Str("codec", CodecName(s.codec()))
             .Bool("has_model", s.has_model())
             .Raw("model", Obj()
                               .Int("tensors", s.tensors())
                               .Int("rows", s.rows())
                               .Int("bytes", s.model_bytes())
                               .Done())
             .Int("worker_copy_bytes", s.worker_copy_bytes())
             .Raw("state", Obj()
                               .Int("bytes", s.state_bytes())
                               .Int("per_worker_bytes", s.state_bytes_per_worker())
                               .Int("worker_records", s.worker_records())
                               .Int("max_bytes", s.max_state_bytes())
                               .Int("workers_within_limit", s.workers_within_limit())
                               .Done())
             .Num("uptime_seconds", s.uptime_seconds())
             .Bool("team_ready", s.team_ready())
             .Raw("workers", Obj()
                                 .Int("connected", s.workers_connected())
                                 .Int("lagging", s.workers_lagging())
                                 .Int("evicted", s.workers_evicted())
                                 .Int("detached", s.workers_detached())
                                 .Done())
             .Raw("iterations",
                  Obj().Int("min", s.min_iteration()).Int("max", s.max_iteration()).Done())
             .Raw("last_checkpoint", s.last_checkpoint_unix() > 0 ? ckpt.Done() : "null")
             .Raw("rejected", rejected.Done())
             .Num("patience_seconds", s.patience())
             .Num("patience_iterations", s.patience_iterations())
             .Num("patience_now_seconds", s.patience_now())
             .Int("detached_local_steps", s.detached_local_steps())
             .Num("detach_speedup", s.detach_speedup())
             .Int("engine_events", s.engine_events())
             .Raw("engine_queue_delay", Obj()
                                            .Num("p50_seconds", s.engine_queue_delay_p50())
                                            .Num("p99_seconds", s.engine_queue_delay_p99())
                                            .Num("max_seconds", s.engine_queue_delay_max())
                                            .Done())
             .Done() +
         "\n";
}

std::string WorkersTable(const pb::WorkersReply& w) {
  if (w.workers().empty()) return "no workers have connected yet\n";
  Table t({"worker", "state", "team", "detaches", "iter", "lag", "up", "down", "stall",
           "rows up/it", "rows down/it", "bytes up/it", "bytes down/it", "overshoot", "last seen"},
          {false, false, false, true, true, true, true, true, true, true, true, true, true, true,
           true});
  for (const pb::WorkerInfo* p : SortedWorkers(w)) {
    const pb::WorkerInfo& i = *p;
    // Team patience: attached, or detached (how long).
    const std::string team =
        i.state() == "evicted"
            ? "-"
            : (i.detached() ? absl::StrCat("detached ", HumanSeconds(i.detached_for_seconds()))
                            : "attached");
    t.AddRow({i.worker_id(), i.state(), team, absl::StrCat(i.detaches()),
              absl::StrCat(i.iteration()), absl::StrCat(i.lag()), Rate(i.uplink_goodput()),
              Rate(i.downlink_goodput()), Percent(i.stall_share()),
              Fixed(i.rows_pushed_per_iteration(), 1), Fixed(i.rows_pulled_per_iteration(), 1),
              HumanBytes(i.bytes_pushed_per_iteration()),
              HumanBytes(i.bytes_pulled_per_iteration()),
              absl::StrCat(Fixed(i.window_overshoot(), 3), "s"),
              absl::StrCat(HumanSeconds(i.last_seen_seconds()), " ago")});
  }
  return t.Render();
}

std::string WorkersJson(const pb::WorkersReply& w) {
  std::vector<std::string> items;
  for (const pb::WorkerInfo* p : SortedWorkers(w)) {
    const pb::WorkerInfo& i = *p;
    items.push_back(Obj()
                        .Str("id", i.worker_id())
                        .Str("state", i.state())
                        .Int("iteration", i.iteration())
                        .Int("lag", i.lag())
                        .Num("uplink_goodput_bytes_per_second", i.uplink_goodput())
                        .Num("downlink_goodput_bytes_per_second", i.downlink_goodput())
                        .Num("stall_share", i.stall_share())
                        .Int("stalls", i.stalls())
                        .Num("rows_pushed_per_iteration", i.rows_pushed_per_iteration())
                        .Num("rows_pulled_per_iteration", i.rows_pulled_per_iteration())
                        .Num("bytes_pushed_per_iteration", i.bytes_pushed_per_iteration())
                        .Num("bytes_pulled_per_iteration", i.bytes_pulled_per_iteration())
                        .Num("window_overshoot_seconds", i.window_overshoot())
                        .Num("last_seen_seconds", i.last_seen_seconds())
                        .Str("sdk_version", i.sdk_version())
                        .Str("peer", i.peer())
                        .Bool("detached", i.detached())
                        .Num("detached_for_seconds", i.detached_for_seconds())
                        .Int("detaches", i.detaches())
                        .Int("reattaches", i.reattaches())
                        .Num("detached_seconds", i.detached_seconds())
                        .Int("late_rows", i.late_rows())
                        .Str("detach_reason", i.detach_reason())
                        .Num("stall_peer_compute_seconds", i.stall_peer_compute_seconds())
                        .Num("stall_peer_asked_seconds", i.stall_peer_asked_seconds())
                        .Num("stall_peer_uplink_seconds", i.stall_peer_uplink_seconds())
                        .Num("stall_downlink_seconds", i.stall_downlink_seconds())
                        .Num("downlink_rtt_seconds", i.downlink_rtt())
                        .Int("downlink_in_flight_bytes", i.downlink_in_flight())
                        .Done());
  }
  return Obj().Raw("workers", absl::StrCat("[", absl::StrJoin(items, ","), "]")).Done() + "\n";
}

uint64_t WorstStaleness(const pb::RowStaleness& row) {
  uint64_t w = 0;
  for (uint64_t s : row.staleness()) w = std::max(w, s);
  return w;
}

std::string HeatMap(const pb::StalenessReply& r, bool color) {
  // Tensors in the order their rows appear.
  std::vector<std::string> order;
  std::map<std::string, std::vector<uint64_t>> by_tensor;
  for (const pb::RowStaleness& row : r.rows()) {
    auto [it, inserted] = by_tensor.try_emplace(row.tensor());
    if (inserted) order.push_back(row.tensor());
    it->second.push_back(WorstStaleness(row));
  }
  size_t name_width = 0;
  for (const std::string& n : order) name_width = std::max(name_width, n.size());
  std::string out;
  for (const std::string& name : order) {
    const std::vector<uint64_t>& v = by_tensor[name];
    const size_t group = (v.size() + kHeatWidth - 1) / kHeatWidth;
    std::string line = name + std::string(name_width - name.size(), ' ') + "  ";
    for (size_t i = 0; i < v.size(); i += group) {
      uint64_t worst = 0;
      for (size_t j = i; j < std::min(v.size(), i + group); ++j) worst = std::max(worst, v[j]);
      if (color) line += HeatColor(worst, r.staleness_bound());
      line += HeatChar(worst);
      if (color) line += "\x1b[0m";
    }
    line += absl::StrCat("  (", v.size(), v.size() == 1 ? " row" : " rows",
                         group > 1 ? absl::StrCat(", ", group, " per character") : "", ")");
    out += line + "\n";
  }
  return out;
}

std::string StalenessTable(const pb::StalenessReply& r, bool heat_map, bool color) {
  std::vector<std::string> header = {"tensor", "index"};
  std::vector<bool> numeric = {false, true};
  const std::vector<int> order = WorkerOrder(r);
  for (int c : order) {
    header.push_back(r.workers(c));
    numeric.push_back(true);
  }
  header.push_back("oldest unpushed");
  numeric.push_back(false);
  header.push_back("age");
  numeric.push_back(true);
  Table t(header, numeric);
  for (const pb::RowStaleness& row : r.rows()) {
    std::vector<std::string> cells = {row.tensor(), absl::StrCat(row.index_in_tensor())};
    for (int c : order) {
      cells.push_back(c < row.staleness_size() ? absl::StrCat(row.staleness(c)) : "-");
    }
    cells.push_back(row.oldest_unpushed_worker().empty() ? "-" : row.oldest_unpushed_worker());
    cells.push_back(absl::StrCat(row.oldest_unpushed_age()));
    t.AddRow(std::move(cells));
  }
  std::string out = absl::StrCat("staleness bound ", r.staleness_bound(), ", ", r.rows_size(),
                                 " rows; iterations each worker's copy is behind\n");
  out += t.Render();
  if (heat_map && r.rows_size() > 0) {
    out += "\nheat map ('.' fresh, 1-9 iterations behind, '+' 10 or more; worst over workers)\n";
    out += HeatMap(r, color);
  }
  return out;
}

std::string StalenessJson(const pb::StalenessReply& r) {
  const std::vector<int> order = WorkerOrder(r);
  std::vector<std::string> workers;
  for (int c : order) workers.push_back(JsonString(r.workers(c)));
  std::vector<std::string> rows;
  for (const pb::RowStaleness& row : r.rows()) {
    Obj per_worker;
    for (int c : order) {
      if (c < row.staleness_size()) per_worker.Int(r.workers(c), row.staleness(c));
    }
    rows.push_back(
        Obj()
            .Int("row", row.row())
            .Str("tensor", row.tensor())
            .Int("index", row.index_in_tensor())
            .Raw("staleness", per_worker.Done())
            .Int("max_staleness", WorstStaleness(row))
            .Raw("oldest_unpushed", row.oldest_unpushed_worker().empty()
                                        ? "null"
                                        : Obj()
                                              .Str("worker", row.oldest_unpushed_worker())
                                              .Int("age", row.oldest_unpushed_age())
                                              .Done())
            .Done());
  }
  return Obj()
             .Int("staleness_bound", r.staleness_bound())
             .Raw("workers", absl::StrCat("[", absl::StrJoin(workers, ","), "]"))
             .Raw("rows", absl::StrCat("[", absl::StrJoin(rows, ","), "]"))
             .Done() +
         "\n";
}

std::string CheckpointTable(const pb::CheckpointReply& c) {
  return absl::StrCat("checkpoint written: ", c.path(), " (", HumanBytes(c.bytes()), " in ",
                      Fixed(c.seconds(), 3), "s)\n");
}

std::string CheckpointJson(const pb::CheckpointReply& c) {
  return Obj().Str("path", c.path()).Int("bytes", c.bytes()).Num("seconds", c.seconds()).Done() +
         "\n";
}

absl::Status ExportAssembler::Add(const pb::ExportChunk& chunk) {
  const auto bad = [](auto&&... what) {
    return absl::DataLossError(
        absl::StrCat("rogd sent a malformed export (", what...,
                     "); is rogd the same version as rogctl? `rogctl status` shows its version"));
  };
  if (!layout_) {
    if (!chunk.has_layout()) return bad("its first chunk has no layout");
    absl::StatusOr<Layout> layout = LayoutFromProto(chunk.layout());
    if (!layout.ok()) return bad("its layout is invalid: ", layout.status().message());
    layout_ = *std::move(layout);
    values_.reserve(layout_->total_numel());
  } else if (chunk.has_layout()) {
    return bad("a chunk after the first carries a layout");
  }
  const size_t num_rows = layout_->num_rows();
  if (chunk.first_row() != next_row_) {
    return bad("a chunk starts at row ", chunk.first_row(), " where row ", next_row_, " was due");
  }
  if (chunk.rows() > num_rows - next_row_) {
    return bad("rows ", chunk.first_row(), "+", chunk.rows(), " beyond the layout's ", num_rows);
  }
  uint64_t numel = 0;
  for (RowId r = next_row_; r < next_row_ + chunk.rows(); ++r) numel += layout_->row(r).numel;
  std::vector<float> part;
  if (chunk.values().size() != numel * 4 || !BytesToFloats(chunk.values(), &part)) {
    return bad("rows ", chunk.first_row(), "+", chunk.rows(), " carry ", chunk.values().size(),
               " bytes instead of ", numel * 4);
  }
  values_.insert(values_.end(), part.begin(), part.end());
  next_row_ += chunk.rows();
  return absl::OkStatus();
}

absl::StatusOr<ExportedModel> ExportAssembler::Finish() {
  if (!layout_) {
    return absl::DataLossError("rogd ended the export without sending the model");
  }
  if (next_row_ != layout_->num_rows()) {
    return absl::DataLossError(absl::StrCat("rogd ended the export after ", next_row_, " of ",
                                            layout_->num_rows(), " rows"));
  }
  return ExportedModel{*std::move(layout_), std::move(values_)};
}

absl::Status CheckArchiveNames(const Layout& layout) {
  // Every proper prefix of a name ("block", "block.0") is a submodule.
  std::map<std::string, std::string> submodules;  // prefix -> a tensor under it
  for (const TensorSpec& t : layout.tensors()) {
    size_t start = 0;
    for (;;) {
      const size_t dot = t.name.find('.', start);
      const size_t end = dot == std::string::npos ? t.name.size() : dot;
      if (end == start) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", t.name,
            "' has no place in a LibTorch module archive: its name has an empty part between "
            "dots (LibTorch names parameters like \"block.0.weight\")"));
      }
      if (dot == std::string::npos) break;
      submodules.emplace(t.name.substr(0, dot), t.name);
      start = dot + 1;
    }
  }
  for (const TensorSpec& t : layout.tensors()) {
    const auto it = submodules.find(t.name);
    if (it != submodules.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "' has no place in a LibTorch module archive: '", t.name,
                       "' is also the submodule holding tensor '", it->second, "'"));
    }
  }
  return absl::OkStatus();
}

std::string ExportTable(const ExportSummary& e) {
  std::string out = absl::StrCat("model exported: ", e.out, " (", e.tensors,
                                 e.tensors == 1 ? " tensor, " : " tensors, ", e.elements,
                                 " values, ", HumanBytes(e.bytes), ")\n");
  if (!e.template_path.empty()) {
    absl::StrAppend(&out, "from template ", e.template_path, ": ", e.buffers,
                    e.buffers == 1 ? " buffer" : " buffers",
                    " and the module structure, kept as they are\n");
  }
  absl::StrAppend(&out, "load it with torch::load(module, \"", e.out,
                  "\") into the module the robots train\n");
  return out;
}

std::string ExportJson(const ExportSummary& e) {
  return Obj()
             .Str("out", e.out)
             .Int("tensors", e.tensors)
             .Int("elements", e.elements)
             .Int("bytes", e.bytes)
             .Raw("template", e.template_path.empty() ? "null" : JsonString(e.template_path))
             .Int("buffers", e.buffers)
             .Done() +
         "\n";
}

absl::StatusOr<std::vector<uint32_t>> ParseStalenessList(absl::string_view spec) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("--staleness=", spec,
                     " is not a bound: use S (e.g. 4), a range A..B (e.g. 2..8) or a list "
                     "(e.g. 1,2,4) of integers 0..1000"));
  };
  std::vector<uint32_t> out;
  if (spec.empty()) return bad();
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    uint32_t a = 0, b = 0;
    const size_t dots = part.find("..");
    if (dots != absl::string_view::npos) {
      if (!absl::SimpleAtoi(part.substr(0, dots), &a) ||
          !absl::SimpleAtoi(part.substr(dots + 2), &b) || a > b) {
        return bad();
      }
    } else {
      if (!absl::SimpleAtoi(part, &a)) return bad();
      b = a;
    }
    if (b > 1000) return bad();
    for (uint32_t s = a; s <= b; ++s) out.push_back(s);
  }
  return out;
}

std::string MtaTable(const std::vector<uint32_t>& bounds) {
  Table t({"S", "MTA"}, {true, true});
  for (uint32_t s : bounds) t.AddRow({absl::StrCat(s), Fixed(MinimumTransmissionAmount(s), 2)});
  return t.Render();
}

std::string MtaJson(const std::vector<uint32_t>& bounds) {
  std::vector<std::string> items;
  for (uint32_t s : bounds) {
    items.push_back(
        Obj().Int("staleness", s).Raw("mta", Fixed(MinimumTransmissionAmount(s), 6)).Done());
  }
  return Obj().Raw("mta", absl::StrCat("[", absl::StrJoin(items, ","), "]")).Done() + "\n";
}

Failure DescribeFailure(int code, absl::string_view message, absl::string_view server,
                        absl::string_view command, bool tls) {
  switch (static_cast<absl::StatusCode>(code)) {
    case absl::StatusCode::kDeadlineExceeded:
      return {kExitUnreachable,
              absl::StrCat("rogd at ", server,
                           " did not answer in time: is it running and reachable from here? "
                           "raise --timeout on a slow link, or pass --server=HOST:PORT (",
                           message, ")")};
    case absl::StatusCode::kUnavailable:
      // gRPC reports refused TLS handshakes as UNAVAILABLE too. rogctl
      // refusing rogd's certificate says so in the message; rogd refusing
      // rogctl's (TLS 1.3) reads as a closed socket.
      if (LooksLikeTlsFailure(message)) {
        return {kExitAuth,
                absl::StrCat("rogctl ", command, ": rogctl does not trust rogd at ", server,
                             ": its certificate must be signed by the CA in --tls_ca, be valid "
                             "now and name the host of --server (or --tls_server_name) (",
                             message, ")")};
      }
      if (tls && absl::StrContains(message, "Socket closed")) {
        return {kExitAuth,
                absl::StrCat("rogctl ", command, ": rogd at ", server,
                             " closed the connection during TLS: it probably requires a client "
                             "certificate (rogd --tls_ca) and got none it accepts; give "
                             "--tls_cert and --tls_key signed by the CA rogd trusts and not "
                             "expired (rogd's log names the reason) (",
                             message, ")")};
      }
      if (!tls && absl::StrContains(message, "Socket closed")) {
        return {kExitUnreachable,
                absl::StrCat("rogd at ", server,
                             " closed the connection: if it serves TLS (rogd --tls_cert), pass "
                             "--tls_ca=FILE with the CA that signed its certificate (",
                             message, ")")};
      }
      return {kExitUnreachable,
              absl::StrCat("cannot reach rogd at ", server,
                           ": is it running? start it with `rogd "
                           "--listen=",
                           server, "` or pass --server=HOST:PORT (", message, ")")};
    case absl::StatusCode::kFailedPrecondition:
      if (absl::StrContains(message, "no model yet")) {
        return {kExitNotReady,
                absl::StrCat("rogctl ", command, ": ", message,
                             "; start a worker (rog::Worker) against this rogd, then retry")};
      }
      return {kExitNotReady, absl::StrCat("rogctl ", command, ": ", message)};
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
      return {kExitUsage, absl::StrCat("rogctl ", command, ": ", message)};
    case absl::StatusCode::kUnauthenticated:
      return {kExitAuth, absl::StrCat("rogctl ", command, ": rogd at ", server,
                                      " refused the call (UNAUTHENTICATED): ", message,
                                      "; pass --token_file=FILE with the admin token")};
    case absl::StatusCode::kPermissionDenied:
      return {kExitAuth, absl::StrCat("rogctl ", command, ": rogd at ", server,
                                      " refused the call (PERMISSION_DENIED): ", message)};
    case absl::StatusCode::kUnimplemented:
      return {kExitError, absl::StrCat("rogd at ", server, " does not serve `", command,
                                       "` (is it older than rogctl?): ", message)};
    default:
      return {kExitError, absl::StrCat("rogctl ", command, " failed: ", message)};
  }
}

}  // namespace ctl
}  // namespace rog
