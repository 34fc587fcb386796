// Per-thread event buffers: what goes in during a window comes out once,
// in time order per thread; events outside the range are discarded or kept
// for later; above the cap every drop is counted; chunks are recycled.
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <set>
#include <thread>
#include <vector>

#include "agent/session/event_buffers.h"

namespace prof {
namespace {

HostEvent Event(uint64_t start_ns, uint64_t tag) {
  HostEvent e{};
  e.start_ns = start_ns;
  e.end_ns = start_ns + 1;
  e.ptr = tag;
  return e;
}

TEST_CASE("events of a time range are collected once while later ones wait and earlier ones are discarded", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(1 << 20));
  for (uint64_t t = 0; t < 1000; ++t) buffers.Append(Event(t, t));
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(100, 600, &out, &dropped);
  REQUIRE(out.size() == 500);
  CHECK(out.front().start_ns == 100);
  CHECK(out.back().start_ns == 599);
  CHECK(dropped == 0);
  out.clear();
  buffers.Collect(600, 2000, &out, &dropped);
  CHECK(out.size() == 400);
  out.clear();
  buffers.Collect(0, 2000, &out, &dropped);
  CHECK(out.empty());  // nothing is handed out twice
}

TEST_CASE("the thread id is stamped on every event", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(1 << 20));
  std::thread([&] { buffers.Append(Event(5, 1)); }).join();
  buffers.Append(Event(6, 2));
  std::vector<HostEvent> out;
  buffers.Collect(0, 100, &out, nullptr);
  REQUIRE(out.size() == 2);
  CHECK(out[0].tid != 0);
  CHECK(out[1].tid != 0);
  CHECK(out[0].tid != out[1].tid);
}

TEST_CASE("64 threads below the cap lose nothing", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(64ull << 20));
  constexpr int kThreads = 64;
  constexpr int kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) buffers.Append(Event(1 + i, static_cast<uint64_t>(t) * kEach + i));
    });
  }
  for (auto& th : threads) th.join();
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(0, ~0ull, &out, &dropped);
  CHECK(dropped == 0);
  REQUIRE(out.size() == static_cast<size_t>(kThreads) * kEach);
  std::set<uint64_t> tags;
  for (const HostEvent& e : out) tags.insert(e.ptr);
  CHECK(tags.size() == out.size());
}

TEST_CASE("above the cap every event is either kept or counted as dropped", "[buffers]") {
  EventBuffers buffers;
  // 4 chunks of 255 events: 1020 events fit.
  REQUIRE(buffers.Init(4 * sizeof(EventChunk)));
  constexpr int kThreads = 8;
  constexpr int kEach = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) buffers.Append(Event(1 + i, i));
    });
  }
  for (auto& th : threads) th.join();
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(0, ~0ull, &out, &dropped);
  CHECK(out.size() <= 4 * kChunkEvents);
  CHECK(out.size() >= kChunkEvents);
  CHECK(out.size() + dropped == static_cast<uint64_t>(kThreads) * kEach);
  // Drops are reported once.
  uint64_t again = 0;
  buffers.Collect(0, ~0ull, &out, &again);
  CHECK(again == 0);
}

TEST_CASE("consumed chunks go back to the pool, so a later window has room again", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(3 * sizeof(EventChunk)));
  uint64_t t = 0;
  for (int window = 0; window < 20; ++window) {
    uint64_t begin = t;
    for (uint32_t i = 0; i < 2 * kChunkEvents; ++i) buffers.Append(Event(t++, i));
    std::vector<HostEvent> out;
    uint64_t dropped = 0;
    buffers.Collect(begin, t, &out, &dropped);
    INFO("window " << window);
    CHECK(dropped == 0);
    CHECK(out.size() == 2 * kChunkEvents);
  }
}

TEST_CASE("a dead thread's last chunk is returned after it is drained", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(2 * sizeof(EventChunk)));
  for (int i = 0; i < 5; ++i) {
    std::thread([&] { buffers.Append(Event(1, 1)); }).join();
    std::vector<HostEvent> out;
    uint64_t dropped = 0;
    buffers.Collect(0, 10, &out, &dropped);
    INFO("thread " << i);
    CHECK(out.size() == 1);
    CHECK(dropped == 0);
  }
}

TEST_CASE("Discard drops what started before a window", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(1 << 20));
  for (uint64_t t = 0; t < 100; ++t) buffers.Append(Event(t, t));
  buffers.Discard(50);
  std::vector<HostEvent> out;
  buffers.Collect(0, 1000, &out, nullptr);
  REQUIRE(out.size() == 50);
  CHECK(out.front().start_ns == 50);
}

