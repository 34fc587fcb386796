#include "tools/prof/json/parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace prof::tool {

size_t JsonParser::ScanNumber(const char* s, const char* e, bool* integer, bool* open) {
  const char* p = s;
  *open = false;
  *integer = true;
  auto digit = [&]() { return p < e && *p >= '0' && *p <= '9'; };
  auto at_end = [&]() { return p == e ? (*open = true) : false; };
  if (p < e && *p == '-') ++p;
  if (at_end()) return 0;
  if (*p == '0') {
    ++p;
  } else if (digit()) {
    while (digit()) ++p;
  } else {
    return 0;
  }
  if (at_end()) return 0;
  if (*p == '.') {
    *integer = false;
    ++p;
    if (!digit()) return at_end(), 0;
    while (digit()) ++p;
    if (at_end()) return 0;
  }
  if (*p == 'e' || *p == 'E') {
    *integer = false;
    ++p;
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (!digit()) return at_end(), 0;
    while (digit()) ++p;
    if (at_end()) return 0;
  }
  return static_cast<size_t>(p - s);
}

bool JsonParser::ParseNumber(JsonDoc::Node* node) {
  bool integer, open;
  size_t n = ScanNumber(buf_ + pos_, buf_ + end_, &integer, &open);
  if (!open) {
    if (n == 0) return Fail("invalid number");
    std::string_view token(buf_ + pos_, n);
    pos_ += n;
    return StoreNumber(token, integer, node);
  }
  // The token runs past the buffer (or the input ends inside it).
  token_.clear();
  auto digits = [this]() {
    size_t count = 0;
    for (int c = Peek(); c >= '0' && c <= '9'; c = Peek()) token_.push_back(static_cast<char>(Get())), ++count;
    return count;
  };
  if (Peek() == '-') token_.push_back(static_cast<char>(Get()));
  int first = Peek();
  if (first == '0') {
    token_.push_back(static_cast<char>(Get()));
  } else if (first >= '1' && first <= '9') {
    digits();
  } else {
    return Fail("invalid number");
  }
  integer = true;
  if (Peek() == '.') {
    integer = false;
    token_.push_back(static_cast<char>(Get()));
    if (digits() == 0) return Fail("invalid number");
  }
  if (Peek() == 'e' || Peek() == 'E') {
    integer = false;
    token_.push_back(static_cast<char>(Get()));
    if (Peek() == '+' || Peek() == '-') token_.push_back(static_cast<char>(Get()));
    if (digits() == 0) return Fail("invalid number");
  }
  std::string token = token_;
  return StoreNumber(token, integer, node);
}

bool JsonParser::FastDecimal(std::string_view token, double* value) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  bool negative = token[0] == '-';
  int64_t mantissa = 0;
  int digits = 0, decimals = -1;
  for (size_t i = negative; i < token.size(); ++i) {
    char c = token[i];
    if (c == '.') {
      decimals = 0;
      continue;
    }
    if (c < '0' || c > '9' || ++digits > 15) return false;
    mantissa = mantissa * 10 + (c - '0');
    if (decimals >= 0) ++decimals;
  }
  double v = static_cast<double>(mantissa);
  if (decimals > 0) v /= kPow10[decimals];
  *value = negative ? -v : v;
  return true;
}

bool JsonParser::StoreNumber(std::string_view token, bool integer, JsonDoc::Node* node) {
  double value = 0;
  size_t digits = token.size() - (token[0] == '-');
  if (integer && digits <= 15) {
    // Exact in a double: no conversion routine needed.
    int64_t v = 0;
    for (char c : token.substr(token[0] == '-')) v = v * 10 + (c - '0');
    value = static_cast<double>(token[0] == '-' ? -v : v);
  } else if (!FastDecimal(token, &value)) {
    auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    (void)ptr;
    if (ec == std::errc::result_out_of_range) {
      // Underflow rounds to zero (as strtod); overflow is refused, as
      // nlohmann's parser refuses it.
      std::string copy(token);
      value = std::strtod(copy.c_str(), nullptr);
      if (!std::isfinite(value)) return Fail("number overflow: " + copy);
    } else if (ec != std::errc() || !std::isfinite(value)) {
      return Fail("number overflow: " + std::string(token));
    }
  }
  if (node) {
    node->integer = integer;
    node->number = value;
    node->str_off = static_cast<uint32_t>(doc_->text.size());
    node->str_len = static_cast<uint32_t>(token.size());
    doc_->text += token;
  }
  return true;
}

}  // namespace prof::tool
