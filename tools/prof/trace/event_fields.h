// The types a trace event's placement fields must have, shared by `prof
// validate` (rule field-types), `prof summary` and `prof merge` (which skip
// such events and say how many): "pid" and "tid" are an integer or a string
// (Kineto writes strings such as "Spans"), "ts" and "dur" are numbers.
// A field that is absent is not a type error (rule event-fields covers it).
#pragma once

#include <cstdint>
#include <string>

#include "tools/prof/json/json_value.h"

namespace prof::tool {

// The first of pid, tid, ts, dur whose type is wrong in event `e` (an
// object), or nullptr when all present ones have their type.
const char* WrongTypedField(const JsonValue& e);

// "event #12 (ph=\"X\" cat=... name=... pid=... tid=... ts=... id=...)":
// how messages name an event (each value cut at 80 characters).
std::string DescribeEvent(const JsonValue& e, uint64_t index);

// "event #3 (...) has pid=[[1]], not an integer or a string".
std::string WrongTypeMessage(const JsonValue& e, uint64_t index, const char* field);

// Events skipped by a reader because WrongTypedField named a field: how
// many, and the first one's WrongTypeMessage.
struct SkippedEvents {
  uint64_t count = 0;
  std::string first;
  void Add(const JsonValue& e, uint64_t index, const char* field);
  // "2 events skipped: pid, tid, ts or dur of the wrong type (first: ...)"; "" when none.
  std::string Sentence() const;
};

}  // namespace prof::tool
