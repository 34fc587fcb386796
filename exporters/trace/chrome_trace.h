// The Chrome trace event JSON of one window, in Kineto's schema (what
// torch.profiler writes), so it opens in Perfetto UI and chrome://tracing and
// loads in Holistic Trace Analysis and TensorBoard. See chrome_trace.cpp for
// the mapping from the event model to events.
#pragma once

#include <string_view>

#include "model/window.h"
#include "exporters/files/byte_sink.h"

namespace prof {

class WindowIndex;
struct RankEvents;

// Streams the trace into `sink`; `trace_name` becomes "traceName". Returns
// false when the sink failed.
bool WriteChromeTrace(const Window& window, std::string_view trace_name, ByteSink& sink);
// The same with the window's index already built (the writer shares one
// between the trace and the summary).
// With `job`, also hands it what the job analysis reads back from the trace
// (exporters/job/rank_facts.h), as it is written.
bool WriteChromeTrace(const Window& window, const WindowIndex& index, std::string_view trace_name, ByteSink& sink,
                      RankEvents* job = nullptr);

}  // namespace prof
