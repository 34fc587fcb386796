#include "exporters/job/rank_facts.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <iterator>
#include <cstdio>
#include <unordered_map>

#include "exporters/common/intervals.h"
#include "exporters/common/json_writer.h"

namespace prof {
namespace {

using Intervals = prof::Intervals<int64_t>;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// HTA's CommunicateKernelGroupingPattern: ^nccl, or ncclKernel anywhere
// (ncclDevKernel_* of NCCL >= 2.19 starts with "nccl").
bool IsCommKernelName(std::string_view name) {
  return name.starts_with("nccl") || name.find("ncclKernel") != std::string_view::npos;
}

// Point-to-point operations: the two sides carry different names, so they
// are not matched across ranks.
bool IsPointToPoint(std::string_view collective) {
  std::string l = Lower(collective);
  return l.find("send") != std::string::npos || l.find("recv") != std::string::npos;
}

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

// Each thread's Frames, made when that thread is first asked about.
class ThreadFrames {
 public:
  explicit ThreadFrames(const RankEvents& r) : r_(r) {}
  uint32_t At(int64_t tid, int64_t t) {
    auto it = frames_.find(tid);
    if (it == frames_.end()) it = frames_.emplace(tid, Frames(r_, tid)).first;
    return it->second.At(t);
  }

 private:
  const RankEvents& r_;
  std::unordered_map<int64_t, Frames> frames_;
};

// The rank's kernels as merged intervals by kind, all its GPU work merged,
// where each piece of work starts (with its launching call's correlation),
// its host calls sorted by start (all of them, and the main thread's), and
// the first call of each correlation.
struct Timeline {
  Intervals compute, comm, gpu;
  std::vector<std::pair<int64_t, uint64_t>> work_starts;
  std::vector<const JobSlice*> calls, main_calls;
  std::unordered_map<uint64_t, const JobSlice*> launches;
};

Timeline MakeTimeline(const RankEvents& r, int64_t main_tid) {
  Timeline t;
  Intervals compute, comm, transfers;
  for (const JobKernel& k : r.kernels) {
    (k.comm ? comm : compute).push_back({k.start_ns, k.end_ns});
    t.work_starts.emplace_back(k.start_ns, k.correlation);
  }
  for (const JobTransfer& x : r.transfers) {
    transfers.push_back({x.start_ns, x.end_ns});
    t.work_starts.emplace_back(x.start_ns, x.correlation);
  }
  Intervals all = compute;
  all.insert(all.end(), comm.begin(), comm.end());
  all.insert(all.end(), transfers.begin(), transfers.end());
  t.gpu = MergeIntervals(std::move(all));
  t.compute = MergeIntervals(std::move(compute));
  t.comm = MergeIntervals(std::move(comm));
  std::sort(t.work_starts.begin(), t.work_starts.end());
  for (const JobSlice& c : r.calls) {
    t.calls.push_back(&c);
    if (c.tid == main_tid) t.main_calls.push_back(&c);
  }
  auto by_start = [](const JobSlice* a, const JobSlice* b) { return a->start_ns < b->start_ns; };
  // Stable: calls that start together keep the trace's order, the same
  // whether read from the file or taken as it is written.
  std::stable_sort(t.calls.begin(), t.calls.end(), by_start);
  std::stable_sort(t.main_calls.begin(), t.main_calls.end(), by_start);
  for (const JobSlice* c : t.calls) {
    if (c->correlation != 0) t.launches.emplace(c->correlation, c);
  }
  return t;
}

double CommOverlapPercent(const Timeline& t) {
  int64_t comm_total = 0;
  for (const auto& [a, b] : t.comm) comm_total += b - a;
  if (comm_total <= 0) return -1;
  return 100.0 * static_cast<double>(IntersectionLength(t.comm, t.compute)) / static_cast<double>(comm_total);
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

// The longest stretch of [lo, hi) that the merged `busy` leaves uncovered:
// its length and end.
std::pair<int64_t, int64_t> LongestUncovered(const Intervals& busy, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(busy.begin(), busy.end(), lo,
                             [](const std::pair<int64_t, int64_t>& b, int64_t x) { return b.second <= x; });
  int64_t cursor = lo, longest = 0, end = lo;
  for (; it != busy.end() && it->first < hi; ++it) {
    if (it->first - cursor > longest) longest = it->first - cursor, end = it->first;
    cursor = std::max(cursor, it->second);
  }
  if (hi - cursor > longest) longest = hi - cursor, end = hi;
  return {longest, end};
}

// The step's longest GPU idle stretch, and the call that launched the work
// ending it (with that call's innermost Python frame).
void IdleFacts(const Timeline& t, ThreadFrames& frames, const JobStep& st, Names& names, RankStepFacts* s) {
  auto [idle, end] = LongestUncovered(t.gpu, st.start_ns, st.end_ns);
  s->idle_ns = idle;
  if (idle <= 0 || end >= st.end_ns) return;
  auto work = std::lower_bound(t.work_starts.begin(), t.work_starts.end(), std::make_pair(end, uint64_t{0}));
  if (work == t.work_starts.end() || work->first != end) return;
  auto call = t.launches.find(work->second);
  if (work->second == 0 || call == t.launches.end()) return;
  s->idle_call_ns = call->second->start_ns;
  s->idle_call = names(call->second->name);
  s->idle_site = names(frames.At(call->second->tid, call->second->start_ns));
}

RankStepFacts StepFacts(const RankEvents& r, const Timeline& t, ThreadFrames& frames, int64_t main_tid,
                        const JobStep& st, Names& names) {
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
    s.gap_site = names(frames.At(main_tid, s.gap_call_ns));
  }
  IdleFacts(t, frames, st, names, &s);
  for (auto it = FirstCallAt(t.calls, lo); it != t.calls.end() && (*it)->start_ns < hi; ++it) {
    if (IsSyncCall(r.names[(*it)->name])) ++s.syncs;
  }
  return s;
}

}  // namespace

uint32_t RankEvents::Intern(std::string_view s) {
  auto it = name_ids.find(std::string(s));
  if (it != name_ids.end()) return it->second;
  if (names.empty()) names.emplace_back();  // id 0: no name
  uint32_t id = static_cast<uint32_t>(names.size());
  names.emplace_back(s);
  name_ids.emplace(std::string(s), id);
  return id;
}

JobKernel MakeJobKernel(int64_t start_ns, int64_t end_ns, std::string_view name, std::string_view collective,
                        std::string_view group, std::string_view seq) {
  JobKernel k;
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  if (!collective.empty()) {
    k.comm = true;
    k.collective = std::string(collective);
    if (!seq.empty() && !IsPointToPoint(k.collective)) {
      k.key = std::string(group) + "/" + k.collective + "/" + std::string(seq);
    }
  } else {
    k.comm = IsCommKernelName(name);
    if (k.comm) k.collective = std::string(name);
  }
  return k;
}

bool IsJobCall(std::string_view cat, std::string_view name) {
  return cat == "cuda_runtime" || cat == "cuda_driver" ||
         (name.starts_with("nccl") && !cat.starts_with("gpu_") && cat != "ac2g");
}

std::unordered_map<std::string, size_t> MatchableKernels(const RankEvents& r) {
  std::unordered_map<std::string, size_t> index;
  std::unordered_map<std::string, int> count;
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    if (r.kernels[i].key.empty()) continue;
    if (++count[r.kernels[i].key] == 1) index[r.kernels[i].key] = i;
  }
  for (const auto& [key, n] : count) {
    if (n > 1) index.erase(key);
  }
  return index;
}

