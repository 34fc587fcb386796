// A recording wrapper appends a call's host event after the call returns;
// the collector saw the call return from inside it (CUPTI's exit callback).
// A thread descheduled in between appends its event after the writer
// collected the window's host events: the writer waits for the events of
// the calls it saw return through a wrapper, and counts those that never
// come as late instead of sealing the window without them, silently.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "agent/session/event_buffers.h"
#include "agent/session/writer.h"
#include "fakes.h"

namespace prof {
namespace {

// The fake collector, reporting the calls it saw return through a wrapper.
class WrappedCallsCollector : public testing::FakeCollector {
 public:
  void TakeWrappedCalls(std::vector<uint32_t>* ids) override { *ids = wrapped; }
  std::vector<uint32_t> wrapped;
};

// Test data: this file's host event, as each test file builds its own.
HostEvent Call(uint64_t start_ns, uint32_t correlation_id) {
  HostEvent e{};
  e.start_ns = start_ns;
  e.end_ns = start_ns + 10;
  e.correlation_id = correlation_id;
  return e;
}

WindowJob Job(uint64_t start_ns, uint64_t end_ns, uint64_t wait_ns) {
  WindowJob job;
  job.meta.start_ns = start_ns;
  job.meta.end_ns = end_ns;
  job.deadline_ns = NowNs() + wait_ns;
  return job;
}

TEST_CASE("a window waits for the host event of a call that returned through a wrapper", "[writer]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(uint64_t{1} << 20));
  WrappedCallsCollector collector;
  collector.wrapped = {1, 2};
  WriterDeps deps;
  deps.buffers = &buffers;
  deps.collector = &collector;
  buffers.Append(Call(100, 1));
  // Call 2's thread runs again only after the writer has started collecting.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    buffers.Append(Call(200, 2));
  });
  Window w = SealWindow(Job(0, 1000, /*wait_ns=*/2'000'000'000), deps);
  late.join();
  REQUIRE(w.host_events.size() == 2);
  CHECK(w.host_events[0].correlation_id == 1);
  CHECK(w.host_events[1].correlation_id == 2);
  CHECK(w.meta.losses.host_events_late == 0);
}

TEST_CASE("a wrapped call's host event that never comes is counted as late", "[writer]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(uint64_t{1} << 20));
  WrappedCallsCollector collector;
  collector.wrapped = {1, 2, 3};
  WriterDeps deps;
  deps.buffers = &buffers;
  deps.collector = &collector;
  buffers.Append(Call(100, 1));
  uint64_t t0 = NowNs();
  Window w = SealWindow(Job(0, 1000, /*wait_ns=*/50'000'000), deps);
  CHECK(NowNs() - t0 < 1'000'000'000);  // bounded by the window's deadline
  CHECK(w.host_events.size() == 1);
  CHECK(w.meta.losses.host_events_late == 2);
}

TEST_CASE("a wrapped call whose host event was dropped is not also late", "[writer]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(sizeof(EventChunk)));  // one chunk
  for (uint32_t i = 0; i < kChunkEvents; ++i) buffers.Append(Call(5, 0));  // fills the pool, before the window
  WrappedCallsCollector collector;
  collector.wrapped = {7};
  WriterDeps deps;
  deps.buffers = &buffers;
  deps.collector = &collector;
  uint64_t window = buffers.SetDropRange(0, 1000);
  std::thread([&] { buffers.Append(Call(100, 7)); }).join();  // no chunk: dropped, counted
  WindowJob job = Job(0, 1000, /*wait_ns=*/2'000'000'000);
  job.drop_window = window;
  uint64_t t0 = NowNs();
  Window w = SealWindow(std::move(job), deps);
  CHECK(NowNs() - t0 < 500'000'000);  // no wait for an event counted as dropped
  CHECK(w.meta.losses.host_events_dropped == 1);
  CHECK(w.meta.losses.host_events_late == 0);
}

}  // namespace
}  // namespace prof
