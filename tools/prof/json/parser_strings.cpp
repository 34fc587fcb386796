#include "tools/prof/json/parser.h"

namespace prof::tool {

bool JsonParser::ParseString(std::string* out) {
  if (Get() != '"') return Fail("expected a string");
  for (;;) {
    // Fast path: a run of plain ASCII inside the buffer.
    size_t start = pos_;
    while (pos_ < end_) {
      unsigned char c = static_cast<unsigned char>(buf_[pos_]);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++pos_;
    }
    if (out) {
      out->append(buf_ + start, pos_ - start);
      if (out->size() > kMaxValueBytes) return Fail("a string longer than " + std::to_string(kMaxValueBytes >> 20) + " MB");
    }
    int c = Get();
    if (c < 0) return Fail("unterminated string");
    if (c == '"') return true;
    if (c < 0x20) return Fail("control character in a string");
    if (c == '\\') {
      if (!ParseEscape(out)) return false;
    } else if (c >= 0x80) {
      if (!ParseUtf8(c, out)) return false;
    } else if (out) {
      out->push_back(static_cast<char>(c));  // the fast path stopped at the buffer's end
    }
  }
}

bool JsonParser::ParseEscape(std::string* out) {
  int c = Get();
  char plain;
  // json_dump.cpp's escape table the other way: a table as a switch, one case per escape.
  switch (c) {
    case '"': plain = '"'; break;
    case '\\': plain = '\\'; break;
    case '/': plain = '/'; break;
    case 'b': plain = '\b'; break;
    case 'f': plain = '\f'; break;
    case 'n': plain = '\n'; break;
    case 'r': plain = '\r'; break;
    case 't': plain = '\t'; break;
    case 'u': {
      uint32_t cp;
      if (!Hex4(&cp)) return false;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone low surrogate in \\u escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low;
        if (Get() != '\\' || Get() != 'u' || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
          return Fail("high surrogate not followed by a low surrogate");
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      if (out) AppendUtf8(out, cp);
      return true;
    }
    default:
      return Fail("invalid escape in a string");
  }
  if (out) out->push_back(plain);
  return true;
}

bool JsonParser::Hex4(uint32_t* cp) {
  *cp = 0;
  for (int i = 0; i < 4; ++i) {
    int c = Get();
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return Fail("invalid \\u escape");
    *cp = *cp << 4 | static_cast<uint32_t>(v);
  }
  return true;
}

void JsonParser::AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | cp >> 12));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | cp >> 18));
    out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool JsonParser::ParseUtf8(int lead, std::string* out) {
  int more;
  int lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    more = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    more = 2;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    more = 3;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return Fail("invalid UTF-8 in a string");
  }
  char bytes[4] = {static_cast<char>(lead)};
  for (int i = 1; i <= more; ++i) {
    int c = Get();
    if (c < lo || c > hi) return Fail("invalid UTF-8 in a string");
    lo = 0x80, hi = 0xBF;
    bytes[i] = static_cast<char>(c);
  }
  if (out) out->append(bytes, static_cast<size_t>(more + 1));
  return true;
}

}  // namespace prof::tool
