// What the job analysis counts with (job/ only): medians, [start, end)
// intervals merged, intersected and measured within a step, and times in
// milliseconds as the job summary prints them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prof::tool {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

double Median(std::vector<double> v);
// The median of integers, the mean of the middle two rounded down.
int64_t MedianInt(std::vector<int64_t> v);

// [start, end) intervals merged into disjoint ones, sorted.
Intervals Merged(Intervals iv);
// Length of the intersection of two sets of disjoint sorted intervals.
int64_t Intersection(const Intervals& a, const Intervals& b);
// Length of disjoint sorted intervals within [lo, hi).
int64_t LengthWithin(const Intervals& merged, int64_t lo, int64_t hi);

// ns as ms with `decimals` decimals and grouped thousands ("1,234.567").
std::string Ms(double ns, int decimals = 3);

}  // namespace prof::tool
