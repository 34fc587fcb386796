// Rebuilds a prof::Window (or a CompactWindow, what `prof summary` holds)
// from a saved trace, so `prof summary` runs the very exporter the agent ran.
// Exact for libprof's traces (times are whole nanoseconds, clipped slices
// carry their true duration, steps and live allocations are in the "libprof"
// block); best effort for other Kineto traces (cpu_op and other categories
// libprof does not model are skipped). A merged trace (`prof merge`) reads
// back as one window per input. The events are read by window_reader.h, the
// top-level members by window_meta.h; this file streams them there.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/common/compact_window.h"
#include "model/window.h"
#include "tools/prof/trace/event_fields.h"

namespace prof::tool {

// False with `error` when the trace has no traceEvents array.
bool TraceToWindow(const nlohmann::json& trace, Window* window, std::string* error);

// Streams a trace file (plain or gzip) into its windows: one, or one per
// input of a `prof merge` output. What is held is the windows themselves in
// compact form (compact_window.h: 40 bytes per CUDA call, 48 per GPU record,
// in chunks that never double), never the JSON; events the summary does not
// model (cpu_op, python_function beyond the stacks of the calls, ...) are
// not held at all. False with `error` ("rule strict-json: ..." for bad JSON).
// Events whose pid, tid, ts or dur has the wrong type are skipped and
// counted in `skipped` (event_fields.h).
bool ReadWindows(const std::string& path, uint64_t max_unpacked_bytes, std::vector<CompactWindow>* windows,
                 std::string* error, SkippedEvents* skipped = nullptr);

// The same on bytes in memory (fuzzing, tests), into either form.
bool ReadWindowsFromBytes(std::string_view bytes, std::vector<Window>* windows, std::string* error,
                          SkippedEvents* skipped = nullptr);
bool ReadWindowsFromBytes(std::string_view bytes, std::vector<CompactWindow>* windows, std::string* error,
                          SkippedEvents* skipped = nullptr);

}  // namespace prof::tool
