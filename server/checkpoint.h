// rogd's checkpoint files: written atomically (temporary file, fsync, rename,
// fsync of the folder) with a checksum, and verified when read.
//
// File layout: "ROGCKPT1", the payload length (8 bytes, little-endian), the
// payload (a serialized rog.v1.Checkpoint, proto/checkpoint.proto) and the
// payload's FNV-1a 64 (8 bytes, little-endian).
#ifndef ROG_SERVER_CHECKPOINT_H_
#define ROG_SERVER_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint.pb.h"
#include "proto/convert.h"

namespace rog {

// Writes `checkpoint` to `path`, replacing any file there only once the new
// one is complete on disk. Returns the file's size in bytes.
absl::StatusOr<uint64_t> WriteCheckpoint(const std::string& path, const pb::Checkpoint& checkpoint);

// Reads and verifies `path`. Errors say which file and what is wrong with it
// (NotFound, or DataLoss for a truncated, corrupt or foreign file).
absl::StatusOr<pb::Checkpoint> ReadCheckpoint(const std::string& path);

}  // namespace rog

#endif  // ROG_SERVER_CHECKPOINT_H_
