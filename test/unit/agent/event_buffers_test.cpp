// Per-thread event buffers: what goes in during a window comes out once,
// in time order per thread; events outside the range are discarded or kept
// for later; above the cap every drop is counted; chunks are recycled.
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <future>
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

namespace prof {
namespace {

// The writer seals windows late on a busy machine: by the time it collects
// one window, threads have dropped events of the next. Each window is
// charged its own drops (a late writer used to charge them all to the
// window it happened to collect first and report 0 for the later ones).
TEST_CASE("a late writer charges each window its own drops", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(sizeof(EventChunk)));  // one chunk
  buffers.SetDropRange(~0ull, ~0ull);
  for (uint64_t t = 0; t < kChunkEvents; ++t) buffers.Append(Event(10, t));  // fills the pool (before any window)
  uint64_t a = buffers.SetDropRange(100, ~0ull);
  for (int i = 0; i < 3; ++i) buffers.Append(Event(150, 0));
  CHECK(buffers.SetDropRange(100, 200) == a);  // the same window, its end now known
  buffers.Append(Event(250, 0));               // between windows: nobody's
  uint64_t b = buffers.SetDropRange(300, ~0ull);
  CHECK(b != a);
  for (int i = 0; i < 5; ++i) buffers.Append(Event(350, 0));
  buffers.SetDropRange(300, 400);
  std::thread([&] { buffers.Append(Event(360, 0)); }).join();  // a thread that found no chunk
  // Only now does the writer get to the first window.
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(100, 200, &out, &dropped, a);
  CHECK(dropped == 3);
  dropped = 0;
  buffers.Collect(300, 400, &out, &dropped, b);
  CHECK(dropped == 6);
}

// A thread per request and a writer that runs late: an exited thread's slot
// is free at the consumer's next pass even when its events wait for a later
// window, so the slots in use are the threads that lived since that pass,
// not every thread since the window the writer is sealing.
TEST_CASE("an exited thread's slot is free at the next pass while its events wait for their window", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(uint64_t{1} << 24));  // 1024 chunks: one per exited thread still holding events
  constexpr uint64_t kThreads = EventBuffers::kMaxThreads + 2000;
  constexpr uint64_t kBetweenPasses = 200;  // threads that come and go between two consumer passes
  constexpr uint64_t kWindow = 400;         // threads per window; the writer collects one window late
  uint64_t collected = 0, dropped = 0;
  uint64_t next_window = 0;                 // first thread (= time) of the next window to collect
  for (uint64_t i = 0; i < kThreads; ++i) {
    std::thread([&buffers, i] { buffers.Append(Event(i, static_cast<uint64_t>(syscall(SYS_gettid)))); }).join();
    if ((i + 1) % kBetweenPasses != 0) continue;
    // A pass: the writer collects the window that ended kWindow threads ago.
    if (i + 1 >= next_window + 2 * kWindow) {
      std::vector<HostEvent> out;
      buffers.Collect(next_window, next_window + kWindow, &out, &dropped);
      INFO("window at " << next_window);
      REQUIRE(out.size() == kWindow);
      for (const HostEvent& e : out) CHECK(e.tid == e.ptr);
      collected += out.size();
      next_window += kWindow;
    } else {
      buffers.Discard(next_window);  // a window opening: nothing older to drop
    }
    CHECK(buffers.thread_count() <= kBetweenPasses + 1);
  }
  std::vector<HostEvent> out;
  buffers.Collect(next_window, kThreads, &out, &dropped);
  collected += out.size();
  CHECK(collected == kThreads);
  CHECK(dropped == 0);
  CHECK(buffers.unregistered_drops() == 0);
  CHECK(buffers.orphans() == 0);
}

// Every slot held by a live thread: a new thread's events are dropped and
// counted. Once a holder exits and a pass frees its slot, the thread that
// found none gets it at its next event, rather than dropping every event of
// its life.
TEST_CASE("a thread that found every slot taken gets one once a pass frees one", "[buffers]") {
  EventBuffers buffers(/*max_threads=*/2);
  REQUIRE(buffers.Init(uint64_t{1} << 20));
  std::promise<void> release_first, release_second;
  std::promise<void> first_in, second_in;
  std::thread first([&] {
    buffers.Append(Event(1, 1));
    first_in.set_value();
    release_first.get_future().wait();
  });
  std::thread second([&] {
    buffers.Append(Event(2, 2));
    second_in.set_value();
    release_second.get_future().wait();
  });
  first_in.get_future().wait();
  second_in.get_future().wait();
  std::promise<void> go_on, dropped_one;
  std::thread late([&] {
    buffers.Append(Event(3, 3));  // no slot: dropped
    dropped_one.set_value();
    go_on.get_future().wait();
    buffers.Append(Event(4, 4));  // a slot is free now
  });
  dropped_one.get_future().wait();
  CHECK(buffers.unregistered_drops() == 1);
  release_first.set_value();
  first.join();
  buffers.Discard(0);  // a pass: the exited thread's slot is freed, its event kept
  go_on.set_value();
  late.join();
  release_second.set_value();
  second.join();
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(0, 100, &out, &dropped);
  std::set<uint64_t> tags;
  for (const HostEvent& e : out) tags.insert(e.ptr);
  CHECK(tags == std::set<uint64_t>{1, 2, 4});
  CHECK(dropped == 1);
  CHECK(buffers.unregistered_drops() == 1);
  CHECK(buffers.thread_count() == 2);
}

