#include "agent/steps/step_detector.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace prof {
namespace {

constexpr uint32_t kNoSeg = 0xFFFFFFFFu;

// The stream with tokens replaced by dense indices 0..d-1.
struct Dense {
  std::vector<uint32_t> seq;     // dense index per event
  std::vector<uint64_t> gap;     // host time since the previous event (0 without ticks)
  std::vector<uint32_t> token;   // dense index -> token
};

Dense Compact(const uint32_t* tokens, const uint64_t* ticks, size_t n) {
  Dense d;
  d.seq.reserve(n);
  d.gap.reserve(n);
  std::unordered_map<uint32_t, uint32_t> index;
  uint64_t last_tick = 0;
  bool have_last = false;
  for (size_t i = 0; i < n; ++i) {
    uint32_t t = tokens[i];
    if (t == 0) continue;
    auto [it, fresh] = index.emplace(t, static_cast<uint32_t>(d.token.size()));
    if (fresh) d.token.push_back(t);
    d.seq.push_back(it->second);
    uint64_t tick = ticks != nullptr ? ticks[i] : 0;
    d.gap.push_back(have_last && tick > last_tick ? tick - last_tick : 0);
    last_tick = tick;
    have_last = true;
  }
  return d;
}

struct Candidate {
  uint32_t prev = 0, cur = 0;     // dense indices
  std::vector<uint32_t> at;       // positions of `cur` where preceded by `prev`
  int preference = 3;             // 0 after sync, 1 NVTX, 2 after a long gap, 3 plain
  uint64_t median_gap = 0;
};

struct Verdict {
  bool accepted = false;
  bool wait = false;  // not rejected for good: a possible outer loop needs more repeats
  uint32_t period = 0;
  uint32_t kind_counts[7] = {};
  std::vector<uint32_t> core;  // tokens in most segments (accepted only)
  std::string why;
};

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Per-token bookkeeping while scanning one candidate's segments.
struct TokenStats {
  uint32_t last_seg = kNoSeg;
  uint32_t present = 0;   // segments holding it
  uint32_t total = 0;     // occurrences
  uint32_t spacing = 0;   // distance between the segments holding it, while constant
  bool regular = true;    // every distance so far equal to spacing
  uint32_t min_count = 0; // fewest occurrences in a segment holding it (core tokens)
  uint32_t seg_count = 0; // occurrences in the current segment
};

class Evaluator {
 public:
  Evaluator(const Dense& d, const DetectorParams& p) : d_(d), p_(p), stats_(d.token.size()) {}

  // min_occurrences: the period is chosen on min_segments + 2; a boundary
  // for a period already chosen may have a few occurrences less (its first
  // ones were in warm-up iterations). Each check below either passes or
  // fills the verdict's reason (and whether more repeats may change it).
  Verdict Evaluate(const Candidate& c, size_t min_occurrences) {
    Verdict v;
    // Segment 0 (first occurrence to the second) may still be warm-up: skipped.
    if (c.at.size() < min_occurrences || c.at.size() < 4) {
      v.wait = true;
      v.why = "too few repeats";
      return v;
    }
    Segments g = ScanSegments(c.at);
    if (!ShapeIsALoop(g, &v) || !NoOuterLoop(g, &v) || !SegmentsAreWhole(g, &v)) return v;
    Accept(g, &v);
    return v;
  }

 private:
  // Segments [at[s], at[s+1]) for s in [first, last), and what they hold.
  struct Segments {
    const std::vector<uint32_t>& at;
    uint32_t first = 1, last = 0, segs = 0;
    uint64_t events = 0;
    std::vector<uint64_t> lengths;
    double core_min = 0;  // a core token is in at least this many segments
    bool core_host_side = false;  // the iteration holds a copy, memset, sync or NVTX range
  };

  bool IsCore(const TokenStats& t, const Segments& g) const { return t.present >= g.core_min; }

