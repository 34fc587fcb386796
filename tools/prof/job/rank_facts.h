// What the job analysis needs of one rank, computed from that rank's events
// alone: per step its GPU time by kind, its host's longest gap (with the
// call after it and the Python line of that call) and its synchronizations;
// its collectives that can be matched across ranks; its communication
// overlap. A few dozen bytes per step and per collective, so a job's ranks
// are read one at a time and only their facts are held for all of them:
// memory grows with ranks x (steps + collectives), not with their events.
//
// Times are ns on the rank's own clock; everything but the collectives'
// times is a length or a count, the same on every clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/prof/job/rank_events.h"

namespace prof::tool {

struct JobCollective {
  std::string key;  // "<group>/<collective>/<seq>"
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct RankStepFacts {
  JobStep step;
  int64_t compute_ns = 0;   // union of compute kernels in the step
  int64_t comm_ns = 0;      // union of communication kernels in the step
  int64_t gap_ns = 0;       // longest gap between host calls on the main thread
  int64_t gap_call_ns = 0;  // the start of the call after it
  uint32_t gap_call = 0;    // that call's name (index into RankFacts::names), 0 none
  uint32_t gap_site = 0;    // the Python frame it was made from (index into names), 0 none
  uint32_t syncs = 0;       // synchronizing calls
};

struct RankFacts {
  std::string path;
  int rank = 0;
  bool ranked = true;
  std::string label;
  std::vector<RankStepFacts> steps;        // ascending
  std::vector<JobCollective> collectives;  // those whose key occurs once on this rank
  // As HTA's get_comm_comp_overlap over the whole trace: the share of
  // communication kernel time during which a compute kernel also ran; -1
  // without communication kernels.
  double comm_overlap_percent = -1;
  std::vector<std::string> names;  // index 0: no name
};

RankFacts SummarizeRank(const RankEvents& r);
// Adds `ns` to every time of `f`.
void ShiftRankFacts(RankFacts* f, int64_t ns);

}  // namespace prof::tool
