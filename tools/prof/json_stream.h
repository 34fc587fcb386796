// A strict, streaming, iterative JSON reader for trace files. The `prof`
// readers use it instead of a document parser so that memory does not grow
// with the trace: the top-level object is read member by member, and each
// element of "traceEvents" is parsed into a small reusable JsonDoc, handed
// to the caller and dropped.
//
// What it accepts is exactly RFC 8259 JSON, as nlohmann::json::parse does
// with comments off: no trailing commas, no comments, valid UTF-8 in strings,
// paired surrogates in \u escapes, numbers that fit a double, nothing after
// the top-level value. Nesting depth costs heap (an explicit stack), never
// the call stack. One value held at a time (an event, or a top-level member
// other than traceEvents) is capped at kMaxValueBytes of source text; an
// input larger than `max_unpacked_bytes` after gzip is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prof::tool {

// Largest single value (one event, or a top-level member such as "libprof")
// the reader holds, in bytes of JSON text.
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;
// Default cap on a file's size once gunzipped (`--max-unpacked-mb`).
inline constexpr uint64_t kDefaultMaxUnpackedBytes = uint64_t{16} << 30;

// Where bytes come from: a file (plain or gzip, told by its first bytes) or
// memory. Read returns the number of bytes read, 0 at the end, -1 on error.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual long Read(char* buffer, size_t size) = 0;
  virtual const std::string& error() const = 0;
};

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, uint64_t max_unpacked_bytes, std::string* error);
std::unique_ptr<ByteSource> MemorySource(std::string_view bytes);

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
  std::string Dump() const;

  const JsonDoc* doc() const { return doc_; }
  uint32_t index() const { return i_; }

 private:
  const JsonDoc::Node& node() const { return doc_->nodes[i_]; }
  const JsonDoc* doc_ = nullptr;
  uint32_t i_ = 0;
};

// Parses a whole value held in memory (tests, fuzzing, small documents).
bool ParseJson(std::string_view text, JsonDoc* doc, std::string* error);

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

// Writes `s` as a JSON string literal the way nlohmann::json::dump does
// (ensure_ascii off): quotes, backslash and control characters escaped.
void AppendJsonString(std::string* out, std::string_view s);
// Writes a double the way nlohmann::json::dump does ("1.5", "2.0", "1e+20").
void AppendJsonDouble(std::string* out, double v);

}  // namespace prof::tool
