#include "tools/prof/job/job_stats.h"

#include <algorithm>

#include "exporters/summary/text_table.h"

namespace prof::tool {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int64_t MedianInt(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

Intervals Merged(Intervals iv) {
  std::sort(iv.begin(), iv.end());
  Intervals out;
  for (const auto& [s, e] : iv) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.push_back({s, e});
    }
  }
  return out;
}

int64_t Intersection(const Intervals& a, const Intervals& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return total;
}

int64_t LengthWithin(const Intervals& merged, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const std::pair<int64_t, int64_t>& iv, int64_t x) { return iv.second <= x; });
  int64_t total = 0;
  for (; it != merged.end() && it->first < hi; ++it) total += std::min(it->second, hi) - std::max(it->first, lo);
  return total;
}

std::string Ms(double ns, int decimals) { return Grouped(ns / 1e6, decimals); }

}  // namespace prof::tool
