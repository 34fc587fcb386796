// SortValues (radix sort past a few hundred values) must order exactly as
// std::sort does: the summary's medians and percentiles read the result.
#include "exporters/summary/stats.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace prof {
namespace {

TEST_CASE("SortValues orders like std::sort for every size and value range", "[stats]") {
  std::mt19937_64 rng(3);
  for (size_t size : {0, 1, 511, 512, 513, 10'000, 100'003}) {
    for (int range : {0, 1, 2, 3}) {
      std::vector<uint64_t> v(size);
      for (uint64_t& x : v) {
        uint64_t r = rng();
        // constant; µs-scale durations; bytes in one high digit only; full 64-bit
        x = range == 0 ? 42 : range == 1 ? r % 50'000 : range == 2 ? (r % 4) << 40 : r;
      }
      std::vector<uint64_t> expected = v;
      std::sort(expected.begin(), expected.end());
      SortValues(&v);
      INFO("size " << size << " range " << range);
      CHECK(v == expected);
    }
  }
}

TEST_CASE("Describe's median and spread come from the sorted values", "[stats]") {
  std::vector<uint64_t> v;
  for (uint64_t i = 1000; i > 0; --i) v.push_back(i * 10);  // 10..10000, descending
  Distribution d = Describe(&v);
  CHECK(d.count == 1000);
  CHECK(d.min == 10);
  CHECK(d.max == 10'000);
  CHECK(d.median == Approx(5'005));  // (5000 + 5010) / 2
  CHECK(Percentile(v, 99) == Approx(9'900));
}

}  // namespace
}  // namespace prof
