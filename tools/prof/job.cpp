#include "tools/prof/job.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "exporters/common/format.h"
#include "exporters/summary/text_table.h"
#include "tools/prof/event_fields.h"

namespace prof::tool {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// HTA's CommunicateKernelGroupingPattern: ^nccl, or ncclKernel anywhere
// (ncclDevKernel_* of NCCL >= 2.19 starts with "nccl").
bool IsCommKernelName(std::string_view name) {
  return StartsWith(name, "nccl") || name.find("ncclKernel") != std::string_view::npos;
}

// Point-to-point operations: the two sides carry different names, so they
// are not matched across ranks.
bool IsPointToPoint(std::string_view collective) {
  std::string l = Lower(collective);
  return l.find("send") != std::string::npos || l.find("recv") != std::string::npos;
}

bool ToNs(const JsonValue& v, int64_t* ns) {
  if (!v.is_number()) return false;
  double d = v.number() * 1000.0;
  if (!(d > -9.0e18 && d < 9.0e18)) return false;
  *ns = std::llround(d);
  return true;
}

// A member's value as text: a string's content, a number as written.
std::string Text(const JsonValue& v) {
  if (v.is_string() || v.is_number()) return std::string(v.str());
  return std::string();
}

bool IsSyncCall(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int64_t MedianInt(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

// [start, end) intervals merged into disjoint ones, sorted.
std::vector<std::pair<int64_t, int64_t>> Merged(std::vector<std::pair<int64_t, int64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [s, e] : iv) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.push_back({s, e});
    }
  }
  return out;
}

// Length of the intersection of two sets of disjoint sorted intervals.
int64_t Intersection(const std::vector<std::pair<int64_t, int64_t>>& a,
                     const std::vector<std::pair<int64_t, int64_t>>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return total;
}

// Length of disjoint sorted intervals within [lo, hi).
int64_t LengthWithin(const std::vector<std::pair<int64_t, int64_t>>& merged, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const std::pair<int64_t, int64_t>& iv, int64_t x) { return iv.second <= x; });
  int64_t total = 0;
  for (; it != merged.end() && it->first < hi; ++it) total += std::min(it->second, hi) - std::max(it->first, lo);
  return total;
}

std::string Ms(double ns, int decimals = 3) { return Grouped(ns / 1e6, decimals); }

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

