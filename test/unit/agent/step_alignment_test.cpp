// Under CUDA_INJECTION64_PATH the main thread's calls come only as CUPTI API
// records, timed by CUPTI outside the callback that observed the step marker:
// AlignStepsWithCuptiCalls moves a step boundary that falls inside such a
// call to the call's nearer end, and leaves wrapped calls and other threads'
// calls alone. Only steps taken at calls move: a time step's boundary is
// read off the clock and may truly fall inside a call.
#include <catch2/catch.hpp>

#include "model/window.h"
#include "agent/session/window_job.h"
#include "agent/session/writer.h"
#include "fakes.h"

namespace prof {
namespace {

constexpr int kPid = 4242;

DeviceRecord Api(uint64_t start, uint64_t end, uint32_t correlation, uint32_t tid = kPid) {
  DeviceRecord r{};
  r.kind = static_cast<uint8_t>(DeviceKind::kRuntimeApi);
  r.start_ns = start;
  r.end_ns = end;
  r.correlation_id = correlation;
  r.thread_id = tid;
  return r;
}

Window ThreeSteps() {
  Window w;
  w.meta.pid = kPid;
  w.steps = {{1, 1'000, 2'000}, {2, 2'000, 3'000}, {3, 3'000, 4'000}};
  return w;
}

TEST_CASE("a boundary inside a CUPTI-only call on the main thread moves to the call's nearer end", "[writer]") {
  Window w = ThreeSteps();
  w.device_records.push_back(Api(1'990, 2'400, 60));   // the copy that opens step 2 began just before its boundary
  w.device_records.push_back(Api(2'700, 3'010, 61));   // the sync that ends step 2 ended just after
  w.device_records.push_back(Api(990, 1'100, 59));     // the first step's marker: the window's first step too
  AlignStepsWithCuptiCalls(&w);
  REQUIRE(w.steps.size() == 3);
  CHECK(w.steps[0].start_ns == 990);
  CHECK(w.steps[0].end_ns == 1'990);
  CHECK(w.steps[1].start_ns == 1'990);
  CHECK(w.steps[1].end_ns == 3'010);
  CHECK(w.steps[2].start_ns == 3'010);
  CHECK(w.steps[2].end_ns == 4'000);
}

TEST_CASE("wrapped calls and other threads' calls leave the boundaries where the marker path put them", "[writer]") {
  Window w = ThreeSteps();
  w.device_records.push_back(Api(1'990, 2'400, 60));        // covered by a wrapper's host event
  w.device_records.push_back(Api(2'990, 3'400, 61, kPid + 1));  // another thread
  w.device_records.push_back(Api(3'500, 3'600, 62));        // no boundary inside
  HostEvent e{};
  e.tid = kPid;
  e.correlation_id = 60;
  e.start_ns = 2'001;
  e.end_ns = 2'399;
  w.host_events.push_back(e);
  AlignStepsWithCuptiCalls(&w);
  CHECK(w.steps[0].end_ns == 2'000);
  CHECK(w.steps[1].start_ns == 2'000);
  CHECK(w.steps[1].end_ns == 3'000);
  CHECK(w.steps[2].start_ns == 3'000);
}

TEST_CASE("sealing moves boundaries of steps taken at calls, never those of time steps", "[writer]") {
  for (bool at_calls : {true, false}) {
    testing::FakeCollector collector;
    collector.records.push_back(Api(1'990, 2'400, 60));  // straddles the boundary at 2'000
    WriterDeps deps;
    deps.collector = &collector;
    WindowJob job;
    job.meta.pid = kPid;
    job.meta.start_ns = 1'000;
    job.meta.end_ns = 4'000;
    job.steps = ThreeSteps().steps;
    job.steps_at_calls = at_calls;
    Window w = SealWindow(std::move(job), deps);
    INFO("steps taken at calls: " << at_calls);
    REQUIRE(w.steps.size() == 3);
    CHECK(w.steps[0].end_ns == (at_calls ? 1'990u : 2'000u));
    CHECK(w.steps[1].start_ns == (at_calls ? 1'990u : 2'000u));
  }
}

}  // namespace
}  // namespace prof
