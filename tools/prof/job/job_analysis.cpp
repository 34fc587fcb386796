#include "tools/prof/job/job_analysis.h"

#include <algorithm>
#include <climits>
#include <map>

#include "exporters/common/format.h"
#include "tools/prof/job/job_keys.h"
#include "tools/prof/job/job_stats.h"

namespace prof::tool {
namespace {

// The row of `r`'s step that holds instant `t` of its clock; npos if none.
size_t StepRowAt(const RankFacts& r, int64_t t) {
  auto it = std::upper_bound(r.steps.begin(), r.steps.end(), t,
                             [](int64_t x, const RankStepFacts& s) { return x < s.step.start_ns; });
  if (it == r.steps.begin()) return std::string::npos;
  --it;
  return t < it->step.end_ns ? static_cast<size_t>(it - r.steps.begin()) : std::string::npos;
}

// Waiting per matched collective, and who is charged for it: each rank's
// waiting goes into the cell of the step its collective started in, the
// others' waiting into the last rank's; counts the collectives and each
// rank's arrivals last into `job`. Two passes over the inputs, with arrays
// by key (the job's key table).
void ChargeWaits(size_t n, const FactsSource& facts, const ClockAlignment& clocks, JobSummary* job) {
  std::vector<uint32_t> count, last;
  std::vector<int64_t> last_start;
  for (size_t i = 0; i < n; ++i) {
    for (const JobCollective& c : facts(i).collectives) {
      int64_t s = c.start_ns - OffsetOf(clocks, i);
      ++Grown(count, c.key, 0u);
      Grown(last, c.key, 0u);
      if (s > Grown(last_start, c.key, INT64_MIN)) last_start[c.key] = s, last[c.key] = static_cast<uint32_t>(i);
    }
  }
  size_t keys = count.size();
  std::vector<int64_t> others(keys, 0), most(keys, 0);
  std::vector<size_t> last_row(keys, std::string::npos);  // the step the last rank's collective started in
  for (size_t i = 0; i < n; ++i) {
    const RankFacts& f = facts(i);
    for (const JobCollective& c : f.collectives) {
      if (count[c.key] < 2) continue;
      int64_t wt = std::clamp(last_start[c.key] - (c.start_ns - OffsetOf(clocks, i)), int64_t{0}, c.end_ns - c.start_ns);
      others[c.key] += wt;
      most[c.key] = std::max(most[c.key], wt);
      size_t row = StepRowAt(f, c.start_ns);
      if (row != std::string::npos) job->cells[row][i].wait_ns += wt;
      if (last[c.key] == i) last_row[c.key] = row;
    }
  }
  constexpr int64_t kNoticeableWaitNs = 1000;  // a wait under 1 µs is nobody's fault
  for (size_t key = 0; key < keys; ++key) {
    if (count[key] < 2) continue;
    ++job->collectives;
    if (most[key] < kNoticeableWaitNs) continue;
    ++job->collectives_with_wait;
    ++job->totals[last[key]].arrived_last;
    job->totals[last[key]].cost_ns += others[key];
    if (last_row[key] != std::string::npos) job->cells[last_row[key]][last[key]].cost_ns += others[key];
  }
}

// A rank's cell in one of its steps, from its facts (ChargeWaits adds the
// waiting).
JobCell StepCell(const RankStepFacts& f) {
  JobCell cell;
  cell.present = true;
  cell.step_ns = f.step.end_ns - f.step.start_ns;
  cell.compute_ns = f.compute_ns;
  cell.comm_ns = f.comm_ns;
  cell.gap_ns = f.gap_ns;
  cell.idle_ns = f.idle_ns;
  cell.syncs = f.syncs;
  return cell;
}

// One pass: each input's label, overlap and cells. Rows: by step number
// when every rank has the same numbers, else the k-th step of each rank.
void SetUpCells(size_t n, const FactsSource& facts, JobSummary* job) {
  std::vector<uint64_t> numbers;  // the first input's
  for (size_t i = 0; i < n; ++i) {
    const RankFacts& r = facts(i);
    job->ranked = job->ranked && r.ranked;
    job->labels.push_back(!r.label.empty() ? r.label
                          : r.ranked       ? "rank " + std::to_string(r.rank)
                                           : ProcessLabel("", -1, r.path));
    job->totals[i].rank = r.rank;
    job->totals[i].comm_overlap_percent = r.comm_overlap_percent;
    if (i == 0) {
      for (const RankStepFacts& s : r.steps) numbers.push_back(s.step.number);
    } else {
      bool same = r.steps.size() == numbers.size();
      for (size_t k = 0; same && k < numbers.size(); ++k) same = r.steps[k].step.number == numbers[k];
      job->steps_by_number = job->steps_by_number && same;
    }
    if (job->cells.size() < r.steps.size()) job->cells.resize(r.steps.size(), std::vector<JobCell>(n));
    for (size_t row = 0; row < r.steps.size(); ++row) job->cells[row][i] = StepCell(r.steps[row]);
  }
  for (size_t row = 0; row < job->cells.size(); ++row) {
    job->step_numbers.push_back(job->steps_by_number ? numbers[row] : row);
  }
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
      t.mean_idle_ns += static_cast<double>(c.idle_ns);
    }
    if (steps) {
      double d = static_cast<double>(steps);
      t.mean_step_ns /= d, t.mean_compute_ns /= d, t.mean_comm_ns /= d;
      t.mean_wait_ns /= d, t.mean_gap_ns /= d, t.mean_syncs /= d, t.mean_idle_ns /= d;
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

// " before <call> at <frame>": the (call, frame) pair of `sr`'s steps that
// `pick` gives most often; "" when no step has one.
template <typename Pick>
std::string MostOftenBefore(const RankFacts& sr, Pick pick) {
  std::map<std::pair<uint32_t, uint32_t>, size_t> where;
  for (const RankStepFacts& f : sr.steps) {
    std::pair<uint32_t, uint32_t> k = pick(f);
    if (k.first) ++where[k];
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
  return at;
}

// The straggler's (input s's) own window against the other ranks' medians.
std::vector<std::string> StragglerEvidence(const RankFacts& sr, size_t s, const JobSummary& job) {
  std::vector<std::string> evidence;
  const JobRankTotals& top = job.totals[s];
  std::vector<double> gaps, idles, computes, syncs;
  for (size_t i = 0; i < job.world; ++i) {
    if (i == s) continue;
    gaps.push_back(job.totals[i].mean_gap_ns);
    idles.push_back(job.totals[i].mean_idle_ns);
    computes.push_back(job.totals[i].mean_compute_ns);
    syncs.push_back(job.totals[i].mean_syncs);
  }
  double gap_others = Median(gaps), idle_others = Median(idles);
  double compute_others = Median(computes), syncs_others = Median(syncs);
  double cost = top.cost_per_rank_step_ns;
  if (top.mean_gap_ns - gap_others >= 0.5 * cost) {
    // Where: the call that most often follows its longest gap, and the
    // Python line it was made from.
    evidence.push_back(Printf("its host is idle longer: longest gap between its CUDA calls %s ms per step (other "
                              "ranks %s ms)",
                              Ms(top.mean_gap_ns).c_str(), Ms(gap_others).c_str()) +
                       MostOftenBefore(sr, [](const RankStepFacts& f) {
                         return std::make_pair(f.gap_call, f.gap_site);
                       }));
  } else if (top.mean_idle_ns - idle_others >= 0.5 * cost) {
    // Its threads' calls interleave (no one thread's gap stands out), but
    // its GPU waited for work: the call that most often ended the wait.
    evidence.push_back(Printf("its host is idle longer: its GPU has no work for %s ms per step (other ranks %s ms)",
                              Ms(top.mean_idle_ns).c_str(), Ms(idle_others).c_str()) +
                       MostOftenBefore(sr, [](const RankStepFacts& f) {
                         return std::make_pair(f.idle_call, f.idle_site);
                       }));
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
    evidence.push_back("its own window shows no longer host gap, GPU idle, slower kernels or extra synchronization "
                       "than the other ranks'");
  }
  return evidence;
}

// The straggler line, and the straggler's evidence when one stands out.
void NameStraggler(size_t n, const FactsSource& facts, JobSummary* job) {
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
  job->evidence = StragglerEvidence(facts(s), s, *job);
}

}  // namespace

JobSummary AnalyzeJob(size_t n, const FactsSource& facts, const ClockAlignment& clocks) {
  JobSummary job;
  job.clocks = clocks;
  job.world = n;
  job.totals.resize(n);
  if (n == 0) return job;
  SetUpCells(n, facts, &job);
  ChargeWaits(n, facts, clocks, &job);
  std::vector<double> step_times;
  for (const std::vector<JobCell>& row : job.cells) {
    for (const JobCell& c : row) {
      if (c.present) step_times.push_back(static_cast<double>(c.step_ns));
    }
  }
  job.median_step_ns = Median(step_times);
  SumTotals(&job);
  NameStraggler(n, facts, &job);
  return job;
}

JobSummary AnalyzeJob(const std::vector<RankFacts>& ranks, const ClockAlignment& clocks) {
  return AnalyzeJob(ranks.size(), FactsOf(ranks), clocks);
}

JobSummary AnalyzeJob(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks) {
  return AnalyzeJob(SharedFacts(ranks), clocks);
}

}  // namespace prof::tool
