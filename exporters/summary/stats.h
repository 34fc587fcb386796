// Small order statistics shared by the summary and findings.
#pragma once

#include <cstdint>
#include <vector>

namespace prof {

struct Distribution {
  uint64_t count = 0;
  uint64_t total = 0;
  double mean = 0;
  double median = 0;  // mean of the two middle values for an even count (as nsys)
  uint64_t min = 0;
  uint64_t max = 0;
  double stddev = 0;  // sample standard deviation (n - 1), 0 below two values
};

// Sorts `values` ascending (radix sort for large inputs: the summary sorts
// every call's duration once per window).
void SortValues(std::vector<uint64_t>* values);

// Sorts `values` in place.
Distribution Describe(std::vector<uint64_t>* values);

// Nearest-rank percentile (0 < p ≤ 100) of sorted values; 0 when empty.
double Percentile(const std::vector<uint64_t>& sorted, double p);

}  // namespace prof
