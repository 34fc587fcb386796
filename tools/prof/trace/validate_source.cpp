// The rules (validate.cpp) run over a whole trace: a file or bytes streamed
// through a TraceValidator, the events read a second time when a message or
// an out-of-order track needs them.
#include <functional>
#include <memory>
#include <string>

#include "tools/prof/trace/validate.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/trace_stream.h"

namespace prof::tool {
namespace {

// Streams a whole trace into a TraceValidator, noting the top-level facts.
class ValidatingHandler : public TraceStreamHandler {
 public:
  explicit ValidatingHandler(TraceValidator* v) : v_(v) {}
  void Member(std::string_view key, const JsonValue& value) override {
    if (key == "libprof") strict_ = true;
    if (key == "distributedInfo") has_rank_ = value.is_object() && value.Has("rank");
    if (key == "libprof_merge" && value.is_object()) {
      // `prof merge` of processes none of which has a rank claims none.
      bool any_rank = false;
      JsonValue inputs = value.Get("inputs");
      for (JsonValue in = inputs.first(); in.valid(); in = inputs.next(in)) any_rank = any_rank || in.Has("rank");
      unranked_merge_ = !any_rank;
    }
  }
  void EventsBegin(bool is_array) override {
    if (seen_events_) v_->ResetEvents();
    seen_events_ = true;
    is_array_ = is_array;
  }
  void Event(uint64_t index, const JsonValue& event) override { v_->Event(index, event); }
  void EventsEnd(uint64_t count) override { events_ = count; }

  TraceValidator* v_;
  bool strict_ = false, has_rank_ = false, is_array_ = false, seen_events_ = false, unranked_merge_ = false;
  uint64_t events_ = 0;
};

// Replays the events of a source reopened by `open`.
class ReplayHandler : public TraceStreamHandler {
 public:
  explicit ReplayHandler(const EventSink& sink) : sink_(sink) {}
  void Member(std::string_view, const JsonValue&) override {}
  void EventsBegin(bool) override {}
  void Event(uint64_t index, const JsonValue& event) override { sink_(index, event); }
  void EventsEnd(uint64_t) override {}
  const EventSink& sink_;
};

bool ValidateSource(const std::function<std::unique_ptr<ByteSource>(std::string*)>& open, const std::string& label,
                    ValidateResult* result, uint64_t* events, std::string* error, size_t max_per_rule,
                    bool stream_tracks = true) {
  std::unique_ptr<ByteSource> source = open(error);
  if (!source) return false;
  TraceValidator validator(max_per_rule, stream_tracks);
  ValidatingHandler handler(&validator);
  TraceStreamResult read = StreamTrace(source.get(), &handler);
  source.reset();
  if (!read.ok) {
    // A read error names the file already; a syntax error is strict-json's.
    *error = read.error.rfind("syntax error", 0) == 0 ? "rule strict-json: " + label + ": " + read.error : read.error;
    return false;
  }
  validator.SetTopLevel(read.root_is_object && handler.is_array_, read.root_is_object && (handler.has_rank_ || handler.unranked_merge_),
                        read.root_is_object && handler.strict_);
  *events = handler.is_array_ ? handler.events_ : 0;
  *result = validator.Finish([&](const EventSink& sink) {
    std::string ignored;
    std::unique_ptr<ByteSource> again = open(&ignored);
    if (!again) return false;
    ReplayHandler replay(sink);
    return StreamTrace(again.get(), &replay).ok;
  });
  return true;
}

}  // namespace

bool ValidateFile(const std::string& path, uint64_t max_unpacked_bytes, ValidateResult* result, uint64_t* events,
                  std::string* error, size_t max_per_rule) {
  return ValidateSource([&](std::string* e) { return OpenFileSource(path, max_unpacked_bytes, e); }, path, result,
                        events, error, max_per_rule);
}

bool ValidateBytes(std::string_view bytes, ValidateResult* result, uint64_t* events, std::string* error,
                   size_t max_per_rule, bool stream_tracks) {
  return ValidateSource([&](std::string*) { return MemorySource(bytes); }, "trace", result, events, error,
                        max_per_rule, stream_tracks);
}

ValidateResult ValidateTrace(const nlohmann::json& trace, size_t max_per_rule) {
  std::string text = trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ValidateResult result;
  uint64_t events = 0;
  std::string error;
  if (!ValidateSource([&](std::string*) { return MemorySource(text); }, "trace", &result, &events, &error,
                      max_per_rule)) {
    result.errors.push_back(error);
  }
  return result;
}

}  // namespace prof::tool
