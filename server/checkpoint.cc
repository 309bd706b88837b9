#include "server/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/layout.h"

namespace rog {
namespace {

constexpr char kMagic[] = "ROGCKPT1";
constexpr size_t kMagicSize = 8;

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

}  // namespace

absl::StatusOr<uint64_t> WriteCheckpoint(const std::string& path,
                                         const pb::Checkpoint& checkpoint) {
  std::string payload;
  if (!checkpoint.SerializeToString(&payload)) {
    return absl::InternalError("could not serialize the checkpoint (model larger than 2 GiB?)");
  }
  std::string file(kMagic, kMagicSize);
  PutU64(&file, payload.size());
  file += payload;
  PutU64(&file, Fnv1a64(payload));

  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", tmp);
  size_t written = 0;
  while (written < file.size()) {
    const ssize_t n = ::write(fd, file.data() + written, file.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const absl::Status s = Errno("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const absl::Status s = Errno("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
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
  return static_cast<uint64_t>(file.size());
}

absl::StatusOr<pb::Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open checkpoint ", path, ": ", std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
  const auto corrupt = [&](const std::string& why) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " is unusable: ", why,
                     ". Restore a good copy, or move it away to start without it."));
  };
  if (file.size() < kMagicSize + 16 || file.compare(0, kMagicSize, kMagic) != 0) {
    return corrupt("not a rogd checkpoint (bad magic or too short)");
  }
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
  if (!checkpoint.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return corrupt("payload does not parse");
  }
  return checkpoint;
}

}  // namespace rog
