#include "exporters/summary/stats.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace prof {

void SortValues(std::vector<uint64_t>* values) {
  std::vector<uint64_t>& v = *values;
  if (v.size() < 512) {
    std::sort(v.begin(), v.end());
    return;
  }
  // LSD radix sort, one byte per pass. One pass counts every byte position;
  // a position where all values share the byte (the high bytes of
  // durations) is skipped, so µs-scale values take three passes.
  std::vector<std::array<size_t, 256>> counts(8);
  for (auto& c : counts) c.fill(0);
  for (uint64_t x : v) {
    for (int b = 0; b < 8; ++b) ++counts[b][(x >> (8 * b)) & 0xFF];
  }
  std::vector<uint64_t> scratch(v.size());
  for (int b = 0; b < 8; ++b) {
    std::array<size_t, 256>& c = counts[b];
    if (c[(v[0] >> (8 * b)) & 0xFF] == v.size()) continue;
    size_t offset = 0;
    for (size_t& n : c) {
      size_t here = n;
      n = offset;
      offset += here;
    }
    for (uint64_t x : v) scratch[c[(x >> (8 * b)) & 0xFF]++] = x;
    v.swap(scratch);
  }
}

Distribution Describe(std::vector<uint64_t>* values) {
  Distribution d;
  std::vector<uint64_t>& v = *values;
  if (v.empty()) return d;
  SortValues(&v);
  d.count = v.size();
  for (uint64_t x : v) d.total += x;
  d.mean = static_cast<double>(d.total) / static_cast<double>(d.count);
  size_t mid = v.size() / 2;
  d.median = v.size() % 2 ? static_cast<double>(v[mid]) : (static_cast<double>(v[mid - 1]) + static_cast<double>(v[mid])) / 2;
  d.min = v.front();
  d.max = v.back();
  if (v.size() > 1) {
    double sum_sq = 0;
    for (uint64_t x : v) sum_sq += (static_cast<double>(x) - d.mean) * (static_cast<double>(x) - d.mean);
    d.stddev = std::sqrt(sum_sq / static_cast<double>(v.size() - 1));
  }
  return d;
}

double Percentile(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return static_cast<double>(sorted[rank - 1]);
}

}  // namespace prof
