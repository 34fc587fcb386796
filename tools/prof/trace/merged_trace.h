// How a `prof merge` output numbers its inputs' events: what the merge
// writes (merge/) and what the readers undo (trace_to_window, job/'s rank
// reading). Input `slot` owns pids (slot + 1) * kMergePidBlock + pid; a
// string pid becomes "<label>: <pid>".
#pragma once

#include <cstdint>

namespace prof::tool {

// Pid block size: larger than Linux's pid_max (2^22).
inline constexpr int64_t kMergePidBlock = 100000000;
// Flow ids of input `slot` are slot << kMergeFlowIdBits | id, for integer
// ids in [0, 2^40); any other id becomes the string "<slot>:<id>".
inline constexpr int kMergeFlowIdBits = 40;

}  // namespace prof::tool
