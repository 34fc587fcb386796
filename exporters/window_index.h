// Lookups both exporters need, built once per window: which host call (or
// CUPTI API record) issued a piece of GPU work, by correlation id.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "agent/window.h"

namespace prof {

inline bool IsGpuWork(DeviceKind kind) {
  return kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset ||
         kind == DeviceKind::kSync;
}
inline DeviceKind KindOf(const DeviceRecord& r) { return static_cast<DeviceKind>(r.kind); }
inline bool IsApiRecord(const DeviceRecord& r) {
  return KindOf(r) == DeviceKind::kRuntimeApi || KindOf(r) == DeviceKind::kDriverApi;
}

class WindowIndex {
 public:
  static constexpr int64_t kNone = -1;
  explicit WindowIndex(const Window& window);

  // Index into host_events of the call with this correlation id.
  int64_t HostCall(uint32_t correlation) const { return Find(host_, correlation); }
  // Index into device_records of a CUPTI API record with this correlation
  // that no host event covers (a call we did not interpose).
  int64_t ApiRecord(uint32_t correlation) const { return Find(api_, correlation); }
  // Index into device_records of the earliest GPU work of this correlation.
  int64_t FirstWork(uint32_t correlation) const { return Find(work_, correlation); }
  // An API record is shown only when no host event has its correlation.
  bool ApiRecordShown(size_t record_index) const;

 private:
  using Map = std::vector<std::pair<uint32_t, uint32_t>>;  // (correlation, index), sorted
  static int64_t Find(const Map& map, uint32_t correlation);

  const Window& window_;
  Map host_;
  Map api_;
  Map work_;
};

}  // namespace prof
