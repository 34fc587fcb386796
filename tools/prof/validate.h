// `prof validate`: the rules a trace must meet so Perfetto's JSON importer
// and Holistic Trace Analysis read it as we mean it. Each failure names its
// rule and the event:
//
//   strict-json       the file parses as strict JSON (checked when loading)
//   top-level         an object with a "traceEvents" array of objects
//   event-fields      every event has "ph", "ts", "pid" and "tid"; "X" events
//                     also "dur" and "cat"
//   ts-nonnegative    every "ts" (and "dur") is a number >= 0
//   x-nesting         "X" events on one (pid, tid) nest or are disjoint
//   flow-binding      every flow start ("s") lies inside an "X" slice on its
//                     (pid, tid) at its timestamp
//   flow-matched      every flow start has a finish ("f") with its cat and id
//   kernel-args       "kernel" events carry args.stream and args.correlation
//   distributed-rank  top-level distributedInfo.rank is present
//
// libprof's own traces (those with a top-level "libprof" object) must meet
// every rule. Traces from other producers are held to the same rules with
// two known Kineto habits reported as warnings instead of failures, so the
// real torch.profiler traces pass: flow starts whose GPU side fell outside
// the recorded window (no finish), and "cuda_sync" slices that Kineto puts on
// a stream's track overlapping the copy or kernel they wait for.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace prof::tool {

struct ValidateResult {
  std::vector<std::string> errors;    // "rule x-nesting: event #12 (...) ..."
  std::vector<std::string> warnings;  // tolerated habits of other producers
  bool strict = true;                 // the trace is libprof's own
  bool ok() const { return errors.empty(); }
};

// At most `max_per_rule` messages are kept per rule, then a count.
ValidateResult ValidateTrace(const nlohmann::json& trace, size_t max_per_rule = 5);

}  // namespace prof::tool
