// A trace's top-level members into a window's metadata: the trace's own
// (clock base, rank, name, device properties), then libprof's block, which
// holds what Kineto's schema has no place for (the window's bounds and
// steps, losses, configuration, allocations live at its end). Exact for
// libprof's traces; for other producers' only the first part applies.
#pragma once

#include <vector>

#include "model/window.h"
#include "tools/prof/json/json_value.h"

namespace prof::tool {

// `top`: the trace's top-level object (an invalid value reads as empty).
// Sets what every trace has, and the defaults libprof's block overrides.
void ReadTraceMembers(const JsonValue& top, WindowMeta* meta, std::vector<DeviceProps>* devices);

// `libprof`: the trace's "libprof" object. `meta` must hold the trace's
// members already (its clock base places the window's bounds).
void ReadLibprofBlock(const JsonValue& libprof, WindowMeta* meta, PythonInfo* python, std::vector<StepSpan>* steps,
                      std::vector<LiveAllocation>* live_at_end);

}  // namespace prof::tool
