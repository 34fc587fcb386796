// `prof validate`: the rules a trace must meet so Perfetto's JSON importer
// and Holistic Trace Analysis read it as we mean it. Each failure names its
// rule and the event:
//
//   strict-json       the file parses as strict JSON (checked when loading)
//   top-level         an object with a "traceEvents" array of objects
//   event-fields      every event has "ph", "ts", "pid" and "tid"; "X" events
//                     also "dur" and "cat"
//   field-types       "pid" and "tid" are integers or strings, "ts" and "dur"
//                     numbers (event_fields.h)
//   ts-nonnegative    every numeric "ts" (and "dur") is >= 0
//   x-nesting         "X" events on one (pid, tid) nest or are disjoint
//   flow-binding      every flow start ("s") lies inside an "X" slice on its
//                     (pid, tid) at its timestamp
//   flow-matched      every flow start has a finish ("f") with its cat and id
//   kernel-args       "kernel" events carry args.stream and args.correlation
//   distributed-rank  top-level distributedInfo.rank is present (not in a
//                     `prof merge` of processes none of which had a rank)
//
// libprof's own traces (those with a top-level "libprof" object) must meet
// every rule. Traces from other producers are held to the same rules with
// two known Kineto habits reported as warnings instead of failures, so the
// real torch.profiler traces pass: flow starts whose GPU side fell outside
// the recorded window (no finish), and "cuda_sync" slices that Kineto puts on
// a stream's track overlapping the copy or kernel they wait for.
//
// validate.cpp holds the rules (TraceValidator); validate_source.cpp runs
// them over a file, bytes or a document.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/prof/json/json_value.h"

namespace prof::tool {

struct ValidateResult {
  std::vector<std::string> errors;    // "rule x-nesting: event #12 (...) ..."
  std::vector<std::string> warnings;  // tolerated habits of other producers
  bool strict = true;                 // the trace is libprof's own
  bool ok() const { return errors.empty(); }
};

// At most `max_per_rule` messages are kept per rule, then a count.
ValidateResult ValidateTrace(const nlohmann::json& trace, size_t max_per_rule = 5);

// Streams a trace file (plain or gzip) through the rules. False with
// `error` when it cannot be read or is not strict JSON ("rule strict-json:
// ..."); then `result` holds nothing.
bool ValidateFile(const std::string& path, uint64_t max_unpacked_bytes, ValidateResult* result, uint64_t* events,
                  std::string* error, size_t max_per_rule = 5);

// The same on bytes in memory (fuzzing, tests). `stream_tracks`: see
// TraceValidator.
bool ValidateBytes(std::string_view bytes, ValidateResult* result, uint64_t* events, std::string* error,
                   size_t max_per_rule = 5, bool stream_tracks = true);

// Calls `sink` with each event of the trace again, in order (for the words
// of a few messages, which name events by their fields). False if the
// events could not be read again.
using EventSink = std::function<void(uint64_t index, const JsonValue& event)>;
using EventReplay = std::function<bool(const EventSink& sink)>;

// The rules, fed one event at a time. What it holds: per flow start about 40
// bytes and per distinct flow finish 16, the distinct tracks, and per track
// whose slices arrive in x-nesting's order (by start, the longer first; as
// libprof writes them) only the slices enclosing the latest one; never the
// events themselves. A track out of that order (or with a flow start after
// slices past its time) keeps nothing while streaming and is checked at
// Finish from a second read of the events (`replay`), holding 24 bytes per
// slice of such tracks. `stream_tracks` false checks every track that way
// (the reference the streaming check is tested against).
class TraceValidator {
 public:
  explicit TraceValidator(size_t max_per_rule = 5, bool stream_tracks = true);
  ~TraceValidator();

  // Top-level facts: the root is an object holding a "traceEvents" array,
  // distributedInfo.rank is present, and a "libprof" member (strict rules).
  void SetTopLevel(bool has_event_array, bool has_rank, bool strict);
  void Event(uint64_t index, const JsonValue& event);
  // Forgets the events seen so far (a second "traceEvents" member).
  void ResetEvents();
  ValidateResult Finish(const EventReplay& replay);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prof::tool
