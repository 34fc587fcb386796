#include "tools/prof/json/json_value.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace prof::tool {

std::string_view JsonValue::str() const {
  const JsonDoc::Node& n = node();
  return std::string_view(doc_->text).substr(n.str_off, n.str_len);
}
std::string_view JsonValue::raw() const {
  const JsonDoc::Node& n = node();
  return std::string_view(doc_->raw).substr(n.raw_off, n.raw_len);
}
std::string_view JsonValue::key() const {
  const JsonDoc::Node& n = node();
  return std::string_view(doc_->text).substr(n.key_off, n.key_len);
}

JsonValue JsonValue::first() const {
  if (!valid() || (type() != JsonType::kArray && type() != JsonType::kObject)) return {};
  return i_ + 1 < node().end ? JsonValue(doc_, i_ + 1) : JsonValue();
}
JsonValue JsonValue::next(JsonValue child) const {
  uint32_t n = doc_->nodes[child.i_].end;
  return n < node().end ? JsonValue(doc_, n) : JsonValue();
}
size_t JsonValue::size() const {
  size_t n = 0;
  for (JsonValue c = first(); c.valid(); c = next(c)) ++n;
  return n;
}
JsonValue JsonValue::Get(std::string_view key) const {
  if (!is_object()) return {};
  // On the nodes directly, lengths first: an event's handful of members is
  // looked up for every field a reader or the validator asks for.
  const std::vector<JsonDoc::Node>& nodes = doc_->nodes;
  const char* text = doc_->text.data();
  uint32_t found = 0;
  for (uint32_t c = i_ + 1, end = nodes[i_].end; c < end; c = nodes[c].end) {
    const JsonDoc::Node& n = nodes[c];
    if (n.key_len == key.size() && (key.empty() || (text[n.key_off] == key[0] &&
                                                      std::memcmp(text + n.key_off, key.data(), key.size()) == 0))) {
      found = c;
    }
  }
  return found != 0 ? JsonValue(doc_, found) : JsonValue();
}
std::string_view JsonValue::StringOr(std::string_view key, std::string_view fallback) const {
  JsonValue v = Get(key);
  return v.is_string() ? v.str() : fallback;
}

bool JsonValue::ToInt64(int64_t* out) const {
  if (!is_number()) return false;
  if (node().integer) {
    std::string_view t = str();
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
    return ec == std::errc() && ptr == t.data() + t.size();
  }
  double d = number();
  // Exactly representable range: [-2^63, 2^63).
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::trunc(d)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}
bool JsonValue::ToUint64(uint64_t* out) const {
  if (!is_number()) return false;
  if (node().integer) {
    std::string_view t = str();
    if (t == "-0") return *out = 0, true;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
    return ec == std::errc() && ptr == t.data() + t.size();
  }
  double d = number();
  if (!(d >= 0 && d < 18446744073709551616.0) || d != std::trunc(d)) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

}  // namespace prof::tool
