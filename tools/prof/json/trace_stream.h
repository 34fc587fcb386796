// Streams a trace file: the top-level object is read member by member, and
// each element of "traceEvents" is parsed into a small reusable JsonDoc,
// handed to the caller and dropped, so memory does not grow with the trace.
// One value held at a time (an event, or a top-level member other than
// traceEvents) is capped at kMaxValueBytes of source text (parse.h); the
// source caps the bytes once unpacked (byte_source.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/json_value.h"

namespace prof::tool {

// Reads a trace: the top-level value must be a JSON object for members to
// be reported; anything else is checked for syntax and reported as
// `root_is_object == false`.
class TraceStreamHandler {
 public:
  virtual ~TraceStreamHandler() = default;
  // A top-level member other than "traceEvents" (held whole: capped).
  virtual void Member(std::string_view key, const JsonValue& value) = 0;
  // "traceEvents": begins (is_array false when it is not an array: then no
  // events follow), each element, ends.
  virtual void EventsBegin(bool is_array) = 0;
  virtual void Event(uint64_t index, const JsonValue& event) = 0;
  virtual void EventsEnd(uint64_t count) = 0;
  // False: events are only checked for syntax and counted, never built.
  virtual bool WantsEvents() const { return true; }
};

struct TraceStreamResult {
  bool ok = false;             // strict JSON, read to the end
  bool root_is_object = false;
  std::string error;           // when !ok: one line
  uint64_t bytes = 0;          // JSON bytes read
};

TraceStreamResult StreamTrace(ByteSource* source, TraceStreamHandler* handler);

}  // namespace prof::tool
