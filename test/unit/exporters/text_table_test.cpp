// The summary's fixed-width tables: right-aligned columns by display width
// (UTF-8), the last column left as it is, the rule under the headers capped
// at 40 in the last column, missing cells empty, cells past the headers
// ignored, trailing spaces trimmed (a row of empty cells is an empty line).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "exporters/summary/text_table.h"

namespace prof {
namespace {

TEST_CASE("a text table pads by display width, trims each line and caps the last rule at 40", "[text_table]") {
  TextTable t({"Time (%)", "Instances", "Name"});
  t.AddRow({"12.5", "1,234", "\xC2\xB5s_kernel"});  // "µs_kernel": 9 columns, 10 bytes
  t.AddRow({"7", "3"});                             // no name
  t.AddRow({"100.0", "12", std::string(45, 'k'), "extra"});
  t.AddRow({"", "", ""});
  std::string expected =
      " Time (%)  Instances  Name\n"
      " --------  ---------  ----------------------------------------\n"
      "     12.5      1,234  \xC2\xB5s_kernel\n"
      "        7          3\n"
      "    100.0         12  " + std::string(45, 'k') + "\n"
      "\n";
  CHECK(t.Render() == expected);
}

TEST_CASE("a text table without rows is its headers and rule", "[text_table]") {
  TextTable t({"A", "Name"});
  CHECK(t.empty());
  CHECK(t.Render() == " A  Name\n -  ----\n");
}

// What Grouped wrote with snprintf("%llu") and snprintf(".%0*llu") (the
// reference the faster formatting must match digit for digit).
std::string GroupedReference(double value, int decimals) {
  if (!std::isfinite(value)) value = 0;
  bool negative = value < 0;
  double scale = std::pow(10.0, decimals);
  double rounded = std::round(std::fabs(value) * scale);
  auto whole = static_cast<unsigned long long>(rounded / scale);
  auto frac = static_cast<unsigned long long>(rounded - static_cast<double>(whole) * scale);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%llu", whole);
  std::string digits = buffer, out = negative ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  if (decimals > 0) {
    std::snprintf(buffer, sizeof(buffer), ".%0*llu", decimals, frac);
    out += buffer;
  }
  return out;
}

TEST_CASE("numbers are grouped in threes, with their decimals zero-padded", "[text_table]") {
  CHECK(Grouped(0ull) == "0");
  CHECK(Grouped(999ull) == "999");
  CHECK(Grouped(1000ull) == "1,000");
  CHECK(Grouped(1234567ull) == "1,234,567");
  CHECK(Grouped(18446744073709551615ull) == "18,446,744,073,709,551,615");
  CHECK(Grouped(1234.5, 1) == "1,234.5");
  CHECK(Grouped(0.05, 2) == "0.05");
  CHECK(Grouped(-1234567.891, 3) == "-1,234,567.891");
  CHECK(Grouped(2.0, 0) == "2");
  CHECK(Grouped(std::nan(""), 1) == "0.0");
  // Every decimals the summary uses, over values from tiny to large.
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double value = static_cast<double>(x % 100000000000ull) / std::pow(10.0, static_cast<int>(x % 12)) *
                   (x % 5 == 0 ? -1 : 1);
    int decimals = static_cast<int>(x % 7);
    INFO(value << " " << decimals);
    CHECK(Grouped(value, decimals) == GroupedReference(value, decimals));
  }
}

TEST_CASE("times in tables are grouped milliseconds with three decimals unless asked", "[text_table]") {
  CHECK(Ms(1'234'567'891.0) == "1,234.568");
  CHECK(Ms(600.0) == "0.001");
  CHECK(Ms(0.0) == "0.000");
  CHECK(Ms(2'500'000.0, 1) == "2.5");
  CHECK(Ms(-3'000'000.0) == "-3.000");
}

}  // namespace
}  // namespace prof
