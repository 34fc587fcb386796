#include "agent/session/nvtx_store.h"

#include <algorithm>


namespace prof {

void NvtxStore::SetCapacity(size_t max_ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  max_ranges_ = max_ranges;
}

void NvtxStore::Add(const NvtxRange& range) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ranges_.size() >= max_ranges_) {
    uint64_t begin = open_.DropBefore();
    auto before = [begin](const NvtxRange& r) { return r.start_ns < begin; };
    ranges_.erase(std::remove_if(ranges_.begin(), ranges_.end(), before), ranges_.end());
    if (ranges_.size() >= max_ranges_) {
      open_.Dropped();
      return;
    }
  }
  ranges_.push_back(range);
}

std::vector<NvtxRange> NvtxStore::Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.TakenBefore(end_ns);
  std::vector<NvtxRange> out =
      TakeWindowEntries(ranges_, begin_ns, end_ns, [](const NvtxRange& r) { return r.start_ns; });
  *dropped += open_.TakeDrops(begin_ns, end_ns);
  return out;
}

}  // namespace prof
