// One worker's downlink as rogd sent it: the row batches in flight on its
// stream, what its last stream left unacknowledged, the goodput and round
// trip its acks measure, what it carried in all, and the worker's
// transmission window. Part of the engine core (server/engine_core.h); not
// for use outside it. Which rows a batch carries is the engine's
// (server/engine_downlink.cc, DownlinkPlan); this is the one place that
// records what left and what came back.
//
// Invariants: inflight() holds the batches of the current stream that are
// not acknowledged, in seq order, every seq below next_seq(), and
// inflight_bytes() is the sum of their bytes. Every batch sent went
// through Record, so the goodput estimate, bytes(), rows() and last_sent()
// count it. The batches kept for a resume are those of the last stream
// that ended (EndStream), until the next stream starts (Reset). Outside a
// transmission window the deadline is infinite.
#ifndef ROG_SERVER_ENGINE_DOWNLINK_STATE_H_
#define ROG_SERVER_ENGINE_DOWNLINK_STATE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "common/goodput.h"
#include "common/server_state.h"
#include "proto/convert.h"

namespace rog {
namespace engine_internal {

// What a downlink batch carries, as the engine formed it: its rows, and how
// to undo it if it never reaches the worker.
struct SentBatch {
  size_t rows = 0;
  // A resync's values (a resume cannot undo them: it resyncs again).
  bool values = false;
  // How to undo the update rows it took from the worker's copy
  // (ServerState::Untake).
  std::vector<TakenRow> taken;
};

// A batch sent and not acknowledged.
struct InFlight {
  uint64_t seq;
  uint64_t bytes;
  double sent_at;
  uint64_t ahead;  // unacknowledged bytes sent before it, when it was sent
  bool values;
  std::vector<TakenRow> taken;
};

class Downlink {
 public:
  // A new stream, or none (an eviction): seqs start at 1 again, nothing is
  // in flight or kept for a resume, and the window is closed.
  void Reset();
  // Stream `stream` ended: the batches it has not had acknowledged are kept
  // for a resume (Resumable), and nothing is in flight.
  void EndStream(uint64_t stream);
  // Gives `batch` the stream's next seq and records it as sent at `now`,
  // carrying `contents`. Returns its bytes (the batch's serialized size).
  uint64_t Record(pb::RowBatch* batch, SentBatch contents, double now);
  // The worker acknowledged every batch up to `seq` (below next_seq()),
  // `bytes` in all, at `now`.
  void OnAck(uint64_t seq, uint64_t bytes, double now);

  // The worker's transmission window opens at `now` for `seconds` (not
  // positive: no deadline), or closes.
  void OpenWindow(double now, double seconds);
  void CloseWindow();
  bool transmitting() const { return transmitting_; }
  // When the window closes; infinite when it has no deadline or is closed.
  double deadline() const { return deadline_; }

  uint64_t next_seq() const { return next_seq_; }
  const std::deque<InFlight>& inflight() const { return inflight_; }
  uint64_t inflight_bytes() const { return inflight_bytes_; }
  // The batches stream `stream` left unacknowledged, when it is the stream
  // that ended last and a worker that says it applied its batches up to
  // seq `applied` can go on from there: that fits the seqs sent, and
  // none of the batches after it carried a resync's values. Null if not.
  const std::deque<InFlight>* Resumable(uint64_t stream, uint64_t applied) const;

  const GoodputEstimator& goodput() const { return goodput_; }
  // A batch's send to its ack (rogctl workers).
  const RoundTripFilter& rtt() const { return rtt_; }
  // The goodput estimate, capped by what the oldest unacknowledged batch
  // shows (see the .cc); 0 before the first ack.
  double CappedRate(double now) const;
  // When a batch last left.
  double last_sent() const { return last_sent_; }
  // Bytes and rows sent, over every stream.
  uint64_t bytes() const { return bytes_; }
  uint64_t rows() const { return rows_; }

 private:
  uint64_t next_seq_ = 1;
  std::deque<InFlight> inflight_;
  uint64_t inflight_bytes_ = 0;
  // The last ended stream's unacknowledged batches, its id (its session)
  // and its next seq.
  std::deque<InFlight> unapplied_;
  uint64_t unapplied_stream_ = 0;
  uint64_t unapplied_next_seq_ = 0;
  GoodputEstimator goodput_;
  RoundTripFilter rtt_;
  double last_sent_ = 0;
  uint64_t bytes_ = 0;
  uint64_t rows_ = 0;
  bool transmitting_ = false;
  double deadline_ = std::numeric_limits<double>::infinity();
};

}  // namespace engine_internal
}  // namespace rog

#endif  // ROG_SERVER_ENGINE_DOWNLINK_STATE_H_
