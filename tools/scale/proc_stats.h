// What the scale study reads of rogd from /proc (Linux): CPU seconds of the
// whole process and of its named threads (rogd names its engine thread
// "rogd-engine" and each stream's writer "rogd-writer"), and its resident
// memory now and at its peak (VmRSS, VmHWM). CPU seconds and memory are
// what a busy shared machine does not distort; wall-clock times are.
#ifndef ROG_TOOLS_SCALE_PROC_STATS_H_
#define ROG_TOOLS_SCALE_PROC_STATS_H_

#include <sys/types.h>

#include <cstdint>

namespace rog {

struct ProcSample {
  double cpu_seconds = 0;     // user + system, every thread ever
  double engine_seconds = 0;  // the engine thread
  double writer_seconds = 0;  // the writer threads alive now
  uint64_t rss_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  uint64_t threads = 0;
  bool ok = false;
};

ProcSample ReadProc(pid_t pid);

// User + system CPU seconds of this process so far (getrusage).
double OwnCpuSeconds();

}  // namespace rog

#endif  // ROG_TOOLS_SCALE_PROC_STATS_H_
