// Fixed-width text tables in nsys stats' layout: right-aligned numeric
// columns, the last (name) column left-aligned, a dashed rule under headers.
#pragma once

#include <string>
#include <vector>

namespace prof {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// 1234567 -> "1,234,567"; 1234.5 -> "1,234.5" (nsys's number style).
std::string Grouped(unsigned long long value);
std::string Grouped(double value, int decimals);
// Nanoseconds as grouped milliseconds, as nsys prints times and the
// summary's and job's tables show them: 1234567891 -> "1,234.568".
std::string Ms(double ns, int decimals = 3);

}  // namespace prof
