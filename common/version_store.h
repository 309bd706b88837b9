// Version storage: v[row][worker] counts how many iterations of that worker
// have been folded into that row. The server keeps one store for the global
// rows and one per worker copy (what it has sent that worker); counts are in
// the team's clock frame, so a worker that joins at clock c starts at c.
#ifndef ROG_COMMON_VERSION_STORE_H_
#define ROG_COMMON_VERSION_STORE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/layout.h"

namespace rog {

class VersionStore {
 public:
  VersionStore() = default;
  VersionStore(size_t num_rows, size_t num_workers)
      : rows_(num_rows), workers_(num_workers), v_(num_rows * num_workers, 0) {}

  size_t num_rows() const { return rows_; }
  size_t num_workers() const { return workers_; }

  // REQUIRES: row < num_rows(), worker < num_workers().
  uint64_t Get(RowId row, size_t worker) const { return v_[row * workers_ + worker]; }
  void Set(RowId row, size_t worker, uint64_t version) { v_[row * workers_ + worker] = version; }
  void Add(RowId row, size_t worker, uint64_t count) { v_[row * workers_ + worker] += count; }

  // Copies row `row`'s versions of every worker from `other` (same shape).
  void CopyRow(const VersionStore& other, RowId row);
  // Appends a worker column with every row at `version`; returns its index.
  size_t AddWorker(uint64_t version);

  // The whole store, row-major: rows × workers.
  const std::vector<uint64_t>& raw() const { return v_; }

 private:
  size_t rows_ = 0;
  size_t workers_ = 0;
  std::vector<uint64_t> v_;
};

}  // namespace rog

#endif  // ROG_COMMON_VERSION_STORE_H_
