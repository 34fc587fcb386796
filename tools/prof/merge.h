// `prof merge`: several ranks' traces on one timeline. Each input keeps every
// event; its processes are renumbered into a block of its own (pid =
// (slot + 1) * 100000000 + original pid, string pids prefixed "rank R: ")
// and labelled "rank R", flow ids are made unique per input, and times are
// shifted so all inputs share the earliest baseTimeNanoseconds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace prof::tool {

struct MergeInput {
  std::string path;
  nlohmann::json trace;
};

// False with `error` when an input has no traceEvents. Inputs are consumed.
bool MergeTraces(std::vector<MergeInput>* inputs, nlohmann::json* merged, std::string* error);

// The inverse, for `prof summary` on a merged trace: one trace per input,
// with its own pids, times, flow ids and libprof block. False when `merged`
// was not written by MergeTraces.
bool SplitMerged(const nlohmann::json& merged, std::vector<nlohmann::json>* traces);

// Pid block size: larger than Linux's pid_max (2^22).
inline constexpr int64_t kMergePidBlock = 100000000;

}  // namespace prof::tool
