// [start, end) intervals of time: merged into disjoint sorted ones, and
// measured within a range. The summary (GPU busy time, its split into
// compute and communication, the step breakdown) and `prof merge`'s job
// analysis (each rank's compute and communication per step) count with
// these.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace prof {

template <typename T>
using Intervals = std::vector<std::pair<T, T>>;

// What merging does with an interval that lasts no time: dropped, or kept
// as an instant (the GPU's busy intervals keep it: a kernel that ran there
// splits an idle gap, however short it was).
enum class EmptyIntervals { kDrop, kKeep };

// Sorted, disjoint: overlapping and touching intervals become one.
template <typename T>
Intervals<T> MergeIntervals(Intervals<T> spans, EmptyIntervals empty = EmptyIntervals::kDrop) {
  std::sort(spans.begin(), spans.end());
  Intervals<T> merged;
  for (const auto& s : spans) {
    if (empty == EmptyIntervals::kDrop && s.second <= s.first) continue;
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

// How much of [lo, hi) the merged intervals cover (0 when hi <= lo).
template <typename T>
T LengthWithin(const Intervals<T>& merged, T lo, T hi) {
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const std::pair<T, T>& iv, T x) { return iv.second <= x; });
  T total = 0;
  for (; it != merged.end() && it->first < hi; ++it) {
    T from = std::max(it->first, lo), to = std::min(it->second, hi);
    if (to > from) total += to - from;
  }
  return total;
}

// Length of the intersection of two sets of merged intervals.
template <typename T>
T IntersectionLength(const Intervals<T>& a, const Intervals<T>& b) {
  T total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    T lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return total;
}

}  // namespace prof
