// What the job analysis reads from each rank's trace (job/: `prof merge`'s
// job summary, and the report page's job view), read from the trace's JSON
// into exporters/job/rank_facts.h's RankEvents: its steps, kernels (with the
// key that matches a collective across ranks), host calls and Python
// frames, a few dozen bytes each, never the events' JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exporters/job/rank_facts.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/json_value.h"

namespace prof::tool {

using prof::JobCollective;
using prof::JobKernel;
using prof::JobSlice;
using prof::JobStep;
using prof::MatchableKernels;
using prof::RankEvents;
using prof::RankFacts;
using prof::RankStepFacts;
using prof::ShiftRankFacts;
using prof::SummarizeRank;

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

}  // namespace prof::tool
