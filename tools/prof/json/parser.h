// The strict JSON reader itself (json/ only: other folders use parse.h and
// trace_stream.h). It reads from a ByteSource through a 1 MiB buffer, or from
// text in memory without a copy, and builds a JsonDoc with an explicit stack
// (no recursion, whatever the depth). parser.cpp holds values, containers
// and the buffer; parser_strings.cpp strings, escapes and UTF-8;
// parser_numbers.cpp the number grammar and its exact conversion.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/json_value.h"
#include "tools/prof/json/parse.h"

namespace prof::tool {

class JsonParser {
 public:
  explicit JsonParser(ByteSource* source) : source_(source), storage_(new char[kBufferBytes]), buf_(storage_.get()) {}
  // Parses text in memory: no buffer, no copy.
  explicit JsonParser(std::string_view text) : buf_(text.data()), end_(text.size()), eof_(true) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t consumed() const { return consumed_ + pos_; }

  // Next byte without consuming it; -1 at the end (or after an error).
  int Peek() {
    if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
    return Refill() ? static_cast<unsigned char>(buf_[pos_]) : -1;
  }
  int Get() {
    int c = Peek();
    if (c >= 0) ++pos_;
    return c;
  }
  void SkipWs() {
    for (;;) {
      while (pos_ < end_ && IsJsonSpace(buf_[pos_])) ++pos_;
      if (pos_ < end_ || !Refill()) return;
    }
  }
  bool Expect(char c, const char* what) {
    SkipWs();
    if (Get() != c) return Fail(std::string("expected ") + what);
    return true;
  }
  bool AtEnd() {
    SkipWs();
    return Peek() < 0 && !failed();
  }

  // Records the first error (the source's own, when it failed) and stops.
  bool Fail(const std::string& what);

  // Parses one whole value (any depth; an explicit stack, no recursion) into
  // `doc`, or only checks it when `doc` is null.
  bool ParseValue(JsonDoc* doc);

  // A string into `out` (decoded), or only checked when `out` is null.
  bool ParseString(std::string* out);

 private:
  struct Frame {
    uint32_t node;  // its node in doc_ (when building)
    bool object;
    bool empty;     // no member yet
  };

  // The buffer (parser.cpp): the next block from the source; the source
  // text of the value being built, kept in doc_->raw.
  bool Refill();
  void FlushCapture();
  uint32_t RawPos() const { return static_cast<uint32_t>(doc_->raw.size() + (pos_ - capture_from_)); }

  // Values and containers (parser.cpp).
  bool Literal(const char* word, size_t n);
  // Starts a node for the value at the current position (after whitespace).
  JsonDoc::Node* NewNode(JsonType type, uint32_t key_off, uint32_t key_len);
  void CloseNode(uint32_t index);
  bool ParseValueLoop();

  // Strings (parser_strings.cpp).
  bool ParseEscape(std::string* out);
  bool Hex4(uint32_t* cp);
  static void AppendUtf8(std::string* out, uint32_t cp);
  // RFC 3629: the well-formed sequences, as Unicode's table 3-7 lists them.
  bool ParseUtf8(int lead, std::string* out);

  // Numbers (parser_numbers.cpp).
  // The number grammar over [s, e): the token's length, or 0 when it is
  // malformed; `open` when it may continue past e.
  static size_t ScanNumber(const char* s, const char* e, bool* integer, bool* open);
  bool ParseNumber(JsonDoc::Node* node);
  // "-123.456": at most 15 digits and no exponent. Digits and the power of
  // ten are both exact in a double, so one division rounds correctly: the
  // same value a full conversion gives.
  static bool FastDecimal(std::string_view token, double* value);
  bool StoreNumber(std::string_view token, bool integer, JsonDoc::Node* node);

  static constexpr size_t kBufferBytes = 1 << 20;
  ByteSource* source_ = nullptr;
  std::unique_ptr<char[]> storage_;
  const char* buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
  std::string error_;
  JsonDoc* doc_ = nullptr;
  size_t capture_from_ = 0;
  std::vector<Frame> stack_;
  std::string token_;
};

}  // namespace prof::tool
