#include "exporters/common/window_index.h"

#include <algorithm>

#include "exporters/common/compact_window.h"

namespace prof {

void WindowIndex::Map::Seal() {
  if (pairs_.empty()) return;
  uint32_t lo = UINT32_MAX, hi = 0;
  for (const auto& [c, i] : pairs_) lo = std::min(lo, c), hi = std::max(hi, c);
  uint64_t range = uint64_t{hi} - lo + 1;
  if (range <= 4 * pairs_.size() + 1024) {
    lowest_ = lo;
    flat_.assign(range, kEmpty);
    for (const auto& [c, i] : pairs_) {
      uint32_t& slot = flat_[c - lo];
      slot = std::min(slot, i);
    }
    pairs_.clear();
    pairs_.shrink_to_fit();
    return;
  }
  std::sort(pairs_.begin(), pairs_.end());
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end(), [](auto& a, auto& b) { return a.first == b.first; }),
               pairs_.end());
}

int64_t WindowIndex::Map::Find(uint32_t correlation) const {
  if (!flat_.empty()) {
    if (correlation < lowest_ || correlation - lowest_ >= flat_.size()) return kNone;
    uint32_t i = flat_[correlation - lowest_];
    return i == kEmpty ? kNone : int64_t{i};
  }
  auto it = std::lower_bound(pairs_.begin(), pairs_.end(), std::make_pair(correlation, uint32_t{0}));
  return it != pairs_.end() && it->first == correlation ? int64_t{it->second} : kNone;
}

template <typename W>
void WindowIndex::Build(const W& window) {
  for (uint32_t i = 0; i < window.host_events.size(); ++i) {
    if (window.host_events[i].correlation_id != 0) host_.Add(window.host_events[i].correlation_id, i);
  }
  host_.Seal();
  for (uint32_t i = 0; i < window.device_records.size(); ++i) {
    const auto& r = window.device_records[i];
    if (r.correlation_id == 0) continue;
    if (IsApiRecord(r) && HostCall(r.correlation_id) == kNone) api_.Add(r.correlation_id, i);
    // Records are in start order, so the lowest index is the earliest.
    if (IsGpuWork(KindOf(r))) work_.Add(r.correlation_id, i);
  }
  api_.Seal();
  work_.Seal();
}

WindowIndex::WindowIndex(const Window& window) { Build(window); }
WindowIndex::WindowIndex(const CompactWindow& window) { Build(window); }

}  // namespace prof
