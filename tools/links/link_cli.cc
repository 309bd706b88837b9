#include "tools/links/link_cli.h"

#include <pthread.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rog {

bool ParseFlags(int argc, char** argv, const std::vector<FlagSpec>& specs,
                std::map<std::string, std::string>* values, bool* help, std::string* error) {
  for (const FlagSpec& f : specs) {
    if (f.default_value != nullptr) (*values)[f.name] = f.default_value;
  }
  std::map<std::string, bool> given;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpfull") {
      *help = true;
      return true;
    }
    if (!absl::StartsWith(arg, "-")) {
      *error = absl::StrCat("unexpected argument '", arg, "' (flags are --name=value; see --help)");
      return false;
    }
    arg = arg.substr(arg.size() > 1 && arg[1] == '-' ? 2 : 1);
    std::string name = arg;
    std::string value;
    const size_t eq = arg.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& f : specs) {
      if (name == f.name) spec = &f;
    }
    if (spec == nullptr) {
      *error = absl::StrCat("unknown flag --", name, " (see --help)");
      return false;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        *error = absl::StrCat("--", name, " needs a value");
        return false;
      }
      value = argv[++i];
    }
    if (spec->repeated && given[name]) {
      (*values)[name] += "," + value;
    } else {
      (*values)[name] = value;
    }
    given[name] = true;
  }
  for (const FlagSpec& f : specs) {
    if (f.default_value == nullptr && values->count(f.name) == 0) {
      *error = absl::StrCat("--", f.name, " is required (see --help)");
      return false;
    }
  }
  return true;
}

std::string FlagsHelp(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const FlagSpec& f : specs) {
    std::string line = absl::StrFormat("  --%-17s %s", f.name, f.help);
    if (f.default_value == nullptr) {
      absl::StrAppend(&line, " (required)");
    } else if (*f.default_value != '\0') {
      absl::StrAppend(&line, " (default ", f.default_value, ")");
    }
    if (f.repeated) absl::StrAppend(&line, "; may be repeated");
    absl::StrAppend(&out, line, "\n");
  }
  absl::StrAppend(&out, absl::StrFormat("  --%-17s %s\n", "help", "print this and exit"));
  return out;
}

absl::StatusOr<Trace> ReadTraceFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read trace file ", path, ": ", strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read trace file ", path, ": is a directory"));
  }
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read trace file ", path, ": ", strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read trace file ", path));
  absl::StatusOr<Trace> trace = Trace::Parse(text.str(), path);
  if (!trace.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bad trace: ", trace.status().message()));
  }
  return trace;
}

absl::StatusOr<Trace> ReadTraceFlags(const std::map<std::string, std::string>& flags) {
  double k = 0;
  const std::string& text = flags.at("time_scale");
  if (!absl::SimpleAtod(text, &k) || !std::isfinite(k) || k <= 0 || k > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("--time_scale=", text, " must be a number > 0 and <= 100"));
  }
  absl::StatusOr<Trace> trace = ReadTraceFile(flags.at("trace"));
  if (!trace.ok()) return trace.status();
  return trace->TimeScaled(k);
}

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

timespec SigwaitTimeout(double wait) {
  timespec timeout;
  timeout.tv_sec = static_cast<time_t>(wait);
  timeout.tv_nsec = static_cast<long>((wait - timeout.tv_sec) * 1e9) + 1000;
  if (timeout.tv_nsec >= 1000000000) {
    timeout.tv_sec += 1;
    timeout.tv_nsec -= 1000000000;
  }
  return timeout;
}

}  // namespace rog
