#include "server/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/layout.h"

namespace rog {
namespace {

constexpr char kMagicV1[] = "ROGCKPT1";
constexpr char kMagicV2[] = "ROGCKPT2";
constexpr size_t kMagicSize = 8;
// The most one record may hold: protobuf serializes and parses at most
// 2 GiB - 1 bytes in one message.
constexpr uint64_t kMaxRecordBytes = static_cast<uint64_t>(std::numeric_limits<int>::max());

using Corrupt = std::function<absl::Status(const std::string&)>;

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

absl::Status WriteAll(int fd, const std::string& path, absl::string_view bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot write", path);
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Writes the version 2 file's magic, record count and records to `fd`:
// `header` (a checkpoint without worker records), then each of `workers`.
// Returns the bytes written.
absl::StatusOr<uint64_t> WriteRecords(
    int fd, const std::string& path, const pb::Checkpoint& header,
    const google::protobuf::RepeatedPtrField<pb::CheckpointWorker>& workers) {
  std::string out(kMagicV2, kMagicSize);
  PutU64(&out, 1 + static_cast<uint64_t>(workers.size()));
  uint64_t total = out.size();
  if (absl::Status s = WriteAll(fd, path, out); !s.ok()) return s;
  // One buffer for every record: it grows to the largest and no further.
  const auto put = [&](const google::protobuf::MessageLite& m,
                       const std::string& what) -> absl::Status {
    const size_t size = m.ByteSizeLong();
    if (size > kMaxRecordBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot checkpoint ", what, ": it takes ", size,
          " bytes, and one record of a checkpoint holds at most 2 GiB (a model over 2 GiB "
          "cannot be checkpointed; use --max_model_bytes to refuse such models)"));
    }
    out.clear();
    PutU64(&out, size);
    out.resize(8 + size);
    if (!m.SerializeToArray(out.data() + 8, static_cast<int>(size))) {
      return absl::InternalError(absl::StrCat("could not serialize ", what));
    }
    PutU64(&out, Fnv1a64(absl::string_view(out).substr(8, size)));
    total += out.size();
    return WriteAll(fd, path, out);
  };
  if (absl::Status s = put(header, "the model"); !s.ok()) return s;
  for (const pb::CheckpointWorker& w : workers) {
    if (absl::Status s = put(w, absl::StrCat("worker '", w.worker_id(), "'")); !s.ok()) return s;
  }
  return total;
}

// A version 1 file, read whole: the payload is one Checkpoint.
absl::StatusOr<pb::Checkpoint> ReadV1(std::istream& in, const Corrupt& corrupt) {
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string file = std::string(kMagicV1, kMagicSize) + buffer.str();
  if (file.size() < kMagicSize + 16) return corrupt("not a rogd checkpoint (too short)");
  const uint64_t length = GetU64(file.data() + kMagicSize);
  if (length != file.size() - kMagicSize - 16) {
    const uint64_t have = file.size() - kMagicSize - 16;
    return corrupt(absl::StrCat(have < length ? "truncated" : "trailing bytes", ": header says ",
                                length, " payload bytes, file has ", have));
  }
  const absl::string_view payload(file.data() + kMagicSize + 8, length);
  if (Fnv1a64(payload) != GetU64(file.data() + kMagicSize + 8 + length)) {
    return corrupt("checksum mismatch (the file was damaged)");
  }
  pb::Checkpoint checkpoint;
  if (length > kMaxRecordBytes ||
      !checkpoint.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return corrupt("payload does not parse");
  }
  return checkpoint;
}

// Reads a version 2 file's records from `in`, which stands after the magic
// with `left` bytes to go.
absl::StatusOr<pb::Checkpoint> ReadV2(std::istream& in, uint64_t left, const Corrupt& corrupt) {
  const auto read_u64 = [&](uint64_t* v) {
    char b[8];
    if (left < 8 || !in.read(b, 8)) return false;
    left -= 8;
    *v = GetU64(b);
    return true;
  };
  uint64_t records = 0;
  if (!read_u64(&records)) return corrupt("truncated: the record count is cut off");
  // A record takes at least 16 bytes: a count the file cannot hold is refused
  // before anything is read for it.
  if (records == 0 || records > left / 16) {
    return corrupt(
        absl::StrCat("the header says ", records, " records, the file has room for ", left / 16));
  }
  pb::Checkpoint checkpoint;
  std::string payload;
  for (uint64_t k = 1; k <= records; ++k) {
    const std::string which = absl::StrCat("record ", k, " of ", records);
    uint64_t length = 0, sum = 0;
    if (!read_u64(&length)) return corrupt(absl::StrCat("truncated: ", which, " is cut off"));
    if (length > left || left - length < 8) {
      return corrupt(absl::StrCat("truncated: ", which, " says ", length,
                                  " payload bytes and a checksum, the file has ", left, " left"));
    }
    if (length > kMaxRecordBytes) return corrupt(absl::StrCat(which, " is over 2 GiB"));
    payload.resize(length);
    if (!in.read(payload.data(), static_cast<std::streamsize>(length))) {
      return corrupt(absl::StrCat(which, " cannot be read"));
    }
    left -= length;
    if (!read_u64(&sum)) return corrupt(absl::StrCat(which, " cannot be read"));
    if (Fnv1a64(payload) != sum) {
      return corrupt(absl::StrCat("checksum mismatch in ", which, " (the file was damaged)"));
    }
    const bool parsed = k == 1 ? checkpoint.ParseFromString(payload)
                               : checkpoint.add_worker()->ParseFromString(payload);
    if (!parsed) return corrupt(absl::StrCat(which, " does not parse"));
  }
  if (left != 0) {
    return corrupt(
        absl::StrCat("trailing bytes: ", left, " after the last of ", records, " records"));
  }
  return checkpoint;
}

}  // namespace

absl::StatusOr<uint64_t> WriteCheckpoint(const std::string& path, pb::Checkpoint checkpoint) {
  // The worker records go one per record; the rest is the first.
  google::protobuf::RepeatedPtrField<pb::CheckpointWorker> workers;
  workers.Swap(checkpoint.mutable_worker());
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", tmp);
  absl::StatusOr<uint64_t> bytes = WriteRecords(fd, tmp, checkpoint, workers);
  if (bytes.ok() && ::fsync(fd) != 0) bytes = Errno("cannot fsync", tmp);
  ::close(fd);
  if (!bytes.ok()) {
    ::unlink(tmp.c_str());
    return bytes.status();
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status s = Errno("cannot rename to", path);
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself is durable only once the folder is synced.
  const int dir = ::open(Dirname(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return bytes;
}

absl::StatusOr<pb::Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open checkpoint ", path, ": ", std::strerror(errno)));
  }
  const Corrupt corrupt = [&](const std::string& why) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " is unusable: ", why,
                     ". Restore a good copy, or move it away to start without it."));
  };
  const std::streamoff size = in.tellg();
  char magic[kMagicSize];
  if (size < 0 || !in.seekg(0) || !in.read(magic, kMagicSize)) {
    return corrupt("not a rogd checkpoint (too short, or not a file)");
  }
  const absl::string_view m(magic, kMagicSize);
  if (size < static_cast<std::streamoff>(kMagicSize + 16) || (m != kMagicV1 && m != kMagicV2)) {
    return corrupt("not a rogd checkpoint (bad magic or too short)");
  }
  if (m == kMagicV1) return ReadV1(in, corrupt);
  return ReadV2(in, static_cast<uint64_t>(size) - kMagicSize, corrupt);
}

}  // namespace rog
