// The ranks' clocks aligned on the collectives they share. A collective (one
// communicator, one collective, one sequence number: Kineto's "Process Group
// Name", "Collective name" and "Seq" on its kernel) cannot end on any rank
// before every rank has joined it, and ends on every rank at nearly the
// same true instant. Each rank's offset is the median, over the collectives
// it shares with ranks already aligned, of its end time minus theirs; the
// residual is how far the corrected end times of one collective still lie
// apart (median and worst).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/prof/job/rank_events.h"
#include "exporters/job/rank_facts.h"
#include "tools/prof/job/job_keys.h"

namespace prof::tool {

struct ClockAlignment {
  std::vector<int64_t> offset_ns;   // per input: its clock minus the reference's; subtract to align
  std::vector<bool> aligned;        // per input: shares collectives with the aligned ranks
  std::vector<size_t> matched;      // per input: collectives its offset was estimated from
  size_t reference = 0;             // input whose clock the others are aligned to
  size_t collectives = 0;           // collectives seen on two ranks or more
  int64_t residual_median_ns = 0;   // spread of a collective's corrected end times, median ...
  int64_t residual_max_ns = 0;      // ... and worst
};

// From `inputs` inputs' facts, their collectives numbered in one key table
// (job_keys.h), fetched in a few passes.
ClockAlignment AlignClocks(size_t inputs, const FactsSource& facts);
ClockAlignment AlignClocks(const std::vector<RankFacts>& ranks);
// The same from the ranks' events (their matchable collectives).
ClockAlignment AlignClocks(const std::vector<RankEvents>& ranks);

// Input i's offset (0 past the alignment's inputs).
inline int64_t OffsetOf(const ClockAlignment& c, size_t i) { return i < c.offset_ns.size() ? c.offset_ns[i] : 0; }

}  // namespace prof::tool
