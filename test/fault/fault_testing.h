// Helpers of the fault tests with real worker processes (test/fault).
#ifndef ROG_TEST_FAULT_FAULT_TESTING_H_
#define ROG_TEST_FAULT_FAULT_TESTING_H_

#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "test/testing/rogd_harness.h"

namespace rog {

// //test/fault:fault_worker in the test's runfiles.
inline std::string FaultWorkerBinary() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"),
                      "/test/fault/fault_worker");
}

// The last "<word> N" line of a worker's log; 0 if none.
inline uint64_t LastCount(const std::string& log, const std::string& word) {
  uint64_t n = 0;
  const std::regex line("(^|\n)" + word + " ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
       ++it) {
    n = std::stoull((*it)[2].str());
  }
  return n;
}

// What rogd reports of worker `id` (`rogctl workers`); nullopt-like empty
// info (worker_id "") when it cannot say.
inline pb::WorkerInfo InfoOf(const std::string& address, const std::string& id) {
  absl::StatusOr<pb::WorkersReply> w = AdminWorkers(address);
  if (w.ok()) {
    for (const pb::WorkerInfo& info : w->workers()) {
      if (info.worker_id() == id) return info;
    }
  }
  return pb::WorkerInfo();
}

inline uint64_t ClockOf(const std::string& address, const std::string& id) {
  return InfoOf(address, id).iteration();
}

}  // namespace rog

#endif  // ROG_TEST_FAULT_FAULT_TESTING_H_
