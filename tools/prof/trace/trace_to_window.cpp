#include "tools/prof/trace/trace_to_window.h"

#include <functional>
#include <map>
#include <memory>

#include "tools/prof/json/json_dump.h"
#include "tools/prof/json/parse.h"
#include "tools/prof/json/trace_stream.h"
#include "tools/prof/trace/field_values.h"
#include "tools/prof/trace/merged_trace.h"
#include "tools/prof/trace/window_reader.h"

namespace prof::tool {
namespace {

// Streams a trace into WindowReaders: one, or one per input of a merged trace.
template <typename W>
class WindowsHandler : public TraceStreamHandler {
 public:
  // `known`: top-level members from an earlier pass (for members that
  // came after the events).
  explicit WindowsHandler(std::map<std::string, std::string> known) : members_(std::move(known)) {}

  void Member(std::string_view key, const JsonValue& value) override {
    std::string k(key);
    if (events_seen_ && (k == "libprof" || k == "libprof_merge" || k == "baseTimeNanoseconds") && !members_.count(k)) {
      late_ = true;
    }
    members_[k] = std::string(value.raw());
  }

  void EventsBegin(bool is_array) override {
    events_seen_ = true;
    is_array_ = is_array;
    skipped_ = SkippedEvents();
    readers_.clear();
    windows_.clear();
    slot_docs_.clear();
    merged_ = false;
    auto merge = members_.find("libprof_merge");
    JsonDoc merge_doc;
    std::string ignored;
    if (merge != members_.end() && ParseJson(merge->second, &merge_doc, &ignored)) {
      merged_ = true;
      SetUpSlots(JsonValue(&merge_doc, 0));
      return;
    }
    windows_.resize(1);
    readers_.push_back(std::make_unique<WindowReader<W>>(&windows_[0]));
    JsonDoc libprof;
    auto l = members_.find("libprof");
    primed_with_ = l != members_.end() ? l->second : std::string();
    if (l != members_.end() && ParseJson(l->second, &libprof, &ignored)) readers_[0]->Prime(JsonValue(&libprof, 0));
  }

  void Event(uint64_t index, const JsonValue& e) override {
    // An event whose pid, tid, ts or dur has the wrong type is not read
    // (its place on the timeline is unknown); it is counted.
    if (const char* field = WrongTypedField(e)) return skipped_.Add(e, index, field);
    if (!merged_) {
      if (e.is_object()) readers_[0]->ReadEvent(e, Unmerge{});
      return;
    }
    // Inverse of the merge: pid blocks name the input.
    if (!e.is_object()) return;
    JsonValue pid = e.Get("pid");
    int64_t p;
    if (!pid.is_number() || !pid.ToInt64(&p) || p < kMergePidBlock) return;  // string pids hold nothing read here
    size_t slot = static_cast<size_t>(p / kMergePidBlock - 1);
    if (slot >= readers_.size()) return;
    if (e.StringOr("ph", "") == "M" && e.StringOr("name", "") == "process_labels") return;
    Unmerge fix;
    fix.active = true;
    fix.pid = p % kMergePidBlock;
    fix.shift_ns = shifts_[slot];
    readers_[slot]->ReadEvent(e, fix);
  }
  void EventsEnd(uint64_t) override {}

  bool Finish(std::vector<W>* windows, std::string* error) {
    if (!is_array_) {
      *error = "no traceEvents array";
      return false;
    }
    std::string ignored;
    if (merged_) {
      for (size_t slot = 0; slot < readers_.size(); ++slot) {
        JsonDoc top;
        if (!ParseJson(slot_docs_[slot], &top, &ignored)) top.Clear();
        readers_[slot]->Finish(top.nodes.empty() ? JsonValue() : JsonValue(&top, 0));
      }
    } else {
      std::string text = "{";
      for (const auto& [key, raw] : members_) {
        if (text.size() > 1) text += ',';
        AppendJsonString(&text, key);
        text += ':';
        text += raw;
      }
      text += '}';
      JsonDoc top;
      if (!ParseJson(text, &top, &ignored)) top.Clear();
      readers_[0]->Finish(top.nodes.empty() ? JsonValue() : JsonValue(&top, 0));
    }
    *windows = std::move(windows_);
    return true;
  }

  // Whether reading the events again, knowing the members that came after
  // them, could read them differently. A single trace's events depend only
  // on its libprof block (Prime) and on whether it is a merge; a merge's
  // also on baseTimeNanoseconds (each input's shift), which libprof writes
  // after the events: a single trace is read once.
  bool late() const {
    if (!late_ || merged_) return late_;
    auto l = members_.find("libprof");
    return members_.count("libprof_merge") || (l != members_.end() ? l->second : std::string()) != primed_with_;
  }
  const std::map<std::string, std::string>& members() const { return members_; }
  const SkippedEvents& skipped() const { return skipped_; }

