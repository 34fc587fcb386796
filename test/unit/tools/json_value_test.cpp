// JsonValue's member look-up: what every reader of a trace event and the
// validator ask for, field by field.
#include "tools/prof/json/json_value.h"

#include <catch2/catch.hpp>
#include <string>

#include "tools/prof/json/parse.h"

namespace prof::tool {
namespace {

JsonValue Parse(const std::string& text, JsonDoc* doc) {
  std::string error;
  REQUIRE(ParseJson(text, doc, &error));
  return JsonValue(doc, 0);
}

TEST_CASE("Get finds a member by its whole name, the last of duplicates, as document parsers keep", "[json]") {
  JsonDoc doc;
  JsonValue e = Parse(R"({"ts": 1, "tid": 2, "ph": "X", "pid": 3, "id": 4, "": 5, "ts": 6, "t\u0073x": 7})", &doc);
  CHECK(e.Get("tid").number() == 2);
  CHECK(e.Get("pid").number() == 3);  // same length as "tid", other first letter
  CHECK(e.Get("id").number() == 4);
  CHECK(e.Get("").number() == 5);
  CHECK(e.Get("ts").number() == 6);   // the later one
  CHECK(e.Get("tsx").number() == 7);  // names compare decoded
  CHECK_FALSE(e.Get("t").valid());
  CHECK_FALSE(e.Get("tidx").valid());
  CHECK(e.StringOr("ph", "") == "X");
  CHECK(e.StringOr("ts", "fallback") == "fallback");  // present, not a string
}

TEST_CASE("Get looks only at the object's own members, and nothing in a non-object", "[json]") {
  JsonDoc doc;
  JsonValue e = Parse(R"({"args": {"name": "inner", "x": [1, {"name": "deeper"}]}, "cat": "kernel"})", &doc);
  CHECK_FALSE(e.Get("name").valid());
  CHECK(e.Get("args").Get("name").str() == "inner");
  CHECK(e.Get("cat").str() == "kernel");
  CHECK_FALSE(e.Get("args").Get("x").Get("name").valid());  // an array has no members
  CHECK_FALSE(JsonValue().Get("cat").valid());
  JsonDoc empty;
  CHECK_FALSE(Parse("{}", &empty).Get("").valid());
}

}  // namespace
}  // namespace prof::tool
