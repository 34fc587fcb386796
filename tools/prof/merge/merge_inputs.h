// The merge's first pass (merge/ only): each input's top-level members and
// what the job analysis reads from its events (job/rank_events.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/prof/job/rank_events.h"
#include "exporters/job/rank_facts.h"
#include "tools/prof/job/job_keys.h"
#include "tools/prof/merge/merge.h"

namespace prof::tool {

// Plain fields, one per fact the first pass reads: data, not logic.
// What the first pass learns about an input.
struct InputMeta {
  bool has_events = false;
  uint64_t events = 0;
  int64_t base_ns = 0;
  bool has_rank = false;
  int rank = 0;
  int world_size = 0;
  bool libprof = false;
  std::string libprof_raw;
  // From the libprof block: an unranked process is labelled by what it ran.
  bool rank_unknown = false;  // libprof.rank_known is false
  std::string process;        // libprof.process, or libprof.name
  int64_t pid = -1;
  std::string device_properties_raw;  // empty when absent
  bool is_merge = false;              // has a libprof_merge block: already merged

  // Its trace names its rank: a distributedInfo.rank that a libprof trace
  // does not disown (rank_known false: the agent found none and wrote 0).
  bool ranked() const { return has_rank && !rank_unknown; }
  // "rank R", or, with no rank, its process (ProcessLabel) read from `path`.
  std::string Label(const std::string& path) const {
    return ranked() ? "rank " + std::to_string(rank) : ProcessLabel(process, pid, path);
  }
};

// Reads every input once, one at a time: its members, and the facts the job
// analysis needs (exporters/job/rank_facts.h), on its own clock, with its
// path, rank and label, its collectives numbered in `keys`; its events are
// let go once summarized. False with `error`
// naming every input that cannot be read (one per line), has no traceEvents
// array or is itself a merge.
bool ReadMergeInputs(const std::vector<MergeSource>& sources, std::vector<InputMeta>* metas,
                     std::vector<RankFacts>* job_facts, JobKeys* keys, std::string* error);

}  // namespace prof::tool
