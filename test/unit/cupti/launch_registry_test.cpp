// Window membership and completeness bookkeeping by correlation id.
#include "collectors/cupti/launch_registry.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace prof::cupti {
namespace {

TEST_CASE("a call's enter time is found by its correlation id", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(7, 1000, /*expects_record=*/true);
  uint64_t enter = 0;
  REQUIRE(registry.EnterNs(7, &enter));
  CHECK(enter == 1000);
  CHECK_FALSE(registry.EnterNs(8, &enter));
}

TEST_CASE("outstanding counts launches in the window still waiting for their record", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(1, 100, true);   // before the window
  registry.OnEnter(2, 200, true);   // in [200, 400)
  registry.OnEnter(3, 300, true);   // in
  registry.OnEnter(4, 350, false);  // in, but enqueues nothing (cudaGetDevice)
  registry.OnEnter(5, 400, true);   // at end: outside
  CHECK(registry.Outstanding(200, 400) == 2);
  registry.MarkDelivered(2);
  CHECK(registry.Outstanding(200, 400) == 1);
  registry.MarkDelivered(3);
  CHECK(registry.Outstanding(200, 400) == 0);
}

TEST_CASE("a failed call is not waited for", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(9, 250, true);
  registry.OnExit(9, /*succeeded=*/false);
  CHECK(registry.Outstanding(0, 1000) == 0);
}

TEST_CASE("a record carrying a nested driver call's id also satisfies the runtime call around it", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(10, 500, /*expects_record=*/true);                  // cudaMemcpy
  registry.OnEnter(11, 501, /*expects_record=*/false, /*parent=*/10);  // cuMemcpyDtoH inside it
  CHECK(registry.Outstanding(0, 1000) == 1);
  registry.MarkDelivered(11);
  CHECK(registry.Outstanding(0, 1000) == 0);
}

TEST_CASE("calls of sealed windows are forgotten, later ones kept", "[registry]") {
  LaunchRegistry registry(100);
  registry.OnEnter(1, 100, true);
  registry.OnEnter(2, 900, true);
  registry.ForgetBefore(500);
  uint64_t enter = 0;
  CHECK_FALSE(registry.EnterNs(1, &enter));
  CHECK(registry.EnterNs(2, &enter));
  CHECK(registry.size() == 1);
}

TEST_CASE("past its capacity the registry counts calls it could not remember", "[registry]") {
  // Capacity is split evenly over 16 shards by correlation id: 16 calls
  // allow one per shard, so ids 1 and 17 (same shard) overflow.
  LaunchRegistry registry(16);
  registry.OnEnter(1, 1, true);
  registry.OnEnter(2, 2, true);
  registry.OnEnter(17, 3, true);
  CHECK(registry.size() == 2);
  CHECK(registry.overflowed() == 1);
}

TEST_CASE("threads entering calls at once are all remembered", "[registry]") {
  LaunchRegistry registry(1 << 20);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 8; ++t) {
    threads.emplace_back([&registry, t] {
      for (uint32_t i = 1; i <= 1000; ++i) registry.OnEnter(t * 1000 + i, i, true);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(registry.size() == 8000);
  CHECK(registry.Outstanding(0, 2000) == 8000);
}

}  // namespace
}  // namespace prof::cupti
