// `prof merge`'s job analysis: what each rank's trace says about the
// collectives it took part in, the ranks' clocks aligned on those
// collectives, and the job summary (per step and rank: step time, compute,
// communication, waiting for the last rank, the host's gaps; then the
// straggler with its evidence, or the statement that none stands out).
//
// Clock alignment. A collective (one communicator, one collective, one
// sequence number: Kineto's "Process Group Name", "Collective name" and
// "Seq" on its kernel) cannot end on any rank before every rank has joined
// it, and ends on every rank at nearly the same true instant. Each rank's
// offset is the median, over the collectives it shares with ranks already
// aligned, of its end time minus theirs; the residual is how far the
// corrected end times of one collective still lie apart (median and worst).
//
// Waiting. On aligned clocks, a collective's kernel starts on each rank
// when that rank arrives (its host launched it and its stream reached it);
// it cannot progress before the last rank arrives, so a rank waits from its
// own start to the last rank's start (at most its kernel's duration). The
// last rank to arrive is charged with what everyone else waited.
//
// The straggler: the rank charged the most, when it arrives last at least
// three times in four, costs every other rank at least 5 % of the median step time
// in its median step (so that one long hiccup does not make a straggler), and
// at least twice what the next rank costs in all. Its evidence is
// compared with the other ranks' medians: its longest host gap per step
// (and the call and Python line after it), its compute per step, its
// synchronizations per step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/prof/json_stream.h"

namespace prof::tool {

// Times are ns on the rank's own clock (baseTimeNanoseconds + ts).
struct JobStep {
  uint64_t number = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct JobKernel {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool comm = false;        // a collective or point-to-point kernel
  std::string key;          // "<group>/<collective>/<seq>" when it can be matched across ranks, else ""
  std::string collective;   // "allreduce", ... (the kernel name when no "Collective name")
};

// A host call (CUDA runtime/driver, NCCL) or a Python frame, on one thread.
struct JobSlice {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t tid = 0;
  uint32_t name = 0;  // index into RankEvents::names
};

struct RankEvents {
  std::string path;
  int rank = 0;
  std::vector<JobStep> steps;      // ascending
  std::vector<JobKernel> kernels;  // in trace order
  std::vector<JobSlice> calls;     // host calls
  std::vector<JobSlice> python;    // python_function slices ("<file>(<line>): <function>")
  std::vector<std::string> names;
  std::map<std::string, uint32_t> name_ids;

  uint32_t Intern(std::string_view s);
};

// Reads one trace event into `r`; `base_ns` is added to its times (0 when
// the base is not known yet: ShiftRankEvents adds it later).
void ReadJobEvent(const JsonValue& e, RankEvents* r);
// Adds `ns` to every time of `r`.
void ShiftRankEvents(RankEvents* r, int64_t ns);

struct ClockAlignment {
  std::vector<int64_t> offset_ns;   // per input: its clock minus the reference's; subtract to align
  std::vector<bool> aligned;        // per input: shares collectives with the aligned ranks
  std::vector<size_t> matched;      // per input: collectives its offset was estimated from
  size_t reference = 0;             // input whose clock the others are aligned to
  size_t collectives = 0;           // collectives seen on two ranks or more
  int64_t residual_median_ns = 0;   // spread of a collective's corrected end times, median ...
  int64_t residual_max_ns = 0;      // ... and worst
};

ClockAlignment AlignClocks(const std::vector<RankEvents>& ranks);

struct JobCell {  // one rank in one step
  bool present = false;
  int64_t step_ns = 0;
  int64_t compute_ns = 0;   // union of compute kernels in the step
  int64_t comm_ns = 0;      // union of communication kernels in the step
  int64_t wait_ns = 0;      // waiting in collectives for the last rank
  int64_t gap_ns = 0;       // longest gap between host calls on the main thread
  uint32_t gap_call = 0;    // the call after that gap (name id), 0 none
  int64_t gap_call_ns = 0;  // its start
  uint32_t syncs = 0;       // synchronizing calls
  int64_t cost_ns = 0;      // the others' waiting in the collectives it arrived last at
};

struct JobRankTotals {
  int rank = 0;
  uint64_t arrived_last = 0;    // collectives it arrived last at (someone waited)
  int64_t cost_ns = 0;          // what the others waited for it, all together
  double cost_per_rank_step_ns = 0;  // per other rank and step
  double median_cost_per_rank_step_ns = 0;  // the same in the median step
  double mean_step_ns = 0, mean_compute_ns = 0, mean_comm_ns = 0, mean_wait_ns = 0, mean_gap_ns = 0, mean_syncs = 0;
  // Over the whole trace, as HTA's get_comm_comp_overlap: the share of
  // communication kernel time during which a compute kernel also ran
  // (-1 without communication kernels).
  double comm_overlap_percent = -1;
};

struct JobSummary {
  size_t world = 0;
  std::vector<std::string> labels;       // per input: "rank R"
  std::vector<uint64_t> step_numbers;    // per row
  bool steps_by_number = true;           // false: rows pair the k-th step of each rank
  std::vector<std::vector<JobCell>> cells;  // [row][input]
  std::vector<JobRankTotals> totals;     // per input
  uint64_t collectives = 0;              // matched across ranks
  uint64_t collectives_with_wait = 0;    // someone waited in them
  double median_step_ns = 0;
  ClockAlignment clocks;
  int straggler = -1;                    // input index, -1 none
  std::string straggler_line;            // "straggler: rank R ..." or "straggler: none ..."
  std::vector<std::string> evidence;     // lines under it
};

JobSummary AnalyzeJob(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks);
std::string RenderJobSummary(const JobSummary& job);

}  // namespace prof::tool
