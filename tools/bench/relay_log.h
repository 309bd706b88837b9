// What a link's log says the benchmark needs: when trace_relay (or tc_link)
// started replaying its trace, and the one-way delay it added.
#ifndef ROG_TOOLS_BENCH_RELAY_LOG_H_
#define ROG_TOOLS_BENCH_RELAY_LOG_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rog {

// The unix time at which a trace_relay started replaying its trace, from
// the first line of its log ("trace time 0 at unix T").
absl::StatusOr<double> RelayStartUnix(absl::string_view relay_log);
// The one-way delay the link added, from the same line (", delay 5ms,"; a
// tc_link's "no added delay" is 0).
absl::StatusOr<double> RelayDelaySeconds(absl::string_view relay_log);

}  // namespace rog

#endif  // ROG_TOOLS_BENCH_RELAY_LOG_H_
