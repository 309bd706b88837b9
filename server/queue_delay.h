// The engine thread's queue delay: how long each event (a message from a
// worker stream, an admin call) waited from its arrival in the engine's
// queue to the engine thread starting to handle it. One engine thread runs
// every rule, so this is where a team too large or a model too big for it
// shows first: events queue behind a long fold, a resync or a checkpoint.
//
// A histogram of fixed log-spaced buckets, four per doubling from 1 us:
// bucket k holds the delays in (Bound(k-1), Bound(k)] with Bound(k) =
// 1e-6 * 2^(k/4) seconds (bucket 0 everything up to 1 us), and the last
// bucket everything above Bound(kBuckets - 2) (about 108 s). A quantile is
// read as the upper bound of the bucket it falls in: at most 19% above the
// true value. Not thread-safe: the engine thread records and reads it.
#ifndef ROG_SERVER_QUEUE_DELAY_H_
#define ROG_SERVER_QUEUE_DELAY_H_

#include <cstdint>
#include <vector>

namespace rog {

class QueueDelay {
 public:
  static constexpr int kBucketsPerDoubling = 4;
  static constexpr int kBuckets = 110;

  // Upper bound of bucket `k` in seconds (infinity for the last).
  static double Bound(int k);
  // The bucket a delay of `seconds` falls in (a negative delay counts as 0).
  static int BucketOf(double seconds);

  void Record(double seconds);

  uint64_t events() const { return events_; }
  double max_seconds() const { return max_; }
  // Per bucket, not cumulative; kBuckets entries.
  const std::vector<uint64_t>& counts() const { return counts_; }

  // The upper bound of the bucket holding the q-quantile (0 < q <= 1) of
  // `counts` (kBuckets entries, e.g. the difference of two snapshots), or
  // the largest finite bound for the last bucket; 0 when empty.
  static double Quantile(const std::vector<uint64_t>& counts, double q);
  double Quantile(double q) const { return Quantile(counts_, q); }

 private:
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(kBuckets, 0);
  uint64_t events_ = 0;
  double max_ = 0;
};

}  // namespace rog

#endif  // ROG_SERVER_QUEUE_DELAY_H_
