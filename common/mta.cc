#include "common/mta.h"

#include <cmath>

namespace rog {

double MinimumTransmissionAmount(uint32_t staleness) {
  if (staleness == 0) return 1.0;
  if (staleness == 1) return 0.5;
  // f(P) = (1 - P)^(S - 1) - P falls strictly from 1 at P = 0 to -1 at P = 1,
  // so bisection always finds its single root. The power is taken through
  // log1p so that it stays accurate for S in the thousands, where P is small.
  const double exponent = static_cast<double>(staleness) - 1.0;
  double lo = 0.0;
  double hi = 1.0;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    const double f = std::exp(exponent * std::log1p(-mid)) - mid;
    if (f > 0) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

}  // namespace rog
