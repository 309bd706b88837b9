// MTA, the minimum transmission amount of ATP: the fraction P of a model a
// worker sends per iteration at least, for staleness bound S. For S >= 2 it
// is the root in (0, 1) of (1 - P)^(S - 1) = P; S = 1 gives 0.5 and S = 0
// (every row every iteration) gives 1.0.
#ifndef ROG_COMMON_MTA_H_
#define ROG_COMMON_MTA_H_

#include <cstdint>

namespace rog {

// Defined for every S: monotonically non-increasing in S, in (0, 1].
double MinimumTransmissionAmount(uint32_t staleness);

}  // namespace rog

#endif  // ROG_COMMON_MTA_H_
