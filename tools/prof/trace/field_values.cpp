#include "tools/prof/trace/field_values.h"

#include <algorithm>
#include <cmath>

#include "model/api_ids.h"

namespace prof::tool {

uint64_t ToNs(const JsonValue& us) {
  if (!us.is_number()) return 0;
  uint64_t u;
  int64_t i;
  if (us.is_integer() && us.ToUint64(&u)) return u * 1000;  // wraps as before for > 1.8e16 µs
  if (us.is_integer() && us.ToInt64(&i)) return 0;         // negative
  double ns = std::max(0.0, us.number()) * 1000.0;
  if (!(ns < 9.2e18)) return static_cast<uint64_t>(INT64_MAX);
  return static_cast<uint64_t>(std::llround(ns));
}

int64_t IntOf(const JsonValue& v, int64_t fallback) {
  if (!v.is_number()) return fallback;
  int64_t i;
  uint64_t u;
  if (v.is_integer() && v.ToInt64(&i)) return i;
  if (v.is_integer() && v.ToUint64(&u)) return static_cast<int64_t>(u);
  double d = v.number();
  if (d > -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  return fallback;
}

JsonValue ArgOf(const JsonValue& e, const char* key) {
  JsonValue args = e.Get("args");
  if (!args.is_object()) return {};
  JsonValue v = args.Get(key);
  return v.is_null() ? JsonValue() : v;
}
std::string StrArg(const JsonValue& e, const char* key, const std::string& fallback) {
  JsonValue v = ArgOf(e, key);
  return v.is_string() ? std::string(v.str()) : fallback;
}
bool BoolArg(const JsonValue& e, const char* key, bool fallback) {
  JsonValue v = ArgOf(e, key);
  return v.is_bool() ? v.boolean() : fallback;
}
std::string StrOf(const JsonValue& obj, const char* key, const std::string& fallback) {
  JsonValue v = obj.Get(key);
  return v.is_string() ? std::string(v.str()) : fallback;
}
bool BoolOf(const JsonValue& obj, const char* key, bool fallback) {
  JsonValue v = obj.Get(key);
  return v.is_bool() ? v.boolean() : fallback;
}
int64_t IntMember(const JsonValue& obj, const char* key, int64_t fallback) {
  JsonValue v = obj.Get(key);
  return v.valid() ? IntOf(v, fallback) : fallback;
}

uint16_t ApiOf(const std::string& name) {
  ApiId id = ApiId::kCount;
  ApiFromName(name, &id);
  return static_cast<uint16_t>(id);
}

}  // namespace prof::tool