RankFacts SummarizeRank(const RankEvents& r) {
  RankFacts f;
  f.path = r.path;
  f.rank = r.rank;
  f.ranked = r.ranked;
  f.label = r.label;
  int64_t main_tid = MainThread(r);
  Timeline t = MakeTimeline(r, main_tid);
  ThreadFrames frames(r);
  Names names(r, &f);
  f.comm_overlap_percent = CommOverlapPercent(t);
  for (const JobStep& st : r.steps) f.steps.push_back(StepFacts(r, t, frames, main_tid, st, names));
  std::unordered_map<std::string, size_t> keys = MatchableKernels(r);
  std::vector<std::pair<std::string, size_t>> matchable(keys.begin(), keys.end());
  // In the rank's kernel order, whatever the hash map's.
  std::sort(matchable.begin(), matchable.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& [key, k] : matchable) {
    f.collectives.push_back({static_cast<uint32_t>(f.keys.size()), r.kernels[k].start_ns, r.kernels[k].end_ns});
    f.keys.push_back(key);
  }
  return f;
}

namespace {

std::string Quote(std::string_view text) {
  std::string out = "\"";
  AppendJsonEscaped(text, &out);
  return out + "\"";
}

}  // namespace

std::string RankFactsJson(const RankFacts& f) {
  std::string out = "{\"libprof_job_facts\": 2, \"trace\": " + Quote(f.path) + ", \"rank\": " +
                    std::to_string(f.rank) + ", \"ranked\": " + (f.ranked ? "true" : "false") +
                    ", \"label\": " + Quote(f.label) + ", \"comm_overlap_percent\": ";
  if (f.comm_overlap_percent < 0) {
    out += "null";
  } else {
    char number[32];
    std::snprintf(number, sizeof number, "%.17g", f.comm_overlap_percent);
    out += number;
  }
  out += ",\n\"names\": [";
  for (size_t i = 0; i < f.names.size(); ++i) out += (i ? ", " : "") + Quote(f.names[i]);
  out += "],\n\"steps\": [";
  for (size_t i = 0; i < f.steps.size(); ++i) {
    const RankStepFacts& s = f.steps[i];
    out += i ? ",\n  [" : "\n  [";
    const int64_t fields[] = {static_cast<int64_t>(s.step.number), s.step.start_ns, s.step.end_ns, s.compute_ns,
                              s.comm_ns, s.gap_ns, s.gap_call_ns, s.gap_call, s.gap_site, s.syncs,
                              s.idle_ns, s.idle_call_ns, s.idle_call, s.idle_site};
    for (size_t k = 0; k < std::size(fields); ++k) out += (k ? ", " : "") + std::to_string(fields[k]);
    out += "]";
  }
  out += "],\n\"collectives\": [";
  for (size_t i = 0; i < f.collectives.size(); ++i) {
    const JobCollective& c = f.collectives[i];
    out += (i ? ",\n  [" : "\n  [") + Quote(f.keys[c.key]) + ", " + std::to_string(c.start_ns) + ", " +
           std::to_string(c.end_ns) + "]";
  }
  return out + "]}\n";
}

void ShiftRankFacts(RankFacts* f, int64_t ns) {
  for (RankStepFacts& s : f->steps) {
    s.step.start_ns += ns, s.step.end_ns += ns, s.gap_call_ns += ns;
    if (s.idle_call != 0) s.idle_call_ns += ns;
  }
  for (JobCollective& c : f->collectives) c.start_ns += ns, c.end_ns += ns;
}

}  // namespace prof
