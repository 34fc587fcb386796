#include "agent/nvtx_store.h"

namespace prof {

void NvtxStore::Add(const NvtxRange& range) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ranges_.size() >= max_ranges_) {
    ++dropped_;
    return;
  }
  ranges_.push_back(range);
}

std::vector<NvtxRange> NvtxStore::Take(uint64_t begin_ns, uint64_t end_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NvtxRange> out;
  std::vector<NvtxRange> keep;
  for (const NvtxRange& r : ranges_) {
    if (r.start_ns >= end_ns) keep.push_back(r);
    else if (r.start_ns >= begin_ns) out.push_back(r);
  }
  ranges_.swap(keep);
  return out;
}

uint64_t NvtxStore::dropped() {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace prof