  // Fills stats_: how often, and how regularly, each token occurs.
  Segments ScanSegments(const std::vector<uint32_t>& at) {
    Segments g{at};
    g.last = static_cast<uint32_t>(at.size()) - 1;
    g.segs = g.last - g.first;
    for (auto& t : stats_) t = TokenStats{};
    g.lengths.reserve(g.segs);
    for (uint32_t s = g.first; s < g.last; ++s) {
      g.lengths.push_back(at[s + 1] - at[s]);
      for (uint32_t pos = at[s]; pos < at[s + 1]; ++pos) {
        TokenStats& t = stats_[d_.seq[pos]];
        ++t.total;
        if (t.last_seg == s) continue;
        if (t.last_seg != kNoSeg) {
          uint32_t gap = s - t.last_seg;
          if (t.spacing == 0) t.spacing = gap;
          else if (gap != t.spacing) t.regular = false;
        }
        t.last_seg = s;
        ++t.present;
      }
      g.events += at[s + 1] - at[s];
    }
    g.core_min = p_.core_fraction * g.segs;
    return g;
  }

  // Whether the repeating part looks like a loop that computes: several
  // kinds of events, a kernel among them, little noise around it.
  bool ShapeIsALoop(Segments& g, Verdict* v) {
    uint64_t noise = 0;
    bool core_device_work = false;  // the iteration launches a kernel or a graph
    uint32_t core_distinct = 0, noise_distinct = 0;
    for (size_t u = 0; u < stats_.size(); ++u) {
      const TokenStats& t = stats_[u];
      if (t.present == 0) continue;
      TokenKind kind = KindOfToken(d_.token[u]);
      bool launch = kind == TokenKind::kLaunch || kind == TokenKind::kGraph;
      if (IsCore(t, g)) {
        ++core_distinct;
        (launch ? core_device_work : g.core_host_side) = true;
      } else {
        ++noise_distinct;
        noise += t.total;
      }
    }
    if (core_distinct < 2) {
      // One event repeated is a run inside an iteration (200 launches of one
      // kernel), not a training loop.
      v->why = "a single event repeated";
      return false;
    }
    // More kinds of events outside the repeating part than in it: the
    // candidate repeats inside a longer iteration seen once or twice so far
    // (each layer's backward pass inside a training step), whose other work
    // has not come back often enough to be told from noise yet.
    if (noise_distinct > core_distinct) {
      v->why = fmt::format("{} kinds of events outside the repeating part, {} in it: a longer iteration, not seen "
                           "often enough yet",
                           noise_distinct, core_distinct);
      v->wait = true;
      return false;
    }
    if (!core_device_work) {
      // Copies and synchronizes alone repeat while a program moves data in
      // (PyTorch's model.to(device): one copy and one synchronize per
      // parameter tensor, hundreds of times); a training loop computes.
      v->why = "no kernel in the repeating part (data moved in, not a loop that computes)";
      return false;
    }
    if (noise > p_.max_noise_share * static_cast<double>(g.events)) {
      v->why = fmt::format("{:.0f}% of events outside the repeating part", 100.0 * noise / g.events);
      return false;
    }
    return true;
  }

  // Work that comes back every k-th segment: these segments are the inner
  // part of a longer iteration (micro-batches of one optimizer step,
  // kernels between the loop's copies or syncs).
  bool NoOuterLoop(const Segments& g, Verdict* v) {
    for (size_t u = 0; u < stats_.size(); ++u) {
      const TokenStats& t = stats_[u];
      if (t.present == 0 || IsCore(t, g) || t.present < 2 || !t.regular || t.spacing < 2) continue;
      TokenKind kind = KindOfToken(d_.token[u]);
      bool host_side = kind != TokenKind::kLaunch && kind != TokenKind::kGraph;
      if (t.spacing <= p_.max_outer || (host_side && !g.core_host_side)) {
        v->why = fmt::format("an outer loop every {} segments", t.spacing);
        v->wait = t.present < 3;
        return false;
      }
    }
    return true;
  }

