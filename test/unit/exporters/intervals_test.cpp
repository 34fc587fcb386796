// [start, end) intervals as the summary and the job analysis count with
// them: merged into disjoint sorted ones (instants dropped or kept), and
// measured within a range.
#include "exporters/common/intervals.h"

#include <catch2/catch.hpp>
#include <cstdint>


namespace prof {
namespace {

using U = Intervals<uint64_t>;
using I = Intervals<int64_t>;

TEST_CASE("overlapping and touching intervals merge, apart ones stay apart, in order", "[intervals]") {
  CHECK(MergeIntervals(U{{50, 60}, {10, 20}, {15, 30}, {30, 40}, {45, 46}}) == U{{10, 40}, {45, 46}, {50, 60}});
  CHECK(MergeIntervals(U{{0, 100}, {10, 20}}) == U{{0, 100}});  // one inside another
  CHECK(MergeIntervals(U{}).empty());
}

TEST_CASE("an interval that lasts no time is dropped, or kept as an instant when asked", "[intervals]") {
  I spans{{10, 20}, {25, 25}, {30, 29}, {15, 15}};
  CHECK(MergeIntervals(spans) == I{{10, 20}});
  // Kept: the instant at 25 splits what would be one gap from 20 to 30;
  // the one inside [10, 20) joins it.
  CHECK(MergeIntervals(I{{10, 20}, {25, 25}, {15, 15}, {30, 40}}, EmptyIntervals::kKeep) ==
        I{{10, 20}, {25, 25}, {30, 40}});
}

TEST_CASE("the length within a range counts only the covered part of it", "[intervals]") {
  U merged{{10, 20}, {30, 40}, {50, 60}};
  CHECK(LengthWithin(merged, uint64_t{0}, uint64_t{100}) == 30);
  CHECK(LengthWithin(merged, uint64_t{15}, uint64_t{55}) == 5 + 10 + 5);
  CHECK(LengthWithin(merged, uint64_t{20}, uint64_t{30}) == 0);  // exactly a gap
  CHECK(LengthWithin(merged, uint64_t{35}, uint64_t{36}) == 1);
  CHECK(LengthWithin(merged, uint64_t{70}, uint64_t{80}) == 0);
  // An inverted range covers nothing, signed or not (no wrap-around).
  CHECK(LengthWithin(merged, uint64_t{38}, uint64_t{32}) == 0);
  CHECK(LengthWithin(I{{-50, -10}}, int64_t{-30}, int64_t{-40}) == 0);
  CHECK(LengthWithin(I{{-50, -10}}, int64_t{-40}, int64_t{0}) == 30);
}

}  // namespace
}  // namespace prof
