// Pending device records: each window takes exactly the records launched in
// it, in decoding order, whether the writer keeps up (the window takes the
// vector) or lags many windows behind (holes, chunks skipped); records
// launched before a window are dropped, later ones wait.
#include "collectors/cupti/pending_records.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

namespace prof::cupti {
namespace {

DeviceRecord Record(uint32_t correlation) {
  DeviceRecord r{};
  r.correlation_id = correlation;
  return r;
}

std::vector<uint32_t> Ids(const std::vector<DeviceRecord>& v) {
  std::vector<uint32_t> out;
  for (const DeviceRecord& r : v) out.push_back(r.correlation_id);
  return out;
}

TEST_CASE("a window takes its records in decoding order and leaves the later ones", "[pending]") {
  PendingRecords p;
  p.Append(Record(1), 5);   // before the window: dropped
  p.Append(Record(2), 10);
  p.Append(Record(3), 25);  // later
  p.Append(Record(4), 12);
  p.Append(Record(5), 19);
  CHECK(Ids(p.Take(10, 20)) == std::vector<uint32_t>{2, 4, 5});
  CHECK(p.live() == 1);
  CHECK(Ids(p.Take(20, 30)) == std::vector<uint32_t>{3});
  CHECK(p.live() == 0);
  CHECK(p.Take(0, 100).empty());
}

TEST_CASE("a writer many windows behind takes each window exactly, stragglers included", "[pending]") {
  // 200 windows of 50 records decoded before any is taken, about in launch
  // order; one record in 7 arrives far out of place (a buffer completed
  // late), some records launched before the first window.
  constexpr uint64_t kWindows = 200, kPer = 50, kWidth = 1000;
  std::mt19937_64 rng(7);
  struct Item {
    uint32_t id;
    uint64_t launch;
  };
  std::vector<Item> items;
  uint32_t id = 0;
  for (uint64_t w = 0; w < kWindows; ++w) {
    for (uint64_t i = 0; i < kPer; ++i) items.push_back({++id, kWidth * (w + 1) + i * (kWidth / kPer)});
  }
  for (uint32_t k = 0; k < 30; ++k) items.push_back({++id, rng() % kWidth});  // before the first window
  for (size_t i = 0; i < items.size(); ++i) {
    if (rng() % 7 == 0) std::swap(items[i], items[rng() % items.size()]);
  }
  PendingRecords p;
  for (const Item& it : items) p.Append(Record(it.id), it.launch);
  for (uint64_t w = 0; w < kWindows; ++w) {
    uint64_t start = kWidth * (w + 1), end = start + kWidth;
    std::vector<uint32_t> expected;
    for (const Item& it : items) {
      if (it.launch >= start && it.launch < end) expected.push_back(it.id);
    }
    CHECK(Ids(p.Take(start, end)) == expected);
    // Halfway, the next windows' records keep arriving.
    if (w == kWindows / 2) {
      for (uint32_t k = 0; k < 10; ++k) {
        uint64_t launch = kWidth * (kWindows - 1) + 1 + k;
        items.push_back({++id, launch});
        p.Append(Record(id), launch);
      }
    }
  }
  CHECK(p.live() == 0);
  CHECK(p.slots() < items.size());  // taken chunks were dropped on the way
}

TEST_CASE("compacting keeps the live records and their order", "[pending]") {
  PendingRecords p;
  for (uint32_t i = 0; i < 1000; ++i) p.Append(Record(i), i % 4 == 0 ? 100 + i : 5000 + i);
  CHECK(p.Take(100, 1100).size() == 250);  // later records outnumber it: holes stay
  CHECK(p.slots() == 1000);
  CHECK(p.live() == 750);
  p.Compact();
  CHECK(p.slots() == 750);
  CHECK(p.live() == 750);
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < 1000; ++i) {
    if (i % 4 != 0) expected.push_back(i);
  }
  CHECK(Ids(p.Take(5000, 7000)) == expected);
}

}  // namespace
}  // namespace prof::cupti
