// Window membership and completeness bookkeeping by correlation id.
#include "collectors/cupti/launch_registry.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace prof::cupti {
namespace {

constexpr LaunchRegistry::Awaits kNothing = LaunchRegistry::Awaits::kNothing;
constexpr LaunchRegistry::Awaits kKernel = LaunchRegistry::Awaits::kKernel;
constexpr LaunchRegistry::Awaits kMemcpy = LaunchRegistry::Awaits::kMemcpy;
constexpr LaunchRegistry::Awaits kMemset = LaunchRegistry::Awaits::kMemset;

TEST_CASE("a call's enter time is found by its correlation id", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(7, 1000, kKernel);
  uint64_t enter = 0;
  REQUIRE(registry.EnterNs(7, &enter));
  CHECK(enter == 1000);
  CHECK_FALSE(registry.EnterNs(8, &enter));
}

TEST_CASE("outstanding counts launches in the window still waiting for their record", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(1, 100, kKernel);   // before the window
  registry.OnEnter(2, 200, kKernel);   // in [200, 400)
  registry.OnEnter(3, 300, kKernel);   // in
  registry.OnEnter(4, 350, kNothing);  // in, but enqueues nothing (cudaGetDevice)
  registry.OnEnter(5, 400, kKernel);   // at end: outside
  CHECK(registry.Outstanding(200, 400) == 2);
  registry.MarkDelivered(2);
  CHECK(registry.Outstanding(200, 400) == 1);
  registry.MarkDelivered(3);
  CHECK(registry.Outstanding(200, 400) == 0);
}

TEST_CASE("what is still outstanding is counted by the kind of record each call awaits", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(1, 200, kKernel);
  registry.OnEnter(2, 210, kKernel);
  registry.OnEnter(3, 220, kMemcpy);
  registry.OnEnter(4, 230, kMemset);
  registry.OnEnter(5, 240, kMemcpy);
  registry.OnEnter(6, 250, kNothing);
  registry.OnEnter(7, 500, kMemset);  // a later window's
  registry.MarkDelivered(2);
  registry.MarkDelivered(5);
  LaunchRegistry::Pending pending;
  CHECK(registry.Outstanding(200, 400, &pending) == 3);
  CHECK(pending.device.kernels == 1);
  CHECK(pending.device.copies == 1);
  CHECK(pending.device.memsets == 1);
  CHECK(pending.device.total() == 3);
}

TEST_CASE("a window's id span covers its calls and no other's, libprof's own left out", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(3, 100, kKernel);  // before the window
  registry.OnEnter(4, 200, kKernel);
  registry.OnOwnCall(5, 210);
  registry.OnEnter(6, 220, kNothing);
  registry.OnEnter(7, 400, kKernel);  // after it
  uint32_t low = 0, high = 0;
  REQUIRE(registry.IdSpan(200, 400, &low, &high));
  CHECK(low == 4);
  CHECK(high == 6);
  CHECK_FALSE(registry.IdSpan(500, 600, &low, &high));
}

TEST_CASE("libprof's own call is known as such and nothing of the window waits for it", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(10, 250, kNothing, 0, /*expects_api_record=*/true);  // the application's
  registry.OnOwnCall(11, 260);  // libprof's device query after it
  CHECK_FALSE(registry.IsOwn(10));
  CHECK(registry.IsOwn(11));
  CHECK_FALSE(registry.IsOwn(12));
  LaunchRegistry::Pending pending;
  registry.Outstanding(0, 1000, &pending);
  CHECK(pending.in_progress == 1);  // the application's call only
  CHECK(pending.api_records == 1);
}

TEST_CASE("a failed call is not waited for", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(9, 250, kKernel);
  registry.OnExit(9, /*succeeded=*/false);
  CHECK(registry.Outstanding(0, 1000) == 0);
}

TEST_CASE("an API record CUPTI was told to leave out while the call ran is not waited for, its device record still is",
          "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(9, 250, kKernel, 0, /*expects_api_record=*/true);
  registry.OnEnter(10, 260, kNothing, 0, /*expects_api_record=*/true);
  LaunchRegistry::ApiState state;
  REQUIRE(registry.LookUpApi(10, &state));
  CHECK(state.enter_ns == 260);
  CHECK(state.expects_api_record);
  CHECK_FALSE(state.api_record_delivered);
  registry.OnExit(9, /*succeeded=*/true, /*api_record_comes=*/false);
  registry.OnExit(10, /*succeeded=*/true);
  LaunchRegistry::Pending pending;
  CHECK(registry.Outstanding(0, 1000, &pending) == 1);  // 9's kernel still
  CHECK(pending.api_records == 1);                      // 10's own record only
  registry.MarkApiDelivered(10);
  REQUIRE(registry.LookUpApi(10, &state));
  CHECK(state.api_record_delivered);
  registry.Outstanding(0, 1000, &pending);
  CHECK(pending.api_records == 0);
  CHECK_FALSE(registry.LookUpApi(11, &state));
}

TEST_CASE("a record carrying a nested driver call's id also satisfies the runtime call around it", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(10, 500, kKernel);                  // cudaMemcpy
  registry.OnEnter(11, 501, kNothing, /*parent=*/10);  // cuMemcpyDtoH inside it
  CHECK(registry.Outstanding(0, 1000) == 1);
  registry.MarkDelivered(11);
  CHECK(registry.Outstanding(0, 1000) == 0);
}

TEST_CASE("calls of sealed windows are forgotten, later ones kept", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(1, 100, kKernel);
  registry.OnEnter(2, 900, kKernel);
  registry.ForgetBefore(500);
  uint64_t enter = 0;
  CHECK_FALSE(registry.EnterNs(1, &enter));
  CHECK(registry.EnterNs(2, &enter));
  CHECK(registry.size() == 1);
}

TEST_CASE("past its capacity the newest call takes the slot of the one a ring older, and that is counted",
          "[registry]") {
  // 16 slots: ids 1 and 17 share one.
  LaunchRegistry registry(16);
  REQUIRE(registry.capacity() == 16);
  registry.OnEnter(1, 1, kKernel);
  registry.OnEnter(2, 2, kKernel);
  registry.OnEnter(17, 3, kKernel);
  uint64_t enter = 0;
  CHECK(registry.size() == 2);
  CHECK(registry.overflowed() == 1);
  CHECK_FALSE(registry.EnterNs(1, &enter));
  REQUIRE(registry.EnterNs(17, &enter));
  CHECK(enter == 3);
  // A late flag change for the displaced call must not touch the new one.
  registry.OnExit(1, /*succeeded=*/false);
  registry.MarkDelivered(1);
  CHECK(registry.Outstanding(0, 10) == 2);
}

TEST_CASE("the capacity is rounded up to a power of two and the ring's bytes are known up front", "[registry]") {
  LaunchRegistry registry(100);
  CHECK(registry.capacity() == 128);
  CHECK(LaunchRegistry::BytesFor(100) == LaunchRegistry::BytesFor(128));
  CHECK(LaunchRegistry::BytesFor(129) == 2 * LaunchRegistry::BytesFor(128));
}

TEST_CASE("a slot freed by a sealed window is reused without counting an overflow", "[registry]") {
  LaunchRegistry registry(16);
  for (uint32_t id = 1; id <= 16; ++id) registry.OnEnter(id, id, kKernel);
  registry.ForgetBefore(100);
  CHECK(registry.size() == 0);
  for (uint32_t id = 17; id <= 32; ++id) registry.OnEnter(id, 100 + id, kKernel);
  CHECK(registry.overflowed() == 0);
  CHECK(registry.Outstanding(100, 1000) == 16);
}

TEST_CASE("scans after many sealed windows still see every call of the open one", "[registry]") {
  // Ids move on by far more than the ring while windows are sealed one by
  // one: the scan range follows them.
  LaunchRegistry registry(1024);
  uint32_t id = 0;
  for (uint64_t window = 0; window < 50; ++window) {
    uint64_t start = window * 1000;
    for (int i = 0; i < 700; ++i) registry.OnEnter(++id, start + i, kKernel);
    CHECK(registry.Outstanding(start, start + 1000) == 700);
    registry.ForgetBefore(start + 1000);
    CHECK(registry.size() == 0);
  }
  CHECK(registry.overflowed() == 0);
}

TEST_CASE("a call entered long after later ids were entered and forgotten is still seen and forgotten", "[registry]") {
  // CUPTI handed id 5 to a thread that ran late: 10,000 later calls were
  // entered and their window sealed before it entered its call.
  LaunchRegistry registry(1 << 16);
  for (uint32_t id = 6; id <= 10005; ++id) registry.OnEnter(id, 100, kKernel);
  registry.ForgetBefore(1000);
  CHECK(registry.size() == 0);
  registry.OnEnter(5, 2000, kKernel);
  registry.OnEnter(10006, 2001, kKernel);
  CHECK(registry.Outstanding(1000, 3000) == 2);
  registry.ForgetBefore(3000);
  CHECK(registry.size() == 0);
  CHECK(registry.Outstanding(0, ~0ull) == 0);
}

TEST_CASE("calls entered out of id order while windows are forgotten are all seen", "[registry]") {
  // Threads take ids from one counter and enter them in whatever order they
  // run, some after a pause; the writer forgets nothing (every call is of
  // the open window) but moves its scan range up each time. Every call must
  // be counted at the end.
  constexpr uint32_t kThreads = 4;
  constexpr uint32_t kCallsPerThread = 20000;
  LaunchRegistry registry(kThreads * kCallsPerThread);
  std::atomic<uint32_t> next_id{1};
  std::atomic<bool> done{false};
  std::thread writer([&] {
    while (!done.load()) registry.ForgetBefore(/*end_ns=*/1);
  });
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kCallsPerThread; ++i) {
        uint32_t id = next_id.fetch_add(1);
        if ((i + t) % 97 == 0) std::this_thread::yield();  // entered late
        registry.OnEnter(id, 10, kKernel);
      }
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  writer.join();
  CHECK(registry.Outstanding(0, ~0ull) == kThreads * kCallsPerThread);
  registry.ForgetBefore(11);
  CHECK(registry.size() == 0);
}

