// Static properties of the process's GPUs for a window's deviceProperties
// (and the exporters' occupancy estimates), read from the driver the
// process already loaded.
#pragma once

#include <vector>

#include "model/window.h"

namespace prof {

// The GPUs visible to the process, read once through the driver API
// (cuDeviceGetAttribute and friends) of an already-loaded libcuda.so.1;
// empty when no driver is loaded or it cannot answer. Never loads a CUDA
// library itself. Thread-safe; later calls return the first answer, except
// that an empty answer is retried (the driver may load later).
std::vector<DeviceProps> QueryDeviceProps();

}  // namespace prof