  // Whether each segment is one iteration: not part of one, not two, not
  // cut short by an event not seen whole yet, of about the usual length.
  bool SegmentsAreWhole(const Segments& g, Verdict* v) {
    // A segment without most of the core tokens is not an iteration: the
    // marker also fires inside one (say at an evaluation pass's copy).
    uint32_t partial = PartialSegments(g);
    if (partial > 0) {
      v->why = fmt::format("{} segments hold less than half an iteration", partial);
      return false;
    }
    uint32_t merged = DoubleSegments(g);
    // A token seen once, recently, may be part of an iteration not yet seen
    // whole (the sync after 200 identical launches): wait for it to come
    // back, or to be old enough to be warm-up.
    uint32_t lone_recent = 0;
    for (const TokenStats& t : stats_) lone_recent += (t.present == 1 && t.last_seg >= g.first + g.segs / 2) ? 1 : 0;
    if (lone_recent > 0) {
      v->why = "an event seen once, recently: the iteration may not have been seen whole";
      v->wait = true;
      return false;
    }
    if (merged > 0) {
      v->why = fmt::format("{} segments hold two iterations", merged);
      return false;
    }
    // An iteration has about one length (dynamic shapes, an extra kernel or
    // an evaluation pass now and then move a few segments only); the gaps
    // between a frequent pair in random work are geometric, most of them far
    // from their median.
    const uint64_t median = Median(g.lengths);
    uint32_t near = 0;
    for (uint64_t len : g.lengths) near += (3 * len >= 2 * median && 2 * len <= 3 * median) ? 1 : 0;
    if (near < p_.regular_fraction * g.segs) {
      v->why = fmt::format("segments of irregular length ({}% within 1.5x of the median)", 100 * near / g.segs);
      return false;
    }
    return true;
  }

  // Segments holding less than half of the core tokens.
  uint32_t PartialSegments(const Segments& g) {
    uint32_t core_tokens = 0;
    for (const TokenStats& t : stats_) core_tokens += IsCore(t, g) ? 1 : 0;
    uint32_t partial = 0;
    for (uint32_t s = g.first; s < g.last; ++s) {
      CountSegment(g.at, s);
      uint32_t held = 0;
      for (const TokenStats& t : stats_) held += (IsCore(t, g) && t.seg_count > 0) ? 1 : 0;
      if (2 * held < core_tokens) ++partial;
    }
    return partial;
  }

  // Segments holding every core token at least twice as often as its
  // fewest in one segment: two iterations (the marker missed one).
  uint32_t DoubleSegments(const Segments& g) {
    ScanSegmentCounts(g.at, g.first, g.last, [&](TokenStats& t) {
      if (t.min_count == 0 || t.seg_count < t.min_count) t.min_count = t.seg_count;
    });
    uint32_t merged = 0;
    for (uint32_t s = g.first; s < g.last; ++s) {
      CountSegment(g.at, s);
      bool all_double = true, any_core = false;
      for (const TokenStats& t : stats_) {
        if (!IsCore(t, g)) continue;
        any_core = true;
        if (t.seg_count < 2 * t.min_count) {
          all_double = false;
          break;
        }
      }
      if (any_core && all_double) ++merged;
    }
    return merged;
  }

  // A typical iteration: the median-length segment, its kinds and core tokens.
  void Accept(const Segments& g, Verdict* v) {
    v->period = static_cast<uint32_t>(Median(g.lengths));
    for (uint32_t s = g.first; s < g.last; ++s) {
      if (g.at[s + 1] - g.at[s] != v->period) continue;
      for (uint32_t pos = g.at[s]; pos < g.at[s + 1]; ++pos) ++v->kind_counts[static_cast<int>(KindOfToken(d_.token[d_.seq[pos]]))];
      break;
    }
    for (size_t u = 0; u < stats_.size(); ++u) {
      if (IsCore(stats_[u], g)) v->core.push_back(d_.token[u]);
    }
    v->accepted = true;
  }

  // Sets seg_count of every token to its occurrences in segment s.
  void CountSegment(const std::vector<uint32_t>& at, uint32_t s) {
    for (auto& t : stats_) t.seg_count = 0;
    for (uint32_t pos = at[s]; pos < at[s + 1]; ++pos) ++stats_[d_.seq[pos]].seg_count;
  }

  template <typename Fn>
  void ScanSegmentCounts(const std::vector<uint32_t>& at, uint32_t first, uint32_t last, Fn fn) {
    for (uint32_t s = first; s < last; ++s) {
      for (uint32_t pos = at[s]; pos < at[s + 1]; ++pos) stats_[d_.seq[pos]].seg_count = 0;
      for (uint32_t pos = at[s]; pos < at[s + 1]; ++pos) ++stats_[d_.seq[pos]].seg_count;
      for (uint32_t pos = at[s]; pos < at[s + 1]; ++pos) {
        TokenStats& t = stats_[d_.seq[pos]];
        if (t.seg_count != 0) {
          fn(t);
          t.seg_count = 0;  // once per token per segment
        }
      }
    }
  }