TEST_CASE("a window's scans stop a run of later calls past its end, and a call behind them is forgotten later",
          "[registry]") {
  // A writer 20,000 calls behind the application: the window's 100 calls,
  // one of them entered with an id behind 600 calls of later windows.
  LaunchRegistry registry(1 << 16);
  uint32_t id = 0;
  for (int i = 0; i < 100; ++i) registry.OnEnter(++id, 10, kKernel);
  for (int i = 0; i < 600; ++i) registry.OnEnter(++id, 2000 + i, kKernel);
  registry.OnEnter(++id, 20, kKernel);  // of the window, entered behind them
  for (int i = 0; i < 20000; ++i) registry.OnEnter(++id, 3000 + i, kKernel);
  CHECK(registry.Outstanding(0, 1000) == 100);  // the late one is past the scan's stop
  registry.ForgetBefore(1000);
  CHECK(registry.size() == 20601);  // the 100 forgotten; the late one kept for now
  CHECK(registry.Outstanding(1000, 100000) == 20600);
  // The next windows' scans pass it and forget it.
  registry.ForgetBefore(2600);
  CHECK(registry.size() == 20000);
  CHECK(registry.Outstanding(0, ~0ull) == 20000);
}

TEST_CASE("clear forgets every call and lets ids start from 1 again", "[registry]") {
  LaunchRegistry registry(64);
  for (uint32_t id = 1000; id < 1010; ++id) registry.OnEnter(id, 5, kKernel);
  registry.Clear();
  CHECK(registry.size() == 0);
  CHECK(registry.Outstanding(0, 10) == 0);
  registry.OnEnter(1, 7, kKernel);
  registry.OnEnter(2, 8, kKernel);
  CHECK(registry.Outstanding(0, 10) == 2);
  registry.ForgetBefore(10);
  CHECK(registry.size() == 0);
}

