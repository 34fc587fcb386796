// co_linetable decoding, checked on tables each CPython version compiled
// itself (linetables/<version>.txt: scripts/python-linetables.py), against
// that interpreter's own co_lines().
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/python/line_table.h"

namespace {

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Checks every even byte offset of every range of every code object; returns
// how many offsets were checked.
int CheckVersion(const std::string& version, bool pep626) {
  std::ifstream in(std::string(PYTHON_TEST_DATA) + "/linetables/" + version + ".txt");
  REQUIRE(in);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, hex, ranges;
    int first_line = 0;
    fields >> name >> first_line >> hex >> ranges;
    std::vector<uint8_t> table = FromHex(hex);
    std::istringstream rs(ranges);
    std::string range;
    while (std::getline(rs, range, ',')) {
      int start = 0, end = 0, expected = 0;
      REQUIRE(std::sscanf(range.c_str(), "%d:%d:%d", &start, &end, &expected) == 3);
      for (int offset = start; offset < end; offset += 2) {
        int got = pep626 ? prof::python::LineForOffsetPep626(table.data(), table.size(), first_line, offset)
                         : prof::python::LineForOffsetLocation(table.data(), table.size(), first_line, offset);
        INFO(version << " " << name << " offset " << offset);
        CHECK(got == expected);
        ++checked;
      }
    }
  }
  return checked;
}

}  // namespace

// One TEST_CASE per version, so that a failure names the version.
TEST_CASE("3.10 PEP 626 line tables give the lines CPython 3.10's co_lines gives") {
  CHECK(CheckVersion("3.10", /*pep626=*/true) > 100);
}

TEST_CASE("3.11 location tables give the lines CPython 3.11's co_lines gives") {
  CHECK(CheckVersion("3.11", /*pep626=*/false) > 100);
}

TEST_CASE("3.12 location tables give the lines CPython 3.12's co_lines gives") {
  CHECK(CheckVersion("3.12", /*pep626=*/false) > 100);
}

TEST_CASE("3.13 location tables give the lines CPython 3.13's co_lines gives") {
  CHECK(CheckVersion("3.13", /*pep626=*/false) > 100);
}

TEST_CASE("3.14 location tables give the lines CPython 3.14's co_lines gives") {
  CHECK(CheckVersion("3.14", /*pep626=*/false) > 100);
}

TEST_CASE("3.15 location tables give the lines CPython 3.15's co_lines gives") {
  CHECK(CheckVersion("3.15", /*pep626=*/false) > 100);
}

TEST_CASE("line tables: an offset past the table has no line, and a truncated entry stops the decoder") {
  const uint8_t table[] = {0x80 | (10 << 3) | 1};  // one-line form, delta 0, 2 code units
  CHECK(prof::python::LineForOffsetLocation(table, 1, 7, 0) == 7);
  CHECK(prof::python::LineForOffsetLocation(table, 1, 7, 4) == -1);
  const uint8_t long_form[] = {0x80 | (14 << 3), 0x40};  // varint continues past the end
  CHECK(prof::python::LineForOffsetLocation(long_form, 2, 7, 0) == -1);
  const uint8_t pairs[] = {6, 1, 4, 0x80};  // second range has no line (-128)
  CHECK(prof::python::LineForOffsetPep626(pairs, 4, 10, 2) == 11);
  CHECK(prof::python::LineForOffsetPep626(pairs, 4, 10, 8) == -1);
  CHECK(prof::python::LineForOffsetPep626(pairs, 4, 10, -2) == 10);  // f_lasti -1: not started
}
