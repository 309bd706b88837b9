// Element-wise float loops for the model-state hot paths (ServerState::Fold,
// WorkerState's updates), written so GCC vectorises them in the ordinary
// `-c opt` build (-O2, SSE2 baseline).
//
// Why not a plain loop over absl::Span:
//   - Debian's Abseil is built hardened (ABSL_OPTION_HARDENED=1), so
//     Span::operator[] bounds-checks every element; the branch to abort
//     keeps the loop from vectorising. These take raw pointers.
//   - At -O2, GCC 12's vectoriser uses the "very cheap" cost model: no
//     runtime overlap check (so the pointers are __restrict) and no scalar
//     epilogue for an unknown trip count (so the vectorised loop has a
//     constant trip count, see kBlock).
//
// Every output element is computed exactly as in the scalar loop (one add
// per element, same operands), and elements are independent, so the vector
// code gives bit-identical results; nothing is reassociated.
//
// REQUIRES for every function: n elements at each pointer, and no output
// range overlaps any other range.
#ifndef ROG_COMMON_FLOAT_LOOPS_H_
#define ROG_COMMON_FLOAT_LOOPS_H_

#include <cfloat>
#include <cmath>
#include <cstddef>

namespace rog {

// The vector part works in blocks of kBlock floats (64 bytes, a multiple of
// any float vector up to 512 bits): an inner loop of constant trip count,
// which the vectoriser turns into whole vectors with no epilogue wherever the
// function is inlined. The last n % kBlock elements take a scalar loop.
inline constexpr size_t kBlock = 16;

// Whether every a[j] + b[j] is finite: no sum overflows to infinity or is
// NaN. Branch-free, so it vectorises like the loops around it.
inline bool SumsFinite(const float* __restrict a, const float* __restrict b, size_t n) {
  int bad = 0;
  size_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) bad |= !(std::fabs(a[j + k] + b[j + k]) <= FLT_MAX);
  }
  for (; j < n; ++j) bad |= !(std::fabs(a[j] + b[j]) <= FLT_MAX);
  return bad == 0;
}

// dst[j] += src[j].
inline void AddTo(float* __restrict dst, const float* __restrict src, size_t n) {
  size_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) dst[j + k] += src[j + k];
  }
  for (; j < n; ++j) dst[j] += src[j];
}

// a[j] += src[j] and b[j] += src[j], reading src once.
inline void AddToBoth(float* __restrict a, float* __restrict b, const float* __restrict src,
                      size_t n) {
  size_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) {
      a[j + k] += src[j + k];
      b[j + k] += src[j + k];
    }
  }
  for (; j < n; ++j) {
    a[j] += src[j];
    b[j] += src[j];
  }
}

// dst[j] = x[j] + y[j].
inline void Sum(float* __restrict dst, const float* __restrict x, const float* __restrict y,
                size_t n) {
  size_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) dst[j + k] = x[j + k] + y[j + k];
  }
  for (; j < n; ++j) dst[j] = x[j] + y[j];
}

}  // namespace rog

#endif  // ROG_COMMON_FLOAT_LOOPS_H_
