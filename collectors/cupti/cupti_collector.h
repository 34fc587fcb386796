// The CUPTI collector: the DeviceCollector (base/device_collector.h) that
// fills windows with GPU activity records. This header deliberately does not
// include cupti.h; only collectors/cupti/*.cpp do.
#pragma once

#include <memory>

#include "base/device_collector.h"

namespace prof {

// A collector that loads libcupti at run time (never linked) on the first
// Attach. Never null; when CUPTI cannot be used it runs interception-only
// and says why in Mode().
std::unique_ptr<DeviceCollector> MakeCuptiCollector();

}  // namespace prof
