// RenderSummary: the .summary.txt text. Findings come first (what to fix),
// then nsys-stats tables, memory, steps, launch latency and idle gaps.
#include <algorithm>
#include <string>
#include <vector>

#include "exporters/common/format.h"
#include "exporters/summary/loss_kinds.h"
#include "exporters/summary/stats.h"
#include "exporters/summary/summary.h"
#include "exporters/summary/text_table.h"

namespace prof {
namespace {

const char* MemKindName(uint8_t kind) {
  static constexpr const char* kNames[] = {"device", "host pinned", "managed", "async pool", "vmm"};
  return kind < std::size(kNames) ? kNames[kind] : "other";
}

std::string U(uint64_t v) { return Grouped(static_cast<unsigned long long>(v)); }
std::string D(double v) { return Grouped(v, 1); }
std::string Mb(double bytes) { return Grouped(bytes / 1e6, 3); }  // nsys: MB = 10^6 bytes

std::string TimeTable(const std::vector<TimeRow>& rows, const char* count_header, const char* name_header) {
  TextTable t({"Time (%)", "Total Time (ns)", count_header, "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", name_header});
  for (const TimeRow& r : rows) {
    t.AddRow({D(r.percent), U(r.total_ns), U(r.count), D(r.avg_ns), D(r.median_ns), U(r.min_ns), U(r.max_ns),
              D(r.stddev_ns), r.name});
  }
  return t.empty() ? " (none)\n" : t.Render();
}

std::string SizeTable(const std::vector<SizeRow>& rows) {
  TextTable t({"Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)", "Operation"});
  for (const SizeRow& r : rows) {
    t.AddRow({Mb(double(r.total_bytes)), U(r.count), Mb(r.avg_bytes), Mb(r.median_bytes), Mb(double(r.min_bytes)),
              Mb(double(r.max_bytes)), Mb(r.stddev_bytes), r.name});
  }
  return t.empty() ? " (none)\n" : t.Render();
}

void Header(const Summary& s, std::string* out) {
  const WindowMeta& m = s.meta;
  *out += "libprof summary: " + m.name;
  if (m.rank_known) *out += Printf(" rank %d of %d", m.rank, m.world_size);
  *out += Printf(", steps %llu-%llu", static_cast<unsigned long long>(m.first_step),
                 static_cast<unsigned long long>(m.last_step));
  if (m.partial) *out += " [PARTIAL: " + m.partial_reason + "]";
  *out += "\n";
  if (!m.step_description.empty()) *out += "step = " + m.step_description + "\n";
  if (!m.range_description.empty()) *out += "range = " + m.range_description + "\n";
  *out += "host " + m.hostname + Printf(", pid %d; libprof %s; CUDA runtime %d, driver %d; CUPTI: %s\n", m.pid,
                                        m.libprof_version.c_str(), m.cuda_runtime_version, m.cuda_driver_version,
                                        m.cupti_mode.empty() ? "unknown" : m.cupti_mode.c_str());
  uint64_t span = s.span_end_ns > s.span_start_ns ? s.span_end_ns - s.span_start_ns : 0;
  if (m.has_gpu_timings) {
    *out += Printf("window %s, GPU busy %.1f%% (%s)\n", FormatDuration(double(span)).c_str(), s.gpu_busy_percent,
                   FormatDuration(double(s.gpu_busy_ns)).c_str());
    if (s.gpu_comm_ns + s.gpu_overlap_ns > 0) {
      auto pct = [span](uint64_t ns) { return span ? 100.0 * double(ns) / double(span) : 0.0; };
      *out += Printf("GPU time: compute %.1f%%, communication %.1f%%, overlapped %.1f%%, idle %.1f%% (compute %s, "
                     "communication %s, overlapped %s, idle %s)\n",
                     pct(s.gpu_compute_ns), pct(s.gpu_comm_ns), pct(s.gpu_overlap_ns), pct(s.gpu_idle_ns),
                     FormatDuration(double(s.gpu_compute_ns)).c_str(), FormatDuration(double(s.gpu_comm_ns)).c_str(),
                     FormatDuration(double(s.gpu_overlap_ns)).c_str(), FormatDuration(double(s.gpu_idle_ns)).c_str());
    }
  } else {
    *out += Printf("window %s, GPU busy unknown (no GPU timings)\n", FormatDuration(double(span)).c_str());
  }
}

void Findings(const Summary& s, std::string* out) {
  *out += "\n== Findings ==\n";
  if (s.findings.empty()) *out += " none: no threshold in README.md \"Reading the summary\" was crossed\n";
  for (const Finding& f : s.findings) {
    *out += " [" + f.id + "] " + f.title + "\n";
    *out += "     evidence: " + f.evidence + "\n";
    *out += "     try: " + f.advice + "\n";
  }
}

void Collectives(const Summary& s, std::string* out) {
  if (s.collectives.empty()) return;
  *out += "\n== NCCL collectives (size S and bus bandwidth as nccl-tests: algbw = S / time, busbw = algbw x factor) ==\n";
  TextTable t({"Total Time (ns)", "Count", "Avg (ns)", "Size S (B)", "Ranks", "AlgBW (GB/s)", "BusBW (GB/s)",
               "Operation"});
  for (const CollectiveRow& r : s.collectives) {
    const bool timed = r.kernels > 0;
    t.AddRow({timed ? U(r.total_ns) : "n/a", U(r.count), timed ? D(r.avg_ns) : "n/a", U(r.bytes),
              r.ranks ? std::to_string(r.ranks) : "?", timed ? Grouped(r.algbw_gbps, 3) : "n/a",
              timed ? Grouped(r.busbw_gbps, 3) : "n/a", r.name});
  }
  *out += t.Render();
  *out += " time = the collective's kernel, including its wait for the last rank to arrive\n";
}

void Memory(const Summary& s, std::string* out) {
  *out += "\n== Memory (allocator calls) ==\n";
  TextTable t({"Device", "Kind", "Allocs", "Frees", "Allocated (B)", "Freed (B)", "Peak live (B)", "Peak live"});
  for (const MemoryRow& r : s.memory) {
    t.AddRow({r.device < 0 ? "host" : std::to_string(r.device), MemKindName(r.mem_kind), U(r.allocs), U(r.frees),
              U(r.bytes_allocated), U(r.bytes_freed), U(r.peak_bytes), FormatBytes(double(r.peak_bytes))});
  }
  *out += t.empty() ? " (no allocations or frees in the window)\n" : t.Render();
  if (s.live.empty()) return;
  uint64_t total = 0;
  for (const LiveAllocation& a : s.live) total += a.bytes;
  *out += Printf("\n Still allocated at window end: %zu allocations, %s (largest first)\n", s.live.size(),
                 FormatBytes(double(total)).c_str());
  // The call-site column only where a site is known (Python stacks on).
  bool sites = false;
  for (const std::string& site : s.live_sites) sites = sites || !site.empty();
  std::vector<std::string> header = {"Bytes", "Device", "Kind", "Address", "API"};
  if (sites) header.push_back("Call site");
  TextTable live(header);
  for (size_t i = 0; i < s.live.size() && i < kLiveRowsShown; ++i) {
    const LiveAllocation& a = s.live[i];
    std::vector<std::string> row = {U(a.bytes), a.device < 0 ? "host" : std::to_string(a.device),
                                    MemKindName(a.mem_kind), Printf("0x%llx", static_cast<unsigned long long>(a.ptr)),
                                    std::string(ApiName(static_cast<ApiId>(a.api)))};
    if (sites) row.push_back(i < s.live_sites.size() && !s.live_sites[i].empty() ? s.live_sites[i] : "-");
    live.AddRow(row);
  }
  *out += live.Render();
  if (s.live.size() > kLiveRowsShown) *out += Printf(" ... and %zu more\n", s.live.size() - kLiveRowsShown);
}

// Wall time per step over every step, and which steps the tables list
// (ListedStepRows): said once, above the per-step table, when some are left out.
void StepsListedNote(const Summary& s, const std::vector<size_t>& listed, std::string* out) {
  if (listed.size() == s.steps.size()) return;
  std::vector<uint64_t> walls;
  walls.reserve(s.steps.size());
  for (const StepRow& r : s.steps) walls.push_back(r.wall_ns);
  Distribution d = Describe(&walls);
  *out += Printf(" %zu steps; listed: the first %zu and the %zu slowest of the others (every step is in the trace as "
                 "ProfilerStep#N)\n",
                 s.steps.size(), kStepRowsFirst, listed.size() - kStepRowsFirst);
  *out += Printf(" wall per step: min %s, median %s, p90 %s, p99 %s, max %s ms\n", Ms(double(d.min)).c_str(),
                 Ms(d.median).c_str(), Ms(Percentile(walls, 90)).c_str(), Ms(Percentile(walls, 99)).c_str(),
                 Ms(double(d.max)).c_str());
}

void Steps(const Summary& s, const std::vector<size_t>& listed, std::string* out) {
  *out += "\n== Steps ==\n";
  StepsListedNote(s, listed, out);
  TextTable t({"Step", "Wall (ms)", "GPU busy (%)", "Kernels", "Launches", "Syncs", "Copies", "Allocs/frees"});
  for (size_t i : listed) {
    const StepRow& r = s.steps[i];
    t.AddRow({std::to_string(r.step), Ms(double(r.wall_ns)),
              s.meta.has_gpu_timings ? D(r.gpu_busy_percent) : "n/a", U(r.kernels), U(r.launches), U(r.syncs),
              U(r.copies), U(r.allocs)});
  }
  *out += t.empty() ? " (no steps)\n" : t.Render();
}

void BreakdownRow(const std::string& label, uint64_t wall_ns, const TimeBreakdown& b, TextTable* t) {
  t->AddRow({label, Ms(wall_ns), Ms(b.kernel_ns), Ms(b.comm_ns), Ms(b.memcpy_ns), Ms(b.memset_ns), Ms(b.runtime_ns),
             Ms(b.sync_ns), Ms(b.other_ns)});
}

// Where each step's wall time went (TimeBreakdown), and the whole window's.
void StepBreakdown(const Summary& s, const std::vector<size_t>& listed, std::string* out) {
  *out += "\n== Step time breakdown (ms; GPU busy by what ran, GPU idle by what the host was in) ==\n";
  if (!s.meta.has_gpu_timings) {
    *out += " (no GPU timings)\n";
    return;
  }
  TextTable t({"Step", "Wall", "Kernel", "Communication", "Memcpy", "Memset", "Idle: CUDA call", "Idle: sync",
               "Idle: other"});
  for (size_t i : listed) BreakdownRow(std::to_string(s.steps[i].step), s.steps[i].wall_ns, s.steps[i].breakdown, &t);
  uint64_t span = s.span_end_ns > s.span_start_ns ? s.span_end_ns - s.span_start_ns : 0;
  BreakdownRow("window", span, s.breakdown, &t);
  *out += t.Render();
}

// HTA's idle-time breakdown per stream (StreamIdleRow).
void StreamIdle(const Summary& s, std::string* out) {
  *out += "\n== GPU idle between work on a stream (HTA's host wait / kernel wait / other) ==\n";
  if (s.stream_idle.empty()) {
    *out += " (no GPU work recorded)\n";
    return;
  }
  TextTable t({"Device", "Stream", "Gaps", "Host wait (ms)", "Kernel wait (ms)", "Other (ms)"});
  StreamIdleRow all;
  for (const StreamIdleRow& r : s.stream_idle) {
    t.AddRow({std::to_string(r.device), std::to_string(r.stream), U(r.gaps), Ms(r.host_wait_ns), Ms(r.kernel_wait_ns),
              Ms(r.other_ns)});
    all.gaps += r.gaps, all.host_wait_ns += r.host_wait_ns, all.kernel_wait_ns += r.kernel_wait_ns;
    all.other_ns += r.other_ns;
  }
  if (s.stream_idle.size() > 1) {
    t.AddRow({"all", "all", U(all.gaps), Ms(all.host_wait_ns), Ms(all.kernel_wait_ns), Ms(all.other_ns)});
  }
  *out += t.Render();
}

void Latency(const Summary& s, std::string* out) {
  *out += "\n== Launch latency (launch call -> GPU start) ==\n";
  const LatencyStats& l = s.launch_latency;
  if (l.count == 0) {
    *out += " (no launches with GPU timings)\n";
    return;
  }
  *out += Printf(" %llu launches: median %s, p99 %s, max %s\n", static_cast<unsigned long long>(l.count),
                 FormatDuration(l.median_ns).c_str(), FormatDuration(l.p99_ns).c_str(),
                 FormatDuration(double(l.max_ns)).c_str());
  *out += Printf(" kernels: median duration %s, median idle between kernels on a stream %s\n",
                 FormatDuration(s.median_kernel_ns).c_str(), FormatDuration(s.median_kernel_gap_ns).c_str());
}

void IdleGaps(const Summary& s, std::string* out) {
  *out += "\n== GPU idle gaps (>= 1 ms) ==\n";
  if (s.idle_gaps.empty()) {
    *out += s.has_gpu_work ? " (none)\n" : " (no GPU work recorded)\n";
    return;
  }
  *out += Printf(" %zu gaps, %s in all\n", s.idle_gaps.size(), FormatDuration(double(s.idle_gap_total_ns)).c_str());
  TextTable t({"Duration", "At (+ms)", "Host was in"});
  for (size_t i = 0; i < s.idle_gaps.size() && i < 5; ++i) {
    const IdleGap& g = s.idle_gaps[i];
    t.AddRow({FormatDuration(double(g.end_ns - g.start_ns)), Ms(double(g.start_ns - s.span_start_ns)),
              g.host_activity.empty() ? "(no CUDA call)" : g.host_activity});
  }
  *out += t.Render();
}

// Only in CPython processes (a C++ program's summary is unchanged).
void CallSites(const Summary& s, std::string* out) {
  if (s.python_status.empty()) return;
  *out += "\n== GPU time by Python call site (innermost frame of your code; PROF_PYTHON_USER) ==\n";
  if (s.python_status.rfind("on", 0) != 0) {
    *out += " Python stacks " + s.python_status + "\n";
    return;
  }
  uint64_t total = 0;
  for (const CallSiteRow& r : s.call_sites) total += r.gpu_ns;
  TextTable t({"GPU time (%)", "GPU time (ns)", "Kernels", "Launches", "Syncs", "Copies", "Allocs/frees", "Calls",
               "Call site"});
  for (const CallSiteRow& r : s.call_sites) {
    t.AddRow({D(total ? 100.0 * double(r.gpu_ns) / double(total) : 0.0), std::to_string(r.gpu_ns),
           std::to_string(r.kernels), std::to_string(r.launches), std::to_string(r.syncs), std::to_string(r.copies),
           std::to_string(r.allocs), std::to_string(r.calls), r.site});
  }
  *out += t.empty() ? " (no recorded calls)\n" : t.Render();
}

void Losses(const Summary& s, std::string* out) {
  const LossCounts& l = s.meta.losses;
  *out += "\n== Data loss ==\n";
  *out += Printf(
      " host events dropped %llu, device records dropped %llu, CUPTI dropped %llu, missing %llu, unknown kinds %llu, "
      "allocation samples dropped %llu",
      static_cast<unsigned long long>(l.host_events_dropped), static_cast<unsigned long long>(l.device_records_dropped),
      static_cast<unsigned long long>(l.cupti_records_dropped), static_cast<unsigned long long>(l.device_records_missing),
      static_cast<unsigned long long>(l.unknown_activity_kinds), static_cast<unsigned long long>(l.alloc_samples_dropped));
  // Only when there are any (traces from before these counts read the same).
  if (l.collectives_dropped != 0) {
    *out += Printf(", NCCL calls dropped %llu", static_cast<unsigned long long>(l.collectives_dropped));
  }
  if (l.device_records_untimed != 0) {
    *out += Printf(", device records without timestamps %llu", static_cast<unsigned long long>(l.device_records_untimed));
  }
  if (l.device_records_elsewhere != 0) {
    *out += Printf(", GPU records written for another CUPTI client %llu",
                   static_cast<unsigned long long>(l.device_records_elsewhere));
  }
  if (l.host_events_late != 0) {
    *out += Printf(", host events late %llu", static_cast<unsigned long long>(l.host_events_late));
  }
  if (l.api_records_missing != 0) {
    *out += Printf(", calls' CUPTI records missing %llu", static_cast<unsigned long long>(l.api_records_missing));
  }
  if (l.nvtx_ranges_dropped != 0 || l.nvtx_names_dropped != 0) {
    *out += Printf(", NVTX ranges dropped %llu, NVTX names dropped %llu",
                   static_cast<unsigned long long>(l.nvtx_ranges_dropped),
                   static_cast<unsigned long long>(l.nvtx_names_dropped));
  }
  // Which kinds the device-record counts hold (only when they hold any).
  auto kinds = [out](const char* what, const DeviceLossKinds& k) {
    if (k.total() != 0) *out += Printf(", %s: %s", what, LossKindsText(k).c_str());
  };
  kinds("missing by kind", l.missing_kinds);
  kinds("without timestamps by kind", l.untimed_kinds);
  kinds("dropped by kind", l.dropped_kinds);
  *out += "\n";
  if (l.unrecorded_start_ns != 0) {
    *out += Printf(" recording began %.3f ms after the window's first step did: calls before that are not in it\n",
                   static_cast<double>(l.unrecorded_start_ns) / 1e6);
  }
}

}  // namespace

std::string SummaryHeader(const Summary& s) {
  std::string out;
  Header(s, &out);
  return out;
}

std::string RenderSummary(const Summary& s) {
  std::string out;
  Header(s, &out);
  Findings(s, &out);
  out += "\n== CUDA GPU Kernel Summary (cuda_gpu_kern_sum) ==\n";
  out += TimeTable(s.kernels, "Instances", "Name");
  out += "\n== CUDA API Summary (cuda_api_sum) ==\n";
  out += TimeTable(s.api_calls, "Num Calls", "Name");
  out += "\n== GPU MemOps Summary by Time (cuda_gpu_mem_time_sum) ==\n";
  out += TimeTable(s.mem_time, "Count", "Operation");
  out += "\n== GPU MemOps Summary by Size (cuda_gpu_mem_size_sum) ==\n";
  if (s.mem_size_from_host) out += " (no GPU copy records: sizes from the host calls)\n";
  out += SizeTable(s.mem_size);
  Collectives(s, &out);
  RenderOperators(s, &out);
  CallSites(s, &out);
  RenderCompiledCode(s, &out);
  Memory(s, &out);
  RenderTensorMemory(s, &out);
  const std::vector<size_t> listed = ListedStepRows(s.steps);
  Steps(s, listed, &out);
  StepBreakdown(s, listed, &out);
  Latency(s, &out);
  IdleGaps(s, &out);
  StreamIdle(s, &out);
  Losses(s, &out);
  return out;
}

std::string RenderSummary(const Window& window) { return RenderSummary(ComputeSummary(window)); }

std::string RenderSummary(const Window& window, const WindowIndex& index) {
  return RenderSummary(ComputeSummary(window, index));
}

std::vector<size_t> ListedStepRows(const std::vector<StepRow>& steps) {
  std::vector<size_t> listed(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) listed[i] = i;
  if (steps.size() <= kStepRowsAll) return listed;
  // The slowest of the steps after the first kStepRowsFirst (ties: the earlier step).
  std::vector<size_t> rest(listed.begin() + kStepRowsFirst, listed.end());
  std::partial_sort(rest.begin(), rest.begin() + kStepRowsSlowest, rest.end(), [&](size_t a, size_t b) {
    return steps[a].wall_ns != steps[b].wall_ns ? steps[a].wall_ns > steps[b].wall_ns : a < b;
  });
  rest.resize(kStepRowsSlowest);
  std::sort(rest.begin(), rest.end());
  listed.resize(kStepRowsFirst);
  listed.insert(listed.end(), rest.begin(), rest.end());
  return listed;
}

}  // namespace prof
