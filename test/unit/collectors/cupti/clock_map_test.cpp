// Mapping CUPTI time onto the agent clock by paired samples.
#include "collectors/cupti/clock_map.h"

#include <catch2/catch.hpp>
#include <vector>

#include "base/clock.h"

namespace prof::cupti {
namespace {

TEST_CASE("the default map is the identity (timestamp callback registered)", "[clock]") {
  ClockMap map;
  CHECK(map.identity());
  CHECK(map.ToAgent(123456789) == 123456789);
  CHECK(map.ToAgent(0) == 0);
}

TEST_CASE("mapping saturates instead of overflowing, and stays monotonic", "[clock]") {
  auto with_offset = [](int64_t offset) {
    ClockMap map;
    uint64_t agent = 1000 + static_cast<uint64_t>(offset);
    REQUIRE(map.Calibrate([&] { return agent; },
                          [](uint64_t* ns) {
                            *ns = 1000;
                            return true;
                          },
                          1));
    REQUIRE(map.offset_ns() == offset);
    return map;
  };
  ClockMap ahead = with_offset(INT64_MAX);
  CHECK(ahead.ToAgent(UINT64_MAX - 5) == UINT64_MAX);
  CHECK(ahead.ToAgent(INT64_MAX) == UINT64_MAX - 1);
  CHECK(ahead.ToAgent(1) == static_cast<uint64_t>(INT64_MAX) + 1);
  ClockMap behind = with_offset(INT64_MIN);
  CHECK(behind.ToAgent(5) == 0);
  CHECK(behind.ToAgent(UINT64_MAX) == UINT64_MAX - (uint64_t{1} << 63));
  ClockMap identity;
  CHECK(identity.ToAgent(UINT64_MAX) == UINT64_MAX);  // was 0: read as a negative int64
  CHECK(identity.ToAgent(uint64_t{1} << 63) == uint64_t{1} << 63);
}

TEST_CASE("calibration recovers a fixed offset between the clocks", "[clock]") {
  // Agent clock ticks 100 ns per read; CUPTI is 1'000'000 ns ahead of the
  // agent at the moment it is read (halfway between the agent reads).
  uint64_t agent = 50'000;
  auto agent_now = [&] { return agent += 100; };
  auto cupti_now = [&](uint64_t* ns) {
    *ns = agent + 50 + 1'000'000;
    return true;
  };
  ClockMap map;
  REQUIRE(map.Calibrate(agent_now, cupti_now));
  CHECK_FALSE(map.identity());
  CHECK(map.offset_ns() == -1'000'000);
  CHECK(map.uncertainty_ns() == 50);
  CHECK(map.ToAgent(2'000'000) == 1'000'000);
}

TEST_CASE("calibration keeps the pair with the tightest bracket", "[clock]") {
  // Brackets of 1000, 10 and 500 ns; the CUPTI read lands at the start of
  // each bracket, so only the tight pair gives an offset within 5 ns of truth.
  std::vector<uint64_t> gaps = {1000, 10, 500};
  size_t i = 0;
  uint64_t agent = 1'000'000;
  bool second = false;
  auto agent_now = [&] {
    if (second) {
      agent += gaps[i++ % gaps.size()];
    } else {
      agent += 1'000;
    }
    second = !second;
    return agent;
  };
  auto cupti_now = [&](uint64_t* ns) {
    *ns = agent + 7'000;  // truth: cupti = agent + 7000
    return true;
  };
  ClockMap map;
  REQUIRE(map.Calibrate(agent_now, cupti_now, 3));
  CHECK(map.uncertainty_ns() == 5);
  CHECK(map.offset_ns() == -7'000 + 5);
}

TEST_CASE("a CUPTI clock that cannot be read leaves the map unchanged", "[clock]") {
  ClockMap map;
  CHECK_FALSE(map.Calibrate([] { return uint64_t{1}; }, [](uint64_t*) { return false; }));
  CHECK(map.identity());
  CHECK(map.ToAgent(42) == 42);
}

TEST_CASE("mapped against the real agent clock, CUPTI time one second ahead lands on agent now", "[clock]") {
  constexpr int64_t kAhead = 1'000'000'000;
  ClockMap map;
  REQUIRE(map.Calibrate(NowNs, [](uint64_t* ns) {
    *ns = NowNs() + kAhead;
    return true;
  }));
  uint64_t now = NowNs();
  uint64_t mapped = map.ToAgent(now + kAhead);
  // Within the calibration's own error (microseconds at worst here).
  CHECK(mapped + 1'000'000 > now);
  CHECK(mapped < now + 1'000'000);
}

}  // namespace
}  // namespace prof::cupti
