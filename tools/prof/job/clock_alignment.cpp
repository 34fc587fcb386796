#include "tools/prof/job/clock_alignment.h"

#include <algorithm>
#include <climits>

#include "tools/prof/job/job_stats.h"

namespace prof::tool {
namespace {

constexpr int64_t kNone = INT64_MIN;

}  // namespace

ClockAlignment AlignClocks(size_t n, const FactsSource& facts) {
  ClockAlignment c;
  c.offset_ns.assign(n, 0);
  c.aligned.assign(n, false);
  c.matched.assign(n, 0);
  if (n == 0) return c;
  // The reference: the lowest rank among the inputs with the most matchable
  // collectives.
  size_t ref = 0, most = 0;
  int ref_rank = 0;
  for (size_t i = 0; i < n; ++i) {
    const RankFacts& f = facts(i);
    if (i == 0 || f.collectives.size() > most || (f.collectives.size() == most && f.rank < ref_rank)) {
      ref = i, most = f.collectives.size(), ref_rank = f.rank;
    }
  }
  c.reference = ref;
  c.aligned[ref] = true;
  // Grow the aligned set: each round aligns every unaligned input that
  // shares collectives with the aligned ones, against each collective's
  // corrected end on the first aligned input that has it (the reference's,
  // when it has it), then adds their collectives as anchors for the next
  // round (inputs in other communicators are reached through the ranks they
  // share one with). A round is one pass over the inputs still unaligned,
  // an array look-up per collective.
  std::vector<int64_t> anchor;  // key -> corrected end
  for (const JobCollective& k : facts(ref).collectives) Grown(anchor, k.key, kNone) = k.end_ns;
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<int64_t> next = anchor;  // this round's newly aligned inputs add theirs after it
    for (size_t i = 0; i < n; ++i) {
      if (c.aligned[i]) continue;
      const RankFacts& f = facts(i);
      std::vector<int64_t> diffs;
      for (const JobCollective& k : f.collectives) {
        if (k.key < anchor.size() && anchor[k.key] != kNone) diffs.push_back(k.end_ns - anchor[k.key]);
      }
      if (diffs.empty()) continue;
      c.offset_ns[i] = MedianInt(diffs);
      c.matched[i] = diffs.size();
      c.aligned[i] = true;
      grew = true;
      for (const JobCollective& k : f.collectives) {
        int64_t& a = Grown(next, k.key, kNone);
        if (a == kNone) a = k.end_ns - c.offset_ns[i];
      }
    }
    anchor = std::move(next);
  }
  // Residual: spread of each shared collective's corrected end times.
  std::vector<int64_t> lo, hi;
  std::vector<uint32_t> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!c.aligned[i]) continue;
    for (const JobCollective& k : facts(i).collectives) {
      int64_t end = k.end_ns - c.offset_ns[i];
      int64_t& low = Grown(lo, k.key, INT64_MAX);
      low = std::min(low, end);
      int64_t& high = Grown(hi, k.key, INT64_MIN);
      high = std::max(high, end);
      ++Grown(seen, k.key, 0u);
    }
  }
  std::vector<int64_t> spreads;
  for (size_t key = 0; key < seen.size(); ++key) {
    if (seen[key] >= 2) spreads.push_back(hi[key] - lo[key]);
  }
  c.collectives = spreads.size();
  c.matched[ref] = 0;
  for (const JobCollective& k : facts(ref).collectives) c.matched[ref] += k.key < seen.size() && seen[k.key] >= 2;
  if (!spreads.empty()) {
    c.residual_median_ns = MedianInt(spreads);
    c.residual_max_ns = *std::max_element(spreads.begin(), spreads.end());
  }
  return c;
}

ClockAlignment AlignClocks(const std::vector<RankFacts>& ranks) { return AlignClocks(ranks.size(), FactsOf(ranks)); }

ClockAlignment AlignClocks(const std::vector<RankEvents>& ranks) { return AlignClocks(SharedFacts(ranks)); }

}  // namespace prof::tool
