// Many threads launching while another flushes: every record arrives
// exactly once, none is lost, and nothing deadlocks.
#include <catch2/catch.hpp>
#include <cupti.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "fake_hub.h"
#include "test_client.h"

TEST_CASE("concurrent launches and flushes deliver every record exactly once", "[buffers][threads]") {
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 300;
  constexpr uint64_t kUs = 1000;
  testclient::Fresh fresh;
  // Small buffers: many fill up and go through the worker thread.
  testclient::Install({/*buffer_size=*/8 * sizeof(CUpti_ActivityKernel10)});
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);

  std::atomic<bool> done{false};
  std::thread flusher([&] {
    while (!done.load()) {
      cuptiActivityFlushAll(0);
      fakehub::Advance(5 * kUs);  // device work keeps finishing
    }
  });
  std::vector<std::thread> launchers;
  for (int t = 0; t < kThreads; ++t) {
    launchers.emplace_back([&] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        fakehub::MakeCall({CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                           "cudaLaunchKernel"},
                          [](uint32_t id) {
                            fakehub::Enqueue(fakehub::Kernel(id, 0, fakehub::Now(), fakehub::Now() + 20 * kUs));
                          });
      }
    });
  }
  for (auto& launcher : launchers) launcher.join();
  done.store(true);
  flusher.join();
  fakehub::Advance(1000 * kUs);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);

  std::map<uint32_t, int> api_seen;
  std::map<uint32_t, int> kernel_seen;
  for (const auto& record : testclient::RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME)) {
    ++api_seen[record.correlationId];
  }
  for (const auto& record : testclient::RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    ++kernel_seen[record.correlationId];
    CHECK(record.end != 0);  // all had ended before the last flush
  }
  CHECK(api_seen.size() == kThreads * kCallsPerThread);
  CHECK(kernel_seen == api_seen);  // same ids, once each
  for (const auto& [id, count] : api_seen) REQUIRE(count == 1);
  size_t dropped = 99;
  REQUIRE(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS);
  CHECK(dropped == 0);
}
