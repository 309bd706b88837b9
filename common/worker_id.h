// Worker ids: the stable name a worker registers under (e.g. the robot's
// host name). Checked by rogd on every hello and by rog::Worker at start.
#ifndef ROG_COMMON_WORKER_ID_H_
#define ROG_COMMON_WORKER_ID_H_

#include <algorithm>
#include <string>

namespace rog {

// 1-64 characters, each a letter, digit, '.', '_' or '-'.
inline bool ValidWorkerId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

}  // namespace rog

#endif  // ROG_COMMON_WORKER_ID_H_
