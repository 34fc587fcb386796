#include "tools/prof/job/clock_alignment.h"

#include <algorithm>
#include <climits>

#include "tools/prof/job/job_keys.h"
#include "tools/prof/job/job_stats.h"

namespace prof::tool {
ClockAlignment AlignClocks(const std::vector<RankFacts>& ranks) {
  ClockAlignment c;
  size_t n = ranks.size();
  c.offset_ns.assign(n, 0);
  c.aligned.assign(n, false);
  c.matched.assign(n, 0);
  if (n == 0) return c;
  // The reference: the lowest rank among the inputs with the most matchable
  // collectives.
  size_t ref = 0;
  for (size_t i = 1; i < n; ++i) {
    size_t a = ranks[i].collectives.size(), b = ranks[ref].collectives.size();
    if (a > b || (a == b && ranks[i].rank < ranks[ref].rank)) ref = i;
  }
  c.reference = ref;
  c.aligned[ref] = true;
  // Grow the aligned set: each round aligns every unaligned input that
  // shares collectives with the aligned ones, against each collective's
  // corrected end on the first aligned input that has it (the reference's,
  // when it has it), then adds their collectives as anchors for the next
  // round (inputs in other communicators are reached through the ranks they
  // share one with). Each round costs one look-up per collective of the
  // inputs still unaligned.
  constexpr int64_t kNone = INT64_MIN;
  std::vector<int64_t> anchor(KeyCount(ranks), kNone);  // key -> corrected end
  auto add_anchors = [&](size_t j) {
    for (const JobCollective& k : ranks[j].collectives) {
      if (anchor[k.key] == kNone) anchor[k.key] = k.end_ns - c.offset_ns[j];
    }
  };
  add_anchors(ref);
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<size_t> newly;
    for (size_t i = 0; i < n; ++i) {
      if (c.aligned[i]) continue;
      std::vector<int64_t> diffs;
      for (const JobCollective& k : ranks[i].collectives) {
        if (anchor[k.key] != kNone) diffs.push_back(k.end_ns - anchor[k.key]);
      }
      if (diffs.empty()) continue;
      c.offset_ns[i] = MedianInt(diffs);
      c.matched[i] = diffs.size();
      newly.push_back(i);
    }
    for (size_t i : newly) {
      c.aligned[i] = true;
      add_anchors(i);
      grew = true;
    }
  }
  // Residual: spread of each shared collective's corrected end times.
  std::vector<int64_t> lo(anchor.size(), INT64_MAX), hi(anchor.size(), INT64_MIN);
  std::vector<uint32_t> seen(anchor.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    if (!c.aligned[i]) continue;
    for (const JobCollective& k : ranks[i].collectives) {
      int64_t end = k.end_ns - c.offset_ns[i];
      lo[k.key] = std::min(lo[k.key], end);
      hi[k.key] = std::max(hi[k.key], end);
      ++seen[k.key];
    }
  }
  std::vector<int64_t> spreads;
  for (size_t key = 0; key < anchor.size(); ++key) {
    if (seen[key] >= 2) spreads.push_back(hi[key] - lo[key]);
  }
  c.collectives = spreads.size();
  c.matched[ref] = 0;
  for (const JobCollective& k : ranks[ref].collectives) c.matched[ref] += seen[k.key] >= 2;
  if (!spreads.empty()) {
    c.residual_median_ns = MedianInt(spreads);
    c.residual_max_ns = *std::max_element(spreads.begin(), spreads.end());
  }
  return c;
}

ClockAlignment AlignClocks(const std::vector<RankEvents>& ranks) { return AlignClocks(SharedFacts(ranks)); }

}  // namespace prof::tool
