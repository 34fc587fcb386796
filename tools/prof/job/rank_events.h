// What the job analysis reads from each rank's trace (job/: `prof merge`'s
// job summary, and the report page's job view): its steps, kernels (with
// the key that matches a collective across ranks), host calls and Python
// frames, a few dozen bytes each, never the events' JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/json_value.h"

namespace prof::tool {

// Plain records the analysis reads: data, not logic.
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
  int rank = 0;          // its rank, or its place among the inputs when it has none
  bool ranked = true;    // its trace carries its rank (a libprof trace: rank_known)
  std::string label;     // "rank R", or ProcessLabel() when it has no rank
  std::vector<JobStep> steps;      // ascending
  std::vector<JobKernel> kernels;  // in trace order
  std::vector<JobSlice> calls;     // host calls
  std::vector<JobSlice> python;    // python_function slices ("<file>(<line>): <function>")
  std::vector<std::string> names;
  std::map<std::string, uint32_t> name_ids;

  uint32_t Intern(std::string_view s);
};

// How an input without a rank is named, never as a rank: "python3 pid 4242"
// (its program and pid, from a libprof trace), else its file's name.
std::string ProcessLabel(const std::string& process, int64_t pid, const std::string& path);

// Reads one trace event into `r`, its times as written (ShiftRankEvents
// adds the trace's base once it is known).
void ReadJobEvent(const JsonValue& e, RankEvents* r);
// Adds `ns` to every time of `r`.
void ShiftRankEvents(RankEvents* r, int64_t ns);

// Appends the ranks one trace holds: one for a rank's own trace (its rank
// from distributedInfo; a trace without one, or a libprof trace whose
// rank_known is false, is labelled by its process and placed by its place in
// `ranks`), one per input of a merged trace, split back by pid block with
// each rank's clock offset put back (so the analysis finds, and reports, the
// same offsets).
void ReadJobRanks(ByteSource* source, std::vector<RankEvents>* ranks);

// Kernel index by key, for the keys that occur once in the rank's trace:
// the collectives that can be matched across ranks.
std::unordered_map<std::string, size_t> MatchableKernels(const RankEvents& r);

}  // namespace prof::tool
