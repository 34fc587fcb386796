// Lookups both exporters need, built once per window: which host call (or
// CUPTI API record) issued a piece of GPU work, by correlation id.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/window.h"

namespace prof {

inline bool IsGpuWork(DeviceKind kind) {
  return kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset ||
         kind == DeviceKind::kSync;
}
// For a DeviceRecord or a CompactDeviceRecord.
template <typename Record>
DeviceKind KindOf(const Record& r) {
  return static_cast<DeviceKind>(r.kind);
}
template <typename Record>
bool IsApiRecord(const Record& r) {
  return KindOf(r) == DeviceKind::kRuntimeApi || KindOf(r) == DeviceKind::kDriverApi;
}

// A synchronize that blocks the calling host thread (cudaStreamWaitEvent
// only orders streams).
inline bool IsBlockingSync(ApiId id) {
  return ApiKindOf(id) == ApiKind::kSync && id != ApiId::cudaStreamWaitEvent && id != ApiId::cudaStreamWaitEvent_ptsz;
}

class CompactWindow;

class WindowIndex {
 public:
  static constexpr int64_t kNone = -1;
  explicit WindowIndex(const Window& window);
  explicit WindowIndex(const CompactWindow& window);

  // Index into host_events of the call with this correlation id.
  int64_t HostCall(uint32_t correlation) const { return Find(host_, correlation); }
  // Index into device_records of a CUPTI API record with this correlation
  // that no host event covers (a call we did not interpose).
  int64_t ApiRecord(uint32_t correlation) const { return Find(api_, correlation); }
  // Index into device_records of the earliest GPU work of this correlation.
  int64_t FirstWork(uint32_t correlation) const { return Find(work_, correlation); }
  // An API record (of this window) is shown only when no host event has its
  // correlation.
  template <typename Record>
  bool ApiRecordShown(const Record& r) const {
    return r.correlation_id == 0 || HostCall(r.correlation_id) == kNone;
  }

 private:
  // correlation -> index. CUPTI hands out correlation ids from one counter,
  // so they are dense: a flat table indexed by (id - lowest) answers in one
  // load; a sparse set falls back to binary search over sorted pairs.
  class Map {
   public:
    void Add(uint32_t correlation, uint32_t index) { pairs_.emplace_back(correlation, index); }
    void Seal();  // keeps the lowest index per correlation
    int64_t Find(uint32_t correlation) const;

   private:
    static constexpr uint32_t kEmpty = UINT32_MAX;
    std::vector<std::pair<uint32_t, uint32_t>> pairs_;
    uint32_t lowest_ = 0;
    std::vector<uint32_t> flat_;  // empty when sparse
  };
  static int64_t Find(const Map& map, uint32_t correlation) { return map.Find(correlation); }
  template <typename W>
  void Build(const W& window);

  Map host_;
  Map api_;
  Map work_;
};

}  // namespace prof
