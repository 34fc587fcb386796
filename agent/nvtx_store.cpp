#include "agent/nvtx_store.h"

#include <algorithm>

namespace prof {

void NvtxStore::SetCapacity(size_t max_ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  max_ranges_ = max_ranges;
}

void NvtxStore::Add(const NvtxRange& range) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ranges_.size() >= max_ranges_) {
    uint64_t begin = window_begin_ns_.load(std::memory_order_relaxed);
    auto before = [begin](const NvtxRange& r) { return r.start_ns < begin; };
    ranges_.erase(std::remove_if(ranges_.begin(), ranges_.end(), before), ranges_.end());
    if (ranges_.size() >= max_ranges_) {
      ++dropped_;
      return;
    }
  }
  ranges_.push_back(range);
}

std::vector<NvtxRange> NvtxStore::Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  // One pass, in place: the ranges of later windows (a writer behind the
  // application holds many) move down over the taken ones, in order, and
  // nothing is allocated for them; only the window's are copied out.
  size_t taken = 0;
  for (const NvtxRange& r : ranges_) taken += r.start_ns < end_ns && r.start_ns >= begin_ns;
  std::vector<NvtxRange> out;
  out.reserve(taken);
  size_t kept = 0;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const NvtxRange& r = ranges_[i];
    if (r.start_ns >= end_ns) {
      if (kept != i) ranges_[kept] = r;
      ++kept;
    } else if (r.start_ns >= begin_ns) {
      out.push_back(r);
    }
  }
  ranges_.resize(kept);
  *dropped += dropped_;
  dropped_ = 0;
  return out;
}

}  // namespace prof
