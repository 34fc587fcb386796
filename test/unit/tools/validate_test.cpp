// The validator rejects one broken trace per rule, naming the rule and the
// event, and accepts the real torch.profiler traces.
#include "tools/prof/trace/validate.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tools/prof/json/trace_file.h"

namespace prof::tool {
namespace {

using nlohmann::json;

// A small valid libprof-style trace: a launch with its flow to a kernel.
json Good() {
  return json::parse(R"({
    "schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "libprof": {"version": "test"},
    "traceEvents": [
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0,
       "args": {"correlation": 7}},
      {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 10.0},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.0, "dur": 3.0,
       "args": {"stream": 7, "correlation": 7}},
      {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 0, "tid": 7, "ts": 20.0, "bp": "e"}
    ]})");
}

// The single error `trace` produces; fails the test unless there is exactly one.
std::string OnlyError(const json& trace) {
  ValidateResult r = ValidateTrace(trace);
  INFO("errors: " << json(r.errors).dump());
  REQUIRE(r.errors.size() == 1);
  return r.errors[0];
}

TEST_CASE("the reference trace passes", "[validate]") {
  ValidateResult r = ValidateTrace(Good());
  CHECK(r.ok());
  CHECK(r.strict);
  CHECK(r.warnings.empty());
}

TEST_CASE("strict-json: trailing commas and comments are rejected with the rule named", "[validate]") {
  char path[] = "/tmp/libprof-validate-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << R"({"traceEvents": [{"ph": "X",}]})";
  json t;
  std::string error;
  CHECK_FALSE(LoadTrace(path, &t, &error));
  CHECK(error.find("rule strict-json") == 0);
  std::ofstream(path) << R"({"traceEvents": [] /* comment */})";
  CHECK_FALSE(LoadTrace(path, &t, &error));
  std::remove(path);
}

TEST_CASE("top-level: a trace without a traceEvents array is rejected", "[validate]") {
  CHECK(OnlyError(json::parse(R"({"distributedInfo": {"rank": 0}, "events": []})")).find("rule top-level") == 0);
}

TEST_CASE("event-fields: an event without tid, and an X event without dur, are rejected", "[validate]") {
  json t = Good();
  t["traceEvents"].push_back({{"ph", "i"}, {"name", "mark"}, {"pid", 1}, {"ts", 1.0}});
  std::string e = OnlyError(t);
  CHECK(e.find("rule event-fields: event #4") == 0);
  CHECK(e.find("\"tid\"") != std::string::npos);
  t = Good();
  t["traceEvents"][2].erase("dur");
  e = OnlyError(t);
  CHECK(e.find("rule event-fields: event #2") == 0);
  CHECK(e.find("name=\"k\"") != std::string::npos);
}

TEST_CASE("field-types: a pid, tid, ts or dur of the wrong type is rejected, naming the event", "[validate]") {
  struct Case {
    const char* field;
    json value;
  };
  // A nested array as pid was once reported OK.
  for (const Case& c : {Case{"pid", json::parse("[[1]]")}, Case{"tid", json::object()}, Case{"pid", 1.5},
                        Case{"tid", true}, Case{"pid", nullptr}, Case{"ts", "10"}, Case{"ts", json::array()},
                        Case{"dur", "5"}, Case{"dur", nullptr}}) {
    json t = Good();
    t["traceEvents"][0][c.field] = c.value;
    INFO(c.field << "=" << c.value.dump());
    ValidateResult r = ValidateTrace(t);
    REQUIRE_FALSE(r.ok());
    // The type error comes first and names the event; other rules that
    // depend on the field (nesting, flow binding) may add their own.
    CHECK(r.errors[0].find("rule field-types: event #0 (ph=\"X\" cat=\"cuda_runtime\" name=\"cudaLaunchKernel\"") == 0);
    CHECK(r.errors[0].find(std::string(" has ") + c.field + "=" + c.value.dump() + ", not ") != std::string::npos);
    for (const std::string& e : r.errors) CHECK(e.find("rule ts-nonnegative") == std::string::npos);
  }
  // The types Kineto writes pass: string pids and tids, integer and
  // fractional times, an integral pid written with a fraction.
  json t = Good();
  t["traceEvents"].push_back({{"ph", "X"}, {"cat", "Trace"}, {"name", "PyTorch Profiler (0)"}, {"pid", "Spans"},
                              {"tid", "PyTorch Profiler"}, {"ts", 1}, {"dur", 2.5}});
  t["traceEvents"].push_back({{"ph", "i"}, {"name", "mark"}, {"pid", 1.0}, {"tid", 2}, {"ts", 3}, {"s", "t"}});
  ValidateResult r = ValidateTrace(t);
  INFO(json(r.errors).dump());
  CHECK(r.ok());
}

