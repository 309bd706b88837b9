// rogctl_torch: `rogctl export`'s LibTorch helper. rogctl runs it for
// `export` only, so that rogctl itself does not load LibTorch: linked in,
// LibTorch's start-up made every `rogctl status` take about a second and
// 170 MB.
//
//   rogctl_torch OUT [TEMPLATE] < model
//
// `model` is one rog.v1.ExportChunk holding the layout and every row (what
// rogd streams, joined by rogctl). Writes OUT atomically (a temporary file
// beside it, fsync, rename) as a LibTorch archive (rogctl_export.h),
// prints "bytes N buffers M" on stdout and exits 0. On failure it prints one
// line "rogctl export: ..." on stderr and exits 2 (a template that is not the
// module rogd trains, or that cannot be read) or 1 (anything else).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rog.pb.h"
#include "tools/rogctl/rogctl_export.h"
#include "tools/rogctl/rogctl_lib.h"

namespace {

using rog::ctl::kExitError;
using rog::ctl::kExitOk;
using rog::ctl::kExitUsage;

int Fail(int code, absl::string_view message) {
  std::fprintf(stderr, "rogctl export: %s\n", std::string(message).c_str());
  return code;
}

absl::Status ErrnoError(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::StatusOr<std::string> ReadAll(int fd) {
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("cannot read");
    if (n == 0) return bytes;
    bytes.append(buf, static_cast<size_t>(n));
  }
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// `path` is either its old file or the whole new one, even across a crash.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create " + tmp);
  absl::Status s;
  for (size_t done = 0; s.ok() && done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = ErrnoError("cannot write " + tmp);
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (s.ok() && fsync(fd) != 0) s = ErrnoError("cannot flush " + tmp);
  if (close(fd) != 0 && s.ok()) s = ErrnoError("cannot close " + tmp);
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    s = ErrnoError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  // The rename itself survives a power cut once the folder is synced.
  if (const int dir = open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr,
                 "usage: rogctl_torch OUT [TEMPLATE] < model\n"
                 "rogctl's LibTorch helper; run `rogctl export --out=FILE` instead\n");
    return kExitUsage;
  }
  const std::string out = argv[1];
  absl::StatusOr<std::string> input = ReadAll(0);
  if (!input.ok())
    return Fail(kExitError, absl::StrCat("the model from rogctl: ", input.status().message()));
  rog::pb::ExportChunk chunk;
  rog::ctl::ExportAssembler assembler;
  absl::Status s = chunk.ParseFromString(*input)
                       ? assembler.Add(chunk)
                       : absl::DataLossError("rogctl passed a garbled model to rogctl_torch");
  if (!s.ok()) return Fail(kExitError, s.message());
  absl::StatusOr<rog::ctl::ExportedModel> model = assembler.Finish();
  if (!model.ok()) return Fail(kExitError, model.status().message());

  rog::ctl::ArchiveTemplate with;
  if (argc == 3) {
    with.name = argv[2];
    const int fd = open(with.name.c_str(), O_RDONLY | O_CLOEXEC);
    absl::StatusOr<std::string> bytes = fd < 0 ? ErrnoError("cannot open it") : ReadAll(fd);
    if (fd >= 0) close(fd);
    if (!bytes.ok()) {
      return Fail(kExitUsage, absl::StrCat("cannot read --template=", with.name, ": ",
                                           bytes.status().message()));
    }
    with.bytes = *std::move(bytes);
  }
  absl::StatusOr<rog::ctl::TorchArchive> archive =
      rog::ctl::MakeTorchArchive(model->layout, model->values, argc == 3 ? &with : nullptr);
  if (!archive.ok()) {
    return Fail(
        archive.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitError,
        archive.status().message());
  }
  if (absl::Status w = WriteFileAtomically(out, archive->bytes); !w.ok()) {
    return Fail(kExitError, w.message());
  }
  std::printf("bytes %zu buffers %llu\n", archive->bytes.size(),
              static_cast<unsigned long long>(archive->buffers));
  return kExitOk;
}
