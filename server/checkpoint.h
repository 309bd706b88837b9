// rogd's checkpoint files: written atomically (temporary file, fsync, rename,
// fsync of the folder) with checksums, and verified when read.
//
// File layout (version 2): "ROGCKPT2", the number of records (8 bytes,
// little-endian), then each record: its payload's length (8 bytes,
// little-endian), the payload and its FNV-1a 64 (8 bytes, little-endian).
// Record 1 is a serialized rog.v1.Checkpoint (proto/checkpoint.proto)
// without its worker records; each further record is one serialized
// rog.v1.CheckpointWorker, in order. A record holds at most one worker's
// pending copy, so a checkpoint is not bound by protobuf's 2 GiB message
// limit (a single record is), and it is written and read one record at a
// time.
//
// Version 1 ("ROGCKPT1", the payload length, one serialized Checkpoint with
// its worker records, its FNV-1a 64), which rogd wrote before 2026-12-04
// and which stopped at 2 GiB, is still read.
#ifndef ROG_SERVER_CHECKPOINT_H_
#define ROG_SERVER_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint.pb.h"
#include "proto/convert.h"

namespace rog {

// Writes `checkpoint` to `path` in version 2, replacing any file there only
// once the new one is complete on disk. Returns the file's size in bytes.
// ResourceExhausted when one record (the model's header or a worker's
// record) would be over 2 GiB.
absl::StatusOr<uint64_t> WriteCheckpoint(const std::string& path, pb::Checkpoint checkpoint);

// Reads and verifies `path`, in either version. Errors say which file and
// what is wrong with it (NotFound, or DataLoss for a truncated, corrupt or
// foreign file). Nothing is allocated from a length the file cannot hold.
absl::StatusOr<pb::Checkpoint> ReadCheckpoint(const std::string& path);

}  // namespace rog

#endif  // ROG_SERVER_CHECKPOINT_H_
