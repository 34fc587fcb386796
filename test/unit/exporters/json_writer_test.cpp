#include "exporters/common/json_writer.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "exporters/files/byte_sink.h"

namespace prof {
namespace {

std::string WriteString(std::string_view value) {
  std::string out;
  StringSink sink(&out);
  JsonWriter w(sink);
  w.String(value);
  REQUIRE(w.Finish());
  return out;
}

std::string Parsed(std::string_view value) { return nlohmann::json::parse(WriteString(value)).get<std::string>(); }

TEST_CASE("quotes, backslashes and newlines are escaped and survive a strict parse", "[json]") {
  std::string name = "say \"hi\"\\ to\nthe\tkernel\r";
  CHECK(WriteString(name) == R"("say \"hi\"\\ to\nthe\tkernel\r")");
  CHECK(Parsed(name) == name);
}

TEST_CASE("every control character becomes an escape and round-trips", "[json]") {
  std::string all;
  for (int c = 0; c < 0x20; ++c) all += static_cast<char>(c);
  all += '\x7f';
  std::string text = WriteString(all);
  for (char c : text) CHECK(static_cast<unsigned char>(c) >= 0x20);
  CHECK(text.find("\\u0000") != std::string::npos);
  CHECK(text.find("\\u001f") != std::string::npos);
  CHECK(Parsed(all) == all);
}

TEST_CASE("valid UTF-8 is kept byte for byte", "[json]") {
  std::string name = "gemm_\xC2\xB5s_\xE2\x82\xAC_\xF0\x9F\x9A\x80";  // µ, €, rocket
  CHECK(WriteString(name) == "\"" + name + "\"");
  CHECK(Parsed(name) == name);
}

TEST_CASE("each invalid UTF-8 byte becomes U+FFFD, documented replacement", "[json]") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(Parsed("a\xFF" "b") == "a" + fffd + "b");              // never valid
  CHECK(Parsed("\x80") == fffd);                               // stray continuation
  CHECK(Parsed("\xC0\xAF") == fffd + fffd);                    // overlong '/'
  CHECK(Parsed("\xED\xA0\x80") == fffd + fffd + fffd);         // UTF-16 surrogate
  CHECK(Parsed("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // past U+10FFFF
  CHECK(Parsed("ok\xE2\x82") == "ok" + fffd + fffd);           // truncated at the end
}

TEST_CASE("microseconds are written with exactly three decimals", "[json]") {
  std::string out;
  StringSink sink(&out);
  JsonWriter w(sink);
  w.Micros(0);
  w.Char(' ');
  w.Micros(1);
  w.Char(' ');
  w.Micros(1234567);
  w.Char(' ');
  w.Micros(18'000'000'000'000'000'000ull);
  REQUIRE(w.Finish());
  CHECK(out == "0.000 0.001 1234.567 18000000000000000.000");
}

TEST_CASE("strings longer than the writer's buffer are written whole", "[json]") {
  std::string big(200'000, 'k');
  big[100'000] = '"';
  CHECK(Parsed(big) == big);
}

TEST_CASE("non-finite doubles are written as 0 so the output stays JSON", "[json]") {
  std::string out;
  StringSink sink(&out);
  JsonWriter w(sink);
  w.Char('[');
  w.Double(std::numeric_limits<double>::quiet_NaN());
  w.Char(',');
  w.Double(std::numeric_limits<double>::infinity());
  w.Char(',');
  w.Double(0.25);
  w.Char(']');
  REQUIRE(w.Finish());
  CHECK(nlohmann::json::parse(out) == nlohmann::json::parse("[0,0,0.25]"));
}

}  // namespace
}  // namespace prof

namespace prof {
namespace {

TEST_CASE("integers are written as std::to_string writes them, at every digit count and both ends", "[json]") {
  std::vector<int64_t> signed_values = {0, -1, INT64_MIN, INT64_MAX};
  std::vector<uint64_t> unsigned_values = {0, UINT64_MAX, 9'999'999'999'999'999'999ull,
                                          10'000'000'000'000'000'000ull, 10'000'000'000'000'000'001ull};
  for (uint64_t p = 1; p <= 1'000'000'000'000'000'000ull; p *= 10) {
    for (uint64_t v : {p - 1, p, p + 1, 3 * p + 7}) {
      unsigned_values.push_back(v);
      signed_values.push_back(static_cast<int64_t>(v));
      signed_values.push_back(-static_cast<int64_t>(v));
    }
  }
  std::string out, expected;
  StringSink sink(&out);
  JsonWriter w(sink);
  for (int64_t v : signed_values) {
    w.Int(v);
    w.Char(' ');
    expected += std::to_string(v) + " ";
  }
  for (uint64_t v : unsigned_values) {
    w.UInt(v);
    w.Char(' ');
    expected += std::to_string(v) + " ";
  }
  w.Micros(12'345'678'901'234ull);
  expected += "12345678901.234";
  REQUIRE(w.Finish());
  CHECK(out == expected);
}

}  // namespace
}  // namespace prof
