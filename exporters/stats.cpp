#include "exporters/stats.h"

#include <algorithm>
#include <cmath>

namespace prof {

Distribution Describe(std::vector<uint64_t>* values) {
  Distribution d;
  std::vector<uint64_t>& v = *values;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
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
