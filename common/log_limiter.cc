#include "common/log_limiter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rog {
namespace {

bool Printable(char c) { return c >= ' ' && c <= '~'; }

}  // namespace

std::string ClientText(const std::string& text, size_t max_bytes) {
  std::string out = text.substr(0, max_bytes);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return !Printable(c); }, '?');
  if (text.size() > max_bytes) absl::StrAppend(&out, " ... (", text.size(), " bytes)");
  return out;
}

bool PrintableAscii(const std::string& text) {
  return std::all_of(text.begin(), text.end(), Printable);
}

bool LogLimiter::Allow(const std::string& key, double now, uint64_t* suppressed) {
  auto it = windows_.find(key);
  if (it == windows_.end()) {
    if (windows_.size() >= max_keys_) {
      // Forget keys whose window is over and that have nothing to report.
      for (auto w = windows_.begin(); w != windows_.end();) {
        if (now - w->second.start >= period_ && w->second.suppressed == 0) {
          w = windows_.erase(w);
        } else {
          ++w;
        }
      }
    }
    const std::string& use = windows_.size() >= max_keys_ ? std::string("*") : key;
    it = windows_.emplace(use, Window{now, 0, 0}).first;
  }
  Window& w = it->second;
  if (now - w.start >= period_) {
    w.start = now;
    w.printed = 0;
  }
  if (w.printed >= burst_) {
    ++w.suppressed;
    return false;
  }
  ++w.printed;
  if (suppressed != nullptr) *suppressed = w.suppressed;
  w.suppressed = 0;
  return true;
}

}  // namespace rog
