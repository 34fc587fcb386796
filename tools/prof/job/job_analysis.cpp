#include "tools/prof/job/job_analysis.h"

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>

#include "exporters/common/format.h"
#include "tools/prof/job/job_stats.h"

namespace prof::tool {
namespace {

bool IsSyncCall(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

// The Python frame enclosing `t` on thread `tid`: the innermost (latest
// starting) python_function slice that contains it; 0 when none.
uint32_t SiteAt(const RankEvents& r, int64_t tid, int64_t t, int64_t offset) {
  uint32_t best = 0;
  int64_t best_start = INT64_MIN;
  for (const JobSlice& p : r.python) {
    int64_t s = p.start_ns - offset, e = p.end_ns - offset;
    if (p.tid == tid && s <= t && t < e && s >= best_start) best = p.name, best_start = s;
  }
  return best;
}

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

// Per input and kernel: what it waited in its collective, and, when it
// arrived last, what the others waited for it.
struct Waits {
  std::vector<std::vector<int64_t>> wait;     // [input][kernel]: its own waiting
  std::vector<std::vector<int64_t>> charged;  // [input][kernel]: the others' waiting, when it arrived last
};

// Waiting per matched collective, and who is charged for it; counts the
// collectives and each rank's arrivals last into `job`.
Waits ChargeWaits(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks, JobSummary* job) {
  size_t n = ranks.size();
  std::vector<std::unordered_map<std::string, size_t>> keys(n);
  std::unordered_map<std::string, std::vector<size_t>> holders;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = MatchableKernels(ranks[i]);
    for (const auto& [key, k] : keys[i]) holders[key].push_back(i);
  }
  Waits w;
  w.wait.resize(n);
  w.charged.resize(n);
  for (size_t i = 0; i < n; ++i) {
    w.wait[i].assign(ranks[i].kernels.size(), 0);
    w.charged[i].assign(ranks[i].kernels.size(), 0);
  }
  constexpr int64_t kNoticeableWaitNs = 1000;  // a wait under 1 µs is nobody's fault
  for (const auto& [key, who] : holders) {
    if (who.size() < 2) continue;
    ++job->collectives;
    size_t last = who[0];
    int64_t last_start = INT64_MIN;
    for (size_t i : who) {
      int64_t s = ranks[i].kernels[keys[i].at(key)].start_ns - OffsetOf(clocks, i);
      if (s > last_start) last = i, last_start = s;
    }
    int64_t others = 0, most = 0;
    for (size_t i : who) {
      const JobKernel& k = ranks[i].kernels[keys[i].at(key)];
      int64_t wt = std::clamp(last_start - (k.start_ns - OffsetOf(clocks, i)), int64_t{0}, k.end_ns - k.start_ns);
      w.wait[i][keys[i].at(key)] = wt;
      others += wt;
      most = std::max(most, wt);
    }
    if (most >= kNoticeableWaitNs) {
      ++job->collectives_with_wait;
      ++job->totals[last].arrived_last;
      job->totals[last].cost_ns += others;
      w.charged[last][keys[last].at(key)] = others;
    }
  }
  return w;
}

// Rows: by step number when every rank has the same numbers, else the
// k-th step of each rank.
void SetUpRows(const std::vector<RankEvents>& ranks, JobSummary* job) {
  size_t n = ranks.size();
  std::vector<uint64_t> numbers;
  for (const JobStep& s : ranks[0].steps) numbers.push_back(s.number);
  for (size_t i = 1; i < n; ++i) {
    std::vector<uint64_t> other;
    for (const JobStep& s : ranks[i].steps) other.push_back(s.number);
    if (other != numbers) job->steps_by_number = false;
  }
  size_t rows = 0;
  for (const RankEvents& r : ranks) rows = std::max(rows, r.steps.size());
  job->cells.assign(rows, std::vector<JobCell>(n));
  for (size_t row = 0; row < rows; ++row) {
    job->step_numbers.push_back(job->steps_by_number ? numbers[row] : row);
  }
}

// One rank's events on the aligned clock, everything sorted by start once,
// so each step finds its own with binary searches: O((steps + events) log
// events).
struct RankTimeline {
  int64_t offset = 0;
  Intervals compute, comm;                          // merged
  std::vector<std::pair<int64_t, size_t>> kernels;  // (start, kernel index)
  std::vector<const JobSlice*> calls;               // host calls
  std::vector<const JobSlice*> main_calls;          // the main thread's
};

RankTimeline Timeline(const RankEvents& r, int64_t o) {
  RankTimeline t;
  t.offset = o;
  Intervals compute, comm;
  for (const JobKernel& k : r.kernels) (k.comm ? comm : compute).push_back({k.start_ns - o, k.end_ns - o});
  t.compute = MergeIntervals(std::move(compute));
  t.comm = MergeIntervals(std::move(comm));
  for (size_t k = 0; k < r.kernels.size(); ++k) t.kernels.push_back({r.kernels[k].start_ns - o, k});
  std::sort(t.kernels.begin(), t.kernels.end());
  int64_t main_tid = MainThread(r);
  for (const JobSlice& c : r.calls) {
    t.calls.push_back(&c);
    if (c.tid == main_tid) t.main_calls.push_back(&c);
  }
  auto by_call_start = [](const JobSlice* a, const JobSlice* b) { return a->start_ns < b->start_ns; };
  std::sort(t.calls.begin(), t.calls.end(), by_call_start);
  std::sort(t.main_calls.begin(), t.main_calls.end(), by_call_start);
  return t;
}

// HTA's get_comm_comp_overlap over the whole trace; -1 without communication.
double CommOverlapPercent(const RankTimeline& t) {
  int64_t comm_total = 0;
  for (const auto& [a, b] : t.comm) comm_total += b - a;
  if (comm_total <= 0) return -1;
  return 100.0 * static_cast<double>(Intersection(t.comm, t.compute)) / static_cast<double>(comm_total);
}

// A rank's cell in one of its steps.
JobCell StepCell(const RankEvents& r, const RankTimeline& t, const JobStep& st, const std::vector<int64_t>& wait,
                 const std::vector<int64_t>& charged) {
  int64_t o = t.offset;
  auto first_call_at = [o](const std::vector<const JobSlice*>& v, int64_t x) {
    return std::lower_bound(v.begin(), v.end(), x, [o](const JobSlice* c, int64_t y) { return c->start_ns - o < y; });
  };
  int64_t lo = st.start_ns - o, hi = st.end_ns - o;
  JobCell cell;
  cell.present = true;
  cell.step_ns = hi - lo;
  cell.compute_ns = LengthWithin(t.compute, lo, hi);
  cell.comm_ns = LengthWithin(t.comm, lo, hi);
  for (auto it = std::lower_bound(t.kernels.begin(), t.kernels.end(), std::make_pair(lo, size_t{0}));
       it != t.kernels.end() && it->first < hi; ++it) {
    cell.wait_ns += wait[it->second];
    cell.cost_ns += charged[it->second];
  }
  int64_t reach = INT64_MIN;
  for (auto it = first_call_at(t.main_calls, lo); it != t.main_calls.end() && (*it)->start_ns - o < hi; ++it) {
    int64_t s = (*it)->start_ns - o, e = (*it)->end_ns - o;
    if (reach != INT64_MIN && s - reach > cell.gap_ns) {
      cell.gap_ns = s - reach;
      cell.gap_call = (*it)->name;
      cell.gap_call_ns = s;
    }
    reach = std::max(reach, e);
  }
  for (auto it = first_call_at(t.calls, lo); it != t.calls.end() && (*it)->start_ns - o < hi; ++it) {
    if (IsSyncCall(r.names[(*it)->name])) ++cell.syncs;
  }
  return cell;
}

// Each rank's means over its steps, and what its lateness cost the others.
void SumTotals(JobSummary* job) {
  size_t n = job->world, rows = job->cells.size();
  for (size_t i = 0; i < n; ++i) {
    JobRankTotals& t = job->totals[i];
    size_t steps = 0;
    for (size_t row = 0; row < rows; ++row) {
      const JobCell& c = job->cells[row][i];
      if (!c.present) continue;
      ++steps;
      t.mean_step_ns += c.step_ns, t.mean_compute_ns += c.compute_ns, t.mean_comm_ns += c.comm_ns;
      t.mean_wait_ns += c.wait_ns, t.mean_gap_ns += c.gap_ns, t.mean_syncs += c.syncs;
    }
    if (steps) {
      double d = static_cast<double>(steps);
      t.mean_step_ns /= d, t.mean_compute_ns /= d, t.mean_comm_ns /= d;
      t.mean_wait_ns /= d, t.mean_gap_ns /= d, t.mean_syncs /= d;
    }
    double others = static_cast<double>(n > 1 ? n - 1 : 1);
    t.cost_per_rank_step_ns = static_cast<double>(t.cost_ns) / (static_cast<double>(std::max<size_t>(steps, 1)) * others);
    std::vector<double> costs;
    for (size_t row = 0; row < rows; ++row) {
      if (job->cells[row][i].present) costs.push_back(static_cast<double>(job->cells[row][i].cost_ns) / others);
    }
    t.median_cost_per_rank_step_ns = Median(costs);
  }
}

// The straggler's (input s's) own window against the other ranks' medians.
std::vector<std::string> StragglerEvidence(const RankEvents& sr, size_t s, int64_t offset, const JobSummary& job) {
  std::vector<std::string> evidence;
  const JobRankTotals& top = job.totals[s];
  std::vector<double> gaps, computes, syncs;
  for (size_t i = 0; i < job.world; ++i) {
    if (i == s) continue;
    gaps.push_back(job.totals[i].mean_gap_ns);
    computes.push_back(job.totals[i].mean_compute_ns);
    syncs.push_back(job.totals[i].mean_syncs);
  }
  double gap_others = Median(gaps), compute_others = Median(computes), syncs_others = Median(syncs);
  double cost = top.cost_per_rank_step_ns;
  if (top.mean_gap_ns - gap_others >= 0.5 * cost) {
    // Where: the call that most often follows its longest gap, and the
    // Python line it was made from.
    std::map<std::pair<uint32_t, uint32_t>, size_t> where;
    int64_t main_tid = MainThread(sr);
    for (size_t row = 0; row < job.cells.size(); ++row) {
      const JobCell& c = job.cells[row][s];
      if (c.present && c.gap_call) ++where[{c.gap_call, SiteAt(sr, main_tid, c.gap_call_ns, offset)}];
    }
    std::string at;
    size_t most = 0;
    for (const auto& [k, count] : where) {
      if (count > most) {
        most = count;
        at = " before " + sr.names[k.first];
        if (k.second) at += " at " + sr.names[k.second];
      }
    }
    evidence.push_back(Printf("its host is idle longer: longest gap between its CUDA calls %s ms per step (other "
                              "ranks %s ms)",
                              Ms(top.mean_gap_ns).c_str(), Ms(gap_others).c_str()) +
                       at);
  }
  if (top.mean_compute_ns > 1.1 * compute_others && top.mean_compute_ns - compute_others >= 0.25 * cost) {
    evidence.push_back(Printf("its kernels run longer: compute %s ms per step (other ranks %s ms)",
                              Ms(top.mean_compute_ns).c_str(), Ms(compute_others).c_str()));
  }
  if (top.mean_syncs >= syncs_others + 0.5) {
    evidence.push_back(Printf("it synchronizes more: %.1f synchronizing calls per step (other ranks %.1f)",
                              top.mean_syncs, syncs_others));
  }
  if (evidence.empty()) {
    evidence.push_back("its own window shows no longer host gap, slower kernels or extra synchronization than the "
                       "other ranks'");
  }
  return evidence;
}

// The straggler line, and the straggler's evidence when one stands out.
void NameStraggler(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks, JobSummary* job) {
  size_t n = ranks.size();
  if (n < 2 || job->collectives == 0) {
    job->straggler_line = n < 2 ? "straggler: none (one rank)"
                                : "straggler: none can be named: no collective was found on two ranks or more";
    return;
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  const std::vector<JobRankTotals>& totals = job->totals;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return totals[a].cost_ns != totals[b].cost_ns ? totals[a].cost_ns > totals[b].cost_ns
                                                  : totals[a].rank < totals[b].rank;
  });
  const JobRankTotals& top = totals[order[0]];
  const JobRankTotals& next = totals[order[1]];
  double share = job->collectives_with_wait ? static_cast<double>(top.arrived_last) / job->collectives_with_wait : 0;
  double cost_share = job->median_step_ns > 0 ? top.cost_per_rank_step_ns / job->median_step_ns : 0;
  // In the median step, not on average: a rank that was late once by a lot
  // (a page fault, the scheduler) is not the straggler.
  double typical_share = job->median_step_ns > 0 ? top.median_cost_per_rank_step_ns / job->median_step_ns : 0;
  bool stands_out = top.cost_ns > 0 && share >= 0.75 && typical_share >= 0.05 && top.cost_ns >= 2 * next.cost_ns;
  std::string last_text = Printf("arrived last at %llu of the %llu collectives where a rank waited",
                                 static_cast<unsigned long long>(top.arrived_last),
                                 static_cast<unsigned long long>(job->collectives_with_wait));
  std::string cost_text = Printf("%s ms per step (%.1f %% of the median step of %s ms)",
                                 Ms(top.cost_per_rank_step_ns).c_str(), cost_share * 100.0,
                                 Ms(job->median_step_ns).c_str());
  if (!stands_out) {
    if (top.cost_ns == 0) {
      job->straggler_line = "straggler: none: no rank made another wait in a collective";
    } else {
      job->straggler_line = "straggler: none: no rank stands out (the most waited-for, " + job->labels[order[0]] +
                            ", " + last_text + " and cost every other rank " + cost_text + ")";
    }
    return;
  }
  size_t s = order[0];
  job->straggler = static_cast<int>(s);
  job->straggler_line = "straggler: " + job->labels[s] + ": " + last_text + " (" +
                        Printf("%.0f %%", share * 100.0) + "); its lateness costs every other rank " + cost_text;
  job->evidence = StragglerEvidence(ranks[s], s, OffsetOf(clocks, s), *job);
}

}  // namespace

