// The activity buffer pool: bounded by its cap, refusals counted, buffers
// reused, and the scratch path for CUPTI versions that cannot take NULL.
#include "collectors/cupti/buffer_pool.h"

#include <algorithm>
#include <cstring>
#include <catch2/catch.hpp>
#include <set>
#include <vector>

namespace prof::cupti {
namespace {

TEST_CASE("buffer size follows the cap: 256 KiB for large caps, 8 buffers for small ones, 16 KiB at least", "[pool]") {
  CHECK(BufferBytesForCap(128u << 20) == (256u << 10));
  CHECK(BufferBytesForCap(1u << 20) == (128u << 10));
  CHECK(BufferBytesForCap(4096) == (16u << 10));
  CHECK(BufferBytesForCap(1u << 20) % 8 == 0);
}

TEST_CASE("past the cap the pool answers NULL and counts each refusal", "[pool]") {
  BufferPool pool(1u << 20, /*null_allowed=*/true);
  std::set<uint8_t*> handed;
  for (int i = 0; i < 8; ++i) {
    uint8_t* b = pool.Acquire();
    REQUIRE(b != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(b) % 8 == 0);
    handed.insert(b);
  }
  CHECK(handed.size() == 8);
  CHECK(pool.allocated_bytes() == (1u << 20));
  CHECK(pool.Acquire() == nullptr);
  CHECK(pool.Acquire() == nullptr);
  CHECK(pool.refused() == 2);
  CHECK(pool.allocated_bytes() <= pool.cap_bytes());
}

TEST_CASE("a released buffer is handed out again instead of allocating", "[pool]") {
  BufferPool pool(1u << 20, /*null_allowed=*/true);
  std::vector<uint8_t*> all;
  for (int i = 0; i < 8; ++i) all.push_back(pool.Acquire());
  pool.Release(all[3], 0);
  CHECK(pool.Acquire() == all[3]);
  CHECK(pool.allocated_bytes() == (1u << 20));
  CHECK(pool.refused() == 0);
}

TEST_CASE("without NULL answers, past the cap a scratch buffer is handed out and recognised", "[pool]") {
  BufferPool pool(1u << 20, /*null_allowed=*/false);
  for (int i = 0; i < 8; ++i) REQUIRE_FALSE(pool.IsScratch(pool.Acquire()));
  uint8_t* scratch = pool.Acquire();
  REQUIRE(scratch != nullptr);
  CHECK(pool.IsScratch(scratch));
  CHECK(pool.refused() == 1);
  // Releasing scratch never puts it in the pool: the cap still holds.
  pool.Release(scratch, 0);
  CHECK(pool.IsScratch(pool.Acquire()));
  CHECK(pool.allocated_bytes() == (1u << 20));
}

TEST_CASE("an evicted buffer gives its pages back and is handed out after the resident ones", "[pool]") {
  BufferPool pool(1u << 20, /*null_allowed=*/true);
  std::vector<uint8_t*> all;
  for (int i = 0; i < 8; ++i) all.push_back(pool.Acquire());
  for (uint8_t* b : all) b[0] = b[pool.buffer_bytes() - 1] = 0xab;  // CUPTI wrote records
  CHECK(pool.resident_bytes() == (1u << 20));
  pool.Release(all[1], pool.buffer_bytes(), /*evict=*/true);
  pool.Release(all[2], 1);  // CUPTI reported only the first byte as valid
  CHECK(pool.evictions() == 1);
  CHECK(pool.resident_bytes() == (1u << 20) - pool.buffer_bytes());
  // The kernel took the pages: a private anonymous page reads back as zero.
  CHECK(all[1][0] == 0);
  // Kept resident: what CUPTI reported written is cleared, nothing more.
  CHECK(all[2][0] == 0);
  CHECK(all[2][pool.buffer_bytes() - 1] == 0xab);
  // Resident first (no page faults to refill), then the evicted one.
  CHECK(pool.Acquire() == all[2]);
  CHECK(pool.Acquire() == all[1]);
  CHECK(pool.resident_bytes() == (1u << 20));
  CHECK(pool.Acquire() == nullptr);
}

TEST_CASE("every buffer handed out is all zeros, the first time and after CUPTI filled it", "[pool]") {
  // The collector promises CUPTI zeroed buffers
  // (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) so that CUPTI does not
  // clear each one on the application thread that asks for it.
  BufferPool pool(1u << 20, /*null_allowed=*/true);
  auto all_zero = [&](const uint8_t* b) {
    return std::all_of(b, b + pool.buffer_bytes(), [](uint8_t byte) { return byte == 0; });
  };
  uint8_t* b = pool.Acquire();
  CHECK(all_zero(b));
  std::memset(b, 0x5a, 4096);  // records CUPTI wrote; valid size 4096
  pool.Release(b, 4096);
  uint8_t* again = pool.Acquire();
  REQUIRE(again == b);
  CHECK(all_zero(again));
}

TEST_CASE("a pointer the pool never handed out is ignored on release", "[pool]") {
  BufferPool pool(1u << 20, /*null_allowed=*/true);
  uint8_t foreign[64];
  pool.Release(foreign, sizeof(foreign));
  uint8_t* b = pool.Acquire();
  CHECK(b != foreign);
}

}  // namespace
}  // namespace prof::cupti
