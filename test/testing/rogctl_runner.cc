#include "test/testing/rogctl_runner.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "test/testing/rogd_harness.h"

namespace rog {
namespace {

std::string RogctlBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return absl::StrCat(srcdir, "/", workspace, "/tools/rogctl/rogctl");
  }
  return "tools/rogctl/rogctl";
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

RogctlRun Rogctl(const std::vector<std::string>& args, const std::string& timeout_args) {
  static int counter = 0;
  const std::string err_path = absl::StrCat(MakeTempDir("rogctl"), "/stderr", counter++);
  std::string cmd = "timeout " + timeout_args + " " + Quote(RogctlBinary());
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " 2>" + Quote(err_path);
  RogctlRun run;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) run.out.append(buf, n);
  const int status = pclose(p);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err_path);
  std::stringstream s;
  s << in.rdbuf();
  run.err = s.str();
  return run;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace rog
