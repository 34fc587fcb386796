// Attributes of the simulated device: an H100 SXM5 80GB (compute capability 9.0).
#pragma once

#include <cuda.h>

namespace sim {

// Value of a CUdevice_attribute; 0 for attributes the simulation does not model.
int DeviceAttribute(CUdevice_attribute attribute);

}  // namespace sim