 private:
  // One reader per input of the merge, with the top-level members the
  // input had (its rank, libprof block and baseTimeNanoseconds).
  void SetUpSlots(const JsonValue& merge) {
    JsonValue inputs = merge.is_object() ? merge.Get("inputs") : JsonValue();
    JsonDoc merged_top;
    std::string ignored, dist_raw = "{}";
    int64_t world = 1, base = 0;
    auto dist = members_.find("distributedInfo");
    JsonDoc dist_doc;
    if (dist != members_.end() && ParseJson(dist->second, &dist_doc, &ignored)) {
      JsonValue d(&dist_doc, 0);
      if (d.is_object()) world = IntMember(d, "world_size", 1);
    }
    auto b = members_.find("baseTimeNanoseconds");
    JsonDoc base_doc;
    if (b != members_.end() && ParseJson(b->second, &base_doc, &ignored)) base = IntOf(JsonValue(&base_doc, 0), 0);
    auto props = members_.find("deviceProperties");
    size_t n = 0;
    for (JsonValue s = inputs.is_array() ? inputs.first() : JsonValue(); s.valid(); s = inputs.next(s)) ++n;
    windows_.resize(n);
    size_t slot = 0;
    for (JsonValue s = inputs.is_array() ? inputs.first() : JsonValue(); s.valid(); s = inputs.next(s), ++slot) {
      readers_.push_back(std::make_unique<WindowReader<W>>(&windows_[slot]));
      int64_t source_base = s.is_object() ? IntMember(s, "baseTimeNanoseconds", 0) : 0;
      int64_t shift = 0;
      if (__builtin_sub_overflow(source_base, base, &shift) ||
          __builtin_sub_overflow(shift, s.is_object() ? IntMember(s, "clock_offset_ns", 0) : 0, &shift)) {
        shift = 0;
      }
      shifts_.push_back(shift);
      std::string text = "{\"distributedInfo\":{\"rank\":" +
                         std::to_string(s.is_object() ? IntMember(s, "rank", 0) : 0) +
                         ",\"world_size\":" + std::to_string(world) + "}";
      if (props != members_.end()) text += ",\"deviceProperties\":" + props->second;
      JsonValue l = s.is_object() ? s.Get("libprof") : JsonValue();
      if (l.valid()) {
        text += ",\"libprof\":" + std::string(l.raw());
        readers_.back()->Prime(l);
      }
      text += ",\"baseTimeNanoseconds\":" + std::to_string(source_base) + "}";
      slot_docs_.push_back(std::move(text));
    }
  }

  std::map<std::string, std::string> members_;  // top-level members: raw JSON text
  bool events_seen_ = false, is_array_ = false, late_ = false, merged_ = false;
  std::string primed_with_;  // the libprof member the events were read with ("": none)
  std::vector<W> windows_;
  std::vector<std::unique_ptr<WindowReader<W>>> readers_;
  std::vector<int64_t> shifts_;
  std::vector<std::string> slot_docs_;
  SkippedEvents skipped_;
};

template <typename W>
bool ReadWindowsFrom(const std::function<std::unique_ptr<ByteSource>(std::string*)>& open, const std::string& label,
                     std::vector<W>* windows, std::string* error, SkippedEvents* skipped = nullptr) {
  std::map<std::string, std::string> known;
  for (int pass = 0; pass < 2; ++pass) {
    std::unique_ptr<ByteSource> source = open(error);
    if (!source) return false;
    WindowsHandler<W> handler(known);
    TraceStreamResult read = StreamTrace(source.get(), &handler);
    if (!read.ok) {
      *error = read.error.rfind("syntax error", 0) == 0 ? "rule strict-json: " + label + ": " + read.error : read.error;
      return false;
    }
    // The libprof block (or a merge's) after the events: read them again
    // knowing it.
    if (handler.late() && pass == 0) {
      known = handler.members();
      continue;
    }
    if (skipped) *skipped = handler.skipped();
    return handler.Finish(windows, error);
  }
  return false;
}

}  // namespace

bool ReadWindows(const std::string& path, uint64_t max_unpacked_bytes, std::vector<CompactWindow>* windows,
                 std::string* error, SkippedEvents* skipped) {
  return ReadWindowsFrom([&](std::string* e) { return OpenFileSource(path, max_unpacked_bytes, e); }, path, windows,
                         error, skipped);
}

bool ReadWindowsFromBytes(std::string_view bytes, std::vector<Window>* windows, std::string* error,
                          SkippedEvents* skipped) {
  return ReadWindowsFrom([&](std::string*) { return MemorySource(bytes); }, "trace", windows, error, skipped);
}

bool ReadWindowsFromBytes(std::string_view bytes, std::vector<CompactWindow>* windows, std::string* error,
                          SkippedEvents* skipped) {
  return ReadWindowsFrom([&](std::string*) { return MemorySource(bytes); }, "trace", windows, error, skipped);
}

bool TraceToWindow(const nlohmann::json& trace, Window* window, std::string* error) {
  *window = Window{};
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    *error = "no traceEvents array";
    return false;
  }
  // Read as a single trace even if it carries a merge's block: callers of
  // this form split merged traces themselves (SplitMerged).
  nlohmann::json copy = trace;
  copy.erase("libprof_merge");
  std::string text = copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::vector<Window> windows;
  if (!ReadWindowsFrom([&](std::string*) { return MemorySource(text); }, "trace", &windows, error)) return false;
  if (windows.size() != 1) {
    *error = "no traceEvents array";
    return false;
  }
  *window = std::move(windows[0]);
  return true;
}

}  // namespace prof::tool