  const Dense& d_;
  const DetectorParams& p_;
  std::vector<TokenStats> stats_;
};

bool IsSync(uint32_t token) { return KindOfToken(token) == TokenKind::kSync; }

}  // namespace

const char* BoundaryName(Boundary b) {
  switch (b) {
    case Boundary::kAfterSync: return "after a synchronization";
    case Boundary::kNvtxRange: return "at an NVTX range";
    case Boundary::kAfterGap: return "the first event after the host's longest gap";
    case Boundary::kPlain: return "no natural boundary: the first event of the repeating sequence";
  }
  return "?";
}

namespace {

// Every (previous, current) event pair seen often enough to open a step,
// with its positions and how natural a boundary it is.
std::vector<Candidate> PairCandidates(const Dense& d, const DetectorParams& params, uint32_t* distinct_pairs) {
  const size_t m = d.seq.size();
  const uint64_t dn = d.token.size();
  // Pair census: (prev, cur) key and position, sorted by key then position.
  std::vector<std::pair<uint64_t, uint32_t>> pairs;
  pairs.reserve(m - 1);
  for (size_t i = 1; i < m; ++i) pairs.emplace_back(d.seq[i - 1] * dn + d.seq[i], static_cast<uint32_t>(i));
  std::sort(pairs.begin(), pairs.end());
  std::vector<Candidate> cands;
  *distinct_pairs = 0;
  uint64_t all_gaps_median = Median(d.gap);
  for (size_t i = 0; i < pairs.size();) {
    size_t j = i;
    while (j < pairs.size() && pairs[j].first == pairs[i].first) ++j;
    ++*distinct_pairs;
    if (j - i >= params.min_segments / 2 + 2) {
      Candidate c;
      c.prev = static_cast<uint32_t>(pairs[i].first / dn);
      c.cur = static_cast<uint32_t>(pairs[i].first % dn);
      for (size_t k = i; k < j; ++k) c.at.push_back(pairs[k].second);
      std::vector<uint64_t> gaps;
      for (uint32_t pos : c.at) gaps.push_back(d.gap[pos]);
      c.median_gap = Median(gaps);
      uint32_t prev_tok = d.token[c.prev], cur_tok = d.token[c.cur];
      if (IsSync(prev_tok) && !IsSync(cur_tok)) c.preference = 0;
      else if (KindOfToken(cur_tok) == TokenKind::kNvtx) c.preference = 1;
      // A synchronize's token comes at its return: the time before it is the
      // device's, not the host's, so it is no host gap.
      else if (!IsSync(cur_tok) && all_gaps_median > 0 && c.median_gap >= 4 * all_gaps_median) c.preference = 2;
      cands.push_back(std::move(c));
    }
    i = j;
  }
  return cands;
}

// Natural boundaries first (after a sync, an NVTX range, a long host gap),
// then the longer gap, then the earlier start.
bool ByPreference(const Candidate& a, const Candidate& b) {
  if (a.preference != b.preference) return a.preference < b.preference;
  if (a.median_gap != b.median_gap) return a.median_gap > b.median_gap;
  return a.at.front() < b.at.front();
}

// The occurrence count of the period (candidates sorted by count, most
// first): two tries per count, since candidates of one count nearly always
// cut the stream alike. 0 when none is accepted (last_why says why).
size_t ChoosePeriodCount(const std::vector<Candidate>& cands, const DetectorParams& params, Evaluator* eval,
                         uint32_t* tried, std::string* last_why) {
  for (size_t i = 0; i < cands.size() && *tried < params.max_candidates;) {
    size_t j = i;
    while (j < cands.size() && cands[j].at.size() == cands[i].at.size()) ++j;
    for (size_t k = i; k < j && k < i + 2 && *tried < params.max_candidates; ++k) {
      if (cands[k].at.size() < params.min_segments + 2) continue;
      Verdict v = eval->Evaluate(cands[k], params.min_segments + 2);
      ++*tried;
      if (v.accepted) return cands[k].at.size();
      *last_why = v.why;
    }
    i = j;
  }
  return 0;
}

// The detection for an accepted candidate c and its verdict.
void Describe(const Dense& d, const Candidate& c, Verdict&& v, Detection* out) {
  out->found = true;
  uint32_t cur_tok = d.token[c.cur], prev_tok = d.token[c.prev];
  // The token alone marks the step when it never occurs elsewhere.
  uint32_t cur_total = 0;
  for (size_t pos = c.at.front(); pos < d.seq.size(); ++pos) cur_total += d.seq[pos] == c.cur;
  out->marker.token = cur_tok;
  out->marker.prev = cur_total == c.at.size() ? 0 : prev_tok;
  out->marker.context = prev_tok;
  out->boundary = c.preference == 0   ? Boundary::kAfterSync
                  : c.preference == 1 ? Boundary::kNvtxRange
                  : c.preference == 2 ? Boundary::kAfterGap
                                      : Boundary::kPlain;
  out->period_events = v.period;
  auto count = [&](TokenKind k) { return v.kind_counts[static_cast<int>(k)]; };
  out->launches = count(TokenKind::kLaunch) + count(TokenKind::kGraph);
  out->copies = count(TokenKind::kCopy);
  out->memsets = count(TokenKind::kMemset);
  out->syncs = count(TokenKind::kSync);
  out->nvtx = count(TokenKind::kNvtx);
  out->iterations = static_cast<uint32_t>(c.at.size());
  out->core = std::move(v.core);
}

}  // namespace

