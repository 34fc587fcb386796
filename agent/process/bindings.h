// What the injected library plugs into the agent: the CUPTI collector and
// the exporters' file writer. Defined in agent/process/bindings.cpp, which is
// compiled into libprof.so only, so prof_agent_core (and its unit tests)
// never depend on CUPTI or the exporters.
#pragma once

#include <memory>

#include "base/config.h"
#include "base/device_collector.h"
#include "agent/session/writer.h"

namespace prof {

std::unique_ptr<DeviceCollector> MakeDeviceCollector();
WindowSink MakeWindowSink(const Config& config);
// Fills CUDA runtime/driver versions (through the interposer's real
// functions) and the GPUs' properties on the writer thread.
void EnrichWindow(Window* window);

}  // namespace prof
