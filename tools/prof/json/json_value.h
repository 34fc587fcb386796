// One parsed JSON value, held flat (JsonDoc), and a cheap read-only handle on
// any node of it (JsonValue): what the `prof` readers walk instead of a
// document parser's tree. The parser (parse.h, trace_stream.h) fills it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace prof::tool {

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

// One parsed value, flat: nodes in document order, each with the index one
// past its subtree, so walking it needs no recursion.
class JsonDoc {
 public:
  struct Node {
    JsonType type;
    bool boolean;   // kBool
    bool integer;   // kNumber written without fraction or exponent
    uint32_t end;   // one past the last node of this subtree
    uint32_t key_off, key_len;  // member name (decoded), when the parent is an object
    uint32_t str_off, str_len;  // kString: decoded text; kNumber: the token
    uint32_t raw_off, raw_len;  // the value's JSON text in raw()
    double number;  // kNumber
  };
  std::vector<Node> nodes;
  std::string text;  // decoded strings and number tokens
  std::string raw;   // the source text of the whole value
  void Clear() {
    nodes.clear();
    text.clear();
    raw.clear();
  }
};

// A read-only handle on one node of a JsonDoc. Cheap to copy.
class JsonValue {
 public:
  JsonValue() = default;
  JsonValue(const JsonDoc* doc, uint32_t index) : doc_(doc), i_(index) {}

  bool valid() const { return doc_ != nullptr; }
  JsonType type() const { return node().type; }
  bool is_null() const { return valid() && type() == JsonType::kNull; }
  bool is_bool() const { return valid() && type() == JsonType::kBool; }
  bool is_number() const { return valid() && type() == JsonType::kNumber; }
  bool is_integer() const { return is_number() && node().integer; }
  bool is_string() const { return valid() && type() == JsonType::kString; }
  bool is_array() const { return valid() && type() == JsonType::kArray; }
  bool is_object() const { return valid() && type() == JsonType::kObject; }

  bool boolean() const { return node().boolean; }
  double number() const { return node().number; }
  std::string_view str() const;  // kString: decoded; kNumber: the token as written
  std::string_view raw() const;  // the value's JSON text
  std::string_view key() const;  // member name

  // The member named `key` (the last one, as document parsers keep), or an
  // invalid value.
  JsonValue Get(std::string_view key) const;
  bool Has(std::string_view key) const { return Get(key).valid(); }
  bool IsString(std::string_view s) const { return is_string() && str() == s; }
  // String member or `fallback` (also when present but not a string).
  std::string_view StringOr(std::string_view key, std::string_view fallback) const;

  // Children, in order: for (JsonValue c = v.first(); c.valid(); c = v.next(c))
  JsonValue first() const;
  JsonValue next(JsonValue child) const;
  size_t size() const;  // number of children

  // Exact conversions without undefined behaviour: false when the value is
  // not a number or does not fit (a fraction counts as not fitting).
  bool ToInt64(int64_t* out) const;
  bool ToUint64(uint64_t* out) const;

  // The value as nlohmann::json::dump(-1, ' ', false, replace) writes it
  // (nested deeper than 256 levels: the source text, whitespace removed).
  // Defined in json_dump.cpp.
  std::string Dump() const;

  const JsonDoc* doc() const { return doc_; }
  uint32_t index() const { return i_; }

 private:
  const JsonDoc::Node& node() const { return doc_->nodes[i_]; }
  const JsonDoc* doc_ = nullptr;
  uint32_t i_ = 0;
};

}  // namespace prof::tool
