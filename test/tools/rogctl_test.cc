// rogctl's tables, JSON and error mapping on hand-made admin replies.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "proto/convert.h"
#include "tools/rogctl/rogctl_lib.h"

namespace rog {
namespace ctl {
namespace {

pb::StatusReply SampleStatus() {
  pb::StatusReply s;
  s.set_sync(pb::SYNC_ROG);
  s.set_staleness(4);
  s.set_mta(0.3176721961719807);
  s.set_codec(pb::CODEC_BF16);
  s.set_has_model(true);
  s.set_tensors(4);
  s.set_rows(82);
  s.set_model_bytes(16516);
  s.set_worker_copy_bytes(2048);
  s.set_state_bytes(52208);
  s.set_state_bytes_per_worker(17846);
  s.set_worker_records(2);
  s.set_max_state_bytes(uint64_t{8} << 30);
  s.set_workers_within_limit(23456);
  s.set_uptime_seconds(3725);
  s.set_workers_connected(2);
  s.set_workers_lagging(1);
  s.set_workers_evicted(0);
  s.set_min_iteration(10);
  s.set_max_iteration(14);
  s.set_last_checkpoint_unix(1000);
  s.set_last_checkpoint_path("/var/lib/rog/\"odd\"\\dir\n/rogd.ckpt");
  s.set_version("0.1.0");
  (*s.mutable_rejected())["row_out_of_range"] = 3;
  (*s.mutable_rejected())["bad_fingerprint"] = 1;
  s.set_team_ready(true);
  s.set_patience(1.5);
  s.set_patience_iterations(4);
  s.set_patience_now(2);
  s.set_detached_local_steps(2);
  s.set_detach_speedup(1.5);
  s.set_workers_detached(1);
  s.set_engine_events(1200);
  s.set_engine_queue_delay_p50(0.000125);
  s.set_engine_queue_delay_p99(0.0042);
  s.set_engine_queue_delay_max(0.25);
  return s;
}

pb::StalenessReply SampleStaleness() {
  pb::StalenessReply r;
  r.set_staleness_bound(2);
  // rogd lists workers in join order; rogctl shows them sorted by id.
  r.add_workers("w1");
  r.add_workers("w0");
  for (uint32_t i = 0; i < 3; ++i) {
    pb::RowStaleness* row = r.add_rows();
    row->set_row(i);
    row->set_tensor("conv.weight");
    row->set_index_in_tensor(i);
    row->add_staleness(i);
    row->add_staleness(0);
    if (i == 2) {
      row->set_oldest_unpushed_worker("w1");
      row->set_oldest_unpushed_age(1);
    }
  }
  pb::RowStaleness* bias = r.add_rows();
  bias->set_row(3);
  bias->set_tensor("conv.bias");
  bias->add_staleness(0);
  bias->add_staleness(12);
  return r;
}

TEST_CASE("tables pad every column to its widest cell", "[rogctl]") {
  Table t({"a", "bbb"}, {false, true});
  t.AddRow({"xxxx", "1"});
  CHECK(t.Render() == "a     bbb\nxxxx    1\n");
  Table headless({"", ""});
  headless.AddRow({"k", "v"});
  CHECK(headless.Render() == "k  v\n");
}

TEST_CASE("JSON strings escape quotes, backslashes and control characters", "[rogctl]") {
  CHECK(JsonString("plain") == "\"plain\"");
  CHECK(JsonString("a\"b\\c\nd\te\x01") == "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  CHECK(JsonNumber(3) == "3");
  CHECK(JsonNumber(0.25) == "0.25");
  CHECK(JsonNumber(1795440000.5) == "1795440000.5");
  CHECK(JsonNumber(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(JsonNumber(std::numeric_limits<double>::infinity()) == "null");
}

TEST_CASE("human units", "[rogctl]") {
  CHECK(HumanBytes(512) == "512 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(3 * 1024.0 * 1024) == "3.0 MiB");
  CHECK(HumanSeconds(4.25) == "4.2s");
  CHECK(HumanSeconds(125) == "2m05s");
  CHECK(HumanSeconds(3725) == "1h02m05s");
  CHECK(SyncName(pb::SYNC_SSP) == "ssp");
  CHECK(CodecName(pb::CODEC_INT8) == "int8");
}

TEST_CASE("status table and JSON carry every field", "[rogctl]") {
  const pb::StatusReply s = SampleStatus();
  const std::string table = StatusTable(s, 1090);
  CHECK(absl::StrContains(table, "rog S=4 MTA=0.32 codec=bf16"));
  CHECK(absl::StrContains(table, "4 tensors, 82 rows, 16.1 KiB"));
  CHECK(absl::StrContains(table, "2.0 KiB"));
  CHECK(absl::StrContains(table, "1h02m05s"));
  CHECK(absl::StrContains(table, "2 connected, 1 lagging, 1 detached, 0 evicted"));
  CHECK(absl::StrContains(table,
                          "2.0s now: the larger of 1.5s and 4x the team's compute time per "
                          "iteration (detached workers train 2 local steps, then pause)"));
  CHECK(absl::StrContains(table, "detach the slowest link when the team would run 1.5x"));
  CHECK(absl::StrContains(table, "min 10, max 14"));
  CHECK(absl::StrContains(table,
                          "51.0 KiB for 2 worker records: the global rows 16.1 KiB, each worker "
                          "17.4 KiB (its pending copy and versions); 8.0 GiB (--max_state_bytes) "
                          "allows 23456 records"));
  CHECK(absl::StrContains(table, "p50 0.125 ms, p99 4.2 ms, max 250 ms over 1200 events"));
  CHECK(absl::StrContains(table, "(1m30s ago)"));
  CHECK(absl::StrContains(table, "bad_fingerprint=1, row_out_of_range=3"));
  CHECK(absl::StrContains(table, "0.1.0"));

  const std::string json = StatusJson(s, 1090);
  CHECK(json ==
        "{\"version\":\"0.1.0\",\"sync\":\"rog\",\"staleness\":4,\"mta\":0.317672196171981,"
        "\"codec\":\"bf16\",\"has_model\":true,\"model\":{\"tensors\":4,\"rows\":82,\"bytes\":"
        "16516},\"worker_copy_bytes\":2048,\"state\":{\"bytes\":52208,\"per_worker_bytes\":"
        "17846,\"worker_records\":2,\"max_bytes\":8589934592,\"workers_within_limit\":23456},"
        "\"uptime_seconds\":3725,\"team_ready\":true,"
        "\"workers\":{\"connected\":2,\"lagging\":1,\"evicted\":0,\"detached\":1},"
        "\"iterations\":{\"min\":10,"
        "\"max\":14},\"last_checkpoint\":{\"unix\":1000,\"path\":\"/var/lib/rog/\\\"odd\\\"\\\\"
        "dir\\n/rogd.ckpt\",\"age_seconds\":90},\"rejected\":{\"bad_fingerprint\":1,"
        "\"row_out_of_range\":3},\"patience_seconds\":1.5,\"patience_iterations\":4,"
        "\"patience_now_seconds\":2,\"detached_local_steps\":2,"
        "\"detach_speedup\":1.5,\"engine_events\":1200,\"engine_queue_delay\":{"
        "\"p50_seconds\":0.000125,\"p99_seconds\":0.0042,\"max_seconds\":0.25}}\n");

  pb::StatusReply empty;
  CHECK(absl::StrContains(StatusTable(empty, 5), "none yet"));
  pb::StatusReply one = s;
  one.set_worker_records(1);
  CHECK(absl::StrContains(StatusTable(one, 1090), "for 1 worker record: the global rows"));
  CHECK(absl::StrContains(StatusTable(empty, 5), "no model yet; at most 0 B (--max_state_bytes)"));
  CHECK(absl::StrContains(StatusJson(empty, 5), "\"last_checkpoint\":null"));
  CHECK(absl::StrContains(StatusJson(empty, 5), "\"has_model\":false"));
}

TEST_CASE("workers are listed sorted by id", "[rogctl]") {
  pb::WorkersReply w;
  w.add_workers()->set_worker_id("robot2");
  w.add_workers()->set_worker_id("robot1");
  const std::string table = WorkersTable(w);
  CHECK(table.find("robot1") < table.find("robot2"));
  const std::string json = WorkersJson(w);
  CHECK(json.find("robot1") < json.find("robot2"));
}

TEST_CASE("workers table and JSON", "[rogctl]") {
  pb::WorkersReply w;
  CHECK(WorkersTable(w) == "no workers have connected yet\n");
  CHECK(WorkersJson(w) == "{\"workers\":[]}\n");
  pb::WorkerInfo* i = w.add_workers();
  i->set_worker_id("robot1");
  i->set_state("connected");
  i->set_iteration(42);
  i->set_lag(3);
  i->set_uplink_goodput(2048);
  i->set_downlink_goodput(1024 * 1024);
  i->set_stall_share(0.125);
  i->set_stalls(7);
  i->set_detached(true);
  i->set_detached_for_seconds(12);
  i->set_detaches(2);
  i->set_reattaches(1);
  i->set_detached_seconds(30);
  i->set_late_rows(9);
  i->set_detach_reason("kept robot2 waiting");
  i->set_stall_peer_compute_seconds(1.5);
  i->set_stall_peer_uplink_seconds(0.25);
  i->set_stall_downlink_seconds(0);
  i->set_stall_peer_asked_seconds(0.5);
  i->set_downlink_rtt(0.25);
  i->set_downlink_in_flight(20480);
  i->set_rows_pushed_per_iteration(4.5);
  i->set_rows_pulled_per_iteration(16);
  i->set_bytes_pushed_per_iteration(100);
  i->set_bytes_pulled_per_iteration(4096);
  i->set_window_overshoot(0.002);
  i->set_last_seen_seconds(1.5);
  i->set_sdk_version("0.1.0");
  i->set_peer("ipv4:127.0.0.1:5555");
  const std::string table = WorkersTable(w);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].size() == lines[1].size());  // aligned
  for (const char* cell : {"robot1", "connected", "detached 12.0s", "42", "2.0 KiB/s", "1.0 MiB/s",
                           "12.5%", "4.5", "16.0", "100 B", "4.0 KiB", "0.002s", "1.5s ago"}) {
    INFO(cell);
    CHECK(absl::StrContains(table, cell));
  }
  CHECK(WorkersJson(w) ==
        "{\"workers\":[{\"id\":\"robot1\",\"state\":\"connected\",\"iteration\":42,\"lag\":3,"
        "\"uplink_goodput_bytes_per_second\":2048,\"downlink_goodput_bytes_per_second\":1048576,"
        "\"stall_share\":0.125,\"stalls\":7,\"rows_pushed_per_iteration\":4.5,"
        "\"rows_pulled_per_iteration\":16,\"bytes_pushed_per_iteration\":100,"
        "\"bytes_pulled_per_iteration\":4096,\"window_overshoot_seconds\":0.002,"
        "\"last_seen_seconds\":1.5,\"sdk_version\":\"0.1.0\",\"peer\":\"ipv4:127.0.0.1:5555\","
        "\"detached\":true,\"detached_for_seconds\":12,\"detaches\":2,\"reattaches\":1,"
        "\"detached_seconds\":30,\"late_rows\":9,\"detach_reason\":\"kept robot2 waiting\","
        "\"stall_peer_compute_seconds\":1.5,\"stall_peer_asked_seconds\":0.5,"
        "\"stall_peer_uplink_seconds\":0.25,\"stall_downlink_seconds\":0,"
        "\"downlink_rtt_seconds\":0.25,"
        "\"downlink_in_flight_bytes\":20480}]}"
        "\n");
}

TEST_CASE("staleness table, heat map and JSON", "[rogctl]") {
  const pb::StalenessReply r = SampleStaleness();
  const std::string table = StalenessTable(r, /*heat_map=*/true, /*color=*/false);
  CHECK(absl::StrContains(table, "staleness bound 2, 4 rows"));
  CHECK(absl::StrContains(table, "tensor       index  w0  w1  oldest unpushed  age\n"));
  CHECK(absl::StrContains(table, "conv.weight      2   0   2  w1                 1\n"));
  CHECK(absl::StrContains(table, "conv.bias        0  12   0  -                  0\n"));
  CHECK(absl::StrContains(table, "conv.weight  .12  (3 rows)\n"));
  CHECK(absl::StrContains(table, "conv.bias    +  (1 row)\n"));
  CHECK(!absl::StrContains(table, "\x1b["));
  CHECK(!absl::StrContains(StalenessTable(r, false, false), "heat map"));

  const std::string colored = HeatMap(r, /*color=*/true);
  CHECK(absl::StrContains(colored, "\x1b[32m.\x1b[0m"));  // fresh: green
  CHECK(absl::StrContains(colored, "\x1b[33m1\x1b[0m"));  // within the bound: yellow
  CHECK(absl::StrContains(colored, "\x1b[31m2\x1b[0m"));  // at the bound: red

  CHECK(StalenessJson(r) ==
        "{\"staleness_bound\":2,\"workers\":[\"w0\",\"w1\"],\"rows\":["
        "{\"row\":0,\"tensor\":\"conv.weight\",\"index\":0,\"staleness\":{\"w0\":0,\"w1\":0},"
        "\"max_staleness\":0,\"oldest_unpushed\":null},"
        "{\"row\":1,\"tensor\":\"conv.weight\",\"index\":1,\"staleness\":{\"w0\":0,\"w1\":1},"
        "\"max_staleness\":1,\"oldest_unpushed\":null},"
        "{\"row\":2,\"tensor\":\"conv.weight\",\"index\":2,\"staleness\":{\"w0\":0,\"w1\":2},"
        "\"max_staleness\":2,\"oldest_unpushed\":{\"worker\":\"w1\",\"age\":1}},"
        "{\"row\":3,\"tensor\":\"conv.bias\",\"index\":0,\"staleness\":{\"w0\":12,\"w1\":0},"
        "\"max_staleness\":12,\"oldest_unpushed\":null}]}\n");
}

TEST_CASE("a long tensor's heat map groups rows into 64 characters", "[rogctl]") {
  pb::StalenessReply r;
  r.add_workers("w0");
  for (uint32_t i = 0; i < 200; ++i) {
    pb::RowStaleness* row = r.add_rows();
    row->set_tensor("big");
    row->add_staleness(i == 199 ? 3 : 0);
  }
  const std::string map = HeatMap(r, false);
  CHECK(map == "big  " + std::string(49, '.') + "3  (200 rows, 4 per character)\n");
}

TEST_CASE("checkpoint output", "[rogctl]") {
  pb::CheckpointReply c;
  c.set_path("/tmp/x/rogd.ckpt");
  c.set_bytes(2048);
  c.set_seconds(0.0125);
  CHECK(CheckpointTable(c) == "checkpoint written: /tmp/x/rogd.ckpt (2.0 KiB in 0.013s)\n");
  CHECK(CheckpointJson(c) == "{\"path\":\"/tmp/x/rogd.ckpt\",\"bytes\":2048,\"seconds\":0.0125}\n");
}

// A layout of two tensors: "fc.weight" [40, 32] (1280 elements: 40 rows)
// and "fc.bias" [40] (one row).
Layout ExportLayout() { return *Layout::Create({{"fc.weight", {40, 32}}, {"fc.bias", {40}}}); }

// Export chunks of `layout` with value i at element i, `rows_per_chunk`
// rows each, as rogd streams them.
std::vector<pb::ExportChunk> ExportChunks(const Layout& layout, uint32_t rows_per_chunk) {
  std::vector<pb::ExportChunk> chunks;
  for (RowId r = 0; r < layout.num_rows(); r += rows_per_chunk) {
    pb::ExportChunk c;
    if (r == 0) *c.mutable_layout() = LayoutToProto(layout);
    const RowId end = std::min<RowId>(r + rows_per_chunk, layout.num_rows());
    c.set_first_row(r);
    c.set_rows(end - r);
    std::vector<float> v;
    for (RowId i = r; i < end; ++i) {
      for (uint32_t j = 0; j < layout.row(i).numel; ++j) v.push_back(layout.row(i).offset + j);
    }
    c.set_values(FloatsToBytes(v));
    chunks.push_back(c);
  }
  return chunks;
}

TEST_CASE("export chunks assemble into the model in row order", "[rogctl]") {
  const Layout layout = ExportLayout();
  ExportAssembler a;
  for (const pb::ExportChunk& c : ExportChunks(layout, 7)) REQUIRE(a.Add(c).ok());
  absl::StatusOr<ExportedModel> m = a.Finish();
  REQUIRE(m.ok());
  CHECK(m->layout.fingerprint() == layout.fingerprint());
  REQUIRE(m->values.size() == 1320);
  for (size_t i = 0; i < m->values.size(); ++i) REQUIRE(m->values[i] == i);
}

TEST_CASE("a malformed export is refused with what was wrong", "[rogctl]") {
  const Layout layout = ExportLayout();
  const std::vector<pb::ExportChunk> good = ExportChunks(layout, 10);  // 5 chunks
  const auto feed = [](std::vector<pb::ExportChunk> chunks) -> absl::Status {
    ExportAssembler a;
    for (const pb::ExportChunk& c : chunks) {
      if (absl::Status s = a.Add(c); !s.ok()) return s;
    }
    return a.Finish().status();
  };
  const auto says = [](const absl::Status& s, absl::string_view what) {
    INFO(s.ToString());
    CHECK(s.code() == absl::StatusCode::kDataLoss);
    CHECK(absl::StrContains(s.message(), what));
  };
  says(feed({}), "without sending the model");
  std::vector<pb::ExportChunk> chunks = good;
  chunks[0].clear_layout();
  says(feed(chunks), "first chunk has no layout");
  chunks = good;
  *chunks[1].mutable_layout() = chunks[0].layout();
  says(feed(chunks), "after the first carries a layout");
  chunks = good;
  chunks.erase(chunks.begin() + 1);
  says(feed(chunks), "starts at row 20 where row 10 was due");
  chunks = good;
  chunks.pop_back();
  says(feed(chunks), "after 40 of 41 rows");
  chunks = good;
  chunks[2].mutable_values()->pop_back();
  says(feed(chunks), "bytes instead of 1280");
  chunks = good;
  chunks[4].set_rows(5);
  says(feed(chunks), "beyond the layout's 41");
  chunks = good;
  chunks[0].mutable_layout()->mutable_tensors(0)->clear_name();
  says(feed(chunks), "layout is invalid");
  CHECK(absl::StrContains(feed(chunks).message(), "rogctl status"));
}

TEST_CASE("tensor names must have a place in a LibTorch archive", "[rogctl]") {
  const auto check = [](std::vector<std::string> names) {
    std::vector<TensorSpec> specs;
    for (const std::string& n : names) specs.push_back({n, {2}});
    return CheckArchiveNames(*Layout::Create(specs));
  };
  CHECK(check({"fc1.weight", "fc1.bias", "block.0.weight", "scale"}).ok());
  absl::Status s = check({"fc.weight", "fc"});
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() ==
        "tensor 'fc' has no place in a LibTorch module archive: 'fc' is also the submodule "
        "holding tensor 'fc.weight'");
  CHECK(!check({"a.b.c", "a.b"}).ok());
  CHECK(check({"a.b.c", "a.bc"}).ok());
  for (const char* bad : {"fc..weight", ".weight", "fc."}) {
    INFO(bad);
    s = check({bad});
    CHECK(absl::StrContains(s.message(), "empty part between dots"));
  }
}

TEST_CASE("export output", "[rogctl]") {
  ExportSummary e;
  e.out = "/tmp/m\"odel.pt";
  e.tensors = 4;
  e.elements = 2410;
  e.bytes = 12345;
  CHECK(ExportTable(e) ==
        "model exported: /tmp/m\"odel.pt (4 tensors, 2410 values, 12.1 KiB)\n"
        "load it with torch::load(module, \"/tmp/m\"odel.pt\") into the module the robots "
        "train\n");
  CHECK(ExportJson(e) ==
        "{\"out\":\"/tmp/m\\\"odel.pt\",\"tensors\":4,\"elements\":2410,\"bytes\":12345,"
        "\"template\":null,\"buffers\":0}\n");
  e.template_path = "robot1.pt";
  e.buffers = 1;
  CHECK(absl::StrContains(ExportTable(e),
                          "\nfrom template robot1.pt: 1 buffer and the module structure, kept as "
                          "they are\n"));
  CHECK(absl::StrContains(ExportJson(e), "\"template\":\"robot1.pt\",\"buffers\":1}"));
}

TEST_CASE("mta matches the paper for S = 2..8", "[rogctl]") {
  auto bounds = ParseStalenessList("2..8");
  REQUIRE(bounds.ok());
  CHECK(*bounds == std::vector<uint32_t>{2, 3, 4, 5, 6, 7, 8});
  const std::string table = MtaTable(*bounds);
  for (const char* v : {"0.50", "0.38", "0.32", "0.28", "0.25", "0.22", "0.20"}) {
    INFO(v);
    CHECK(absl::StrContains(table, v));
  }
  CHECK(absl::StrContains(MtaJson({2, 3}),
                          "{\"mta\":[{\"staleness\":2,\"mta\":0.500000},{\"staleness\":3,\"mta\":"
                          "0.381966}]}"));
  CHECK(*ParseStalenessList("4") == std::vector<uint32_t>{4});
  CHECK(*ParseStalenessList("1,4..5") == std::vector<uint32_t>{1, 4, 5});
  CHECK(absl::StrContains(MtaTable({0, 1}), "1.00"));
  for (const char* bad : {"", "x", "8..2", "2..", "-1", "5000"}) {
    INFO(bad);
    CHECK(!ParseStalenessList(bad).ok());
  }
}

TEST_CASE("gRPC failures map to exit codes and say what to do", "[rogctl]") {
  Failure f = DescribeFailure(14, "connection refused", "127.0.0.1:1", "status");
  CHECK(f.exit_code == kExitUnreachable);
  CHECK(absl::StrContains(f.message, "cannot reach rogd at 127.0.0.1:1: is it running?"));
  CHECK(absl::StrContains(f.message, "--server"));
  f = DescribeFailure(4, "Deadline Exceeded", "h:1", "status");
  CHECK(f.exit_code == kExitUnreachable);
  CHECK(absl::StrContains(f.message, "rogd at h:1 did not answer in time"));
  CHECK(absl::StrContains(f.message, "--timeout"));

  f = DescribeFailure(9, "no model yet: it arrives with the first worker's hello", "h:1",
                      "staleness");
  CHECK(f.exit_code == kExitNotReady);
  CHECK(absl::StrContains(f.message, "start a worker"));

  f = DescribeFailure(9, "rogd runs without --checkpoint_dir; restart it with one", "h:1",
                      "checkpoint");
  CHECK(f.exit_code == kExitNotReady);
  CHECK(f.message == "rogctl checkpoint: rogd runs without --checkpoint_dir; restart it with one");

  f = DescribeFailure(5, "no tensor named 'x'; the model has 2 tensors: a, b", "h:1", "staleness");
  CHECK(f.exit_code == kExitUsage);
  CHECK(absl::StrContains(f.message, "a, b"));
  CHECK(DescribeFailure(3, "bad", "h:1", "staleness").exit_code == kExitUsage);
  CHECK(DescribeFailure(13, "boom", "h:1", "status").exit_code == kExitError);
}

TEST_CASE("auth refusals exit 5 and say which credential to give", "[rogctl]") {
  // UNAUTHENTICATED (16): no token or a wrong one.
  Failure f = DescribeFailure(16, "wrong token; rogctl presents the admin token", "h:1", "status");
  CHECK(f.exit_code == kExitAuth);
  CHECK(f.message ==
        "rogctl status: rogd at h:1 refused the call (UNAUTHENTICATED): wrong token; rogctl "
        "presents the admin token; pass --token_file=FILE with the admin token");
  // PERMISSION_DENIED (7): the worker token on an admin call.
  f = DescribeFailure(7, "the worker token does not allow admin calls", "h:1", "workers");
  CHECK(f.exit_code == kExitAuth);
  CHECK(absl::StrContains(f.message, "(PERMISSION_DENIED): the worker token"));
  // UNAVAILABLE (14) from a handshake rogctl refused: rogd's certificate.
  for (const char* m :
       {"failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7: Ssl "
        "handshake failed: SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify failed",
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7: Peer name "
        "rogd.team is not in peer certificate"}) {
    f = DescribeFailure(14, m, "127.0.0.1:7", "status", /*tls=*/true);
    CHECK(f.exit_code == kExitAuth);
    CHECK(absl::StrContains(f.message, "rogctl does not trust rogd at 127.0.0.1:7"));
    CHECK(absl::StrContains(f.message, "--tls_ca"));
    CHECK(absl::StrContains(f.message, m));
  }
  // A socket closed during TLS: rogd refused rogctl's certificate (TLS 1.3).
  const char* closed =
      "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7: Socket "
      "closed";
  f = DescribeFailure(14, closed, "127.0.0.1:7", "status", /*tls=*/true);
  CHECK(f.exit_code == kExitAuth);
  CHECK(absl::StrContains(f.message, "closed the connection during TLS"));
  CHECK(absl::StrContains(f.message, "--tls_cert"));
  // The same without TLS: rogd may serve TLS; still unreachable for rogctl.
  f = DescribeFailure(14, closed, "127.0.0.1:7", "status", /*tls=*/false);
  CHECK(f.exit_code == kExitUnreachable);
  CHECK(absl::StrContains(f.message, "if it serves TLS (rogd --tls_cert), pass --tls_ca=FILE"));
  // A plain connection refused stays "unreachable", with or without TLS.
  CHECK(DescribeFailure(14, "Connection refused", "h:1", "status", true).exit_code ==
        kExitUnreachable);
}

}  // namespace
}  // namespace ctl
}  // namespace rog
