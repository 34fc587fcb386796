#include "tools/prof/job/rank_facts.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "tools/prof/job/job_stats.h"

namespace prof::tool {
namespace {

bool IsSyncCall(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

// The thread that made the most host calls: the loop's own.
int64_t MainThread(const RankEvents& r) {
  std::unordered_map<int64_t, size_t> count;
  for (const JobSlice& c : r.calls) ++count[c.tid];
  int64_t tid = 0;
  size_t most = 0;
  for (const auto& [t, k] : count) {
    if (k > most || (k == most && t < tid)) tid = t, most = k;
  }
  return tid;
}

// One thread's Python frames, each with the frame enclosing it, so that
// the innermost frame at an instant is found in O(log n + depth).
class Frames {
 public:
  Frames(const RankEvents& r, int64_t tid) {
    for (const JobSlice& p : r.python) {
      if (p.tid == tid) frames_.push_back(&p);
    }
    // Outer before inner at the same start.
    std::sort(frames_.begin(), frames_.end(), [](const JobSlice* a, const JobSlice* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    std::vector<size_t> open;
    parent_.assign(frames_.size(), kNone);
    for (size_t i = 0; i < frames_.size(); ++i) {
      while (!open.empty() && frames_[open.back()]->end_ns <= frames_[i]->start_ns) open.pop_back();
      if (!open.empty()) parent_[i] = open.back();
      open.push_back(i);
    }
  }

  // The name of the innermost frame that holds instant `t`; 0 when none.
  uint32_t At(int64_t t) const {
    auto it = std::upper_bound(frames_.begin(), frames_.end(), t,
                               [](int64_t x, const JobSlice* f) { return x < f->start_ns; });
    size_t i = it == frames_.begin() ? kNone : static_cast<size_t>(it - frames_.begin()) - 1;
    while (i != kNone && frames_[i]->end_ns <= t) i = parent_[i];
    return i == kNone ? 0 : frames_[i]->name;
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;
  std::vector<const JobSlice*> frames_;
  std::vector<size_t> parent_;
};

// The rank's kernels as merged intervals by kind, and its host calls sorted
// by start (all of them, and the main thread's).
struct Timeline {
  Intervals compute, comm;
  std::vector<const JobSlice*> calls, main_calls;
};

Timeline MakeTimeline(const RankEvents& r, int64_t main_tid) {
  Timeline t;
  Intervals compute, comm;
  for (const JobKernel& k : r.kernels) (k.comm ? comm : compute).push_back({k.start_ns, k.end_ns});
  t.compute = MergeIntervals(std::move(compute));
  t.comm = MergeIntervals(std::move(comm));
  for (const JobSlice& c : r.calls) {
    t.calls.push_back(&c);
    if (c.tid == main_tid) t.main_calls.push_back(&c);
  }
  auto by_start = [](const JobSlice* a, const JobSlice* b) { return a->start_ns < b->start_ns; };
  std::sort(t.calls.begin(), t.calls.end(), by_start);
  std::sort(t.main_calls.begin(), t.main_calls.end(), by_start);
  return t;
}

double CommOverlapPercent(const Timeline& t) {
  int64_t comm_total = 0;
  for (const auto& [a, b] : t.comm) comm_total += b - a;
  if (comm_total <= 0) return -1;
  return 100.0 * static_cast<double>(Intersection(t.comm, t.compute)) / static_cast<double>(comm_total);
}

using Calls = std::vector<const JobSlice*>;

Calls::const_iterator FirstCallAt(const Calls& v, int64_t t) {
  return std::lower_bound(v.begin(), v.end(), t, [](const JobSlice* c, int64_t x) { return c->start_ns < x; });
}

// Interns the rank's name `id` into the facts' names.
class Names {
 public:
  Names(const RankEvents& r, RankFacts* f) : r_(r), f_(f) { f_->names.assign(1, std::string()); }
  uint32_t operator()(uint32_t id) {
    if (id == 0) return 0;
    auto [it, fresh] = ids_.emplace(id, static_cast<uint32_t>(f_->names.size()));
    if (fresh) f_->names.push_back(r_.names[id]);
    return it->second;
  }

 private:
  const RankEvents& r_;
  RankFacts* f_;
  std::unordered_map<uint32_t, uint32_t> ids_;
};

RankStepFacts StepFacts(const RankEvents& r, const Timeline& t, const Frames& frames, const JobStep& st,
                        Names& names) {
  RankStepFacts s;
  s.step = st;
  int64_t lo = st.start_ns, hi = st.end_ns;
  s.compute_ns = LengthWithin(t.compute, lo, hi);
  s.comm_ns = LengthWithin(t.comm, lo, hi);
  int64_t reach = INT64_MIN;
  uint32_t gap_call = 0;
  for (auto it = FirstCallAt(t.main_calls, lo); it != t.main_calls.end() && (*it)->start_ns < hi; ++it) {
    int64_t start = (*it)->start_ns;
    if (reach != INT64_MIN && start - reach > s.gap_ns) {
      s.gap_ns = start - reach;
      gap_call = (*it)->name;
      s.gap_call_ns = start;
    }
    reach = std::max(reach, (*it)->end_ns);
  }
  if (gap_call != 0) {
    s.gap_call = names(gap_call);
    s.gap_site = names(frames.At(s.gap_call_ns));
  }
  for (auto it = FirstCallAt(t.calls, lo); it != t.calls.end() && (*it)->start_ns < hi; ++it) {
    if (IsSyncCall(r.names[(*it)->name])) ++s.syncs;
  }
  return s;
}

}  // namespace

RankFacts SummarizeRank(const RankEvents& r) {
  RankFacts f;
  f.path = r.path;
  f.rank = r.rank;
  f.ranked = r.ranked;
  f.label = r.label;
  int64_t main_tid = MainThread(r);
  Timeline t = MakeTimeline(r, main_tid);
  Frames frames(r, main_tid);
  Names names(r, &f);
  f.comm_overlap_percent = CommOverlapPercent(t);
  for (const JobStep& st : r.steps) f.steps.push_back(StepFacts(r, t, frames, st, names));
  std::unordered_map<std::string, size_t> keys = MatchableKernels(r);
  std::vector<std::pair<std::string, size_t>> matchable(keys.begin(), keys.end());
  // In the rank's kernel order, whatever the hash map's.
  std::sort(matchable.begin(), matchable.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& [key, k] : matchable) f.collectives.push_back({key, r.kernels[k].start_ns, r.kernels[k].end_ns});
  return f;
}

void ShiftRankFacts(RankFacts* f, int64_t ns) {
  for (RankStepFacts& s : f->steps) s.step.start_ns += ns, s.step.end_ns += ns, s.gap_call_ns += ns;
  for (JobCollective& c : f->collectives) c.start_ns += ns, c.end_ns += ns;
}

}  // namespace prof::tool
