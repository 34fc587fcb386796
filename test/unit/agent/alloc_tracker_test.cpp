// The live-allocation table: per device and memory kind totals, samples
// with running totals while recording, unknown frees ignored, live
// allocations listed at any time.
#include <catch2/catch.hpp>

#include "agent/session/alloc_tracker.h"

namespace prof {
namespace {

TEST_CASE("totals per device follow allocations and frees", "[alloc]") {
  AllocTracker t;
  t.OnAlloc(0x100, 1000, 0, MemKind::kDevice, ApiId::cudaMalloc, 1, 10, false);
  t.OnAlloc(0x200, 500, 1, MemKind::kDevice, ApiId::cudaMalloc, 1, 11, false);
  t.OnAlloc(0x300, 64, -1, MemKind::kHostPinned, ApiId::cudaMallocHost, 1, 12, false);
  CHECK(t.LiveBytes(0, MemKind::kDevice) == 1000);
  CHECK(t.LiveBytes(1, MemKind::kDevice) == 500);
  CHECK(t.LiveBytes(-1, MemKind::kHostPinned) == 64);
  t.OnFree(0x100, ApiId::cudaFree, 1, 13, false);
  CHECK(t.LiveBytes(0, MemKind::kDevice) == 0);
  t.OnFree(0xdead, ApiId::cudaFree, 1, 14, false);  // never seen: ignored
  CHECK(t.LiveBytes(1, MemKind::kDevice) == 500);
  auto live = t.LiveSnapshot();
  REQUIRE(live.size() == 2);
  CHECK(live[0].ptr == 0x200);
  CHECK(live[0].bytes == 500);
  CHECK(live[0].device == 1);
  CHECK(live[1].mem_kind == static_cast<uint8_t>(MemKind::kHostPinned));
}

TEST_CASE("samples carry deltas and running totals, only while recording", "[alloc]") {
  AllocTracker t;
  t.OnAlloc(0x1, 100, 0, MemKind::kDevice, ApiId::cudaMalloc, 7, 1, false);  // before the window
  t.OnAlloc(0x2, 300, 0, MemKind::kDevice, ApiId::cudaMalloc, 7, 20, true);
  t.OnFree(0x1, ApiId::cudaFree, 7, 21, true);
  t.OnAlloc(0x3, 50, 0, MemKind::kDevice, ApiId::cuMemAlloc_v2, 7, 40, true);  // after the window
  uint64_t dropped = 0;
  auto samples = t.TakeSamples(10, 30, &dropped);
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].delta_bytes == 300);
  CHECK(samples[0].total_bytes == 400);
  CHECK(samples[1].delta_bytes == -100);
  CHECK(samples[1].total_bytes == 300);
  CHECK(samples[1].api == static_cast<uint16_t>(ApiId::cudaFree));
  CHECK(dropped == 0);
  auto later = t.TakeSamples(30, 50, &dropped);
  REQUIRE(later.size() == 1);
  CHECK(later[0].total_bytes == 350);
}

TEST_CASE("samples past the cap are counted, not kept", "[alloc]") {
  AllocTracker t(/*max_samples=*/3);
  for (uint64_t i = 0; i < 5; ++i) t.OnAlloc(0x10 + i, 8, 0, MemKind::kDevice, ApiId::cudaMalloc, 1, i, true);
  uint64_t dropped = 0;
  CHECK(t.TakeSamples(0, 100, &dropped).size() == 3);
  CHECK(dropped == 2);
}

TEST_CASE("an address reused without a seen free is replaced, not double counted", "[alloc]") {
  AllocTracker t;
  t.OnAlloc(0x1, 100, 0, MemKind::kDevice, ApiId::cudaMalloc, 1, 1, false);
  t.OnAlloc(0x1, 40, 0, MemKind::kDevice, ApiId::cudaMalloc, 1, 2, false);
  CHECK(t.LiveBytes(0, MemKind::kDevice) == 40);
  CHECK(t.LiveSnapshot().size() == 1);
}

}  // namespace
}  // namespace prof