// Without slot reuse, once kMaxThreads threads had existed every new
// thread's events would be dropped.
TEST_CASE("exited threads' slots are reused once their events are collected", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(1 << 20));
  constexpr uint64_t kThreads = EventBuffers::kMaxThreads + 2000;
  constexpr uint64_t kPerWindow = 50;  // each thread takes a chunk: 50 of the 64 fit
  uint64_t collected = 0;
  uint64_t total_dropped = 0;
  uint64_t t = 1;
  for (uint64_t begin = 0; begin < kThreads; begin += kPerWindow) {
    uint64_t window_start = t;
    // Each thread stamps its own id into the event, like a CUDA call would.
    for (uint64_t i = begin; i < begin + kPerWindow && i < kThreads; ++i) {
      uint64_t at = t++;
      std::thread([&buffers, at] { buffers.Append(Event(at, static_cast<uint64_t>(syscall(SYS_gettid)))); }).join();
    }
    std::vector<HostEvent> out;
    uint64_t dropped = 0;
    buffers.Collect(window_start, t, &out, &dropped);
    INFO("window of threads " << begin);
    CHECK(dropped == 0);
    REQUIRE(out.size() == std::min(kPerWindow, kThreads - begin));
    for (const HostEvent& e : out) CHECK(e.tid == e.ptr);
    collected += out.size();
    total_dropped += dropped;
  }
  CHECK(collected == kThreads);
  CHECK(total_dropped == 0);
  CHECK(buffers.unregistered_drops() == 0);
  // Sequential threads need about one slot each window, not one per thread.
  CHECK(buffers.thread_count() <= 2 * kPerWindow);
}

TEST_CASE("an exited thread's slot is not reused while a later window still needs its events", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(1 << 20));
  uint64_t first_tid = 0;
  std::thread([&] {
    first_tid = static_cast<uint64_t>(syscall(SYS_gettid));
    buffers.Append(Event(500, first_tid));  // belongs to the window [400, 600)
  }).join();
  std::vector<HostEvent> out;
  buffers.Collect(0, 100, &out, nullptr);  // an earlier window: nothing of it
  CHECK(out.empty());
  // Threads that come and go meanwhile must not take the slot.
  for (int i = 0; i < 50; ++i) {
    std::thread([&buffers, i] { buffers.Append(Event(700 + i, static_cast<uint64_t>(syscall(SYS_gettid)))); }).join();
    buffers.Collect(100, 200, &out, nullptr);
  }
  CHECK(out.empty());
  buffers.Collect(400, 600, &out, nullptr);
  REQUIRE(out.size() == 1);
  CHECK(out[0].ptr == first_tid);
  CHECK(out[0].tid == first_tid);
  out.clear();
  buffers.Collect(600, 1000, &out, nullptr);
  REQUIRE(out.size() == 50);
  for (const HostEvent& e : out) CHECK(e.tid == e.ptr);
}

TEST_CASE("a reused slot reports only the new thread's drops, in the window that collects them", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(sizeof(EventChunk)));  // one chunk
  std::thread([&] {
    for (uint32_t i = 0; i < kChunkEvents + 10; ++i) buffers.Append(Event(10 + i, i));
  }).join();
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(0, 1000, &out, &dropped);
  CHECK(out.size() == kChunkEvents);
  CHECK(dropped == 10);
  out.clear();
  dropped = 0;
  std::thread([&] {
    for (uint32_t i = 0; i < 3; ++i) buffers.Append(Event(2000 + i, i));
  }).join();
  buffers.Collect(1000, 3000, &out, &dropped);
  CHECK(out.size() == 3);
  CHECK(dropped == 0);
  CHECK(buffers.thread_count() <= 2);
}

// The agent flake (64 threads above the cap, loaded machine): the window
// opened, threads dropped events, and only then did the writer thread run the
// window's Discard, which used to forget every drop counted so far.
TEST_CASE("drops belong to the window their call started in, however late the writer discards", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(sizeof(EventChunk)));  // one chunk: the 256th event drops
  buffers.SetDropRange(~0ull, ~0ull);         // the agent before its first window
  for (uint64_t t = 0; t < kChunkEvents; ++t) buffers.Append(Event(10, t));
  for (int i = 0; i < 3; ++i) buffers.Append(Event(20, 0));  // warmup: not a window's drops
  buffers.SetDropRange(100, ~0ull);                          // the window opens at 100
  for (int i = 0; i < 5; ++i) buffers.Append(Event(150, 0));  // dropped inside it
  buffers.Append(Event(90, 0));  // a call that started before the window: not its drop
  buffers.Discard(100);          // the writer gets to the window's start only now
  buffers.SetDropRange(100, 1000);  // the window ends at 1000
  buffers.Append(Event(999, 0));    // started inside, dropped after the end: counted
  buffers.Append(Event(1000, 0));   // the next cycle's warmup: not counted
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(100, 1000, &out, &dropped);
  CHECK(out.empty());
  CHECK(dropped == 6);
}

}  // namespace
}  // namespace prof
