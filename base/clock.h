// The agent's one clock: CLOCK_MONOTONIC in nanoseconds. Host events, CUPTI
// records (through the timestamp callback or a mapping) and step spans are
// all expressed on it; WindowMeta::epoch_offset_ns converts to Unix time.
#pragma once

#include <cstdint>
#include <ctime>

namespace prof {

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The same clock at tick resolution (1-4 ms): for times that only order
// things coarsely (when a still-live allocation was made outside a window).
inline uint64_t CoarseNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Unix epoch ns minus agent ns. A wall-clock read bracketed by two agent
// clock reads; the error is half the bracket, which a preemption or a first
// call's page faults (lazy binding, an interposed clock_gettime) can stretch
// to milliseconds on a busy host. So several samples, the narrowest kept:
// the ranks' offsets `prof merge` finds are these errors too.
inline int64_t EpochOffsetNs() {
  int64_t best = 0;
  uint64_t best_bracket = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    timespec rt;
    uint64_t before = NowNs();
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t after = NowNs();
    if (after - before >= best_bracket) continue;
    best_bracket = after - before;
    int64_t real_ns = static_cast<int64_t>(rt.tv_sec) * 1'000'000'000ll + rt.tv_nsec;
    best = real_ns - static_cast<int64_t>(before + (after - before) / 2);
  }
  return best;
}

}  // namespace prof