Detection DetectPeriod(const uint32_t* tokens, const uint64_t* ticks, size_t n, const DetectorParams& params) {
  Detection out;
  Dense d = Compact(tokens, ticks, n);
  const size_t m = d.seq.size();
  const uint64_t dn = d.token.size();
  out.distinct_tokens = static_cast<uint32_t>(dn);
  if (m < 2) {
    out.why_not = fmt::format("only {} events", m);
    return out;
  }
  uint32_t distinct_pairs = 0;
  std::vector<Candidate> cands = PairCandidates(d, params, &distinct_pairs);
  out.distinct_pairs = distinct_pairs;
  if (cands.empty()) {
    out.why_not = fmt::format("no repeating sequence: {} distinct events, {} distinct event pairs in {} events, none seen {} times",
                              dn, distinct_pairs, m, params.min_segments + 2);
    return out;
  }
  // Shorter periods first (more occurrences); within a count, natural boundaries first.
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.at.size() != b.at.size()) return a.at.size() > b.at.size();
    return ByPreference(a, b);
  });
  Evaluator eval(d, params);
  uint32_t tried = 0;
  std::string last_why;
  const size_t accepted_count = ChoosePeriodCount(cands, params, &eval, &tried, &last_why);
  out.candidates_tried = tried;
  if (accepted_count == 0) {
    out.why_not = fmt::format("no repeating sequence: {} distinct events, {} distinct event pairs in {} events{}", dn,
                              distinct_pairs, m, last_why.empty() ? "" : "; best candidate: " + last_why);
    return out;
  }
  // The period is settled; pick its most natural boundary among candidates
  // of about the same count.
  // A period twice as long has half the count: a quarter's slack keeps it out
  // while admitting boundaries that warm-up iterations lacked.
  size_t tol = std::max<size_t>(3, accepted_count / 4);
  std::vector<const Candidate*> same;
  for (const Candidate& c : cands) {
    if (c.at.size() <= accepted_count && c.at.size() + tol >= accepted_count) same.push_back(&c);
  }
  std::stable_sort(same.begin(), same.end(), [](const Candidate* a, const Candidate* b) { return ByPreference(*a, *b); });
  for (const Candidate* c : same) {
    if (tried >= params.max_candidates + 16) break;
    Verdict v = eval.Evaluate(*c, params.min_segments / 2 + 2);
    ++tried;
    if (!v.accepted) continue;
    Describe(d, *c, std::move(v), &out);
    break;
  }
  out.candidates_tried = tried;
  if (!out.found) out.why_not = "the period's candidates stopped agreeing";
  return out;
}

}  // namespace prof
