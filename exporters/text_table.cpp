#include "exporters/text_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace prof {
namespace {

// Display width: count UTF-8 lead bytes, not bytes ("µs" is two bytes).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

namespace {

// value's digits with a comma every three, appended to out.
void AppendGrouped(unsigned long long value, std::string* out) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  (void)ec;  // 20 digits at most: always fits
  size_t n = static_cast<size_t>(end - digits);
  out->reserve(out->size() + n + n / 3);
  for (size_t i = 0; i < n; ++i) {
    if (i && (n - i) % 3 == 0) out->push_back(',');
    out->push_back(digits[i]);
  }
}

}  // namespace

std::string Grouped(unsigned long long value) {
  std::string out;
  AppendGrouped(value, &out);
  return out;
}

std::string Grouped(double value, int decimals) {
  // Called for most cells of a summary: no pow() or snprintf() per number.
  static constexpr double kPowers[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  if (!std::isfinite(value)) value = 0;
  bool negative = value < 0;
  double scale = decimals >= 0 && decimals <= 9 ? kPowers[decimals] : std::pow(10.0, decimals);
  double rounded = std::round(std::fabs(value) * scale);
  auto whole = static_cast<unsigned long long>(rounded / scale);
  auto frac = static_cast<unsigned long long>(rounded - static_cast<double>(whole) * scale);
  std::string out = negative ? "-" : "";
  AppendGrouped(whole, &out);
  if (decimals > 0) {
    // ".%0*llu": the fraction's digits, zero-padded to `decimals`.
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), frac);
    (void)ec;
    size_t n = static_cast<size_t>(end - digits);
    out.push_back('.');
    if (n < static_cast<size_t>(decimals)) out.append(static_cast<size_t>(decimals) - n, '0');
    out.append(digits, n);
  }
  return out;
}

std::string TextTable::Render() const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = Width(headers_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], Width(row[c]));
  }
  // Appends one line in place (a summary renders thousands of cells per
  // window: no temporary string per cell or line).
  auto line = [&](const std::vector<std::string>& cells, std::string* out) {
    static const std::string kEmpty;
    size_t begin = out->size();
    out->push_back(' ');
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string& cell = c < cells.size() ? cells[c] : kEmpty;
      bool last = c + 1 == widths.size();
      if (!last) out->append(widths[c] - std::min(widths[c], Width(cell)), ' ');
      out->append(cell);
      if (!last) out->append("  ");
    }
    while (out->size() > begin && out->back() == ' ') out->pop_back();
    out->push_back('\n');
  };
  std::string out;
  line(headers_, &out);
  std::vector<std::string> rule;
  // The last (name) column is not padded; its rule stops at 40 so one long
  // kernel name does not draw a rule across the screen.
  for (size_t c = 0; c < widths.size(); ++c) {
    rule.push_back(std::string(c + 1 == widths.size() ? std::min<size_t>(widths[c], 40) : widths[c], '-'));
  }
  line(rule, &out);
  for (const auto& row : rows_) line(row, &out);
  return out;
}

}  // namespace prof
