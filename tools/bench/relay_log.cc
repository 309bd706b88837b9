#include "tools/bench/relay_log.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace rog {

absl::StatusOr<double> RelayStartUnix(absl::string_view relay_log) {
  constexpr absl::string_view kMark = "trace time 0 at unix ";
  const size_t at = relay_log.find(kMark);
  if (at == absl::string_view::npos) {
    return absl::NotFoundError(absl::StrCat("no '", kMark, "' in the relay's log"));
  }
  absl::string_view rest = relay_log.substr(at + kMark.size());
  rest = rest.substr(0, rest.find_first_of(" \n"));
  double t;
  if (!absl::SimpleAtod(rest, &t)) {
    return absl::InvalidArgumentError(absl::StrCat("bad start time '", rest, "' in relay log"));
  }
  return t;
}

absl::StatusOr<double> RelayDelaySeconds(absl::string_view relay_log) {
  const absl::string_view first = relay_log.substr(0, relay_log.find('\n'));
  if (absl::StrContains(first, "no added delay")) return 0.0;  // tc_link
  constexpr absl::string_view kMark = ", delay ";
  const size_t at = first.find(kMark);
  if (at == absl::string_view::npos) {
    return absl::NotFoundError("no ', delay ' in the relay log's first line");
  }
  absl::string_view rest = first.substr(at + kMark.size());
  rest = rest.substr(0, rest.find(','));
  absl::Duration d;
  if (!absl::ParseDuration(rest, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("bad delay '", rest, "' in relay log"));
  }
  return absl::ToDoubleSeconds(d);
}

}  // namespace rog