TEST_CASE("ts-nonnegative: a negative timestamp is rejected", "[validate]") {
  json t = Good();
  t["traceEvents"].push_back({{"ph", "i"}, {"name", "early"}, {"pid", 1}, {"tid", 1}, {"ts", -0.5}});
  std::string e = OnlyError(t);
  CHECK(e.find("rule ts-nonnegative: event #4") == 0);
  CHECK(e.find("name=\"early\"") != std::string::npos);
}

TEST_CASE("x-nesting: partially overlapping slices on one thread are rejected", "[validate]") {
  json t = Good();
  t["traceEvents"].push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaMemcpy"}, {"pid", 1},
                              {"tid", 1}, {"ts", 12.0}, {"dur", 10.0}});
  std::string e = OnlyError(t);
  CHECK(e.find("rule x-nesting: event #4") == 0);
  CHECK(e.find("starts inside event #0") != std::string::npos);
  // The same slice on another thread is fine.
  t["traceEvents"][4]["tid"] = 2;
  CHECK(ValidateTrace(t).ok());
}

TEST_CASE("flow-binding: a flow start outside every slice on its thread is rejected", "[validate]") {
  json t = Good();
  t["traceEvents"][1]["ts"] = 16.0;  // the launch ends at 15
  std::string e = OnlyError(t);
  CHECK(e.find("rule flow-binding: event #1") == 0);
}

TEST_CASE("flow-matched: a flow start without a finish is rejected", "[validate]") {
  json t = Good();
  t["traceEvents"].erase(3);
  std::string e = OnlyError(t);
  CHECK(e.find("rule flow-matched: event #1") == 0);
  CHECK(e.find("id=7") != std::string::npos);
}

TEST_CASE("kernel-args: a kernel without its correlation is rejected", "[validate]") {
  json t = Good();
  t["traceEvents"][2]["args"].erase("correlation");
  std::string e = OnlyError(t);
  CHECK(e.find("rule kernel-args: event #2") == 0);
  CHECK(e.find("args.correlation") != std::string::npos);
}

TEST_CASE("distributed-rank: a trace without distributedInfo.rank is rejected", "[validate]") {
  json t = Good();
  t.erase("distributedInfo");
  CHECK(OnlyError(t).find("rule distributed-rank") == 0);
}

TEST_CASE("other producers' dangling flow starts are warnings, libprof's are errors", "[validate]") {
  json t = Good();
  t["traceEvents"].erase(3);
  t.erase("libprof");
  ValidateResult r = ValidateTrace(t);
  CHECK(r.ok());
  CHECK_FALSE(r.strict);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("rule flow-matched") == 0);
}

TEST_CASE("the real torch.profiler traces pass", "[validate]") {
  for (const char* name : {"simple_add.pt.trace.json.gz", "training_rank0.pt.trace.json.gz",
                           "sampled_rank0.pt.trace.json.gz"}) {
    std::string path = std::string(LIBPROF_KINETO_TRACES) + "/" + name;
    json t;
    std::string error;
    INFO(path);
    REQUIRE(LoadTrace(path, &t, &error));
    ValidateResult r = ValidateTrace(t);
    INFO(json(r.errors).dump());
    CHECK(r.ok());
  }
}

}  // namespace
}  // namespace prof::tool
