#include "tools/prof/job/job_keys.h"

namespace prof::tool {

void JobKeys::Adopt(RankFacts* f) {
  std::vector<uint32_t> to_job(f->keys.size());
  for (size_t k = 0; k < f->keys.size(); ++k) {
    auto [it, fresh] = ids_.emplace(f->keys[k], static_cast<uint32_t>(keys_.size()));
    if (fresh) keys_.push_back(f->keys[k]);
    to_job[k] = it->second;
  }
  for (JobCollective& c : f->collectives) c.key = to_job[c.key];
  f->keys = {};
  // Held for every rank of the job from here on: no spare capacity.
  f->collectives.shrink_to_fit();
  f->steps.shrink_to_fit();
}

std::vector<RankFacts> SharedFacts(const std::vector<RankEvents>& ranks) {
  JobKeys keys;
  std::vector<RankFacts> facts;
  for (const RankEvents& r : ranks) {
    facts.push_back(SummarizeRank(r));
    keys.Adopt(&facts.back());
  }
  return facts;
}

}  // namespace prof::tool
