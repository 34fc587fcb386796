#include "tools/prof/json/json_dump.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "tools/prof/json/parse.h"

namespace prof::tool {
namespace {

// `v` as nlohmann dumps it into `out`; false deeper than 256 levels.
bool DumpInto(const JsonValue& v, std::string* out, int depth) {
  if (depth > 256) return false;
  switch (v.type()) {
    case JsonType::kNull: *out += "null"; return true;
    case JsonType::kBool: *out += v.boolean() ? "true" : "false"; return true;
    case JsonType::kString: AppendJsonString(out, v.str()); return true;
    case JsonType::kNumber: {
      int64_t i;
      uint64_t u;
      if (v.is_integer() && v.ToInt64(&i)) {
        *out += std::to_string(i);
      } else if (v.is_integer() && v.ToUint64(&u)) {
        *out += std::to_string(u);
      } else {
        AppendJsonDouble(out, v.number());
      }
      return true;
    }
    case JsonType::kArray: {
      *out += '[';
      bool first = true;
      for (JsonValue c = v.first(); c.valid(); c = v.next(c)) {
        if (!first) *out += ',';
        first = false;
        if (!DumpInto(c, out, depth + 1)) return false;
      }
      *out += ']';
      return true;
    }
    case JsonType::kObject: {
      // Sorted names, the last of duplicates: nlohmann's std::map.
      std::map<std::string_view, JsonValue> members;
      for (JsonValue c = v.first(); c.valid(); c = v.next(c)) members[c.key()] = c;
      *out += '{';
      bool first = true;
      for (const auto& [key, c] : members) {
        if (!first) *out += ',';
        first = false;
        AppendJsonString(out, key);
        *out += ':';
        if (!DumpInto(c, out, depth + 1)) return false;
      }
      *out += '}';
      return true;
    }
  }
  return false;
}

}  // namespace

std::string JsonValue::Dump() const {
  std::string out;
  if (DumpInto(*this, &out, 0)) return out;
  // Too deep to mirror: the source text without insignificant whitespace.
  out.clear();
  bool in_string = false, escaped = false;
  for (char c : raw()) {
    if (in_string) {
      out += c;
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (!IsJsonSpace(c)) {
      out += c;
      in_string = c == '"';
    }
  }
  return out;
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    const char* escape = nullptr;
    char hex[8];
    switch (c) {
      case '"': escape = "\\\""; break;
      case '\\': escape = "\\\\"; break;
      case '\b': escape = "\\b"; break;
      case '\f': escape = "\\f"; break;
      case '\n': escape = "\\n"; break;
      case '\r': escape = "\\r"; break;
      case '\t': escape = "\\t"; break;
      default:
        if (c < 0x20) {
          std::snprintf(hex, sizeof(hex), "\\u%04x", c);
          escape = hex;
        }
    }
    if (escape) {
      out->append(s.data() + run, i - run);
      *out += escape;
      run = i + 1;
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void AppendJsonDouble(std::string* out, double v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buffer[64];
  char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof(buffer), v);
  out->append(buffer, static_cast<size_t>(end - buffer));
}

}  // namespace prof::tool
