// JSON text written byte for byte as nlohmann::json::dump(-1, ' ', false,
// replace) writes it, so what `prof` rewrites (merge) or names in messages
// (validate) reads as a document writer's output. JsonValue::Dump is
// defined here too.
#pragma once

#include <string>
#include <string_view>

#include "tools/prof/json/json_value.h"

namespace prof::tool {

// Writes `s` as a JSON string literal the way nlohmann::json::dump does
// (ensure_ascii off): quotes, backslash and control characters escaped.
void AppendJsonString(std::string* out, std::string_view s);
// Writes a double the way nlohmann::json::dump does ("1.5", "2.0", "1e+20").
void AppendJsonDouble(std::string* out, double v);

}  // namespace prof::tool
