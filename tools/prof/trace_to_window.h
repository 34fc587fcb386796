// Rebuilds a prof::Window from a saved trace, so `prof summary` runs the very
// exporter the agent ran. Exact for libprof's traces (times are whole
// nanoseconds, clipped slices carry their true duration, steps and live
// allocations are in the "libprof" block); best effort for other Kineto
// traces (cpu_op and other categories libprof does not model are skipped).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "agent/window.h"

namespace prof::tool {

// False with `error` when the trace has no traceEvents array.
bool TraceToWindow(const nlohmann::json& trace, Window* window, std::string* error);

}  // namespace prof::tool
