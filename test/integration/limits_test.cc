// rogd's resource limits against a hostile or broken client (docs/operations.md
// "Resource limits"): real rogd processes on loopback, raw streams that
// break one limit each. Every refusal must name the limit, be counted by
// reason in `rogctl status`, change no model state, and leave rogd serving
// the well-behaved worker.
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "test/testing/raw_stream.h"
#include "test/testing/rogd_harness.h"
#include "test/testing/team.h"

namespace rog {
namespace {

uint64_t Rejected(const std::string& address, const std::string& reason) {
  absl::StatusOr<pb::StatusReply> s = AdminStatus(address);
  if (!s.ok()) return ~0ull;
  const auto it = s->rejected().find(reason);
  return it == s->rejected().end() ? 0 : it->second;
}

// A team of one that trained a few iterations: the model exists.
struct Trained {
  explicit Trained(const std::string& address, const Layout* layout = nullptr)
      : team(address, 2, layout), a(team.Add("a", 0)) {
    team.Train(a, 3, 0);
    team.JoinAll();
  }
  Team team;
  Member& a;
};

// The one legitimate worker still trains and agrees with rogd's model.
void RequireServing(Trained& t, const std::string& address, const std::vector<float>& before) {
  absl::StatusOr<std::vector<float>> after = AdminExport(address);
  REQUIRE(after.ok());
  CHECK(*after == before);
  REQUIRE(t.a.worker->Sync(10).ok());
  CHECK(t.a.worker->Replica() == *after);
  t.team.Train(t.a, 6, 0);
  t.team.JoinAll();
  CHECK(t.a.error == "");
  CHECK(t.a.worker->clock() == 6);
}

// An update of rows 0..n-1 (all of conv.weight's first rows), fp32 zeros.
pb::WorkerMessage RowsBatch(const Layout& layout, int n) {
  pb::WorkerMessage b;
  pb::RowBatch* rb = b.mutable_batch();
  rb->set_seq(1);
  rb->set_kind(pb::BATCH_KIND_UPDATE);
  rb->set_codec(pb::CODEC_FP32);
  size_t bytes = 0;
  for (int k = 0; k < n; ++k) {
    rb->add_row_delta(k == 0 ? 0 : 1);
    rb->add_count(0);  // zeros: a residual, no iteration
    rb->add_version_lag(0);
    bytes += layout.row(k).numel * 4;
  }
  rb->set_payload(std::string(bytes, '\0'));
  return b;
}

TEST_CASE("a batch with too many rows or too many values is refused before decoding", "[limits]") {
  // BigLayout: conv.weight has 512 rows of 256 values (1 KiB each).
  auto rogd = RogdProcess::Start(
      {"--workers=1", "--max_batch_rows=100", "--max_stream_uplink_bytes=65536"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  const Layout big = BigLayout();
  // rog::Worker's batches (16 KiB) stay within both, initial values too.
  Trained t(address, &big);
  REQUIRE(t.a.error == "");
  REQUIRE(t.team.Drain() == "");
  auto before = AdminExport(address);
  REQUIRE(before.ok());

  const RawResult rows = Raw(address, {HelloFor("x", big), RowsBatch(big, 101)});
  INFO(rows.message);
  CHECK(rows.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(rows.message, "a row batch of 101 rows"));
  CHECK(absl::StrContains(rows.message, "--max_batch_rows"));
  CHECK(Rejected(address, "too_many_rows") == 1);

  // 70 rows are within 100, but decode to 70 KiB.
  const RawResult values = Raw(address, {HelloFor("x", big), RowsBatch(big, 70)});
  INFO(values.message);
  CHECK(values.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(values.message, "decodes to 71680 bytes"));
  CHECK(absl::StrContains(values.message, "--max_stream_uplink_bytes"));
  CHECK(Rejected(address, "batch_too_large") == 1);

  // 60 rows are fine.
  const RawResult fine = Raw(address, {HelloFor("x", big), RowsBatch(big, 60)});
  CHECK(fine.code == grpc::StatusCode::OK);
  CHECK(Rejected(address, "too_many_rows") == 1);
  CHECK(Rejected(address, "batch_too_large") == 1);
  // Zeros change no value; x's batch was applied, a's model is the same.
  RequireServing(t, address, *before);
}

TEST_CASE("streams beyond --max_streams are refused; streams without a hello are closed",
          "[limits]") {
  auto rogd = RogdProcess::Start(
      {"--workers=1", "--max_streams=3", "--max_streams_per_worker=2", "--hello_timeout=1s"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  std::vector<std::unique_ptr<OpenStream>> idle;
  for (int k = 0; k < 3; ++k) idle.push_back(std::make_unique<OpenStream>(address));
  // The three idle streams hold every slot until their hello timeout.
  REQUIRE(WaitFor(0.5, [&] { return false; }) == false);
  const double t0 = MonotonicSeconds();
  const RawResult r = Raw(address, {HelloFor("x", TestLayout())});
  INFO(r.message);
  CHECK(r.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(r.message, "at most 3 worker streams"));
  CHECK(absl::StrContains(r.message, "--max_streams"));
  CHECK(Rejected(address, "too_many_streams") == 1);
  // Each idle stream is closed a second after it opened.
  for (auto& s : idle) {
    const RawResult ended = s->Finish();
    INFO(ended.message);
    CHECK(ended.code != grpc::StatusCode::OK);
  }
  CHECK(MonotonicSeconds() - t0 < 5);
  // rogd's hello timer cancels a stream before its handler counts and
  // logs the refusal: the client can see the end first.
  CHECK(WaitFor(10, [&] { return Rejected(address, "no_hello") == 3; }));
  INFO((*rogd)->log());
  CHECK(WaitFor(10, [&] { return absl::StrContains((*rogd)->log(), "no Hello within 1 s"); }));
  // The slots are free again: a worker trains.
  Trained t(address);
  CHECK(t.a.error == "");
  CHECK(t.a.worker->clock() == 3);
  auto status = AdminStatus(address);
  REQUIRE(status.ok());
  CHECK_FALSE(status->rejected().count("bad_hello"));
}

TEST_CASE("streams beyond --max_streams_per_worker for one worker id are refused", "[limits]") {
  auto rogd = RogdProcess::Start({"--workers=1", "--max_streams_per_worker=2"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  const Layout big = BigLayout();
  Trained t(address, &big);
  REQUIRE(t.a.error == "");
  REQUIRE(t.team.Drain() == "");
  auto before = AdminExport(address);
  REQUIRE(before.ok());
  // Two streams of "x" that never read: each hello is welcomed with a
  // resync of the 660 KB model, which cannot be written to a reader that
  // does not read, so the first stays open although the second replaced it.
  OpenStream x1(address, 30, /*small_window=*/true), x2(address, 30, /*small_window=*/true);
  REQUIRE(x1.Write(HelloFor("x", big)));
  REQUIRE(WaitFor(10, [&] {
    return AdminWorkers(address).ok() && AdminWorkers(address)->workers_size() == 2;
  }));
  REQUIRE(x2.Write(HelloFor("x", big)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const RawResult r = Raw(address, {HelloFor("x", big)});
  INFO(r.message);
  CHECK(r.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(r.message, "worker 'x' already has 2 streams open"));
  CHECK(absl::StrContains(r.message, "--max_streams_per_worker"));
  CHECK(Rejected(address, "worker_streams") == 1);
  // Other worker ids are not affected.
  const RawResult y = Raw(address, {HelloFor("y", big)});
  CHECK(y.code == grpc::StatusCode::OK);
  x1.Cancel();
  x2.Cancel();
  RequireServing(t, address, *before);
}

TEST_CASE("a worker that stops reading its stream is cut off at --max_stream_backlog_bytes",
          "[limits]") {
  auto rogd = RogdProcess::Start({"--workers=1", "--max_stream_backlog_bytes=393216"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  Trained t(address);
  REQUIRE(t.a.error == "");
  REQUIRE(t.team.Drain() == "");
  auto before = AdminExport(address);
  REQUIRE(before.ok());
  // Every progress report earns a window directive; this worker never reads
  // them. Without the limit rogd would queue them all.
  // A small receive window, so that what rogd writes is not absorbed by
  // this process's HTTP/2 buffers (BDP probing grows them to megabytes).
  OpenStream flood(address, 90, /*small_window=*/true);
  REQUIRE(flood.Write(HelloFor("flood", TestLayout())));
  pb::WorkerMessage p;
  p.mutable_progress()->set_iteration(0);
  // Writes go on until the stream is gone: how many this process's and the
  // kernel's buffers take depends on the machine (400000 in 2.6 s here), so
  // only the time is bounded.
  int written = 0;
  const double t0 = MonotonicSeconds();
  bool cut = false;
  while (MonotonicSeconds() - t0 < 60) {
    if (!flood.Write(p)) {
      cut = true;
      break;
    }
    ++written;
  }
  const RawResult r = flood.Finish();
  WARN("backlog: the flooding client saw " << r.code << ": " << r.message);
  INFO("wrote " << written << " progress reports in " << MonotonicSeconds() - t0 << " s; "
                << r.message);
  INFO((*rogd)->log());
  CHECK(cut);
  CHECK(MonotonicSeconds() - t0 < 60);
  // The worker could not read the status (it did not read at all): rogd
  // cancels the stream, and says why in its log and its counters.
  CHECK((r.code == grpc::StatusCode::RESOURCE_EXHAUSTED || r.code == grpc::StatusCode::CANCELLED));
  // rogd cancels the stream before its handler counts and logs the
  // refusal, so the client can see the end first: wait for the line (a
  // fresh-clone CI run read the log a moment too early).
  CHECK(WaitFor(10, [&] {
    return absl::StrContains((*rogd)->log(), "the worker stopped reading its stream");
  }));
  CHECK(absl::StrContains((*rogd)->log(), "--max_stream_backlog_bytes is 393216"));
  CHECK(Rejected(address, "downlink_backlog") == 1);
  RequireServing(t, address, *before);
}

TEST_CASE("a new worker id beyond --max_workers is refused; known ids still rejoin", "[limits]") {
  auto rogd = RogdProcess::Start({"--workers=1", "--max_workers=2"});
  REQUIRE(rogd.ok());
  const std::string address = (*rogd)->address();
  Trained t(address);
  REQUIRE(t.a.error == "");
  REQUIRE(t.team.Drain() == "");
  auto before = AdminExport(address);
  REQUIRE(before.ok());
  CHECK(Raw(address, {HelloFor("b", TestLayout())}).code == grpc::StatusCode::OK);
  const RawResult c = Raw(address, {HelloFor("c", TestLayout())});
  INFO(c.message);
  CHECK(c.code == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(c.message, "rogd keeps 2 worker records (--max_workers)"));
  CHECK(Rejected(address, "too_many_workers") == 1);
  auto workers = AdminWorkers(address);
  REQUIRE(workers.ok());
  CHECK(workers->workers_size() == 2);
  CHECK(Raw(address, {HelloFor("b", TestLayout())}).code == grpc::StatusCode::OK);
  CHECK(Rejected(address, "too_many_workers") == 1);
  RequireServing(t, address, *before);
}

}  // namespace
}  // namespace rog
