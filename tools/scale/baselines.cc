#include "tools/scale/baselines.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tools/scale/synthetic_worker.h"

namespace rog {
namespace {

double ThreadCpu() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

constexpr size_t kFloats = size_t{64} << 20;  // 256 MiB a buffer

// Bytes per CPU second of `passes` of `fn` over the buffers.
template <typename Fn>
double PerCpuSecond(Fn fn, int passes, double bytes_per_pass) {
  const double t0 = ThreadCpu();
  for (int p = 0; p < passes; ++p) fn();
  return bytes_per_pass * passes / std::max(1e-9, ThreadCpu() - t0);
}

// Loopback TCP between this process and a child: the child writes `total`
// bytes in 1 MiB writes, this one reads them. Bytes per wall second.
double LoopbackTcp(size_t total) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listener);
    return 0;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(1);
    std::vector<char> buf(1 << 20, 'x');
    for (size_t sent = 0; sent < total;) {
      const ssize_t n = ::write(s, buf.data(), std::min(buf.size(), total - sent));
      if (n <= 0) ::_exit(1);
      sent += static_cast<size_t>(n);
    }
    ::close(s);
    ::_exit(0);
  }
  const int s = ::accept(listener, nullptr, nullptr);
  std::vector<char> buf(1 << 20);
  const double t0 = SteadySeconds();
  size_t got = 0;
  for (ssize_t n; (n = ::read(s, buf.data(), buf.size())) > 0;) got += static_cast<size_t>(n);
  const double seconds = SteadySeconds() - t0;
  ::close(s);
  ::close(listener);
  int status = 0;
  ::waitpid(child, &status, 0);
  return got == total ? static_cast<double>(got) / seconds : 0;
}

}  // namespace

Baselines MeasureBaselines(int repeats) {
  std::vector<float> a(kFloats, 1.0f), b(kFloats, 1.0f / (1 << 20));
  const double bytes = static_cast<double>(kFloats * sizeof(float));
  Baselines best;
  for (int r = 0; r < repeats; ++r) {
    const double copy =
        PerCpuSecond([&] { std::memcpy(a.data(), b.data(), kFloats * sizeof(float)); }, 4, bytes);
    const double sum = PerCpuSecond(
        [&] {
          float* __restrict x = a.data();
          const float* __restrict y = b.data();
          for (size_t i = 0; i < kFloats; ++i) x[i] += y[i];
        },
        4, bytes);
    best.memcpy_bytes_per_second = std::max(best.memcpy_bytes_per_second, copy);
    best.sum_bytes_per_second = std::max(best.sum_bytes_per_second, sum);
    best.tcp_bytes_per_second = std::max(best.tcp_bytes_per_second, LoopbackTcp(size_t{2} << 30));
  }
  // Keep the buffers' last values observable so the loops are not dropped.
  if (a[kFloats / 2] < 0) best.sum_bytes_per_second = 0;
  return best;
}

}  // namespace rog
