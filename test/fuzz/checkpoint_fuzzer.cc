// Fuzzes rogd's checkpoint loading: rog::ReadCheckpoint (magic, record
// count, lengths, checksums, protobuf parse; both file versions) and then
// the engine's restore of what it read (layout, version storage,
// per-worker records: everything Engine::Start checks before it trusts a
// checkpoint given as --init or found at --checkpoint). Input: 1 byte of
// mode, then either the whole file (even mode) or a payload that gets a
// valid header and checksum (odd mode: version 2 with the payload as its
// one record, or with mode & 2 version 1), so that the fuzzer reaches the
// restore beyond the checksum.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "checkpoint.pb.h"
#include "common/layout.h"
#include "server/checkpoint.h"
#include "server/engine.h"
#include "spdlog/spdlog.h"
#include "test/fuzz/fuzz_input.h"

namespace {

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

const std::string& Path() {
  static const std::string* path = [] {
    const char* dir = std::getenv("TEST_TMPDIR");
    if (dir == nullptr) dir = std::getenv("TMPDIR");
    if (dir == nullptr) dir = "/tmp";
    spdlog::set_level(spdlog::level::off);
    return new std::string(std::string(dir) + "/rog_checkpoint_fuzzer." +
                           std::to_string(::getpid()) + ".ckpt");
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rog::FuzzInput in(data, size);
  const uint8_t mode = in.Byte();
  std::string file = in.Rest();
  if (mode & 1) {
    const std::string payload = std::move(file);
    file = (mode & 2) ? "ROGCKPT1" : "ROGCKPT2";
    if (!(mode & 2)) PutU64(&file, 1);
    PutU64(&file, payload.size());
    file += payload;
    PutU64(&file, rog::Fnv1a64(payload));
  }
  const std::string& path = Path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    if (!out) std::abort();
  }
  const absl::StatusOr<rog::pb::Checkpoint> read = rog::ReadCheckpoint(path);
  if (!read.ok()) {
    if (read.status().code() != absl::StatusCode::kDataLoss) std::abort();
  } else {
    rog::EngineOptions options;
    options.init_path = path;
    absl::StatusOr<std::unique_ptr<rog::Engine>> engine = rog::Engine::Start(options);
    if (!engine.ok() && engine.status().code() != absl::StatusCode::kDataLoss) std::abort();
  }
  std::remove(path.c_str());
  return 0;
}
