// rogd's checkpoint files (server/checkpoint.h): the round trip, the atomic
// replace, and the refusal of every damaged or foreign file with an error
// naming it.
#include "server/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/layout.h"
#include "proto/convert.h"
#include "server/engine.h"

namespace rog {
namespace {

// A fresh, empty directory for each test case, under $TEST_TMPDIR (or a
// new folder under /tmp when run outside `bazel test`).
std::string FreshDir(const std::string& name) {
  static const std::string base = [] {
    const char* t = std::getenv("TEST_TMPDIR");
    if (t != nullptr) return std::string(t);
    char tmpl[] = "/tmp/rog_checkpoint_test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    return std::string(tmpl);
  }();
  const std::string dir = base + "/" + name;
  const std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return dir;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE(out);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out);
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  const std::string cmd = "ls -A '" + dir + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char line[4096];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    names.push_back(s);
  }
  ::pclose(p);
  return names;
}

bool MessageHas(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

uint64_t LittleEndianU64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

void PutLittleEndianU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// A version 2 record: length, payload, FNV-1a 64.
std::string Record(const std::string& payload) {
  std::string r;
  PutLittleEndianU64(&r, payload.size());
  r += payload;
  PutLittleEndianU64(&r, Fnv1a64(payload));
  return r;
}

// A version 1 file (rogd before 2026-12-04): magic, length, payload, FNV-1a 64.
std::string Version1File(const std::string& payload) {
  std::string file = "ROGCKPT1";
  PutLittleEndianU64(&file, payload.size());
  file += payload;
  PutLittleEndianU64(&file, Fnv1a64(payload));
  return file;
}

// A checkpoint with every field set, two workers (one evicted).
pb::Checkpoint Sample(float scale = 1.0f) {
  auto layout = Layout::Create({{"w", {2, 3}}, {"b", {2}}}, 4);
  REQUIRE(layout.ok());
  pb::Checkpoint c;
  c.set_unix_time(1700000000.5);
  *c.mutable_layout() = LayoutToProto(*layout);
  c.set_sync(pb::SYNC_ROG);
  c.set_staleness(3);
  c.set_codec(pb::CODEC_INT8);
  std::vector<float> global = {1, 2, 3, 4, 5, 6, 7, 8};
  for (float& g : global) g *= scale;
  c.set_global(FloatsToBytes(global));
  c.set_workers(2);
  for (uint64_t v : {5, 4, 6, 4, 5, 7}) c.add_versions(v);
  c.set_team_ready(true);
  pb::CheckpointWorker* a = c.add_worker();
  a->set_worker_id("worker-a");
  a->set_resume_token(0x0123456789abcdefULL);
  a->set_index(0);
  a->set_clock(6);
  a->set_last_applied_uplink_seq(42);
  a->set_pending(FloatsToBytes(std::vector<float>{0, 0, 0, 1, 1, 1, 2, 2}));
  for (uint64_t v : {5, 4, 6, 4, 5, 7}) a->add_copy_versions(v);
  a->set_sdk_version("0.1.0");
  pb::CheckpointWorker* b = c.add_worker();
  b->set_worker_id("worker-b");
  b->set_resume_token(7);
  b->set_index(1);
  b->set_clock(4);
  b->set_evicted(true);
  for (uint64_t v : {5, 4, 6, 4, 5, 7}) b->add_copy_versions(v);
  return c;
}

// Writes Sample() to dir/ckpt and returns the path.
std::string WriteSample(const std::string& dir) {
  const std::string path = dir + "/ckpt";
  auto written = WriteCheckpoint(path, Sample());
  REQUIRE(written.ok());
  return path;
}

void CheckRefused(const std::string& path, absl::StatusCode code, const std::string& why) {
  auto read = ReadCheckpoint(path);
  REQUIRE_FALSE(read.ok());
  INFO(read.status().ToString());
  CHECK(read.status().code() == code);
  CHECK(MessageHas(read.status(), path));
  CHECK(MessageHas(read.status(), why));
}

TEST_CASE("a checkpoint reads back exactly as written", "[checkpoint]") {
  const std::string dir = FreshDir("round_trip");
  const std::string path = dir + "/ckpt";
  const pb::Checkpoint c = Sample();
  auto written = WriteCheckpoint(path, c);
  REQUIRE(written.ok());

  // The documented layout: magic, the record count, then the checkpoint
  // without its workers and each worker, each record framed by its length
  // and FNV-1a.
  const std::string file = ReadBytes(path);
  const std::string payload = c.SerializeAsString();
  pb::Checkpoint header = c;
  header.clear_worker();
  std::string expected = "ROGCKPT2";
  PutLittleEndianU64(&expected, 3);
  expected += Record(header.SerializeAsString()) + Record(c.worker(0).SerializeAsString()) +
              Record(c.worker(1).SerializeAsString());
  CHECK(*written == file.size());
  CHECK(file == expected);
  // Only the owner may read a model.
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  auto read = ReadCheckpoint(path);
  REQUIRE(read.ok());
  CHECK(read->SerializeAsString() == payload);
  CHECK(read->unix_time() == 1700000000.5);
  CHECK(read->sync() == pb::SYNC_ROG);
  CHECK(read->staleness() == 3);
  CHECK(read->codec() == pb::CODEC_INT8);
  CHECK(read->workers() == 2);
  CHECK(read->versions_size() == 6);
  CHECK(read->versions(5) == 7);
  CHECK(read->team_ready());
  auto layout = LayoutFromProto(read->layout());
  REQUIRE(layout.ok());
  CHECK(layout->num_rows() == 3);
  std::vector<float> global;
  REQUIRE(BytesToFloats(read->global(), &global));
  CHECK(global == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  REQUIRE(read->worker_size() == 2);
  CHECK(read->worker(0).worker_id() == "worker-a");
  CHECK(read->worker(0).resume_token() == 0x0123456789abcdefULL);
  CHECK(read->worker(0).last_applied_uplink_seq() == 42);
  CHECK(read->worker(0).sdk_version() == "0.1.0");
  CHECK(read->worker(1).evicted());
  CHECK(read->worker(1).pending().empty());
  CHECK(read->worker(1).copy_versions_size() == 6);

  CHECK(Listing(dir) == std::vector<std::string>{"ckpt"});
}

TEST_CASE("an empty checkpoint message round-trips", "[checkpoint]") {
  const std::string dir = FreshDir("empty");
  const std::string path = dir + "/ckpt";
  auto written = WriteCheckpoint(path, pb::Checkpoint());
  REQUIRE(written.ok());
  CHECK(*written == 32);  // magic, count, one empty record
  auto read = ReadCheckpoint(path);
  REQUIRE(read.ok());
  CHECK(read->SerializeAsString().empty());
}

TEST_CASE("a relative path is written and read in the working directory", "[checkpoint]") {
  const std::string dir = FreshDir("relative");
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(::chdir(dir.c_str()) == 0);
  auto written = WriteCheckpoint("ckpt", Sample());
  auto read = ReadCheckpoint("ckpt");
  REQUIRE(::chdir(cwd) == 0);
  REQUIRE(written.ok());
  REQUIRE(read.ok());
  CHECK(read->SerializeAsString() == Sample().SerializeAsString());
  CHECK(Listing(dir) == std::vector<std::string>{"ckpt"});
}

TEST_CASE("a second write replaces the first atomically and leaves no temporary", "[checkpoint]") {
  const std::string dir = FreshDir("replace");
  const std::string path = dir + "/ckpt";
  REQUIRE(WriteCheckpoint(path, Sample(1.0f)).ok());
  struct stat before;
  REQUIRE(::stat(path.c_str(), &before) == 0);

  pb::Checkpoint second = Sample(10.0f);
  second.set_staleness(9);
  second.mutable_worker()->RemoveLast();
  auto written = WriteCheckpoint(path, second);
  REQUIRE(written.ok());
  CHECK(*written == ReadBytes(path).size());

  auto read = ReadCheckpoint(path);
  REQUIRE(read.ok());
  CHECK(read->staleness() == 9);
  CHECK(read->worker_size() == 1);
  std::vector<float> global;
  REQUIRE(BytesToFloats(read->global(), &global));
  CHECK(global == std::vector<float>{10, 20, 30, 40, 50, 60, 70, 80});
  CHECK(Listing(dir) == std::vector<std::string>{"ckpt"});
  // Replaced by rename: a new file, not the old one rewritten in place (a
  // reader holding the old file keeps a complete checkpoint).
  struct stat after;
  REQUIRE(::stat(path.c_str(), &after) == 0);
  CHECK(after.st_ino != before.st_ino);
}

TEST_CASE("a temporary left by a crashed write is overwritten and removed", "[checkpoint]") {
  const std::string dir = FreshDir("stale_tmp");
  const std::string path = dir + "/ckpt";
  WriteBytes(path + ".tmp", std::string(100000, 'x'));
  REQUIRE(WriteCheckpoint(path, Sample()).ok());
  CHECK(Listing(dir) == std::vector<std::string>{"ckpt"});
  auto read = ReadCheckpoint(path);
  REQUIRE(read.ok());
  CHECK(read->SerializeAsString() == Sample().SerializeAsString());
}

TEST_CASE("a write that fails keeps the previous checkpoint", "[checkpoint]") {
  const std::string dir = FreshDir("failed_write");
  const std::string path = WriteSample(dir);
  const std::string good = ReadBytes(path);
  // The temporary's name is taken by a directory: the write cannot start.
  REQUIRE(::mkdir((path + ".tmp").c_str(), 0700) == 0);
  auto written = WriteCheckpoint(path, Sample(10.0f));
  REQUIRE_FALSE(written.ok());
  INFO(written.status().ToString());
  CHECK(written.status().code() == absl::StatusCode::kInternal);
  CHECK(MessageHas(written.status(), path));
  CHECK(ReadBytes(path) == good);
  CHECK(ReadCheckpoint(path).ok());
}

TEST_CASE("writing over a directory fails and leaves no temporary", "[checkpoint]") {
  const std::string dir = FreshDir("onto_dir");
  const std::string path = dir + "/ckpt";
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  auto written = WriteCheckpoint(path, Sample());
  REQUIRE_FALSE(written.ok());
  INFO(written.status().ToString());
  CHECK(written.status().code() == absl::StatusCode::kInternal);
  CHECK(MessageHas(written.status(), path));
  CHECK(Listing(dir) == std::vector<std::string>{"ckpt"});
}

TEST_CASE("writing into a folder that does not exist fails naming the file", "[checkpoint]") {
  const std::string dir = FreshDir("no_dir");
  for (const std::string& path : {dir + "/missing/ckpt", dir + "/a/b/c/ckpt"}) {
    CAPTURE(path);
    auto written = WriteCheckpoint(path, Sample());
    REQUIRE_FALSE(written.ok());
    INFO(written.status().ToString());
    CHECK(written.status().code() == absl::StatusCode::kInternal);
    CHECK(MessageHas(written.status(), path));
    CHECK(MessageHas(written.status(), "No such file or directory"));
  }
  // A folder that is a regular file.
  WriteBytes(dir + "/file", "x");
  const std::string path = dir + "/file/ckpt";
  auto written = WriteCheckpoint(path, Sample());
  REQUIRE_FALSE(written.ok());
  CHECK(written.status().code() == absl::StatusCode::kInternal);
  CHECK(MessageHas(written.status(), path));
  CHECK(MessageHas(written.status(), "Not a directory"));
  CHECK(Listing(dir) == std::vector<std::string>{"file"});
}

TEST_CASE("writing into a folder that is not writable fails naming the file", "[checkpoint]") {
  const std::string dir = FreshDir("read_only");
  const std::string ro = dir + "/ro";
  REQUIRE(::mkdir(ro.c_str(), 0500) == 0);
  std::string path = ro + "/ckpt";
  // root (CAP_DAC_OVERRIDE) writes through the mode bits: then use sysfs,
  // which refuses new files to everyone.
  const bool mode_bits_hold = ::access(ro.c_str(), W_OK) != 0;
  if (!mode_bits_hold) {
    WARN("mode bits do not stop this user (root?): writing under /sys instead");
    path = "/sys/rog_checkpoint_test_ckpt";
    REQUIRE_FALSE(Exists(path));
  }
  auto written = WriteCheckpoint(path, Sample());
  REQUIRE_FALSE(written.ok());
  INFO(written.status().ToString());
  CHECK(written.status().code() == absl::StatusCode::kInternal);
  CHECK(MessageHas(written.status(), path));
  CHECK_FALSE(Exists(path));
  CHECK_FALSE(Exists(path + ".tmp"));
  ::chmod(ro.c_str(), 0700);
}

TEST_CASE("a missing checkpoint is NotFound naming the file", "[checkpoint]") {
  const std::string dir = FreshDir("missing");
  const std::string path = dir + "/nothing-here";
  CheckRefused(path, absl::StatusCode::kNotFound, "No such file or directory");
  CheckRefused(dir + "/no/such/folder/ckpt", absl::StatusCode::kNotFound, "cannot open");
}

TEST_CASE("a foreign file is refused: wrong magic", "[checkpoint]") {
  const std::string dir = FreshDir("magic");
  const std::string path = WriteSample(dir);
  std::string file = ReadBytes(path);
  file[7] = '9';  // "ROGCKPT9"
  WriteBytes(path, file);
  CheckRefused(path, absl::StatusCode::kDataLoss, "bad magic");

  WriteBytes(path, "{\"not\": \"a checkpoint at all, but long enough\"}");
  CheckRefused(path, absl::StatusCode::kDataLoss, "not a rogd checkpoint");
  WriteBytes(path, "");
  CheckRefused(path, absl::StatusCode::kDataLoss, "too short");
  WriteBytes(path, "ROGCKPT1");
  CheckRefused(path, absl::StatusCode::kDataLoss, "too short");
  WriteBytes(path, "ROGCKPT2");
  CheckRefused(path, absl::StatusCode::kDataLoss, "too short");
}

TEST_CASE("a truncated file is refused", "[checkpoint]") {
  const std::string dir = FreshDir("truncated");
  const std::string path = WriteSample(dir);
  const std::string file = ReadBytes(path);
  REQUIRE(file.size() > 100);
  // Cut anywhere from the last checksum back to the record count.
  for (size_t keep : {file.size() - 1, file.size() - 8, file.size() - 9, size_t{100}, size_t{40},
                      size_t{33}, size_t{32}, size_t{24}}) {
    CAPTURE(keep);
    WriteBytes(path, file.substr(0, keep));
    auto read = ReadCheckpoint(path);
    REQUIRE_FALSE(read.ok());
    INFO(read.status().ToString());
    CHECK(read.status().code() == absl::StatusCode::kDataLoss);
    CHECK(MessageHas(read.status(), path));
    // A cut record says which; a cut that leaves fewer bytes than the
    // records need (16 each) is refused on the count.
    CHECK((MessageHas(read.status(), "truncated: record") ||
           MessageHas(read.status(), "the header says 3 records")));
  }
  for (size_t keep : {size_t{23}, size_t{16}, size_t{3}}) {
    CAPTURE(keep);
    WriteBytes(path, file.substr(0, keep));
    CheckRefused(path, absl::StatusCode::kDataLoss, "too short");
  }
  // Version 1: the length says how much is missing.
  const std::string v1 = Version1File(Sample().SerializeAsString());
  const size_t payload = v1.size() - 24;
  for (size_t keep : {v1.size() - 1, v1.size() - 9, size_t{24}}) {
    CAPTURE(keep);
    WriteBytes(path, v1.substr(0, keep));
    CheckRefused(path, absl::StatusCode::kDataLoss,
                 "truncated: header says " + std::to_string(payload) + " payload bytes");
  }
}

TEST_CASE("a flipped byte anywhere after the magic is refused", "[checkpoint]") {
  const std::string dir = FreshDir("flipped");
  const std::string path = WriteSample(dir);
  const std::string file = ReadBytes(path);
  // Each record's payload and checksum: a checksum mismatch naming the
  // record; its length, or the count: refused too.
  size_t at = 16;
  for (int record = 1; record <= 3; ++record) {
    const size_t length = LittleEndianU64(file, at);
    for (size_t i = at; i < at + 16 + length; ++i) {
      CAPTURE(record, i);
      std::string bad = file;
      bad[i] = static_cast<char>(bad[i] ^ 0x01);
      WriteBytes(path, bad);
      if (i < at + 8) {
        auto read = ReadCheckpoint(path);
        REQUIRE_FALSE(read.ok());
        CHECK(read.status().code() == absl::StatusCode::kDataLoss);
      } else {
        CheckRefused(path, absl::StatusCode::kDataLoss,
                     "checksum mismatch in record " + std::to_string(record) + " of 3");
      }
    }
    at += 16 + length;
  }
  CHECK(at == file.size());
  for (size_t i = 8; i < 16; ++i) {
    std::string bad = file;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    WriteBytes(path, bad);
    CheckRefused(path, absl::StatusCode::kDataLoss, "unusable");
  }
  // Version 1: a byte of the payload, then one of the length.
  const std::string v1 = Version1File(Sample().SerializeAsString());
  std::string bad = v1;
  bad[20] = static_cast<char>(bad[20] ^ 0x01);
  WriteBytes(path, bad);
  CheckRefused(path, absl::StatusCode::kDataLoss, "checksum mismatch");
  bad = v1;
  bad[8] = static_cast<char>(bad[8] ^ 0x01);
  WriteBytes(path, bad);
  CheckRefused(path, absl::StatusCode::kDataLoss, "payload bytes");
}

TEST_CASE("trailing bytes after the checksum are refused", "[checkpoint]") {
  const std::string dir = FreshDir("trailing");
  const std::string path = WriteSample(dir);
  const std::string file = ReadBytes(path);
  for (const std::string& extra :
       {std::string(1, '\0'), std::string("\n"), std::string(8, 'x'), file}) {
    CAPTURE(extra.size());
    WriteBytes(path, file + extra);
    CheckRefused(path, absl::StatusCode::kDataLoss, "unusable");
  }
  WriteBytes(path, file + std::string(16, 'x'));
  CheckRefused(path, absl::StatusCode::kDataLoss, "trailing bytes: 16 after the last of 3 records");
}

TEST_CASE("a well-framed payload that is not a checkpoint is refused", "[checkpoint]") {
  const std::string dir = FreshDir("unparsable");
  const std::string path = dir + "/ckpt";
  // Correct magic, count, lengths and checksums around bytes that are no
  // protobuf: as the first record, then as a worker's.
  const std::string junk = "\xff\xff\xff\xff";
  std::string file = "ROGCKPT2";
  PutLittleEndianU64(&file, 1);
  WriteBytes(path, file + Record(junk));
  CheckRefused(path, absl::StatusCode::kDataLoss, "record 1 of 1 does not parse");
  file = "ROGCKPT2";
  PutLittleEndianU64(&file, 2);
  WriteBytes(path, file + Record(Sample().SerializeAsString()) + Record(junk));
  CheckRefused(path, absl::StatusCode::kDataLoss, "record 2 of 2 does not parse");
  // A count the file cannot hold is refused before any record is read.
  file = "ROGCKPT2";
  PutLittleEndianU64(&file, uint64_t{1} << 40);
  WriteBytes(path, file + Record(junk));
  CheckRefused(path, absl::StatusCode::kDataLoss,
               "the header says 1099511627776 records, the file has room for 1");
  WriteBytes(path, Version1File(junk));
  CheckRefused(path, absl::StatusCode::kDataLoss, "does not parse");
}

TEST_CASE("a version 1 checkpoint (rogd before 2026-12-04) is still read", "[checkpoint]") {
  const std::string dir = FreshDir("version1");
  const std::string path = dir + "/ckpt";
  const pb::Checkpoint c = Sample();
  WriteBytes(path, Version1File(c.SerializeAsString()));
  auto read = ReadCheckpoint(path);
  REQUIRE(read.ok());
  CHECK(read->SerializeAsString() == c.SerializeAsString());
}

TEST_CASE("a directory is not a checkpoint", "[checkpoint]") {
  const std::string dir = FreshDir("dir_as_file");
  auto read = ReadCheckpoint(dir);
  REQUIRE_FALSE(read.ok());
  INFO(read.status().ToString());
  CHECK(MessageHas(read.status(), dir));
}

// Found by review while writing //test/fuzz:checkpoint_fuzzer (which
// reproduced it): the restore compared versions_size() with
// static_cast<int>(rows * workers), so 1024 rows × 2^22 workers (2^32,
// which is 0 as an int) matched an empty version table and rogd tried to
// allocate 32 GiB for a 4 KiB file and died; and it allocated every
// worker's copy (workers² × rows) before checking any worker record.
TEST_CASE("restoring a checkpoint whose sizes do not match the file allocates nothing",
          "[checkpoint][engine]") {
  const std::string dir = FreshDir("restore_sizes");
  pb::Checkpoint c;
  const auto set_layout = [&c](const Layout& layout) {
    *c.mutable_layout() = LayoutToProto(layout);
    c.set_global(FloatsToBytes(std::vector<float>(layout.total_numel(), 0.0f)));
  };
  SECTION("rows × workers wraps to 0 as an int") {
    const Layout layout = *Layout::Create({{"w", {1024, 1}}});
    REQUIRE(layout.num_rows() == 1024);
    set_layout(layout);
    c.set_workers(1u << 22);
  }
  SECTION("many empty worker records and no copy versions") {
    // One row, 60000 workers: 60000² copy versions (28 GiB) from 180 KB.
    set_layout(*Layout::Create({{"s", {}}}));
    c.set_workers(60000);
    for (int w = 0; w < 60000; ++w) {
      c.add_versions(0);
      c.add_worker()->set_index(static_cast<uint32_t>(w));
    }
  }
  SECTION("a team of 2^32 - 2 workers and no records") {
    // Found by //test/fuzz:checkpoint_fuzzer in CI: the restore sized its
    // worker records (8 bytes each, 32 GiB) from the team size before
    // checking it against the records in the file.
    set_layout(*Layout::Create({{"s", {}}}));
    c.set_workers(0xfffffffeu);
  }
  const std::string path = dir + "/rogd.ckpt";
  EngineOptions options;
  options.init_path = path;
  REQUIRE(WriteCheckpoint(path, c).ok());
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Start(options);
  REQUIRE_FALSE(engine.ok());
  CHECK(engine.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(engine.status().message()), Catch::Contains(path));
}

TEST_CASE("a consistent checkpoint restores through the engine", "[checkpoint][engine]") {
  const std::string dir = FreshDir("restore_ok");
  const Layout layout = *Layout::Create({{"a", {3, 5}}, {"s", {}}}, 1);
  const size_t rows = layout.num_rows();
  pb::Checkpoint c;
  *c.mutable_layout() = LayoutToProto(layout);
  c.set_global(FloatsToBytes(std::vector<float>(layout.total_numel(), 1.0f)));
  c.set_workers(2);
  for (size_t i = 0; i < rows * 2; ++i) c.add_versions(3);
  for (uint32_t w = 0; w < 2; ++w) {
    pb::CheckpointWorker* cw = c.add_worker();
    cw->set_worker_id("robot" + std::to_string(w));
    cw->set_index(w);
    for (size_t i = 0; i < rows * 2; ++i) cw->add_copy_versions(2);
  }
  const std::string path = dir + "/rogd.ckpt";
  REQUIRE(WriteCheckpoint(path, c).ok());
  EngineOptions options;
  options.init_path = path;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Start(options);
  REQUIRE(engine.ok());
  absl::StatusOr<ModelSnapshot> model = (*engine)->Export();
  REQUIRE(model.ok());
  CHECK(model->values == std::vector<float>(layout.total_numel(), 1.0f));
}

}  // namespace
}  // namespace rog
