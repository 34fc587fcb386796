// Internal to the Chrome trace exporter (chrome_trace*.cpp): the event
// stream the parts share, and the parts that are not slices.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "model/window.h"
#include "exporters/common/cuda_names.h"
#include "exporters/common/json_writer.h"

namespace prof::chrome {

// The writer plus what every event needs: the time base (timestamps are µs
// after it, never negative) and the comma between events.
class EventStream {
 public:
  EventStream(JsonWriter& writer, uint64_t base_ns) : out(writer), base_ns_(base_ns) {}

  // Starts the next element of traceEvents.
  void Begin() {
    out.Raw(first_ ? "  {" : ",\n  {");
    first_ = false;
  }
  void Ts(uint64_t ns) { out.Micros(ns > base_ns_ ? ns - base_ns_ : 0); }
  int64_t Rel(uint64_t ns) const { return static_cast<int64_t>(ns) - static_cast<int64_t>(base_ns_); }
  uint64_t base_ns() const { return base_ns_; }

  JsonWriter& out;

 private:
  uint64_t base_ns_;
  bool first_ = true;
};

// The earliest known time in the window (agent clock), 0 when empty.
uint64_t TimeBase(const Window& w);

// Synchronization records without a stream (context sync) go on tid 0.
inline uint32_t StreamTid(const DeviceRecord& r) { return r.stream_id == kCuptiInvalidStream ? 0 : r.stream_id; }

// deviceProperties, distributedInfo and the "libprof" block, each followed
// by ",\n".
void WriteHeader(const Window& w, EventStream& s);
// process_name/labels/sort_index and thread_name/sort_index events.
void WriteProcessMetadata(const Window& w, EventStream& s);
// [memory] instants and the allocated-bytes counters.
void WriteMemoryEvents(const Window& w, EventStream& s);

// The args of a kernel event that follow from its launch shape alone
// (`,"registers per thread":..` through the grid, block and occupancy),
// formatted once per distinct shape: a window repeats a handful of shapes,
// and the occupancy doubles cost a shortest-form conversion each.
class KernelArgs {
 public:
  explicit KernelArgs(const Window& w) : w_(w) {}
  const std::string& operator()(const DeviceRecord& kernel);

 private:
  // Everything the text depends on (ComputeOccupancy's inputs included).
  struct Shape {
    uint32_t device = 0;
    int32_t grid[3] = {};
    int32_t block[3] = {};
    uint32_t registers = 0;
    uint64_t shared_bytes = 0;
    bool operator==(const Shape&) const = default;
  };
  struct ShapeHash {
    size_t operator()(const Shape& s) const;
  };
  static Shape ShapeOf(const DeviceRecord& r);
  std::string Format(const DeviceRecord& r) const;

  const Window& w_;
  std::unordered_map<Shape, std::string, ShapeHash> cache_;
  Shape last_shape_;
  const std::string* last_ = nullptr;
};

}  // namespace prof::chrome
