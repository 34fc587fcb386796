// What the job analysis counts with (job/ only): medians, [start, end)
// intervals merged, intersected and measured within a step, and times in
// milliseconds as the job summary prints them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exporters/common/intervals.h"    // MergeIntervals, LengthWithin
#include "exporters/summary/text_table.h"  // Ms

namespace prof::tool {

using Intervals = prof::Intervals<int64_t>;

double Median(std::vector<double> v);
// The median of integers, the mean of the middle two rounded down.
int64_t MedianInt(std::vector<int64_t> v);


}  // namespace prof::tool
