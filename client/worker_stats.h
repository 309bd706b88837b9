// What rog::Worker reports of its iterations and its waits (client/worker.h).
#ifndef ROG_CLIENT_WORKER_STATS_H_
#define ROG_CLIENT_WORKER_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/layout.h"

namespace rog {

// One EndIteration's push (the batches it formed), known once rogd has
// acknowledged its last batch, which is usually after EndIteration returned.
struct PushStats {
  uint64_t iteration = 0;     // the clock after the iteration that pushed it
  double age_seconds = 0;     // from its EndIteration's call to the return of the one reporting it
  double window_seconds = 0;  // its uplink window; 0 = none
  uint64_t bytes = 0, payload = 0;  // its batches' bytes and encoded row values
  // From its start to its last acknowledgement, less the path's minimum
  // round trip: how long the uplink carried it (0 if nothing was
  // acknowledged).
  double busy_seconds = 0;
  // From the window's end to the estimated arrival of its last byte at rogd
  // (the last acknowledgement less half the minimum round trip); 0 within
  // the window or without one.
  double overshoot_seconds = 0;
  // Of bytes, those formed after the window had closed: rows the staleness
  // bound made mandatory, or that a stalled peer asked for, go whatever the
  // window (ATP cuts only the optional rows). A push with late bytes
  // overshoots by their transmission time, by design.
  uint64_t late_bytes = 0;
  double diag_opt_overshoot = 0, diag_mand_overshoot = 0, diag_mand_excess = 0; uint64_t diag_mand_bytes = 0;
  bool disconnected = false;  // the stream broke before every batch was acknowledged
  // From its start to its last acknowledgement (0 if nothing was
  // acknowledged), and the bytes of its batches rogd acknowledged. Every
  // acknowledged byte crossed the uplink within [start, start + ack_seconds
  // less the path's round-trip propagation delay]: the measure a link's
  // utilisation needs (busy_seconds, less a minimum round trip that includes
  // a batch's own transmission, can end before the last byte crossed).
  double ack_seconds = 0;
  uint64_t acked_bytes = 0;
};

// What one iteration cost and moved.
struct IterationStats {
  uint64_t iteration = 0;       // the clock after this iteration
  double stall_seconds = 0;     // BeginIteration blocked (policy, reconnect)
  bool stalled = false;         // BeginIteration had to wait
  double compute_seconds = 0;   // BeginIteration's return to EndIteration
  double transmit_seconds = 0;  // inside EndIteration
  double window_seconds = 0;    // the uplink window used; 0 = none
  // Uplink batches since the previous EndIteration returned (the window of
  // the iteration before may stream on after it returned).
  uint64_t rows_up = 0, bytes_up = 0;
  uint64_t rows_down = 0, bytes_down = 0;  // downlink since the last stats
  // Of bytes_up / bytes_down, the encoded row values; the rest is the index
  // (row ids, counts, version lags) and the batch header.
  uint64_t payload_up = 0, payload_down = 0;
  double uplink_goodput = 0;  // bytes/s, from rogd's acks
  uint64_t rows_kept = 0;     // rows left with unpushed updates (cut by the window)
  bool disconnected = false;  // the stream broke during the transmission
  // Team patience (rogd --patience): BeginIteration's wait while rogd had
  // this worker detached (not counted in stall_seconds), and whether this
  // iteration was a local step taken while detached (outside the bound; its
  // update drains in the background, so EndIteration returns at once).
  double detached_seconds = 0;
  bool detached = false;
  // Pushes whose last batch rogd acknowledged since the previous
  // EndIteration returned: usually the previous iteration's, since
  // EndIteration does not wait for acknowledgements (see PushStats).
  std::vector<PushStats> pushes;
};

// Why BeginIteration waits (rogd's Stall directive, or the connection).
struct StallInfo {
  uint64_t iteration = 0;
  std::vector<RowId> rows;  // rows missing other workers' updates (a sample)
  uint64_t missing_rows = 0;
  std::vector<std::string> waiting_for;  // worker ids, or what the team waits for
  std::string reason;                    // one line for logs
};

}  // namespace rog

#endif  // ROG_CLIENT_WORKER_STATS_H_
