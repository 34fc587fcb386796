#include "exporters/common/json_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace prof {
namespace {

// Bytes that cannot appear raw inside a JSON string, or start a multi-byte
// sequence that must be checked.
inline bool NeedsCare(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80; }

// Length of the well-formed UTF-8 sequence at s (RFC 3629 table), 0 if none.
size_t Utf8SequenceLength(const unsigned char* s, size_t avail) {
  unsigned char c = s[0];
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < avail && s[i] >= lo && s[i] <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Writes the escape for one byte that NeedsCare and is not valid UTF-8 start;
// returns the number of bytes written into out (≤ 6).
size_t EscapeByte(unsigned char c, char* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (c) {
    case '"': std::memcpy(out, "\\\"", 2); return 2;
    case '\\': std::memcpy(out, "\\\\", 2); return 2;
    case '\n': std::memcpy(out, "\\n", 2); return 2;
    case '\r': std::memcpy(out, "\\r", 2); return 2;
    case '\t': std::memcpy(out, "\\t", 2); return 2;
    case '\b': std::memcpy(out, "\\b", 2); return 2;
    case '\f': std::memcpy(out, "\\f", 2); return 2;
    default: break;
  }
  if (c < 0x20) {
    std::memcpy(out, "\\u00", 4);
    out[4] = kHex[c >> 4];
    out[5] = kHex[c & 0xF];
    return 6;
  }
  std::memcpy(out, kReplacement, 3);
  return 3;
}

// Calls emit(ptr, len) for successive pieces of the escaped text.
template <typename Emit>
void Escape(std::string_view text, Emit&& emit) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  size_t run = 0;  // start of the pending run of bytes that need no care
  size_t i = 0;
  while (i < n) {
    if (!NeedsCare(s[i])) {
      ++i;
      continue;
    }
    if (s[i] >= 0x80) {
      size_t len = Utf8SequenceLength(s + i, n - i);
      if (len > 0) {
        i += len;
        continue;
      }
    }
    if (i > run) emit(text.data() + run, i - run);
    char escaped[8];
    emit(escaped, EscapeByte(s[i], escaped));
    run = ++i;
  }
  if (n > run) emit(text.data() + run, n - run);
}

}  // namespace

void JsonWriter::Drain() {
  if (len_ > 0 && ok_) ok_ = sink_.Append(buffer_, len_);
  len_ = 0;
}

void JsonWriter::RawSlow(std::string_view text) {
  while (!text.empty()) {
    if (len_ == kCapacity) Drain();
    size_t take = std::min(text.size(), kCapacity - len_);
    std::memcpy(buffer_ + len_, text.data(), take);
    len_ += take;
    text.remove_prefix(take);
  }
}

void JsonWriter::String(std::string_view text) {
  Char('"');
  Escape(text, [this](const char* p, size_t len) { Raw(std::string_view(p, len)); });
  Char('"');
}

namespace {

// Decimal digits of `v` at `out`; returns the end. Two digits per division
// from a table: the same digits as std::to_chars.
char* WriteDecimal(uint64_t v, char* out) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  static constexpr uint64_t kPow10[20] = {1ull,
                                          10ull,
                                          100ull,
                                          1000ull,
                                          10000ull,
                                          100000ull,
                                          1000000ull,
                                          10000000ull,
                                          100000000ull,
                                          1000000000ull,
                                          10000000000ull,
                                          100000000000ull,
                                          1000000000000ull,
                                          10000000000000ull,
                                          100000000000000ull,
                                          1000000000000000ull,
                                          10000000000000000ull,
                                          100000000000000000ull,
                                          1000000000000000000ull,
                                          10000000000000000000ull};
  // The digits are counted first (from the bit length: 1233/4096 is just
  // above log10(2)), then written in place from the last one: no scratch
  // copy, which was a memcpy call per number.
  uint64_t odd = v | 1;  // the same count as v's (powers of ten past 1 are even), and never 0
  int t = ((64 - __builtin_clzll(odd)) * 1233) >> 12;
  int digits = t - (odd < kPow10[t]) + 1;
  char* end = out + digits;
  char* p = end;
  while (v >= 100) {
    p -= 2;
    std::memcpy(p, kPairs + (v % 100) * 2, 2);
    v /= 100;
  }
  if (v >= 10) {
    p -= 2;
    std::memcpy(p, kPairs + v * 2, 2);
  } else {
    *--p = static_cast<char>('0' + v);
  }
  return end;
}

}  // namespace

void JsonWriter::Int(int64_t value) {
  Reserve(24);
  char* p = buffer_ + len_;
  uint64_t magnitude = static_cast<uint64_t>(value);
  if (value < 0) {
    *p++ = '-';
    magnitude = 0 - magnitude;  // well defined for INT64_MIN too
  }
  len_ = static_cast<size_t>(WriteDecimal(magnitude, p) - buffer_);
}

void JsonWriter::UInt(uint64_t value) {
  Reserve(24);
  len_ = static_cast<size_t>(WriteDecimal(value, buffer_ + len_) - buffer_);
}

void JsonWriter::Double(double value) {
  if (!std::isfinite(value)) value = 0;
  Reserve(32);
  len_ = static_cast<size_t>(std::to_chars(buffer_ + len_, buffer_ + kCapacity, value).ptr - buffer_);
}

void JsonWriter::Micros(uint64_t ns) {
  Reserve(32);
  char* p = WriteDecimal(ns / 1000, buffer_ + len_);
  uint64_t frac = ns % 1000;
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  len_ = static_cast<size_t>(p + 4 - buffer_);
}

bool JsonWriter::Finish() {
  Drain();
  if (ok_) ok_ = sink_.Finish();
  return ok_;
}

void AppendJsonEscaped(std::string_view text, std::string* out) {
  Escape(text, [out](const char* p, size_t len) { out->append(p, len); });
}

}  // namespace prof
