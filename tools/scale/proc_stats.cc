#include "tools/scale/proc_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace rog {
namespace {

// utime + stime of a /proc/.../stat file, in seconds; -1 if unreadable.
double StatCpu(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return -1;
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime 14, stime 15.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string Comm(const std::string& path) {
  std::ifstream in(path);
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

ProcSample ReadProc(pid_t pid) {
  ProcSample s;
  const std::string dir = "/proc/" + std::to_string(pid);
  s.cpu_seconds = StatCpu(dir + "/stat");
  if (s.cpu_seconds < 0) return s;
  if (DIR* tasks = ::opendir((dir + "/task").c_str())) {
    while (dirent* e = ::readdir(tasks)) {
      if (e->d_name[0] == '.') continue;
      const std::string task = dir + "/task/" + e->d_name;
      const std::string name = Comm(task + "/comm");
      const double cpu = StatCpu(task + "/stat");
      if (cpu < 0) continue;
      if (name == "rogd-engine") s.engine_seconds += cpu;
      if (name == "rogd-writer") s.writer_seconds += cpu;
    }
    ::closedir(tasks);
  }
  std::ifstream status(dir + "/status");
  for (std::string line; std::getline(status, line);) {
    std::istringstream in(line);
    std::string key;
    uint64_t kb = 0;
    in >> key >> kb;
    if (key == "VmRSS:") s.rss_bytes = kb * 1024;
    if (key == "VmHWM:") s.peak_rss_bytes = kb * 1024;
    if (key == "Threads:") s.threads = kb;
  }
  s.ok = true;
  return s;
}

double OwnCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace rog