TEST_CASE("threads entering calls at once are all remembered", "[registry]") {
  LaunchRegistry registry(1 << 20);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 8; ++t) {
    threads.emplace_back([&registry, t] {
      for (uint32_t i = 1; i <= 1000; ++i) registry.OnEnter(t * 1000 + i, i, kKernel);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(registry.size() == 8000);
  CHECK(registry.Outstanding(0, 2000) == 8000);
}

TEST_CASE("ids handed out by one counter to many threads, delivered meanwhile by another, are counted exactly",
          "[registry]") {
  // Like CUPTI: one global counter, threads entering in whatever order they
  // get the CPU, the writer marking records delivered as they come.
  constexpr uint32_t kThreads = 8;
  constexpr uint32_t kCallsPerThread = 20000;
  constexpr uint32_t kCalls = kThreads * kCallsPerThread;
  LaunchRegistry registry(kCalls);
  std::atomic<uint32_t> next_id{1};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (uint32_t i = 0; i < kCallsPerThread; ++i) {
        uint32_t id = next_id.fetch_add(1);
        // Even ids expect a record; every third id fails at exit.
        registry.OnEnter(id, 1000 + id, id % 2 == 0 ? kKernel : kNothing);
        registry.OnExit(id, /*succeeded=*/id % 3 != 0);
      }
    });
  }
  // The writer delivers ids divisible by 4 while the threads still enter.
  uint64_t delivered = 0;
  for (uint32_t id = 4; id <= kCalls; id += 4) {
    uint64_t enter = 0;
    while (!registry.EnterNs(id, &enter)) std::this_thread::yield();
    CHECK(enter == 1000 + id);
    registry.MarkDelivered(id);
    ++delivered;
  }
  for (auto& th : threads) th.join();
  // Waiting: even, not failed (not divisible by 3), not delivered (not
  // divisible by 4): even ids in [1, kCalls] minus multiples of 6 or 4.
  uint64_t expected = 0;
  for (uint32_t id = 1; id <= kCalls; ++id) expected += id % 2 == 0 && id % 3 != 0 && id % 4 != 0;
  CHECK(registry.overflowed() == 0);
  CHECK(registry.size() == kCalls);
  CHECK(registry.Outstanding(0, ~0ull) == expected);
  // Half the calls belong to a window that ends at the middle id.
  uint64_t first_half = 0;
  for (uint32_t id = 1; id < kCalls / 2; ++id) first_half += id % 2 == 0 && id % 3 != 0 && id % 4 != 0;
  CHECK(registry.Outstanding(0, 1000 + kCalls / 2) == first_half);
  registry.ForgetBefore(1000 + kCalls / 2);
  CHECK(registry.size() == kCalls - (kCalls / 2 - 1));
  CHECK(registry.Outstanding(0, ~0ull) == expected - first_half);
  CHECK(delivered == kCalls / 4);
}

}  // namespace
}  // namespace prof::cupti
