// Device records in start order: the Window contract, met without copying
// 128-byte records more than once.
#include "collectors/cupti/record_order.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace prof::cupti {
namespace {

// Records numbered by arrival (correlation_id) with the given start times.
std::vector<DeviceRecord> Records(const std::vector<uint64_t>& starts) {
  std::vector<DeviceRecord> records(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    records[i] = DeviceRecord{};
    records[i].start_ns = starts[i];
    records[i].end_ns = starts[i] + 1;
    records[i].correlation_id = static_cast<uint32_t>(i);
  }
  return records;
}

// The ids in order, as pending_records_test's Ids: each test file builds its own.
std::vector<uint32_t> Arrivals(const std::vector<DeviceRecord>& records) {
  std::vector<uint32_t> ids;
  for (const DeviceRecord& r : records) ids.push_back(r.correlation_id);
  return ids;
}

TEST_CASE("records are put in start order, equal starts in arrival order", "[order]") {
  std::vector<DeviceRecord> records = Records({30, 10, 20, 10, 30, 0});
  SortByStart(&records);
  CHECK(Arrivals(records) == std::vector<uint32_t>{5, 1, 3, 2, 0, 4});
}

TEST_CASE("interleaved sorted runs (buffers of several streams) come out as a stable sort would", "[order]") {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> starts;
  // Four runs, each sorted, with duplicates across and within runs.
  for (int run = 0; run < 4; ++run) {
    uint64_t t = static_cast<uint64_t>(run) * 7;
    for (int i = 0; i < 5000; ++i) starts.push_back(t += rng() % 3);
  }
  std::vector<DeviceRecord> records = Records(starts);
  std::vector<DeviceRecord> expected = records;
  std::stable_sort(expected.begin(), expected.end(),
                   [](const DeviceRecord& a, const DeviceRecord& b) { return a.start_ns < b.start_ns; });
  SortByStart(&records);
  CHECK(Arrivals(records) == Arrivals(expected));
  // Every field travelled with its record.
  for (const DeviceRecord& r : records) CHECK(r.end_ns == r.start_ns + 1);
}

TEST_CASE("a span too long for one integer key still sorts stably", "[order]") {
  // 2^62 ns apart: start and index cannot share 64 bits.
  std::vector<DeviceRecord> records = Records({1ull << 62, 5, 1ull << 62, 0, 5});
  SortByStart(&records);
  CHECK(Arrivals(records) == std::vector<uint32_t>{3, 1, 4, 0, 2});
}

TEST_CASE("sorted input and empty input are left as they are", "[order]") {
  std::vector<DeviceRecord> records = Records({1, 2, 2, 5});
  SortByStart(&records);
  CHECK(Arrivals(records) == std::vector<uint32_t>{0, 1, 2, 3});
  std::vector<DeviceRecord> none;
  SortByStart(&none);
  CHECK(none.empty());
}

}  // namespace
}  // namespace prof::cupti
