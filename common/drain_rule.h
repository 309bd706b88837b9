// What a worker's final flush pushes of the updates it still holds when
// its training ends (rog::Worker::Finish, WorkerOptions::drain). The rule
// itself is DrainKeep in common/protocol_rules.h. A public header of the
// SDK: client/worker.h includes it.
#ifndef ROG_COMMON_DRAIN_RULE_H_
#define ROG_COMMON_DRAIN_RULE_H_

namespace rog {

// kSum: everything it holds; kAverage: under ROG, 1/N of it (N the team's
// size), the rest taken out of its replica.
enum class DrainRule { kSum, kAverage };

}  // namespace rog

#endif  // ROG_COMMON_DRAIN_RULE_H_
