// A trace's values as a Window's fields want them, converted without
// undefined behaviour: a value a field cannot hold is treated as absent.
// What the window readers (window_reader.h, window_meta.h) read with.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "tools/prof/json/json_value.h"

namespace prof::tool {

// µs (possibly fractional, possibly absolute epoch µs) -> whole ns,
// saturating at INT64_MAX.
uint64_t ToNs(const JsonValue& us);

// As a document's get<int64_t>(): integers exactly (above INT64_MAX: modulo
// 2^64), fractions truncated; out-of-range floats give the fallback.
int64_t IntOf(const JsonValue& v, int64_t fallback);

// A number (or bool) converted to T as a static_cast would, when T can
// hold its integer part; otherwise `fallback`.
template <typename T>
T NumOf(const JsonValue& v, T fallback) {
  if (v.is_bool()) return static_cast<T>(v.boolean());
  if (!v.is_number()) return fallback;
  int64_t i;
  uint64_t u;
  if (v.is_integer() && v.ToInt64(&i)) return static_cast<T>(i);
  if (v.is_integer() && v.ToUint64(&u)) return static_cast<T>(u);
  double d = v.number();
  if constexpr (std::is_same_v<T, bool>) {
    return d != 0;
  } else {
    if (d > static_cast<double>(std::numeric_limits<T>::min()) - 1.0 &&
        d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0) {
      return static_cast<T>(d);
    }
    return fallback;
  }
}

// args.<key>, or an invalid value when absent or null.
JsonValue ArgOf(const JsonValue& e, const char* key);
template <typename T>
T Arg(const JsonValue& e, const char* key, T fallback) {
  return NumOf<T>(ArgOf(e, key), fallback);
}
std::string StrArg(const JsonValue& e, const char* key, const std::string& fallback);
bool BoolArg(const JsonValue& e, const char* key, bool fallback);

// Members of an object: the value when it has the type, else `fallback`.
std::string StrOf(const JsonValue& obj, const char* key, const std::string& fallback);
bool BoolOf(const JsonValue& obj, const char* key, bool fallback);
int64_t IntMember(const JsonValue& obj, const char* key, int64_t fallback);

// The i in [0, count) whose name_of(i) is `name` (as cuda_names.cpp spells
// them), or `fallback`.
template <typename NameOf>
uint8_t Lookup(const std::string& name, NameOf name_of, int count, uint8_t fallback) {
  for (int i = 0; i < count; ++i) {
    if (name == name_of(static_cast<uint8_t>(i))) return static_cast<uint8_t>(i);
  }
  return fallback;
}

// A CUDA function's name as its ApiId (ApiId::kCount when unknown).
uint16_t ApiOf(const std::string& name);

}  // namespace prof::tool
