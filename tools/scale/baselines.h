// The physical limits the scale study reports rogd against, measured on
// this machine in the same run: one core's memcpy and summation
// (a[i] += b[i], fp32) bandwidth over buffers far larger than the caches,
// and TCP throughput over loopback between two processes (one writes, one
// reads, 1 MiB writes).
#ifndef ROG_TOOLS_SCALE_BASELINES_H_
#define ROG_TOOLS_SCALE_BASELINES_H_

namespace rog {

struct Baselines {
  double memcpy_bytes_per_second = 0;  // bytes copied
  double sum_bytes_per_second = 0;     // bytes of b added into a
  double tcp_bytes_per_second = 0;     // bytes received
};

// Takes a few seconds a repeat; the best of `repeats` for each figure (the
// one least disturbed by other processes). memcpy and summation are bytes
// per CPU second of the measuring thread; TCP is bytes per wall second.
Baselines MeasureBaselines(int repeats);

}  // namespace rog

#endif  // ROG_TOOLS_SCALE_BASELINES_H_
