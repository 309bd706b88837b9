// bench_report's reading of the robots' CSV files (tools/bench/records.h)
// on files a robot wrote: one robot's three files from a kept run (the
// newest version of each, committed under results/), then the same rows
// written out in every older version of the iterations and pushes files,
// each value checked where it lands. The versions are spelled out here as
// the robots wrote them, apart from records.cc's tables, so a table that
// maps a column wrongly fails.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "tools/bench/records.h"

namespace rog {
namespace {

// robot3 of BSP in a run at low constant rates: 18 iteration records (the
// last one of kind 2, the wait the adaptation time ended), 16 pushes, 8
// evaluations.
constexpr char kRun[] = "results/2026-11-29-transport-constant-links-5977068/low/bsp/robot3";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` (a header line, then data lines) with the columns of `header`:
// each column's value from `made_up` where it names the column, else from
// `text`.
std::string Rewrite(const std::string& text, const std::string& header,
                    const std::map<std::string, std::string>& made_up) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  const std::vector<std::string> from = absl::StrSplit(lines[0], ',');
  const std::vector<std::string> to = absl::StrSplit(header, ',');
  std::string out = header + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> values = absl::StrSplit(lines[i], ',');
    std::map<std::string, std::string> row;
    for (size_t k = 0; k < from.size(); ++k) row[from[k]] = values[k];
    for (const auto& [column, value] : made_up) row[column] = value;
    std::vector<std::string> fields;
    for (const std::string& c : to) fields.push_back(row.at(c));
    out += absl::StrJoin(fields, ",") + "\n";
  }
  return out;
}

bool Has(const std::string& header, const std::string& column) {
  return ("," + header + ",").find("," + column + ",") != std::string::npos;
}

TEST_CASE("a kept run's CSV files, the newest version of each, parse to their values",
          "[bench][csv]") {
  auto iters = ParseIterCsv(Read(std::string(kRun) + ".iters.csv"), "robot3.iters.csv");
  REQUIRE(iters.ok());
  REQUIRE(iters->size() == 18);
  const IterRecord& first = iters->front();
  CHECK(first.unix_s == 1795929621.689432);
  CHECK(first.iteration == 1);
  CHECK(first.stall_s == 0.174407);
  CHECK(first.stalled);
  CHECK(first.compute_s == 0.547897);
  CHECK(first.transmit_s == 1.512031);
  CHECK(first.window_s == 0);
  CHECK(first.rows_up == 1568);
  CHECK(first.bytes_up == 3194164);
  CHECK(first.payload_up == 3186088);
  CHECK(first.rows_down == 0);
  CHECK(first.bytes_down == 0);
  CHECK_FALSE(first.disconnected);
  CHECK(first.detached_s == 0);
  CHECK_FALSE(first.local_step);
  CHECK_FALSE(first.no_iteration);
  CHECK(first.real_compute_s == 0.154178);
  CHECK((*iters)[1].bytes_down == 3192206);
  CHECK((*iters)[1].payload_down == 3186088);
  CHECK(iters->back().no_iteration);
  CHECK(iters->back().stall_s == 0.027975);
  CHECK_FALSE(iters->back().stalled);

  auto pushes = ParsePushCsv(Read(std::string(kRun) + ".pushes.csv"), "robot3.pushes.csv");
  REQUIRE(pushes.ok());
  REQUIRE(pushes->size() == 16);
  const PushRecord& push = pushes->front();
  CHECK(push.start_unix == 1795929620.177402);
  CHECK(push.iteration == 1);
  CHECK(push.window_s == 0);
  CHECK(push.bytes == 3194164);
  CHECK(push.payload == 3186088);
  CHECK(push.busy_s == 1.549627);
  CHECK(push.overshoot_s == 0);
  CHECK_FALSE(push.disconnected);
  CHECK(push.late_bytes == 0);
  CHECK(push.ack_s == 1.569097);
  CHECK(push.acked_bytes == 3194164);
  CHECK(pushes->back().iteration == 16);

  auto acc = ParseAccCsv(Read(std::string(kRun) + ".acc.csv"), "robot3.acc.csv");
  REQUIRE(acc.ok());
  REQUIRE(acc->size() == 8);
  CHECK(acc->front().unix_s == 1795929619.450570);
  CHECK(acc->front().accuracy == 0.1290);
  CHECK(acc->back().elapsed_s == 61.730);
  CHECK(acc->back().iteration == 17);
  CHECK(acc->back().accuracy == 0.6655);
}

TEST_CASE("every older version of the iterations file puts each value in its place",
          "[bench][csv]") {
  const std::string text = Read(std::string(kRun) + ".iters.csv");
  auto now = ParseIterCsv(text, "now");
  REQUIRE(now.ok());
  // Columns the newest version no longer has get values of their own.
  const std::map<std::string, std::string> made_up = {{"overshoot_s", "0.25"}, {"busy_s", "0.125"}};
  for (const std::string header : {
           // While EndStep waited for its push's acknowledgements.
           "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
           "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s",
           // Team patience.
           "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,overshoot_s,rows_up,"
           "bytes_up,payload_up,rows_down,bytes_down,payload_down,disconnected,busy_s,detached_s,"
           "kind",
           // Pushes apart (ID.pushes.csv).
           "unix_s,iteration,stall_s,stalled,compute_s,transmit_s,window_s,rows_up,bytes_up,"
           "payload_up,rows_down,bytes_down,payload_down,disconnected,detached_s,kind",
       }) {
    INFO(header);
    auto old = ParseIterCsv(Rewrite(text, header, made_up), "old");
    REQUIRE(old.ok());
    REQUIRE(old->size() == now->size());
    const bool kind = Has(header, "kind");
    for (size_t i = 0; i < old->size(); ++i) {
      const IterRecord& o = (*old)[i];
      const IterRecord& n = (*now)[i];
      CHECK(o.unix_s == n.unix_s);
      CHECK(o.iteration == n.iteration);
      CHECK(o.stall_s == n.stall_s);
      CHECK(o.stalled == n.stalled);
      CHECK(o.compute_s == n.compute_s);
      CHECK(o.transmit_s == n.transmit_s);
      CHECK(o.window_s == n.window_s);
      CHECK(o.rows_up == n.rows_up);
      CHECK(o.bytes_up == n.bytes_up);
      CHECK(o.payload_up == n.payload_up);
      CHECK(o.rows_down == n.rows_down);
      CHECK(o.bytes_down == n.bytes_down);
      CHECK(o.payload_down == n.payload_down);
      CHECK(o.disconnected == n.disconnected);
      CHECK(o.overshoot_s == (Has(header, "overshoot_s") ? 0.25 : 0));
      CHECK(o.busy_s == (Has(header, "busy_s") ? 0.125 : 0));
      CHECK(o.detached_s == (kind ? n.detached_s : 0));
      CHECK(o.local_step == (kind && n.local_step));
      CHECK(o.no_iteration == (kind && n.no_iteration));
      // Before --compute_time every second of compute was real.
      CHECK(o.real_compute_s == o.compute_s);
    }
  }
}

TEST_CASE("every older version of the pushes file puts each value in its place", "[bench][csv]") {
  const std::string text = Read(std::string(kRun) + ".pushes.csv");
  auto now = ParsePushCsv(text, "now");
  REQUIRE(now.ok());
  for (const std::string header : {
           "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected",
           // PushStats::late_bytes.
           "start_unix_s,iteration,window_s,bytes,payload,busy_s,overshoot_s,disconnected,"
           "late_bytes",
       }) {
    INFO(header);
    // This robot sent no late rows: a value of its own shows where the column lands.
    auto old = ParsePushCsv(Rewrite(text, header, {{"late_bytes", "777"}}), "old");
    REQUIRE(old.ok());
    REQUIRE(old->size() == now->size());
    for (size_t i = 0; i < old->size(); ++i) {
      const PushRecord& o = (*old)[i];
      const PushRecord& n = (*now)[i];
      CHECK(o.start_unix == n.start_unix);
      CHECK(o.iteration == n.iteration);
      CHECK(o.window_s == n.window_s);
      CHECK(o.bytes == n.bytes);
      CHECK(o.payload == n.payload);
      CHECK(o.busy_s == n.busy_s);
      CHECK(o.overshoot_s == n.overshoot_s);
      CHECK(o.disconnected == n.disconnected);
      CHECK(o.late_bytes == (Has(header, "late_bytes") ? 777 : 0));
      // Before PushStats::ack_seconds: unknown.
      CHECK(o.ack_s == -1);
      CHECK(o.acked_bytes == 0);
    }
  }
}

}  // namespace
}  // namespace rog
