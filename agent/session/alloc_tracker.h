// The live-allocation table, always on while the agent is enabled: every
// allocator wrapper reports here. Per (device, memory kind) it keeps the live
// bytes; while a window records it also keeps the AllocSample timeline.
// One mutex: allocator calls are rare next to launches and the runtime
// itself takes locks in them.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "model/api_ids.h"
#include "base/live_table.h"
#include "model/events.h"

namespace prof {

class AllocTracker {
 public:
  explicit AllocTracker(size_t max_samples = 1u << 20) : max_samples_(max_samples) {}

  // keep_sample: a window is warming up or recording.
  void OnAlloc(uint64_t ptr, uint64_t bytes, int device, MemKind kind, ApiId api, uint32_t tid, uint64_t ts_ns,
               bool keep_sample);
  // Unknown pointers (allocated before the agent started, or not by an
  // intercepted call) are ignored: there is no size to subtract.
  void OnFree(uint64_t ptr, ApiId api, uint32_t tid, uint64_t ts_ns, bool keep_sample);

  std::vector<LiveAllocation> LiveSnapshot();
  // Moves out samples with ts in [begin_ns, end_ns); older ones are dropped.
  std::vector<AllocSample> TakeSamples(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped);
  uint64_t LiveBytes(int device, MemKind kind);
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  struct Live {
    uint64_t bytes = 0;
    uint64_t alloc_ns = 0;
    uint16_t api = 0;
    int16_t device = 0;
    MemKind kind{};
  };
  void Sample(uint64_t ts_ns, uint64_t ptr, int64_t delta, int device, MemKind kind, ApiId api, uint32_t tid);

  std::mutex mu_;
  LiveTable<Live> live_;  // no heap work per call (see live_table.h)
  // Live bytes per (device, kind): a handful of entries, searched linearly
  // (a std::map cost a tree walk on every allocator call).
  struct Total {
    int device;
    MemKind kind;
    uint64_t bytes;
  };
  uint64_t& TotalFor(int device, MemKind kind);
  std::vector<Total> totals_;
  std::vector<AllocSample> samples_;
  size_t max_samples_;
  uint64_t samples_dropped_ = 0;
};

}  // namespace prof
