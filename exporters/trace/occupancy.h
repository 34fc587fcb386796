// Kineto's per-kernel occupancy arguments, computed from the launch
// configuration and the device's limits (DeviceProps).
#pragma once

#include "model/events.h"
#include "model/window.h"

namespace prof {

struct Occupancy {
  double blocks_per_sm = 0;  // grid blocks / SMs, as Kineto reports it
  double warps_per_sm = 0;   // blocks_per_sm * warps per block
  // Estimated achieved occupancy, 0..100: warps the grid can keep resident
  // on one SM (bounded by the theoretical limit from threads, registers,
  // shared memory and blocks per SM) over the SM's maximum warps. Ignores
  // register/shared allocation granularity, so it may read slightly high.
  double achieved_percent = 0;
  bool has_achieved = false;  // false when a needed device limit is unknown
};

// False when the kernel's grid or the device's SM count is unknown.
bool ComputeOccupancy(const DeviceRecord& kernel, const DeviceProps& device, Occupancy* out);

}  // namespace prof