JobSummary AnalyzeJob(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks) {
  JobSummary job;
  job.clocks = clocks;
  size_t n = ranks.size();
  job.world = n;
  job.totals.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const RankEvents& r = ranks[i];
    job.ranked = job.ranked && r.ranked;
    job.labels.push_back(!r.label.empty() ? r.label
                         : r.ranked       ? "rank " + std::to_string(r.rank)
                                          : ProcessLabel("", -1, r.path));
    job.totals[i].rank = r.rank;
  }
  if (n == 0) return job;
  Waits waits = ChargeWaits(ranks, clocks, &job);
  SetUpRows(ranks, &job);
  std::vector<double> step_times;
  for (size_t i = 0; i < n; ++i) {
    const RankEvents& r = ranks[i];
    RankTimeline t = Timeline(r, OffsetOf(clocks, i));
    job.totals[i].comm_overlap_percent = CommOverlapPercent(t);
    for (size_t row = 0; row < r.steps.size(); ++row) {
      job.cells[row][i] = StepCell(r, t, r.steps[row], waits.wait[i], waits.charged[i]);
      step_times.push_back(static_cast<double>(job.cells[row][i].step_ns));
    }
  }
  job.median_step_ns = Median(step_times);
  SumTotals(&job);
  NameStraggler(ranks, clocks, &job);
  return job;
}

}  // namespace prof::tool
