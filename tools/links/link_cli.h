// What the link emulators (trace_relay, tc_link) share on their command
// line: a small --name=value parser, so that every mistake exits 2 with one
// clear line (Abseil's flags exit 1 for an unknown flag and print pages of
// help), reading a trace file with errors that name it, and the stop
// signals their replay loops wait for.
#ifndef ROG_TOOLS_LINKS_LINK_CLI_H_
#define ROG_TOOLS_LINKS_LINK_CLI_H_

#include <signal.h>
#include <time.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/trace.h"

namespace rog {

struct FlagSpec {
  const char* name;
  const char* default_value;  // nullptr: required
  const char* help;
  bool repeated = false;  // may be given more than once (values joined with ',')
};

// Parses --name=value (or --name value) into `values`, defaults first.
// Returns false with `error` set for an unknown flag, a missing value or a
// required flag left out; sets `help` (and returns true) for --help.
bool ParseFlags(int argc, char** argv, const std::vector<FlagSpec>& specs,
                std::map<std::string, std::string>* values, bool* help, std::string* error);

// The flags, one per line, with their defaults, for --help.
std::string FlagsHelp(const std::vector<FlagSpec>& specs);

// Reads and parses a trace file; errors say which file and what is wrong.
absl::StatusOr<Trace> ReadTraceFile(const std::string& path);

// The flag both link emulators take to run a trace's time axis faster or
// slower (Trace::TimeScaled), with its check.
inline constexpr FlagSpec kTimeScaleFlag = {
    "time_scale", "1.0",
    "multiply the trace's time axis: 0.2 plays each sample for a fifth of its time, for a "
    "team whose compute is scaled alike (0 < X <= 100)"};

// The trace of --trace with --time_scale applied; errors name the flag.
absl::StatusOr<Trace> ReadTraceFlags(const std::map<std::string, std::string>& flags);

// Blocks SIGTERM and SIGINT in the calling thread (and the threads it
// starts later), so that the replay loop takes them with sigtimedwait;
// returns the set.
sigset_t BlockStopSignals();

// `wait` seconds as a timeout for sigtimedwait, a microsecond late rather
// than early.
timespec SigwaitTimeout(double wait);

}  // namespace rog

#endif  // ROG_TOOLS_LINKS_LINK_CLI_H_
