// NVTX ranges seen through NVTX injection while a window records. Ranges are
// coarse (one per step or layer), so a mutex-protected vector is enough.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "model/events.h"
#include "agent/session/take_window.h"

namespace prof {

class NvtxStore {
 public:
  explicit NvtxStore(size_t max_ranges = 1u << 20) : max_ranges_(max_ranges) {}
  // Past this many ranges held, Add drops and counts (the agent sets it from
  // PROF_BUFFER_MB: NvtxBudgetBytes / sizeof(NvtxRange)).
  void SetCapacity(size_t max_ranges);
  // A window opens at begin_ns: ranges that started before it and before
  // every window the writer has not taken yet are in no window, so a full
  // store may drop them at once (the writer's discard of them may come
  // later); a window still being sealed keeps its ranges.
  void WindowOpens(uint64_t begin_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.Opens(begin_ns);
  }
  void Add(const NvtxRange& range);
  // Ranges that started in [begin_ns, end_ns); older ones are dropped.
  // *dropped: ranges Add refused since the last Take.
  std::vector<NvtxRange> Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped);
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  std::mutex mu_;
  std::vector<NvtxRange> ranges_;
  size_t max_ranges_;
  OpenWindows open_;  // mu_
};

}  // namespace prof
