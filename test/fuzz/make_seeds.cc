// Writes the fuzzers' seed corpus from real encodings, one folder per
// target under the folder given (test/fuzz/corpus):
//   bazel run //test/fuzz:make_seeds -- $PWD/test/fuzz/corpus
// Each seed is in its fuzzer's input format (see the *_fuzzer.cc headers).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint.pb.h"
#include "common/codec.h"
#include "common/layout.h"
#include "common/row_index.h"
#include "proto/convert.h"
#include "rog.pb.h"

namespace rog {
namespace {

std::string root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = root + "/" + target;
  ::mkdir(dir.c_str(), 0755);
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<float> Values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((static_cast<int>(i) * 7 + seed) % 13 - 6) * 0.25f;
  return v;
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void CodecSeeds() {
  for (int c = 0; c < 4; ++c) {
    const Codec codec = static_cast<Codec>(c);
    for (size_t numel : {0, 1, 7, 8, 13, 300}) {
      std::string s;
      s.push_back(static_cast<char>(c));
      s.push_back(static_cast<char>(numel & 0xff));
      s.push_back(static_cast<char>(numel >> 8));
      Encode(codec, Values(numel, c), &s);
      Write("codec", std::string(CodecName(codec)) + "_" + std::to_string(numel), s);
    }
  }
}

void RowIndexSeeds() {
  const std::vector<std::pair<uint32_t, std::vector<RowId>>> cases = {
      {10, {0, 1, 5, 9}}, {300, {3}}, {1u << 24, {0, 100000, (1u << 24) - 1}}, {4, {}}};
  int k = 0;
  for (const auto& c : cases) {
    std::string s;
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(c.first >> (8 * i)));
    for (uint32_t d : EncodeRowIds(c.second)) {
      for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(d >> (8 * i)));
    }
    Write("row_index", "ids_" + std::to_string(k++), s);
  }
}

// The fuzzer's layouts (row_batch_fuzzer.cc).
Layout BatchLayout(int which) {
  if (which == 0) return *Layout::Create({{"w", {4, 300}}, {"b", {7}}});
  return *Layout::Create({{"a", {3, 5}}, {"s", {}}, {"c", {2, 1, 3}}}, 1);
}

void RowBatchSeeds() {
  for (int which = 0; which < 2; ++which) {
    const Layout layout = BatchLayout(which);
    for (int c = 0; c < 4; ++c) {
      for (bool values : {false, true}) {
        if (values && c != 0) continue;
        std::vector<RowId> rows;
        for (RowId r = 0; r < layout.num_rows(); r += 2) rows.push_back(r);
        pb::WorkerMessage m;
        pb::RowBatch* b = m.mutable_batch();
        b->set_seq(1);
        b->set_iteration(3);
        b->set_codec(static_cast<pb::Codec>(c));
        b->set_kind(values ? pb::BATCH_KIND_VALUES : pb::BATCH_KIND_UPDATE);
        for (uint32_t d : EncodeRowIds(rows)) b->add_row_delta(d);
        std::string payload;
        for (RowId r : rows) {
          b->add_count(values ? 0 : 1);
          b->add_version_lag(0);
          Encode(static_cast<Codec>(c), Values(layout.row(r).numel, static_cast<int>(r)), &payload);
        }
        b->set_payload(payload);
        // Options byte: bit 0 layout, bit 1 accepts values, the rest seq - 1.
        std::string s(1, static_cast<char>(which | (values ? 2 : 0)));
        s += m.SerializeAsString();
        Write("row_batch",
              "batch_l" + std::to_string(which) + "_" +
                  std::string(CodecName(static_cast<Codec>(c))) + (values ? "_values" : "_update"),
              s);
      }
    }
    pb::WorkerMessage h;
    h.mutable_hello()->set_worker_id("robot1");
    *h.mutable_hello()->mutable_layout() = LayoutToProto(layout);
    h.mutable_hello()->set_layout_fingerprint(layout.fingerprint());
    Write("row_batch", "hello_l" + std::to_string(which),
          std::string(1, static_cast<char>(which)) + h.SerializeAsString());
  }
}

void CheckpointSeeds() {
  const Layout layout = BatchLayout(1);
  const size_t rows = layout.num_rows();
  for (size_t n : {1, 2}) {
    pb::Checkpoint c;
    c.set_unix_time(1.7e9);
    *c.mutable_layout() = LayoutToProto(layout);
    c.set_sync(pb::SYNC_ROG);
    c.set_staleness(4);
    c.set_codec(pb::CODEC_FP32);
    c.set_global(FloatsToBytes(Values(layout.total_numel(), 1)));
    c.set_workers(static_cast<uint32_t>(n));
    for (size_t i = 0; i < rows * n; ++i) c.add_versions(3);
    for (size_t w = 0; w < n; ++w) {
      pb::CheckpointWorker* cw = c.add_worker();
      cw->set_worker_id("robot" + std::to_string(w + 1));
      cw->set_resume_token(0x1234 + w);
      cw->set_index(static_cast<uint32_t>(w));
      cw->set_clock(3);
      cw->set_last_applied_uplink_seq(5);
      cw->set_evicted(w == 1);
      if (w != 1) cw->set_pending(FloatsToBytes(Values(layout.total_numel(), 2)));
      for (size_t i = 0; i < rows * n; ++i) cw->add_copy_versions(2);
      cw->set_sdk_version("0.1.0");
    }
    c.set_team_ready(true);
    const std::string payload = c.SerializeAsString();
    // Mode 1: the fuzzer adds header and checksum (version 2; mode 3:
    // version 1).
    Write("checkpoint", "payload_" + std::to_string(n) + "_workers",
          std::string(1, '\1') + payload);
    Write("checkpoint", "payload_v1_" + std::to_string(n) + "_workers",
          std::string(1, '\3') + payload);
    // Mode 0: the whole file as WriteCheckpoint lays it out (version 2:
    // the checkpoint without its workers, then one record per worker)...
    const auto record = [](std::string* out, const std::string& bytes) {
      PutU64(out, bytes.size());
      *out += bytes;
      PutU64(out, Fnv1a64(bytes));
    };
    pb::Checkpoint header = c;
    header.clear_worker();
    std::string file(1, '\0');
    file += "ROGCKPT2";
    PutU64(&file, 1 + static_cast<uint64_t>(c.worker_size()));
    record(&file, header.SerializeAsString());
    for (const pb::CheckpointWorker& cw : c.worker()) record(&file, cw.SerializeAsString());
    Write("checkpoint", "file_" + std::to_string(n) + "_workers", file);
    // ... and as rogd wrote it before 2026-12-04 (version 1).
    std::string v1(1, '\0');
    v1 += "ROGCKPT1";
    record(&v1, payload);
    Write("checkpoint", "file_v1_" + std::to_string(n) + "_workers", v1);
  }
  // A team size the records do not back: the restore once sized its
  // worker table from it (32 GiB) before any check.
  pb::Checkpoint huge;
  *huge.mutable_layout() = LayoutToProto(layout);
  huge.set_global(FloatsToBytes(Values(layout.total_numel(), 1)));
  huge.set_workers(0xfffffffeu);
  Write("checkpoint", "payload_huge_team", std::string(1, '\1') + huge.SerializeAsString());
}

}  // namespace
}  // namespace rog

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
    return 2;
  }
  rog::root = argv[1];
  ::mkdir(rog::root.c_str(), 0755);
  rog::CodecSeeds();
  rog::RowIndexSeeds();
  rog::RowBatchSeeds();
  rog::CheckpointSeeds();
  return 0;
}
