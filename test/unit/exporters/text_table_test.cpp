// The summary's fixed-width tables: right-aligned columns by display width
// (UTF-8), the last column left as it is, the rule under the headers capped
// at 40 in the last column, missing cells empty, cells past the headers
// ignored, trailing spaces trimmed (a row of empty cells is an empty line).
#include <catch2/catch.hpp>
#include <string>

#include "exporters/text_table.h"

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

}  // namespace
}  // namespace prof
