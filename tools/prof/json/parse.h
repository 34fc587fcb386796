// The strict JSON reader's public face for a value held in memory, and the
// cap on what one parsed value may hold. What it accepts is exactly RFC 8259
// JSON, as nlohmann::json::parse does with comments off: no trailing commas,
// no comments, valid UTF-8 in strings, paired surrogates in \u escapes,
// numbers that fit a double, nothing after the top-level value. Nesting depth
// costs heap (an explicit stack), never the call stack.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tools/prof/json/json_value.h"

namespace prof::tool {

// Largest single value (one event, or a top-level member such as "libprof")
// the reader holds, in bytes of JSON text.
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;

// JSON's insignificant whitespace.
inline bool IsJsonSpace(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Parses a whole value held in memory (tests, fuzzing, small documents).
bool ParseJson(std::string_view text, JsonDoc* doc, std::string* error);

}  // namespace prof::tool
