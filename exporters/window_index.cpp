#include "exporters/window_index.h"

#include <algorithm>

namespace prof {
namespace {

// Sorts by correlation, keeping the first (lowest index) entry per id.
void SortUnique(std::vector<std::pair<uint32_t, uint32_t>>* map) {
  std::sort(map->begin(), map->end());
  map->erase(std::unique(map->begin(), map->end(), [](auto& a, auto& b) { return a.first == b.first; }),
             map->end());
}

}  // namespace

WindowIndex::WindowIndex(const Window& window) : window_(window) {
  host_.reserve(window.host_events.size());
  for (uint32_t i = 0; i < window.host_events.size(); ++i) {
    if (window.host_events[i].correlation_id != 0) host_.emplace_back(window.host_events[i].correlation_id, i);
  }
  SortUnique(&host_);
  for (uint32_t i = 0; i < window.device_records.size(); ++i) {
    const DeviceRecord& r = window.device_records[i];
    if (r.correlation_id == 0) continue;
    if (IsApiRecord(r) && HostCall(r.correlation_id) == kNone) api_.emplace_back(r.correlation_id, i);
    // Records are in start order, so the lowest index is the earliest.
    if (IsGpuWork(KindOf(r))) work_.emplace_back(r.correlation_id, i);
  }
  SortUnique(&api_);
  SortUnique(&work_);
}

int64_t WindowIndex::Find(const Map& map, uint32_t correlation) {
  auto it = std::lower_bound(map.begin(), map.end(), std::make_pair(correlation, uint32_t{0}));
  return it != map.end() && it->first == correlation ? int64_t{it->second} : kNone;
}

bool WindowIndex::ApiRecordShown(size_t record_index) const {
  const DeviceRecord& r = window_.device_records[record_index];
  return r.correlation_id == 0 || HostCall(r.correlation_id) == kNone;
}

}  // namespace prof
