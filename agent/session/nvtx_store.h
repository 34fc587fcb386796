// NVTX ranges seen through NVTX injection while a window records.
#pragma once

#include <cstddef>

#include "model/events.h"
#include "agent/session/take_window.h"

namespace prof {

// The agent sets the capacity from PROF_BUFFER_MB: NvtxBudgetBytes / sizeof(NvtxRange).
class NvtxStore : public WindowedStore<NvtxRange> {
 public:
  explicit NvtxStore(size_t max_ranges = 1u << 20) : WindowedStore(max_ranges) {}
};

}  // namespace prof
