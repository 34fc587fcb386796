// The job summary: per step and rank, the step time, compute,
// communication, waiting for the last rank and the host's gaps; then the
// straggler with its evidence, or the statement that none stands out.
//
// Waiting. On aligned clocks (clock_alignment.h), a collective's kernel
// starts on each rank when that rank arrives (its host launched it and its
// stream reached it); it cannot progress before the last rank arrives, so a
// rank waits from its own start to the last rank's start (at most its
// kernel's duration). The last rank to arrive is charged with what everyone
// else waited.
//
// The straggler: the rank charged the most, when it arrives last at least
// three times in four, costs every other rank at least 5 % of the median
// step time in its median step (so that one long hiccup does not make a
// straggler), and at least twice what the next rank costs in all. Its
// evidence is compared with the other ranks' medians: its longest host gap
// per step (and the call and Python line after it) or, where its threads
// share the work so that no one thread's gap shows it (PyTorch's autograd
// thread launches the backward pass and its all-reduces), its GPU's longest
// stretch per step with no work (and the call that ended it); its compute
// per step; its synchronizations per step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/prof/job/clock_alignment.h"
#include "tools/prof/job/rank_events.h"
#include "exporters/job/rank_facts.h"

namespace prof::tool {

struct JobCell {  // one rank in one step
  int64_t step_ns = 0;
  int64_t compute_ns = 0;   // union of compute kernels in the step
  int64_t comm_ns = 0;      // union of communication kernels in the step
  int64_t wait_ns = 0;      // waiting in collectives for the last rank
  int64_t gap_ns = 0;       // longest gap between host calls on the main thread
  int64_t idle_ns = 0;      // the GPU's longest stretch with no work at all
  int64_t cost_ns = 0;      // the others' waiting in the collectives it arrived last at
  uint32_t syncs = 0;       // synchronizing calls
  bool present = false;
};

struct JobRankTotals {
  int rank = 0;
  uint64_t arrived_last = 0;    // collectives it arrived last at (someone waited)
  int64_t cost_ns = 0;          // what the others waited for it, all together
  double cost_per_rank_step_ns = 0;  // per other rank and step
  double median_cost_per_rank_step_ns = 0;  // the same in the median step
  double mean_step_ns = 0, mean_compute_ns = 0, mean_comm_ns = 0, mean_wait_ns = 0, mean_gap_ns = 0, mean_syncs = 0;
  double mean_idle_ns = 0;
  // Over the whole trace, as HTA's get_comm_comp_overlap: the share of
  // communication kernel time during which a compute kernel also ran
  // (-1 without communication kernels).
  double comm_overlap_percent = -1;
};

struct JobSummary {
  size_t world = 0;
  bool ranked = true;                    // every input has its rank; else they are called processes
  std::vector<std::string> labels;       // per input: "rank R", or "python3 pid 4242" without a rank
  std::vector<uint64_t> step_numbers;    // per row
  bool steps_by_number = true;           // false: rows pair the k-th step of each rank
  std::vector<std::vector<JobCell>> cells;  // [row][input]
  std::vector<JobRankTotals> totals;     // per input
  uint64_t collectives = 0;              // matched across ranks
  uint64_t collectives_with_wait = 0;    // someone waited in them
  double median_step_ns = 0;
  ClockAlignment clocks;
  int straggler = -1;                    // input index, -1 none
  std::string straggler_line;            // "straggler: <label> ..." or "straggler: none ..."
  std::vector<std::string> evidence;     // lines under it
};

// From `inputs` inputs' facts, fetched in a few passes (job_keys.h): what
// stays is the summary's cells, a few numbers per rank and step.
JobSummary AnalyzeJob(size_t inputs, const FactsSource& facts, const ClockAlignment& clocks);
JobSummary AnalyzeJob(const std::vector<RankFacts>& ranks, const ClockAlignment& clocks);
// The same from the ranks' events (each summarized first).
JobSummary AnalyzeJob(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks);

}  // namespace prof::tool
