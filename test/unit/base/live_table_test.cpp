// LiveTable must behave exactly like a map under any mix of inserts and
// erases (including the wrap-around and growth cases that backward-shift
// deletion gets wrong if the home-position test is off by one).
#include "base/live_table.h"

#include <catch2/catch.hpp>

#include <random>
#include <unordered_map>

namespace prof {
namespace {

TEST_CASE("LiveTable matches std::unordered_map over random inserts and erases", "[live_table]") {
  LiveTable<uint64_t> table(16);  // tiny, so it grows and probe runs wrap
  std::unordered_map<uint64_t, uint64_t> truth;
  std::mt19937_64 rng(7);
  for (int op = 0; op < 200'000; ++op) {
    // Page-aligned keys from a small range: many collisions, like allocator addresses.
    uint64_t key = ((rng() % 2048) + 1) << 12;
    if (rng() % 3 != 0) {
      bool inserted = false;
      uint64_t& v = table.FindOrInsert(key, &inserted);
      REQUIRE(inserted == (truth.count(key) == 0));
      if (!inserted) REQUIRE(v == truth[key]);
      v = op;
      truth[key] = op;
    } else {
      uint64_t got = 0;
      bool erased = table.Erase(key, &got);
      REQUIRE(erased == (truth.count(key) == 1));
      if (erased) {
        REQUIRE(got == truth[key]);
        truth.erase(key);
      }
    }
    REQUIRE(table.size() == truth.size());
  }
  size_t seen = 0;
  table.ForEach([&](uint64_t key, const uint64_t& v) {
    ++seen;
    REQUIRE(truth.count(key) == 1);
    CHECK(truth[key] == v);
  });
  CHECK(seen == truth.size());
}

TEST_CASE("LiveTable erase of an absent key changes nothing", "[live_table]") {
  LiveTable<int> table;
  bool inserted = false;
  table.FindOrInsert(0x1000, &inserted) = 5;
  int out = -1;
  CHECK_FALSE(table.Erase(0x2000, &out));
  CHECK(out == -1);
  CHECK(table.size() == 1);
  CHECK(table.Erase(0x1000, &out));
  CHECK(out == 5);
  CHECK(table.size() == 0);
}

}  // namespace
}  // namespace prof
