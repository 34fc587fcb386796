// A window as `prof summary` holds it: the calls and GPU records in compact
// form, only the fields the summary and its findings read (40 and 48 bytes
// instead of the agent's 64 and 128), in chunked storage that never doubles.
// ComputeSummary reads a CompactWindow with the very code it runs on the
// agent's Window (exporters/summary/summary_stats.cpp is written once, for both), so
// a trace read back this way gives the same summary, byte for byte.
#pragma once

#include <cstdint>

#include "model/window.h"
#include "exporters/common/chunked_vector.h"

namespace prof {

// The fields of a HostEvent the summary reads, under the same names.
struct CompactHostEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t correlation_id;
  uint32_t tid;
  uint32_t stack_id;  // HostEvent's 24-bit stack id
  uint16_t api;
  uint8_t copy_kind;

  static CompactHostEvent From(const HostEvent& e) {
    return {e.start_ns, e.end_ns, e.bytes, e.correlation_id, e.tid, e.stack_id, e.api,
            static_cast<uint8_t>(e.copy_kind)};
  }
};
static_assert(sizeof(CompactHostEvent) == 40);

// The fields of a DeviceRecord the summary reads, under the same names. The
// small ones are narrowed so a record stays 48 bytes (prof summary holds
// every record): device ordinals fit 16 bits (saturated past), and the kind
// and CUPTI's copy and memory kinds 4 bits each (all below 16).
struct CompactDeviceRecord {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t correlation_id;
  uint32_t name_id;
  uint32_t stream_id;
  uint32_t graph_id;
  uint32_t capture_stack_id;
  uint16_t device_id;
  uint16_t kind : 4;
  uint16_t copy_kind : 4;
  uint16_t src_kind : 4;
  uint16_t dst_kind : 4;

  static CompactDeviceRecord From(const DeviceRecord& r) {
    CompactDeviceRecord c{r.start_ns, r.end_ns, r.bytes, r.correlation_id, r.name_id, r.stream_id, r.graph_id,
                          r.capture_stack_id, static_cast<uint16_t>(r.device_id > 0xFFFF ? 0xFFFF : r.device_id),
                          0, 0, 0, 0};
    c.kind = r.kind & 0xF;
    c.copy_kind = r.copy_kind & 0xF;
    c.src_kind = r.src_kind & 0xF;
    c.dst_kind = r.dst_kind & 0xF;
    return c;
  }
};
static_assert(sizeof(CompactDeviceRecord) == 48);

// Everything else of the window (steps, strings, Python stacks, allocations,
// metadata) as the Window holds it. Privately a Window, so it cannot be
// passed where a Window is expected: its own host_events and device_records
// hide the Window's, which stay empty.
class CompactWindow : private Window {
 public:
  using Window::alloc_samples;
  using Window::collectives;
  using Window::communicators;
  using Window::devices;
  using Window::live_at_end;
  using Window::meta;
  using Window::nvtx_ranges;
  using Window::python;
  using Window::steps;
  using Window::tensor_memory;
  using Window::String;
  using Window::strings;
  using Window::thread_names;

  ChunkedVector<CompactHostEvent> host_events;        // sorted by start_ns
  ChunkedVector<CompactDeviceRecord> device_records;  // sorted by start_ns

  // The window without its calls and GPU records, for code that reads only
  // the rest (names, Python frames, configuration).
  const Window& rest() const { return *this; }

  // The same window, compact (tests, and callers that have a Window).
  static CompactWindow From(const Window& w) {
    CompactWindow c;
    static_cast<Window&>(c) = w;
    c.Window::host_events = {};
    c.Window::device_records = {};
    for (const HostEvent& e : w.host_events) c.host_events.push_back(CompactHostEvent::From(e));
    for (const DeviceRecord& r : w.device_records) c.device_records.push_back(CompactDeviceRecord::From(r));
    return c;
  }
};

// What code written for both kinds of window reads besides the records.
inline const Window& RestOf(const Window& w) { return w; }
inline const Window& RestOf(const CompactWindow& w) { return w.rest(); }

}  // namespace prof
