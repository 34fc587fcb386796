// Attributes of the simulated device: an H100 SXM5 80GB (compute capability 9.0).
#pragma once

#include <cuda.h>

namespace sim {

// Value of a CUdevice_attribute on device `ordinal`; 0 for attributes the
// simulation does not model. Every device is the same H100; only its PCI
// bus id differs.
int DeviceAttribute(CUdevice_attribute attribute, int ordinal);

}  // namespace sim
