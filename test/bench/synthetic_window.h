// A hand-built Window shaped like a launch-bound training loop, for the
// exporter and window-end benchmarks: per step, `launches_per_step` kernel
// launches (a cudaLaunchKernel HostEvent and its kernel DeviceRecord, joined
// by correlation id) cycling through a few dozen mangled kernel names of
// realistic length, one host-to-device copy, a few allocations and a
// cudaDeviceSynchronize. Times follow a plausible timeline (calls ~3 us
// apart, kernels ~5 us, serial on one stream) so the exporters do the same
// work per event as on a real trace.
#pragma once

#include <cstdint>

#include "model/window.h"

namespace prof::bench {

// Builds a window with at least `events` host events + device records.
Window MakeSyntheticWindow(uint64_t events, uint32_t launches_per_step = 1000);

// Host events + device records of a window: what "events" counts below.
inline uint64_t EventCount(const Window& w) { return w.host_events.size() + w.device_records.size(); }

}  // namespace prof::bench
