#include "tools/prof/trace/event_fields.h"

#include <string_view>

namespace prof::tool {

const char* WrongTypedField(const JsonValue& e) {
  if (!e.is_object()) return nullptr;
  for (const char* key : {"pid", "tid"}) {
    JsonValue v = e.Get(key);
    if (!v.valid() || v.is_string()) continue;
    int64_t i;
    uint64_t u;
    if (v.is_number() && (v.ToInt64(&i) || v.ToUint64(&u))) continue;
    return key;
  }
  for (const char* key : {"ts", "dur"}) {
    JsonValue v = e.Get(key);
    if (v.valid() && !v.is_number()) return key;
  }
  return nullptr;
}

std::string DescribeEvent(const JsonValue& e, uint64_t index) {
  std::string out = "event #" + std::to_string(index) + " (";
  auto field = [&](const char* key, bool first = false) {
    if (!e.is_object()) return;
    JsonValue v = e.Get(key);
    if (!v.valid()) return;
    std::string value = v.Dump();
    if (value.size() > 80) value = value.substr(0, 77) + "...";
    out += (first ? "" : " ") + std::string(key) + "=" + value;
  };
  field("ph", true);
  field("cat");
  field("name");
  field("pid");
  field("tid");
  field("ts");
  field("id");
  return out + ")";
}

std::string WrongTypeMessage(const JsonValue& e, uint64_t index, const char* field) {
  std::string value = e.Get(field).Dump();
  if (value.size() > 80) value = value.substr(0, 77) + "...";
  std::string want = std::string_view(field) == "pid" || std::string_view(field) == "tid" ? "an integer or a string" : "a number";
  return DescribeEvent(e, index) + " has " + field + "=" + value + ", not " + want;
}

void SkippedEvents::Add(const JsonValue& e, uint64_t index, const char* field) {
  if (count++ == 0) first = WrongTypeMessage(e, index, field);
}

std::string SkippedEvents::Sentence() const {
  if (count == 0) return "";
  return std::to_string(count) + (count == 1 ? " event" : " events") +
         " skipped: pid, tid, ts or dur of the wrong type; the first: " + first;
}

}  // namespace prof::tool
