// What the injected library plugs into the agent: the CUPTI collector and
// the CUDA libraries' versions. Defined in agent/process/bindings.cpp, which
// is compiled into libprof.so only, so prof_agent_core (and its unit tests)
// never depend on CUPTI. (The window sink, agent/session/window_sink, plugs
// the exporters in.)
#pragma once

#include <memory>

#include "base/device_collector.h"
#include "model/window.h"

namespace prof {

std::unique_ptr<DeviceCollector> MakeDeviceCollector();
// Fills CUDA runtime/driver versions (through the interposer's real
// functions) and the GPUs' properties on the writer thread.
void EnrichWindow(Window* window);

}  // namespace prof
