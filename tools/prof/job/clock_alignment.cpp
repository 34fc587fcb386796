#include "tools/prof/job/clock_alignment.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "tools/prof/job/job_stats.h"

namespace prof::tool {

ClockAlignment AlignClocks(const std::vector<RankFacts>& ranks) {
  ClockAlignment c;
  size_t n = ranks.size();
  c.offset_ns.assign(n, 0);
  c.aligned.assign(n, false);
  c.matched.assign(n, 0);
  if (n == 0) return c;
  // Per input: key -> index into its collectives.
  std::vector<std::unordered_map<std::string_view, size_t>> keys(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < ranks[i].collectives.size(); ++k) keys[i].emplace(ranks[i].collectives[k].key, k);
  }
  // The reference: the lowest rank among the inputs with the most matchable
  // collectives.
  size_t ref = 0;
  for (size_t i = 1; i < n; ++i) {
    if (keys[i].size() > keys[ref].size() || (keys[i].size() == keys[ref].size() && ranks[i].rank < ranks[ref].rank)) {
      ref = i;
    }
  }
  c.reference = ref;
  c.aligned[ref] = true;
  // Grow the aligned set: each round aligns the unaligned input sharing the
  // most collectives with the aligned ones, against each collective's
  // corrected end on the first aligned input that has it (the reference's,
  // when it has it). Each round costs one look-up per collective.
  std::unordered_map<std::string_view, int64_t> anchor;  // key -> corrected end
  auto add_anchors = [&](size_t j) {
    for (const auto& [key, k] : keys[j]) anchor.emplace(key, ranks[j].collectives[k].end_ns - c.offset_ns[j]);
  };
  add_anchors(ref);
  for (;;) {
    size_t best = n;
    std::vector<int64_t> best_diffs;
    for (size_t i = 0; i < n; ++i) {
      if (c.aligned[i]) continue;
      std::vector<int64_t> diffs;
      for (const auto& [key, k] : keys[i]) {
        auto it = anchor.find(key);
        if (it != anchor.end()) diffs.push_back(ranks[i].collectives[k].end_ns - it->second);
      }
      if (!diffs.empty() && (best == n || diffs.size() > best_diffs.size())) {
        best = i;
        best_diffs = std::move(diffs);
      }
    }
    if (best == n) break;
    c.offset_ns[best] = MedianInt(best_diffs);
    c.aligned[best] = true;
    c.matched[best] = best_diffs.size();
    add_anchors(best);
  }
  // Residual: spread of each shared collective's corrected end times.
  std::unordered_map<std::string_view, std::pair<int64_t, int64_t>> spread;  // key -> (min, max)
  std::unordered_map<std::string_view, int> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!c.aligned[i]) continue;
    for (const auto& [key, k] : keys[i]) {
      int64_t end = ranks[i].collectives[k].end_ns - c.offset_ns[i];
      auto [it, fresh] = spread.emplace(key, std::make_pair(end, end));
      if (!fresh) it->second.first = std::min(it->second.first, end), it->second.second = std::max(it->second.second, end);
      ++seen[key];
    }
  }
  std::vector<int64_t> spreads;
  for (const auto& [key, mm] : spread) {
    if (seen[key] >= 2) spreads.push_back(mm.second - mm.first);
  }
  c.collectives = spreads.size();
  c.matched[ref] = 0;
  for (const auto& [key, k] : keys[ref]) c.matched[ref] += seen.count(key) && seen[key] >= 2;
  if (!spreads.empty()) {
    c.residual_median_ns = MedianInt(spreads);
    c.residual_max_ns = *std::max_element(spreads.begin(), spreads.end());
  }
  return c;
}

ClockAlignment AlignClocks(const std::vector<RankEvents>& ranks) {
  std::vector<RankFacts> facts;
  for (const RankEvents& r : ranks) {
    RankFacts f;
    f.rank = r.rank;
    std::unordered_map<std::string, size_t> keys = MatchableKernels(r);
    for (const auto& [key, k] : keys) f.collectives.push_back({key, r.kernels[k].start_ns, r.kernels[k].end_ns});
    facts.push_back(std::move(f));
  }
  return AlignClocks(facts);
}

}  // namespace prof::tool
