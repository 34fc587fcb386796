// The collective keys of a job, shared by its ranks: each rank's facts name
// their collectives by index into a table of their own (RankFacts::keys);
// a job of a thousand ranks holds each key once, and its ranks' collectives
// by a 4-byte index into it, so that the analysis finds a collective on
// every rank with an array look-up.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exporters/job/rank_facts.h"

namespace prof::tool {

class JobKeys {
 public:
  // Renumbers `f`'s collectives into the job's table and lets go of its own.
  void Adopt(RankFacts* f);
  size_t size() const { return keys_.size(); }

 private:
  std::vector<std::string> keys_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// How many keys the job's table holds: one past the largest in use.
size_t KeyCount(const std::vector<RankFacts>& ranks);

// The facts of `ranks`, their collectives renumbered into one table.
std::vector<RankFacts> SharedFacts(const std::vector<RankEvents>& ranks);

}  // namespace prof::tool
