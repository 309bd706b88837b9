#include "common/version_store.h"

#include <algorithm>

namespace rog {

void VersionStore::CopyRow(const VersionStore& other, RowId row) {
  std::copy_n(other.v_.begin() + row * workers_, workers_, v_.begin() + row * workers_);
}

size_t VersionStore::AddWorker(uint64_t version) {
  std::vector<uint64_t> grown(rows_ * (workers_ + 1));
  for (size_t r = 0; r < rows_; ++r) {
    std::copy_n(v_.begin() + r * workers_, workers_, grown.begin() + r * (workers_ + 1));
    grown[r * (workers_ + 1) + workers_] = version;
  }
  v_ = std::move(grown);
  return workers_++;
}

}  // namespace rog