// Another scenario than the late-writer test's: the same collect-and-count tail, other drops.
// A time step's window is opened by the agent thread when it next runs,
// milliseconds after the boundary it starts at on a busy machine: the drops
// made in between, of calls that started at or after the boundary, are
// charged to it when it opens; those before the boundary to nobody.
TEST_CASE("a window opened after its start is charged the drops made since its start", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(sizeof(EventChunk)));  // one chunk
  buffers.SetDropRange(~0ull, ~0ull);
  for (uint64_t t = 0; t < kChunkEvents; ++t) buffers.Append(Event(10, t));  // fills the pool
  uint64_t a = buffers.SetDropRange(100, ~0ull);
  buffers.Append(Event(150, 0));
  buffers.SetDropRange(100, 200);
  buffers.Append(Event(250, 0));  // between the windows
  buffers.Append(Event(320, 0));  // the next window starts at 300, opened only at 400
  buffers.Append(Event(390, 0));
  uint64_t b = buffers.SetDropRange(300, ~0ull);
  buffers.Append(Event(410, 0));
  buffers.SetDropRange(300, 500);
  std::vector<HostEvent> out;
  uint64_t dropped = 0;
  buffers.Collect(100, 200, &out, &dropped, a);
  CHECK(dropped == 1);
  dropped = 0;
  buffers.Collect(300, 500, &out, &dropped, b);
  CHECK(dropped == 3);
}

// The same with threads dropping while windows open late and close: each
// window is charged exactly the drops of calls that started in its span.
// The threads take start times from one counter, up to a limit the session
// raises, so the stretch before each late opening holds a known number.
TEST_CASE("windows opened late by a racing session are charged exactly their own drops", "[buffers]") {
  EventBuffers buffers;
  REQUIRE(buffers.Init(sizeof(EventChunk)));
  buffers.SetDropRange(~0ull, ~0ull);
  for (uint64_t t = 0; t < kChunkEvents; ++t) buffers.Append(Event(1, t));  // fills the pool
  constexpr int kThreads = 4;
  constexpr uint64_t kNone = ~0ull;
  std::atomic<uint64_t> clock{2}, limit{2};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> in_flight[kThreads];
  std::vector<uint64_t> starts[kThreads];
  for (auto& f : in_flight) f.store(kNone);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      while (true) {
        // Taking a start time shows as in flight (0 is below every limit)
        // before the counter moves, so run_until never takes a thread that
        // holds a time but has not said so yet for one that is done.
        in_flight[i].store(0);
        uint64_t t = clock.fetch_add(1);
        in_flight[i].store(t);
        while (t >= limit.load() && !stop.load()) std::this_thread::yield();
        if (t >= limit.load()) break;
        buffers.Append(Event(t, 0));
        in_flight[i].store(kNone);
        starts[i].push_back(t);
      }
    });
  }
  // Hands out start times up to `to` and waits until every drop of those is made.
  auto run_until = [&](uint64_t to) {
    limit.store(to);
    while (clock.load() < to) std::this_thread::yield();
    for (auto& f : in_flight) {
      while (f.load() < to) std::this_thread::yield();
    }
  };
  struct Span {
    uint64_t begin, end, id;
  };
  std::vector<Span> windows;
  uint64_t t = 2;
  for (uint32_t k = 0; k < EventBuffers::kDropWindows - 1; ++k) {  // collected only at the end
    run_until(t += 20);  // between windows
    uint64_t begin = t;
    limit.store(t += 40);
    while (clock.load() < begin + 20) std::this_thread::yield();  // drops before the opening, some in flight
    uint64_t id = buffers.SetDropRange(begin, ~0ull);
    run_until(t += 40);
    buffers.SetDropRange(begin, t);
    windows.push_back({begin, t, id});
  }
  run_until(t += 20);
  stop.store(true);
  for (auto& th : threads) th.join();
  for (const Span& w : windows) {
    uint64_t expected = 0;
    for (auto& list : starts) {
      expected += std::count_if(list.begin(), list.end(), [&](uint64_t s) { return s >= w.begin && s < w.end; });
    }
    std::vector<HostEvent> out;
    uint64_t dropped = 0;
    buffers.Collect(w.begin, w.end, &out, &dropped, w.id);
    INFO("window [" << w.begin << ", " << w.end << ")");
    REQUIRE(expected == w.end - w.begin);
    CHECK(dropped == expected);
  }
}

}  // namespace
}  // namespace prof
