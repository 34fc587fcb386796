// A streaming JSON writer: values go straight into a fixed 64 KiB buffer that
// drains into a ByteSink. No document tree, and no allocation per value, so
// the writer thread keeps up with millions of events per second.
//
// Strings are escaped so that any bytes give strict JSON: `"` and `\` are
// backslash-escaped, control characters become \n \t \r \b \f or \u00XX, and
// each byte that is not part of well-formed UTF-8 (stray continuation bytes,
// overlong forms, surrogates, code points past U+10FFFF, truncated sequences)
// becomes U+FFFD, the Unicode replacement character.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "exporters/files/byte_sink.h"

namespace prof {

class JsonWriter {
 public:
  explicit JsonWriter(ByteSink& sink) : sink_(sink) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  // Raw bytes, written as given (keys, punctuation). Inline fast path: most
  // are short literals that fit in the buffer.
  void Raw(std::string_view text) {
    if (text.size() <= kCapacity - len_) {
      std::memcpy(buffer_ + len_, text.data(), text.size());
      len_ += text.size();
    } else {
      RawSlow(text);
    }
  }
  void Char(char c) {
    if (len_ == kCapacity) Drain();
    buffer_[len_++] = c;
  }
  // A quoted, escaped JSON string.
  void String(std::string_view text);
  void Int(int64_t value);
  void UInt(uint64_t value);
  // Shortest round-trip form; NaN and infinities (not JSON) become 0.
  void Double(double value);
  // Nanoseconds as microseconds with exactly three decimals ("12.345").
  void Micros(uint64_t ns);
  void Bool(bool value) { Raw(value ? "true" : "false"); }

  // `"key":` — the key is trusted to need no escaping.
  void Key(std::string_view key) {
    Char('"');
    Raw(key);
    Raw("\":");
  }

  // Drains the buffer and finishes the sink; false if any write failed.
  bool Finish();
  bool ok() const { return ok_; }

 private:
  static constexpr size_t kCapacity = 1 << 16;
  void Drain();
  void RawSlow(std::string_view text);
  // Guarantees `n` (≤ 64) free bytes.
  void Reserve(size_t n) {
    if (kCapacity - len_ < n) Drain();
  }

  ByteSink& sink_;
  size_t len_ = 0;
  bool ok_ = true;
  char buffer_[kCapacity];
};

// Appends the escaped form of `text` (without quotes) to `out`; for tests and
// the summary's names.
void AppendJsonEscaped(std::string_view text, std::string* out);

}  // namespace prof
