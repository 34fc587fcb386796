#include "collectors/cupti/clock_map.h"

#include <limits>

namespace prof::cupti {

bool ClockMap::Calibrate(const std::function<uint64_t()>& agent_now, const std::function<bool(uint64_t*)>& cupti_now,
                         int pairs) {
  uint64_t best_bracket = std::numeric_limits<uint64_t>::max();
  int64_t best_offset = 0;
  for (int i = 0; i < pairs; ++i) {
    uint64_t before = agent_now();
    uint64_t cupti_ns = 0;
    bool ok = cupti_now(&cupti_ns);
    uint64_t after = agent_now();
    if (!ok || after < before) continue;
    uint64_t bracket = after - before;
    if (bracket < best_bracket) {
      best_bracket = bracket;
      // The CUPTI read happened somewhere in [before, after]: assume the middle.
      // Modular difference: no signed overflow whatever the clocks read.
      best_offset = static_cast<int64_t>(before + bracket / 2 - cupti_ns);
    }
  }
  if (best_bracket == std::numeric_limits<uint64_t>::max()) return false;
  offset_ns_ = best_offset;
  uncertainty_ns_ = best_bracket / 2;
  identity_ = false;
  return true;
}

}  // namespace prof::cupti
