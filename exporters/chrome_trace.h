// The Chrome trace event JSON of one window, in Kineto's schema (what
// torch.profiler writes), so it opens in Perfetto UI and chrome://tracing and
// loads in Holistic Trace Analysis and TensorBoard. See chrome_trace.cpp for
// the mapping from the event model to events.
#pragma once

#include <string_view>

#include "agent/window.h"
#include "exporters/byte_sink.h"

namespace prof {

// Streams the trace into `sink`; `trace_name` becomes "traceName". Returns
// false when the sink failed.
bool WriteChromeTrace(const Window& window, std::string_view trace_name, ByteSink& sink);

}  // namespace prof
