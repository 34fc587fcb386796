#include "exporters/summary/text_table.h"

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

std::string Ms(double ns, int decimals) { return Grouped(ns / 1e6, decimals); }

std::string TextTable::Render() const {
  size_t columns = headers_.size();
  // Each cell's display width, measured once (it sizes the column and pads
  // the cell): header row first, then the rows, `columns` per row.
  std::vector<size_t> cell_widths;
  cell_widths.reserve((rows_.size() + 1) * columns);
  std::vector<size_t> widths(columns);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < columns; ++c) {
      size_t w = c < cells.size() ? Width(cells[c]) : 0;
      cell_widths.push_back(w);
      widths[c] = std::max(widths[c], w);
    }
  };
  measure(headers_);
  for (const auto& row : rows_) measure(row);
  size_t line_bytes = 2;
  for (size_t w : widths) line_bytes += w + 2;
  // Appends one line in place (a summary renders thousands of cells per
  // window: no temporary string per cell or line); bytes past the display
  // width (UTF-8) only make a line longer than reserved.
  auto line = [&](const std::vector<std::string>& cells, const size_t* cell_width, std::string* out) {
    static const std::string kEmpty;
    size_t begin = out->size();
    out->push_back(' ');
    for (size_t c = 0; c < columns; ++c) {
      const std::string& cell = c < cells.size() ? cells[c] : kEmpty;
      bool last = c + 1 == columns;
      if (!last) out->append(widths[c] - std::min(widths[c], cell_width[c]), ' ');
      out->append(cell);
      if (!last) out->append("  ");
    }
    while (out->size() > begin && out->back() == ' ') out->pop_back();
    out->push_back('\n');
  };
  std::string out;
  out.reserve(line_bytes * (rows_.size() + 2));
  line(headers_, cell_widths.data(), &out);
  std::vector<std::string> rule;
  std::vector<size_t> rule_widths;
  // The last (name) column is not padded; its rule stops at 40 so one long
  // kernel name does not draw a rule across the screen.
  for (size_t c = 0; c < columns; ++c) {
    rule.push_back(std::string(c + 1 == columns ? std::min<size_t>(widths[c], 40) : widths[c], '-'));
    rule_widths.push_back(rule.back().size());
  }
  line(rule, rule_widths.data(), &out);
  for (size_t r = 0; r < rows_.size(); ++r) line(rows_[r], cell_widths.data() + (r + 1) * columns, &out);
  return out;
}

}  // namespace prof
