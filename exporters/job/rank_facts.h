// What the job analysis needs of one rank, computed from that rank's events
// alone: per step its GPU time by kind, its host's longest gap (with the
// call after it and the Python line of that call), its GPU's longest wait
// for work (with the call that ended it and that call's Python line) and
// its synchronizations;
// its collectives that can be matched across ranks; its communication
// overlap. A few dozen bytes per step and per collective, so a job's ranks
// are read one at a time and only their facts are held for all of them:
// memory grows with ranks x (steps + collectives), not with their events.
//
// Times are ns on the rank's own clock; everything but the collectives'
// times is a length or a count, the same on every clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace prof {

// What a rank's trace says, as the job analysis reads it (from the trace's
// JSON in `prof`, or as the trace exporter writes it): its steps, kernels
// (with the key that matches a collective across ranks), host calls and
// Python frames, a few dozen bytes each. Plain records: data, not logic.
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
  uint64_t correlation = 0; // its launching call's
};

// A copy or memset: GPU work that is neither compute nor communication.
struct JobTransfer {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t correlation = 0;  // its launching call's
};

// A host call (CUDA runtime/driver, NCCL) or a Python frame, on one thread.
struct JobSlice {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t tid = 0;
  uint32_t name = 0;  // index into RankEvents::names
  uint64_t correlation = 0;  // a CUDA call's (0: none, and for Python frames)
};

struct RankEvents {
  std::string path;
  int rank = 0;          // its rank, or its place among the inputs when it has none
  bool ranked = true;    // its trace carries its rank (a libprof trace: rank_known)
  std::string label;     // "rank R", or ProcessLabel() when it has no rank
  std::vector<JobStep> steps;      // ascending
  std::vector<JobKernel> kernels;  // in trace order
  std::vector<JobTransfer> transfers;  // copies and memsets
  std::vector<JobSlice> calls;     // host calls
  std::vector<JobSlice> python;    // python_function slices ("<file>(<line>): <function>")
  std::vector<std::string> names;
  std::map<std::string, uint32_t> name_ids;

  uint32_t Intern(std::string_view s);
};

// A kernel as the analysis keeps it: `collective` is its "Collective name"
// (empty when it has none), matched across ranks by group, collective and
// sequence number unless it is point-to-point.
JobKernel MakeJobKernel(int64_t start_ns, int64_t end_ns, std::string_view name, std::string_view collective,
                        std::string_view group, std::string_view seq);
// Whether an event of category `cat` named `name` is a host call the
// analysis reads (CUDA runtime and driver calls, NCCL's own).
bool IsJobCall(std::string_view cat, std::string_view name);

// Kernel index by key, for the keys that occur once in the rank's trace:
// the collectives that can be matched across ranks.
std::unordered_map<std::string, size_t> MatchableKernels(const RankEvents& r);

struct JobCollective {
  uint32_t key = 0;  // index into RankFacts::keys, or into the job's key table once shared (tools' JobKeys)
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
  // The longest stretch of the step in which the GPU had no work at all (no
  // kernel, copy or memset: its host gave it none), and the call that
  // launched the work ending it, with that call's Python frame.
  int64_t idle_ns = 0;
  int64_t idle_call_ns = 0;  // that call's start
  uint32_t idle_call = 0;    // index into names, 0 none (the stretch ends the step, or no call is known)
  uint32_t idle_site = 0;    // index into names, 0 none
};

struct RankFacts {
  std::string path;
  int rank = 0;
  bool ranked = true;
  std::string label;
  std::vector<RankStepFacts> steps;        // ascending
  std::vector<JobCollective> collectives;  // those whose key occurs once on this rank
  std::vector<std::string> keys;           // their keys, "<group>/<collective>/<seq>"
  // As HTA's get_comm_comp_overlap over the whole trace: the share of
  // communication kernel time during which a compute kernel also ran; -1
  // without communication kernels.
  double comm_overlap_percent = -1;
  std::vector<std::string> names;  // index 0: no name
};

RankFacts SummarizeRank(const RankEvents& r);
// The facts as the file a rank writes beside its window's trace
// (<stem>.job.json) for `prof merge` to summarize a job without its traces:
// {"libprof_job_facts": 2, "trace", "rank", "ranked", "label",
//  "comm_overlap_percent" (null: no communication), "names",
//  "steps": [[number, start, end, compute, comm, gap, gap call start,
//             gap call name, gap site name, synchronizations, GPU idle,
//             idle call start, idle call name, idle site name], ...],
//  "collectives": [[key, start, end], ...]}, times in ns as the trace's
// (baseTimeNanoseconds + ts), names as indexes into "names".
std::string RankFactsJson(const RankFacts& f);
// Adds `ns` to every time of `f`.
void ShiftRankFacts(RankFacts* f, int64_t ns);

}  // namespace prof
