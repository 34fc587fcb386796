// The collective keys of a job, shared by its ranks: each rank's facts name
// their collectives by index into a table of their own (RankFacts::keys);
// a job of a thousand ranks holds each key once, and its ranks' collectives
// by a 4-byte index into it, so that the analysis finds a collective on
// every rank with an array look-up.
#pragma once

#include <functional>
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

// Where the job analysis gets an input's facts, its collectives numbered in
// the job's key table, as often as it needs them: a few passes over the
// inputs, in order, so that a large job's facts need not all be held at
// once (a facts file is read again each time). The reference is valid until
// the next call.
using FactsSource = std::function<const RankFacts&(size_t input)>;

// A source over facts held in memory.
inline FactsSource FactsOf(const std::vector<RankFacts>& ranks) {
  return [&ranks](size_t i) -> const RankFacts& { return ranks[i]; };
}

// v[k], v grown with `fill` to hold it: arrays by key, whose count is
// known only once every input has been read.
template <typename T>
T& Grown(std::vector<T>& v, size_t k, T fill) {
  if (k >= v.size()) v.resize(k + 1, fill);
  return v[k];
}

// The facts of `ranks`, their collectives renumbered into one table.
std::vector<RankFacts> SharedFacts(const std::vector<RankEvents>& ranks);

}  // namespace prof::tool
