// The one word every interposed wrapper reads first. While it is 0 (no window
// warming up or recording, no step source that needs to see calls, no
// allocator tracking) a wrapper costs one relaxed load and a branch more than
// the bare call. The session is the only writer.
#pragma once

#include <atomic>
#include <cstdint>

namespace prof {

enum HotBits : uint32_t {
  kHotRecording = 1u << 0,      // warmup or active: wrappers buffer host events
  kHotLaunchMarker = 1u << 1,   // PROF_STEP=kernel:<regex>: launches may end a step
  kHotApiMarker = 1u << 2,      // PROF_STEP=api:<fn>: that call ends a step
  kHotSyncMarker = 1u << 3,     // PROF_STEP=sync: synchronize returns end a step
  kHotAllocTracking = 1u << 4,  // allocator wrappers keep the live table
  kHotCopyMarker = 1u << 5,     // PROF_STEP=auto: copies and memsets are observed (or are the marker)
  kHotNvtxNames = 1u << 6,      // NVTX range names are needed outside windows (PROF_STEP=nvtx, auto)
  kHotRangeMarker = 1u << 7,    // PROF_RANGE=cudaProfilerApi: the profiler start/stop wrappers feed the marker path
};
// Any of these: wrappers feed the calls they see to the marker path.
inline constexpr uint32_t kHotMarkerFeed = kHotLaunchMarker | kHotApiMarker | kHotSyncMarker | kHotCopyMarker;

namespace internal {
// Relaxed everywhere: a wrapper that sees a stale value records one event
// more or less at a window edge, and the writer filters events by time.
inline std::atomic<uint32_t> g_hot_bits{0};
}  // namespace internal

inline uint32_t LoadHotBits() { return internal::g_hot_bits.load(std::memory_order_relaxed); }
inline void SetHotBits(uint32_t bits) { internal::g_hot_bits.fetch_or(bits, std::memory_order_relaxed); }
inline void ClearHotBits(uint32_t bits) { internal::g_hot_bits.fetch_and(~bits, std::memory_order_relaxed); }

}  // namespace prof
