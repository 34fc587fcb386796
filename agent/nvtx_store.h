// NVTX ranges seen through NVTX injection while a window records. Ranges are
// coarse (one per step or layer), so a mutex-protected vector is enough.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "agent/events.h"

namespace prof {

class NvtxStore {
 public:
  explicit NvtxStore(size_t max_ranges = 1u << 20) : max_ranges_(max_ranges) {}
  void Add(const NvtxRange& range);
  // Ranges that started in [begin_ns, end_ns); older ones are dropped.
  std::vector<NvtxRange> Take(uint64_t begin_ns, uint64_t end_ns);
  uint64_t dropped();
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  std::mutex mu_;
  std::vector<NvtxRange> ranges_;
  size_t max_ranges_;
  uint64_t dropped_ = 0;
};

}  // namespace prof