void ReadJobEvent(const JsonValue& e, RankEvents* r) {
  // Events the merge leaves out (a pid, tid, ts or dur of the wrong type) are not read either.
  if (!e.is_object() || e.StringOr("ph", "") != "X" || WrongTypedField(e) != nullptr) return;
  int64_t start = 0, dur = 0;
  if (!ToNs(e.Get("ts"), &start) || !ToNs(e.Get("dur"), &dur) || dur < 0) return;
  std::string_view cat = e.StringOr("cat", "");
  std::string_view name = e.StringOr("name", "");
  int64_t tid = 0;
  e.Get("tid").ToInt64(&tid);
  if (cat == "kernel") {
    JobKernel k;
    JsonValue args = e.Get("args");
    // A kernel drawn inside an overlapping one on its stream's track (the
    // two conversions of one device instant to host time may differ by a
    // few ns) is clipped there; its true duration is kept in the args. The
    // collective's end is what aligns the clocks: the clipped one is wrong
    // by the whole kernel.
    int64_t unclipped = 0;
    if (args.is_object() && ToNs(args.Get("unclipped dur"), &unclipped) && unclipped > dur) dur = unclipped;
    k.start_ns = start;
    k.end_ns = start + dur;
    JsonValue coll = args.is_object() ? args.Get("Collective name") : JsonValue();
    if (coll.is_string()) {
      k.comm = true;
      k.collective = std::string(coll.str());
      std::string seq = Text(args.Get("Seq"));
      if (!seq.empty() && !IsPointToPoint(k.collective)) {
        k.key = Text(args.Get("Process Group Name")) + "/" + k.collective + "/" + seq;
      }
    } else {
      k.comm = IsCommKernelName(name);
      if (k.comm) k.collective = std::string(name);
    }
    r->kernels.push_back(std::move(k));
  } else if (cat == "user_annotation" && StartsWith(name, "ProfilerStep#")) {
    JobStep s;
    std::string digits(name.substr(13));
    char* end = nullptr;
    s.number = std::strtoull(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0') return;
    s.start_ns = start;
    s.end_ns = start + dur;
    r->steps.push_back(s);
  } else if (cat == "cuda_runtime" || cat == "cuda_driver" ||
             (StartsWith(name, "nccl") && !StartsWith(cat, "gpu_") && cat != "ac2g")) {
    r->calls.push_back({start, start + dur, tid, r->Intern(name)});
  } else if (cat == "python_function") {
    r->python.push_back({start, start + dur, tid, r->Intern(name)});
  }
}

void ShiftRankEvents(RankEvents* r, int64_t ns) {
  for (JobStep& s : r->steps) s.start_ns += ns, s.end_ns += ns;
  for (JobKernel& k : r->kernels) k.start_ns += ns, k.end_ns += ns;
  for (JobSlice& c : r->calls) c.start_ns += ns, c.end_ns += ns;
  for (JobSlice& p : r->python) p.start_ns += ns, p.end_ns += ns;
  std::sort(r->steps.begin(), r->steps.end(), [](const JobStep& a, const JobStep& b) { return a.start_ns < b.start_ns; });
}

namespace {

// key -> kernel index, for keys that occur once in the rank's trace.
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

}  // namespace

ClockAlignment AlignClocks(const std::vector<RankEvents>& ranks) {
  ClockAlignment c;
  size_t n = ranks.size();
  c.offset_ns.assign(n, 0);
  c.aligned.assign(n, false);
  c.matched.assign(n, 0);
  if (n == 0) return c;
  std::vector<std::unordered_map<std::string, size_t>> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = MatchableKernels(ranks[i]);
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
  std::unordered_map<std::string, int64_t> anchor;  // key -> corrected end
  auto add_anchors = [&](size_t j) {
    for (const auto& [key, k] : keys[j]) anchor.emplace(key, ranks[j].kernels[k].end_ns - c.offset_ns[j]);
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
        if (it != anchor.end()) diffs.push_back(ranks[i].kernels[k].end_ns - it->second);
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
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> spread;  // key -> (min, max)
  std::unordered_map<std::string, int> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!c.aligned[i]) continue;
    for (const auto& [key, k] : keys[i]) {
      int64_t end = ranks[i].kernels[k].end_ns - c.offset_ns[i];
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

namespace {

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

}  // namespace

JobSummary AnalyzeJob(const std::vector<RankEvents>& ranks, const ClockAlignment& clocks) {
  JobSummary job;
  job.clocks = clocks;
  size_t n = ranks.size();
  job.world = n;
  job.totals.resize(n);
  for (size_t i = 0; i < n; ++i) {
    job.labels.push_back("rank " + std::to_string(ranks[i].rank));
    job.totals[i].rank = ranks[i].rank;
  }
  if (n == 0) return job;
  auto off = [&](size_t i) { return i < clocks.offset_ns.size() ? clocks.offset_ns[i] : 0; };

  // Waiting per matched collective, and who is charged for it.
  std::vector<std::unordered_map<std::string, size_t>> keys(n);
  std::unordered_map<std::string, std::vector<size_t>> holders;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = MatchableKernels(ranks[i]);
    for (const auto& [key, k] : keys[i]) holders[key].push_back(i);
  }
  std::vector<std::vector<int64_t>> wait(n);     // [input][kernel]: its own waiting
  std::vector<std::vector<int64_t>> charged(n);  // [input][kernel]: the others' waiting, when it arrived last
  for (size_t i = 0; i < n; ++i) {
    wait[i].assign(ranks[i].kernels.size(), 0);
    charged[i].assign(ranks[i].kernels.size(), 0);
  }
  constexpr int64_t kNoticeableWaitNs = 1000;  // a wait under 1 µs is nobody's fault
  for (const auto& [key, who] : holders) {
    if (who.size() < 2) continue;
    ++job.collectives;
    size_t last = who[0];
    int64_t last_start = INT64_MIN;
    for (size_t i : who) {
      int64_t s = ranks[i].kernels[keys[i].at(key)].start_ns - off(i);
      if (s > last_start) last = i, last_start = s;
    }
    int64_t others = 0, most = 0;
    for (size_t i : who) {
      const JobKernel& k = ranks[i].kernels[keys[i].at(key)];
      int64_t w = std::clamp(last_start - (k.start_ns - off(i)), int64_t{0}, k.end_ns - k.start_ns);
      wait[i][keys[i].at(key)] = w;
      others += w;
      most = std::max(most, w);
    }
    if (most >= kNoticeableWaitNs) {
      ++job.collectives_with_wait;
      ++job.totals[last].arrived_last;
      job.totals[last].cost_ns += others;
      charged[last][keys[last].at(key)] = others;
    }
  }

  // Rows: by step number when every rank has the same numbers, else the
  // k-th step of each rank.
  std::vector<uint64_t> numbers;
  for (const JobStep& s : ranks[0].steps) numbers.push_back(s.number);
  for (size_t i = 1; i < n; ++i) {
    std::vector<uint64_t> other;
    for (const JobStep& s : ranks[i].steps) other.push_back(s.number);
    if (other != numbers) job.steps_by_number = false;
  }
  size_t rows = 0;
  for (const RankEvents& r : ranks) rows = std::max(rows, r.steps.size());
  job.cells.assign(rows, std::vector<JobCell>(n));
  for (size_t row = 0; row < rows; ++row) {
    job.step_numbers.push_back(job.steps_by_number ? numbers[row] : row);
  }
  // Per rank, everything sorted by start once, so each step finds its own
  // with binary searches: O((steps + events) log events).
  std::vector<double> step_times;
  for (size_t i = 0; i < n; ++i) {
    const RankEvents& r = ranks[i];
    int64_t o = off(i);
    std::vector<std::pair<int64_t, int64_t>> compute, comm;
    for (const JobKernel& k : r.kernels) (k.comm ? comm : compute).push_back({k.start_ns - o, k.end_ns - o});
    std::vector<std::pair<int64_t, int64_t>> compute_u = Merged(std::move(compute)), comm_u = Merged(std::move(comm));
    int64_t comm_total = 0;
    for (const auto& [a, b] : comm_u) comm_total += b - a;
    if (comm_total > 0) {
      job.totals[i].comm_overlap_percent =
          100.0 * static_cast<double>(Intersection(comm_u, compute_u)) / static_cast<double>(comm_total);
    }
    // Kernels by start, with their waits.
    std::vector<std::pair<int64_t, size_t>> by_start;
    for (size_t k = 0; k < r.kernels.size(); ++k) by_start.push_back({r.kernels[k].start_ns - o, k});
    std::sort(by_start.begin(), by_start.end());
    int64_t main_tid = MainThread(r);
    std::vector<const JobSlice*> calls, main_calls;
    for (const JobSlice& c : r.calls) {
      calls.push_back(&c);
      if (c.tid == main_tid) main_calls.push_back(&c);
    }
    auto by_call_start = [](const JobSlice* a, const JobSlice* b) { return a->start_ns < b->start_ns; };
    std::sort(calls.begin(), calls.end(), by_call_start);
    std::sort(main_calls.begin(), main_calls.end(), by_call_start);
    auto first_call_at = [o](const std::vector<const JobSlice*>& v, int64_t t) {
      return std::lower_bound(v.begin(), v.end(), t, [o](const JobSlice* c, int64_t x) { return c->start_ns - o < x; });
    };
    for (size_t row = 0; row < r.steps.size(); ++row) {
      const JobStep& st = r.steps[row];
      int64_t lo = st.start_ns - o, hi = st.end_ns - o;
      JobCell& cell = job.cells[row][i];
      cell.present = true;
      cell.step_ns = hi - lo;
      cell.compute_ns = LengthWithin(compute_u, lo, hi);
      cell.comm_ns = LengthWithin(comm_u, lo, hi);
      for (auto it = std::lower_bound(by_start.begin(), by_start.end(), std::make_pair(lo, size_t{0}));
           it != by_start.end() && it->first < hi; ++it) {
        cell.wait_ns += wait[i][it->second];
        cell.cost_ns += charged[i][it->second];
      }
      int64_t reach = INT64_MIN;
      for (auto it = first_call_at(main_calls, lo); it != main_calls.end() && (*it)->start_ns - o < hi; ++it) {
        int64_t s = (*it)->start_ns - o, e = (*it)->end_ns - o;
        if (reach != INT64_MIN && s - reach > cell.gap_ns) {
          cell.gap_ns = s - reach;
          cell.gap_call = (*it)->name;
          cell.gap_call_ns = s;
        }
        reach = std::max(reach, e);
      }
      for (auto it = first_call_at(calls, lo); it != calls.end() && (*it)->start_ns - o < hi; ++it) {
        if (IsSyncCall(r.names[(*it)->name])) ++cell.syncs;
      }
      step_times.push_back(static_cast<double>(cell.step_ns));
    }
  }
  job.median_step_ns = Median(step_times);

  for (size_t i = 0; i < n; ++i) {
    JobRankTotals& t = job.totals[i];
    size_t steps = 0;
    for (size_t row = 0; row < rows; ++row) {
      const JobCell& c = job.cells[row][i];
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
      if (job.cells[row][i].present) costs.push_back(static_cast<double>(job.cells[row][i].cost_ns) / others);
    }
    t.median_cost_per_rank_step_ns = Median(costs);
  }

  // The straggler.
  if (n < 2 || job.collectives == 0) {
    job.straggler_line = n < 2 ? "straggler: none (one rank)"
                               : "straggler: none can be named: no collective was found on two ranks or more";
    return job;
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return job.totals[a].cost_ns != job.totals[b].cost_ns ? job.totals[a].cost_ns > job.totals[b].cost_ns
                                                          : job.totals[a].rank < job.totals[b].rank;
  });
  const JobRankTotals& top = job.totals[order[0]];
  const JobRankTotals& next = job.totals[order[1]];
  double share = job.collectives_with_wait ? static_cast<double>(top.arrived_last) / job.collectives_with_wait : 0;
  double cost_share = job.median_step_ns > 0 ? top.cost_per_rank_step_ns / job.median_step_ns : 0;
  // In the median step, not on average: a rank that was late once by a lot
  // (a page fault, the scheduler) is not the straggler.
  double typical_share = job.median_step_ns > 0 ? top.median_cost_per_rank_step_ns / job.median_step_ns : 0;
  bool stands_out = top.cost_ns > 0 && share >= 0.75 && typical_share >= 0.05 && top.cost_ns >= 2 * next.cost_ns;
  std::string last_text = Printf("arrived last at %llu of the %llu collectives where a rank waited",
                                 static_cast<unsigned long long>(top.arrived_last),
                                 static_cast<unsigned long long>(job.collectives_with_wait));
  std::string cost_text = Printf("%s ms per step (%.1f %% of the median step of %s ms)",
                                 Ms(top.cost_per_rank_step_ns).c_str(), cost_share * 100.0,
                                 Ms(job.median_step_ns).c_str());
  if (!stands_out) {
    if (top.cost_ns == 0) {
      job.straggler_line = "straggler: none: no rank made another wait in a collective";
    } else {
      job.straggler_line = "straggler: none: no rank stands out (the most waited-for, rank " +
                           std::to_string(top.rank) + ", " + last_text + " and cost every other rank " + cost_text +
                           ")";
    }
    return job;
  }
  job.straggler = static_cast<int>(order[0]);
  size_t s = order[0];
  job.straggler_line = "straggler: rank " + std::to_string(top.rank) + ": " + last_text + " (" +
                       Printf("%.0f %%", share * 100.0) + "); its lateness costs every other rank " + cost_text;
  // Its own window against the other ranks' medians.
  std::vector<double> gaps, computes, syncs;
  for (size_t i = 0; i < n; ++i) {
    if (i == s) continue;
    gaps.push_back(job.totals[i].mean_gap_ns);
    computes.push_back(job.totals[i].mean_compute_ns);
    syncs.push_back(job.totals[i].mean_syncs);
  }
  double gap_others = Median(gaps), compute_others = Median(computes), syncs_others = Median(syncs);
  double cost = top.cost_per_rank_step_ns;
  const RankEvents& sr = ranks[s];
  if (top.mean_gap_ns - gap_others >= 0.5 * cost) {
    // Where: the call that most often follows its longest gap, and the
    // Python line it was made from.
    std::map<std::pair<uint32_t, uint32_t>, size_t> where;
    int64_t main_tid = MainThread(sr);
    for (size_t row = 0; row < rows; ++row) {
      const JobCell& c = job.cells[row][s];
      if (c.present && c.gap_call) ++where[{c.gap_call, SiteAt(sr, main_tid, c.gap_call_ns, off(s))}];
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
    job.evidence.push_back(Printf("its host is idle longer: longest gap between its CUDA calls %s ms per step (other "
                                  "ranks %s ms)",
                                  Ms(top.mean_gap_ns).c_str(), Ms(gap_others).c_str()) +
                           at);
  }
  if (top.mean_compute_ns > 1.1 * compute_others && top.mean_compute_ns - compute_others >= 0.25 * cost) {
    job.evidence.push_back(Printf("its kernels run longer: compute %s ms per step (other ranks %s ms)",
                                  Ms(top.mean_compute_ns).c_str(), Ms(compute_others).c_str()));
  }
  if (top.mean_syncs >= syncs_others + 0.5) {
    job.evidence.push_back(Printf("it synchronizes more: %.1f synchronizing calls per step (other ranks %.1f)",
                                  top.mean_syncs, syncs_others));
  }
  if (job.evidence.empty()) {
    job.evidence.push_back("its own window shows no longer host gap, slower kernels or extra synchronization than the "
                           "other ranks'");
  }
  return job;
}

std::string RenderJobSummary(const JobSummary& job) {
  std::string out;
  unsigned long long rows = job.cells.size();
  out += Printf("Job: %zu ranks, %llu steps, %llu collectives matched across ranks\n", job.world, rows,
                static_cast<unsigned long long>(job.collectives));
  const ClockAlignment& c = job.clocks;
  if (c.collectives == 0) {
    out += "Clocks: not aligned (no collective seen on two ranks); times as each rank's clock read them\n";
  } else {
    out += Printf("Clocks: aligned to %s on the end times of %zu collectives; residual %s median, %s worst\n",
                  job.labels[c.reference].c_str(), c.collectives, FormatDuration(double(c.residual_median_ns)).c_str(),
                  FormatDuration(double(c.residual_max_ns)).c_str());
    std::string offsets;
    for (size_t i = 0; i < job.world; ++i) {
      if (i == c.reference) continue;
      offsets += offsets.empty() ? "  offsets: " : ", ";
      offsets += job.labels[i] + (c.aligned[i] ? Printf(" %+.3f ms", double(c.offset_ns[i]) / 1e6) : " not aligned");
    }
    if (!offsets.empty()) out += offsets + "\n";
  }
  out += "\nPer step and rank (ms; waiting: in collectives, for the last rank to arrive; host gap: longest between "
         "the rank's CUDA calls):\n";
  TextTable t({job.steps_by_number ? "Step" : "Step (k-th)", "Rank", "Step time", "Compute", "Communication",
               "Waiting", "Host gap"});
  constexpr size_t kMaxRowsShown = 20;  // steps; the per-rank table covers them all
  for (size_t row = 0; row < job.cells.size() && row < kMaxRowsShown; ++row) {
    for (size_t i = 0; i < job.world; ++i) {
      const JobCell& x = job.cells[row][i];
      if (!x.present) continue;
      t.AddRow({std::to_string(job.step_numbers[row]), std::to_string(job.totals[i].rank), Ms(double(x.step_ns)),
                Ms(double(x.compute_ns)), Ms(double(x.comm_ns)), Ms(double(x.wait_ns)), Ms(double(x.gap_ns))});
    }
  }
  out += t.Render();
  if (job.cells.size() > kMaxRowsShown) {
    out += Printf("  (%zu more steps not shown; the means below cover them all)\n", job.cells.size() - kMaxRowsShown);
  }
  out += "\nPer rank (mean per step, ms):\n";
  TextTable r({"Rank", "Step time", "Compute", "Communication", "Waiting", "Host gap", "Arrived last",
               "Others waited for it", "Comm overlapped (%)"});
  for (const JobRankTotals& x : job.totals) {
    r.AddRow({std::to_string(x.rank), Ms(x.mean_step_ns), Ms(x.mean_compute_ns), Ms(x.mean_comm_ns),
              Ms(x.mean_wait_ns), Ms(x.mean_gap_ns), Grouped(static_cast<unsigned long long>(x.arrived_last)),
              Ms(x.cost_per_rank_step_ns),
              x.comm_overlap_percent < 0 ? "-" : Grouped(x.comm_overlap_percent, 1)});
  }
  out += r.Render();
  out += "\n" + job.straggler_line + "\n";
  for (const std::string& e : job.evidence) out += "  " + e + "\n";
  return out;
}

}  // namespace prof::tool
