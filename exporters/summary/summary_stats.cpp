// ComputeSummary: the numbers of the summary, from a sealed Window (the
// agent) or a CompactWindow (`prof summary`): the functions below are
// templates over the window, so both run the same code.
#include <algorithm>
#include <map>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "exporters/common/collectives.h"
#include "exporters/common/compact_window.h"
#include "exporters/common/demangle.h"
#include "exporters/common/intervals.h"
#include "exporters/summary/stats.h"
#include "exporters/summary/summary.h"
#include "exporters/common/window_index.h"
#include "model/collectives.h"

namespace prof {

std::string CopyOperation(uint8_t cupti_copy_kind) {
  static constexpr const char* kNames[] = {"Unknown",          "Host-to-Device",   "Device-to-Host",
                                           "Host-to-Array",    "Array-to-Host",    "Array-to-Array",
                                           "Array-to-Device",  "Device-to-Array",  "Device-to-Device",
                                           "Host-to-Host",     "Peer-to-Peer"};
  const char* name = cupti_copy_kind < std::size(kNames) ? kNames[cupti_copy_kind] : "Unknown";
  return std::string("[CUDA memcpy ") + name + "]";
}

namespace {

using Interval = std::pair<uint64_t, uint64_t>;

TimeRow MakeTimeRow(std::string name, std::vector<uint64_t>* durations) {
  Distribution d = Describe(durations);
  TimeRow row;
  row.name = std::move(name);
  row.total_ns = d.total;
  row.count = d.count;
  row.avg_ns = d.mean;
  row.median_ns = d.median;
  row.min_ns = d.min;
  row.max_ns = d.max;
  row.stddev_ns = d.stddev;
  return row;
}

// Same shape as MakeTimeRow, for SizeRow's struct: the fields differ (bytes, not ns).
SizeRow MakeSizeRow(std::string name, std::vector<uint64_t>* sizes) {
  Distribution d = Describe(sizes);
  SizeRow row;
  row.name = std::move(name);
  row.total_bytes = d.total;
  row.count = d.count;
  row.avg_bytes = d.mean;
  row.median_bytes = d.median;
  row.min_bytes = d.min;
  row.max_bytes = d.max;
  row.stddev_bytes = d.stddev;
  return row;
}

// Percent of the table's total, then descending by total time (nsys order).
void FinishTimeTable(std::vector<TimeRow>* rows) {
  uint64_t total = 0;
  for (const TimeRow& r : *rows) total += r.total_ns;
  for (TimeRow& r : *rows) r.percent = total ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(total) : 0;
  std::stable_sort(rows->begin(), rows->end(), [](const TimeRow& a, const TimeRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
}

uint64_t Duration(uint64_t start_ns, uint64_t end_ns) { return end_ns > start_ns ? end_ns - start_ns : 0; }


// The same for the cudaMemcpyKind argument of a host call.
std::string HostCopyOperation(uint8_t memcpy_kind) {
  static constexpr const char* kNames[] = {"Host-to-Host", "Host-to-Device", "Device-to-Host", "Device-to-Device",
                                           "Default"};
  const char* name = memcpy_kind < std::size(kNames) ? kNames[memcpy_kind] : "Unknown";
  return std::string("[CUDA memcpy ") + name + "]";
}

// Sorted, merged busy intervals of all GPU work (kernels, copies, memsets).
template <typename W>
std::vector<Interval> BusyIntervals(const W& w) {
  std::vector<Interval> spans;
  for (const auto& r : w.device_records) {
    DeviceKind k = KindOf(r);
    if (k == DeviceKind::kKernel || k == DeviceKind::kMemcpy || k == DeviceKind::kMemset) {
      spans.emplace_back(r.start_ns, std::max(r.start_ns, r.end_ns));
    }
  }
  return MergeIntervals(std::move(spans), EmptyIntervals::kKeep);
}


template <typename W>
void ComputeSpan(const W& w, Summary* s) {
  if (!w.steps.empty()) {
    s->span_start_ns = w.steps.front().start_ns;
    s->span_end_ns = w.steps.back().end_ns;
  } else if (w.meta.end_ns > w.meta.start_ns) {
    s->span_start_ns = w.meta.start_ns;
    s->span_end_ns = w.meta.end_ns;
  } else {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& e : w.host_events) lo = std::min(lo, e.start_ns), hi = std::max(hi, e.end_ns);
    for (const auto& r : w.device_records) lo = std::min(lo, r.start_ns), hi = std::max(hi, r.end_ns);
    s->span_start_ns = hi > 0 ? lo : 0;
    s->span_end_ns = hi;
  }
}

template <typename W>
void ComputeTables(const W& w, const WindowIndex& index, Summary* s) {
  DisplayNames names(RestOf(w));
  std::unordered_map<uint32_t, std::vector<uint64_t>> kernels;  // name_id -> durations
  std::map<std::string, std::vector<uint64_t>> copy_time, copy_size;
  // Durations are gathered per API id and per interned name first (a map
  // keyed by string per call costs a string and a lookup each), then
  // joined by name: a call and a CUPTI record of the same API share a row.
  std::unordered_map<uint32_t, std::vector<uint64_t>> api_records;  // name_id -> durations
  std::unordered_map<uint16_t, std::vector<uint64_t>> host_calls;   // ApiId -> durations
  for (size_t i = 0; i < w.device_records.size(); ++i) {
    const auto& r = w.device_records[i];
    uint64_t dur = Duration(r.start_ns, r.end_ns);
    switch (KindOf(r)) {
      case DeviceKind::kKernel: kernels[r.name_id].push_back(dur); break;
      case DeviceKind::kMemcpy: {
        std::string op = CopyOperation(r.copy_kind);
        copy_time[op].push_back(dur);
        copy_size[op].push_back(r.bytes);
        break;
      }
      case DeviceKind::kMemset:
        copy_time["[CUDA memset]"].push_back(dur);
        copy_size["[CUDA memset]"].push_back(r.bytes);
        break;
      case DeviceKind::kRuntimeApi:
      case DeviceKind::kDriverApi:
        if (index.ApiRecordShown(r)) api_records[r.name_id].push_back(dur);
        break;
      default: break;
    }
  }
  bool sizes_from_host = copy_size.empty();
  for (const auto& e : w.host_events) {
    auto id = static_cast<ApiId>(e.api);
    host_calls[e.api].push_back(Duration(e.start_ns, e.end_ns));
    if (!sizes_from_host) continue;
    if (ApiKindOf(id) == ApiKind::kMemcpy) copy_size[HostCopyOperation(e.copy_kind)].push_back(e.bytes);
    if (ApiKindOf(id) == ApiKind::kMemset) copy_size["[CUDA memset]"].push_back(e.bytes);
  }
  s->mem_size_from_host = sizes_from_host && !copy_size.empty();
  std::map<std::string, std::vector<uint64_t>> api;
  auto join = [&api](std::string name, std::vector<uint64_t>* durations) {
    std::vector<uint64_t>& row = api[std::move(name)];
    if (row.empty()) {
      row.swap(*durations);
    } else {
      row.insert(row.end(), durations->begin(), durations->end());
    }
  };
  for (auto& [name_id, durations] : api_records) join(w.String(name_id), &durations);
  for (auto& [api_id, durations] : host_calls) join(std::string(ApiName(static_cast<ApiId>(api_id))), &durations);

  std::vector<uint64_t> all_kernels;
  for (auto& [name_id, durations] : kernels) {
    all_kernels.insert(all_kernels.end(), durations.begin(), durations.end());
    s->kernels.push_back(MakeTimeRow(names(name_id), &durations));
  }
  s->median_kernel_ns = Describe(&all_kernels).median;
  for (auto& [name, durations] : api) s->api_calls.push_back(MakeTimeRow(name, &durations));
  for (auto& [name, durations] : copy_time) s->mem_time.push_back(MakeTimeRow(name, &durations));
  for (auto& [name, sizes] : copy_size) s->mem_size.push_back(MakeSizeRow(name, &sizes));
  FinishTimeTable(&s->kernels);
  FinishTimeTable(&s->api_calls);
  FinishTimeTable(&s->mem_time);
  std::stable_sort(s->mem_size.begin(), s->mem_size.end(),
                   [](const SizeRow& a, const SizeRow& b) { return a.total_bytes > b.total_bytes; });
}

void ComputeMemory(const Window& w, Summary* s) {
  for (const AllocSample& a : w.alloc_samples) {
    auto row = std::find_if(s->memory.begin(), s->memory.end(),
                            [&](const MemoryRow& m) { return m.device == a.device && m.mem_kind == a.mem_kind; });
    if (row == s->memory.end()) {
      s->memory.push_back({a.device, a.mem_kind});
      row = s->memory.end() - 1;
    }
    if (a.delta_bytes >= 0) {
      ++row->allocs;
      row->bytes_allocated += static_cast<uint64_t>(a.delta_bytes);
    } else {
      ++row->frees;
      row->bytes_freed += static_cast<uint64_t>(-a.delta_bytes);
    }
    row->peak_bytes = std::max(row->peak_bytes, a.total_bytes);
  }
  std::sort(s->memory.begin(), s->memory.end(), [](const MemoryRow& a, const MemoryRow& b) {
    return a.device != b.device ? a.device < b.device : a.mem_kind < b.mem_kind;
  });
  s->live = w.live_at_end;
  std::stable_sort(s->live.begin(), s->live.end(),
                   [](const LiveAllocation& a, const LiveAllocation& b) { return a.bytes > b.bytes; });
}

bool IsLaunchName(const std::string& name) {
  ApiId id{};
  if (ApiFromName(name, &id)) return ApiKindOf(id) == ApiKind::kLaunch;  // incl. nvcc 13's __cudaLaunchKernel
  return name.rfind("cudaLaunch", 0) == 0 || name.rfind("cuLaunch", 0) == 0 || name.rfind("cudaGraphLaunch", 0) == 0 ||
         name.rfind("cuGraphLaunch", 0) == 0;
}

// What the name of a CUPTI API record says, looked up once per interned
// name: ApiFromName is a linear scan over every API name, and a window
// without wrappers has one such record per call.
class ApiRecordNames {
 public:
  explicit ApiRecordNames(const Window& w) : w_(w), entries_(w.strings.size()) {}

  // False when the name is none of our APIs.
  bool Api(uint32_t name_id, ApiId* id) {
    const Entry& e = Get(name_id);
    if (e.known) *id = e.id;
    return e.known;
  }
  bool IsLaunch(uint32_t name_id) { return Get(name_id).launch; }

 private:
  struct Entry {
    bool done = false;
    bool known = false;
    bool launch = false;
    ApiId id{};
  };
  const Entry& Get(uint32_t name_id) {
    // An id past the table names "" (Window::String): looked up uncached.
    Entry& e = name_id < entries_.size() ? entries_[name_id] : (out_of_range_ = Entry{});
    if (!e.done) {
      const std::string& name = w_.String(name_id);
      e.known = ApiFromName(name, &e.id);
      e.launch = IsLaunchName(name);
      e.done = true;
    }
    return e;
  }
  const Window& w_;
  std::vector<Entry> entries_;
  Entry out_of_range_;
};

template <typename W>
void ComputeSteps(const W& w, const WindowIndex& index, const std::vector<Interval>& busy,
                  ApiRecordNames* api_names, Summary* s) {
  for (const StepSpan& step : w.steps) {
    StepRow row;
    row.step = step.step;
    row.wall_ns = Duration(step.start_ns, step.end_ns);
    row.gpu_busy_ns = LengthWithin(busy, step.start_ns, step.end_ns);
    row.gpu_busy_percent = row.wall_ns ? 100.0 * static_cast<double>(row.gpu_busy_ns) / static_cast<double>(row.wall_ns) : 0;
    s->steps.push_back(row);
  }
  // Index of the step containing t, or -1.
  auto step_of = [&w](uint64_t t) -> int64_t {
    auto it = std::upper_bound(w.steps.begin(), w.steps.end(), t,
                               [](uint64_t v, const StepSpan& st) { return v < st.start_ns; });
    if (it == w.steps.begin()) return -1;
    --it;
    return t < it->end_ns ? it - w.steps.begin() : -1;
  };
  auto count_call = [&](ApiId id, uint64_t start_ns) {
    int64_t k = step_of(start_ns);
    if (k < 0) return;
    StepRow& row = s->steps[static_cast<size_t>(k)];
    switch (ApiKindOf(id)) {
      case ApiKind::kLaunch: ++row.launches; break;
      case ApiKind::kMemcpy: ++row.copies; break;
      case ApiKind::kAlloc:
      case ApiKind::kFree: ++row.allocs; break;
      case ApiKind::kSync:
        if (IsBlockingSync(id)) ++row.syncs;
        break;
      default: break;
    }
  };
  for (const auto& e : w.host_events) count_call(static_cast<ApiId>(e.api), e.start_ns);
  // Calls only CUPTI saw (no wrapper bound, e.g. CUDA_INJECTION64_PATH
  // alone, or a static runtime) count the same, by their API name.
  for (size_t i = 0; i < w.device_records.size(); ++i) {
    const auto& r = w.device_records[i];
    ApiId id{};
    if (IsApiRecord(r) && index.ApiRecordShown(r) && api_names->Api(r.name_id, &id)) count_call(id, r.start_ns);
  }
  for (const auto& r : w.device_records) {
    if (KindOf(r) != DeviceKind::kKernel) continue;
    int64_t k = step_of(r.start_ns);
    if (k >= 0) ++s->steps[static_cast<size_t>(k)].kernels;
  }
}

template <typename W>
void ComputeLatency(const W& w, const WindowIndex& index, ApiRecordNames* api_names, Summary* s) {
  std::vector<uint64_t> latencies;
  auto add = [&](uint32_t correlation, uint64_t call_start_ns) {
    int64_t work = index.FirstWork(correlation);
    if (work == WindowIndex::kNone) return;
    const auto& r = w.device_records[static_cast<size_t>(work)];
    if (KindOf(r) == DeviceKind::kSync) return;
    latencies.push_back(Duration(call_start_ns, r.start_ns));
  };
  for (const auto& e : w.host_events) {
    if (e.correlation_id != 0 && ApiKindOf(static_cast<ApiId>(e.api)) == ApiKind::kLaunch) add(e.correlation_id, e.start_ns);
  }
  for (size_t i = 0; i < w.device_records.size(); ++i) {
    const auto& r = w.device_records[i];
    if (IsApiRecord(r) && r.correlation_id != 0 && index.ApiRecordShown(r) && api_names->IsLaunch(r.name_id)) {
      add(r.correlation_id, r.start_ns);
    }
  }
  Distribution d = Describe(&latencies);
  s->launch_latency = {d.count, d.median, Percentile(latencies, 99), d.max};
}

template <typename W>
void ComputeKernelGaps(const W& w, Summary* s) {
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> last_end;  // (device, stream) -> end of previous kernel
  std::vector<uint64_t> gaps;
  for (const auto& r : w.device_records) {
    if (KindOf(r) != DeviceKind::kKernel) continue;
    auto [it, first] = last_end.try_emplace({r.device_id, r.stream_id}, r.end_ns);
    if (!first) {
      gaps.push_back(Duration(it->second, r.start_ns));
      it->second = std::max(it->second, r.end_ns);
    }
  }
  s->median_kernel_gap_ns = Describe(&gaps).median;
}

template <typename W>
std::string HostActivity(const W& w, uint64_t start_ns, uint64_t end_ns) {
  bool found = false;
  uint16_t best_api = 0;
  uint64_t best_overlap = 0;
  for (const auto& e : w.host_events) {
    if (e.start_ns >= end_ns) break;
    uint64_t s = std::max(e.start_ns, start_ns), t = std::min(e.end_ns, end_ns);
    if (t > s && t - s > best_overlap) best_overlap = t - s, best_api = e.api, found = true;
  }
  // A call that held the host for a sliver of the gap does not explain it:
  // the host was busy elsewhere for the rest.
  if (!found || best_overlap * 2 < end_ns - start_ns) return std::string();
  return std::string(ApiName(static_cast<ApiId>(best_api)));
}

template <typename W>
void ComputeIdleGaps(const W& w, const std::vector<Interval>& busy, Summary* s) {
  if (busy.empty() || s->span_end_ns <= s->span_start_ns) return;
  uint64_t cursor = s->span_start_ns;
  auto consider = [&](uint64_t from, uint64_t to) {
    if (to > from && to - from >= kIdleGapMinNs) s->idle_gaps.push_back({from, to, ""});
  };
  for (const Interval& b : busy) {
    if (b.second <= s->span_start_ns) continue;
    if (b.first >= s->span_end_ns) break;
    consider(cursor, std::min(b.first, s->span_end_ns));
    cursor = std::max(cursor, b.second);
  }
  consider(cursor, s->span_end_ns);
  std::stable_sort(s->idle_gaps.begin(), s->idle_gaps.end(), [](const IdleGap& a, const IdleGap& b) {
    return a.end_ns - a.start_ns > b.end_ns - b.start_ns;
  });
  for (const IdleGap& g : s->idle_gaps) s->idle_gap_total_ns += g.end_ns - g.start_ns;
  for (size_t i = 0; i < s->idle_gaps.size() && i < 5; ++i) {
    s->idle_gaps[i].host_activity = HostActivity(w, s->idle_gaps[i].start_ns, s->idle_gaps[i].end_ns);
  }
}

// Merged intervals of GPU work, split into communication (NCCL kernels) and
// the rest, and how long each and their overlap last within the span.
template <typename W>
void ComputeGpuSplit(const W& w, Summary* s) {
  std::vector<Interval> compute, comm;
  std::unordered_map<uint32_t, bool> is_comm;  // by name id
  for (const auto& r : w.device_records) {
    DeviceKind k = KindOf(r);
    if (k != DeviceKind::kKernel && k != DeviceKind::kMemcpy && k != DeviceKind::kMemset) continue;
    bool communication = false;
    if (k == DeviceKind::kKernel) {
      auto [it, inserted] = is_comm.try_emplace(r.name_id, false);
      if (inserted) it->second = IsCommunicationKernelName(w.String(r.name_id));
      communication = it->second;
    }
    (communication ? comm : compute).emplace_back(r.start_ns, std::max(r.start_ns, r.end_ns));
  }
  compute = MergeIntervals(std::move(compute), EmptyIntervals::kKeep);
  comm = MergeIntervals(std::move(comm), EmptyIntervals::kKeep);
  const uint64_t lo = s->span_start_ns, hi = s->span_end_ns;
  auto clip = [&](Interval i) { return Interval{std::max(i.first, lo), std::min(i.second, hi)}; };
  uint64_t overlap = 0;
  for (size_t a = 0, b = 0; a < compute.size() && b < comm.size();) {
    Interval x = clip(compute[a]), y = clip(comm[b]);
    uint64_t from = std::max(x.first, y.first), to = std::min(x.second, y.second);
    if (to > from) overlap += to - from;
    if (compute[a].second < comm[b].second) ++a;
    else ++b;
  }
  const uint64_t compute_ns = LengthWithin(compute, lo, hi), comm_ns = LengthWithin(comm, lo, hi);
  const uint64_t span = Duration(lo, hi);
  s->gpu_overlap_ns = overlap;
  s->gpu_compute_ns = compute_ns - std::min(compute_ns, overlap);
  s->gpu_comm_ns = comm_ns - std::min(comm_ns, overlap);
  const uint64_t used = s->gpu_compute_ns + s->gpu_comm_ns + s->gpu_overlap_ns;
  s->gpu_idle_ns = span > used ? span - used : 0;
  s->compute_busy_percent = span ? 100.0 * static_cast<double>(compute_ns) / static_cast<double>(span) : 0;
}

// The collectives table: calls grouped by operation, S and rank count; time
// from the kernel each call launched.
template <typename W>
void ComputeCollectives(const W& w, Summary* s) {
  if (w.collectives.empty()) return;
  std::unordered_map<uint32_t, const typename std::decay_t<decltype(w.device_records[0])>*> kernel_of;
  for (const auto& r : w.device_records) {
    if (KindOf(r) == DeviceKind::kKernel && r.correlation_id != 0) kernel_of.emplace(r.correlation_id, &r);
  }
  std::unordered_map<uint64_t, int> ranks_of;
  for (const CommInfo& c : w.communicators) ranks_of[c.id] = c.nranks;
  struct Acc {
    CollectiveRow row;
    double factor = 1;
  };
  std::map<std::tuple<uint8_t, uint64_t, int>, Acc> rows;
  for (const CollectiveCall& c : w.collectives) {
    auto r = ranks_of.find(c.comm_id);
    const int n = r == ranks_of.end() ? 0 : r->second;
    const CollectiveSizes sizes = SizesOf(c, n);
    Acc& acc = rows[{c.func, static_cast<uint64_t>(sizes.bytes), n}];
    acc.row.name = CollFuncName(c.func);
    acc.row.bytes = static_cast<uint64_t>(sizes.bytes);
    acc.row.ranks = n;
    acc.factor = sizes.factor;
    ++acc.row.count;
    auto k = c.correlation_id ? kernel_of.find(c.correlation_id) : kernel_of.end();
    if (k != kernel_of.end()) {
      ++acc.row.kernels;
      acc.row.total_ns += Duration(k->second->start_ns, k->second->end_ns);
    }
  }
  for (auto& [key, acc] : rows) {
    CollectiveRow& row = acc.row;
    if (row.kernels > 0) {
      row.avg_ns = static_cast<double>(row.total_ns) / static_cast<double>(row.kernels);
      row.algbw_gbps = row.avg_ns > 0 ? static_cast<double>(row.bytes) / row.avg_ns : 0;  // bytes per ns = GB/s
      row.busbw_gbps = row.algbw_gbps * acc.factor;
    }
    s->collectives.push_back(row);
  }
  std::stable_sort(s->collectives.begin(), s->collectives.end(),
                   [](const CollectiveRow& a, const CollectiveRow& b) { return a.total_ns > b.total_ns; });
}

// The categories of TimeBreakdown, in the order a moment is given to the
// first one active (GPU work before host activity).
enum BreakdownCategory : uint8_t { kCatKernel, kCatComm, kCatMemcpy, kCatMemset, kCatSync, kCatRuntime, kCatCount };

void AddTo(TimeBreakdown* b, int category, uint64_t ns) {
  switch (category) {
    case kCatKernel: b->kernel_ns += ns; break;
    case kCatComm: b->comm_ns += ns; break;
    case kCatMemcpy: b->memcpy_ns += ns; break;
    case kCatMemset: b->memset_ns += ns; break;
    case kCatSync: b->sync_ns += ns; break;
    case kCatRuntime: b->runtime_ns += ns; break;
    default: b->other_ns += ns; break;
  }
}

// The step-time breakdown of the window and of each step: one sweep over
// the edges of each category's merged intervals (and the steps' edges), so
// every moment of the span is counted once, in one category.
template <typename W>
void ComputeBreakdown(const W& w, const WindowIndex& index, ApiRecordNames* api_names, Summary* s) {
  if (s->span_end_ns <= s->span_start_ns) return;
  std::vector<Interval> spans[kCatCount];
  std::vector<int8_t> is_comm(RestOf(w).strings.size(), -1);  // per kernel name id
  auto comm = [&](uint32_t name_id) {
    if (name_id >= is_comm.size()) return false;
    if (is_comm[name_id] < 0) is_comm[name_id] = IsCommunicationKernelName(w.String(name_id));
    return is_comm[name_id] == 1;
  };
  for (const auto& r : w.device_records) {
    Interval span{r.start_ns, std::max(r.start_ns, r.end_ns)};
    switch (KindOf(r)) {
      case DeviceKind::kKernel: spans[comm(r.name_id) ? kCatComm : kCatKernel].push_back(span); break;
      case DeviceKind::kMemcpy: spans[kCatMemcpy].push_back(span); break;
      case DeviceKind::kMemset: spans[kCatMemset].push_back(span); break;
      case DeviceKind::kRuntimeApi:
      case DeviceKind::kDriverApi: {
        ApiId id{};
        if (!index.ApiRecordShown(r)) break;
        bool sync = api_names->Api(r.name_id, &id) && IsBlockingSync(id);
        spans[sync ? kCatSync : kCatRuntime].push_back(span);
        break;
      }
      default: break;
    }
  }
  for (const auto& e : w.host_events) {
    Interval span{e.start_ns, std::max(e.start_ns, e.end_ns)};
    spans[IsBlockingSync(static_cast<ApiId>(e.api)) ? kCatSync : kCatRuntime].push_back(span);
  }
  struct Edge {
    uint64_t t;
    int8_t delta;
    uint8_t category;  // kCatCount: a step edge
  };
  std::vector<Edge> edges;
  for (int c = 0; c < kCatCount; ++c) {
    for (const Interval& iv : MergeIntervals(std::move(spans[c]))) {
      uint64_t a = std::max(iv.first, s->span_start_ns), b = std::min(iv.second, s->span_end_ns);
      if (b <= a) continue;
      edges.push_back({a, 1, static_cast<uint8_t>(c)});
      edges.push_back({b, -1, static_cast<uint8_t>(c)});
    }
  }
  for (const StepSpan& st : w.steps) {
    edges.push_back({st.start_ns, 0, kCatCount});
    edges.push_back({st.end_ns, 0, kCatCount});
  }
  edges.push_back({s->span_start_ns, 0, kCatCount});
  edges.push_back({s->span_end_ns, 0, kCatCount});
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  int active[kCatCount] = {};
  size_t step = 0;
  for (size_t i = 0; i + 1 < edges.size();) {
    uint64_t t = edges[i].t;
    for (; i < edges.size() && edges[i].t == t; ++i) {
      if (edges[i].category < kCatCount) active[edges[i].category] += edges[i].delta;
    }
    if (i == edges.size()) break;
    uint64_t next = edges[i].t;
    if (t < s->span_start_ns || next > s->span_end_ns || next <= t) continue;
    int category = kCatCount;
    for (int c = 0; c < kCatCount && category == kCatCount; ++c) {
      if (active[c] > 0) category = c;
    }
    AddTo(&s->breakdown, category, next - t);
    while (step < w.steps.size() && w.steps[step].end_ns <= t) ++step;
    if (step < w.steps.size() && w.steps[step].start_ns <= t && next <= w.steps[step].end_ns) {
      AddTo(&s->steps[step].breakdown, category, next - t);
    }
  }
}

// HTA's idle-time breakdown, per stream (StreamIdleRow).
template <typename W>
void ComputeStreamIdle(const W& w, const WindowIndex& index, Summary* s) {
  struct Last {
    uint64_t end_ns;
    size_t row;
  };
  std::map<std::pair<uint32_t, uint32_t>, Last> last;  // (device, stream)
  for (const auto& r : w.device_records) {
    DeviceKind kind = KindOf(r);
    if (kind != DeviceKind::kKernel && kind != DeviceKind::kMemcpy && kind != DeviceKind::kMemset) continue;
    uint64_t end = std::max(r.start_ns, r.end_ns);
    auto [it, first] = last.try_emplace({r.device_id, r.stream_id}, Last{end, s->stream_idle.size()});
    if (first) {
      s->stream_idle.push_back({r.device_id, r.stream_id});
      continue;
    }
    StreamIdleRow& row = s->stream_idle[it->second.row];
    uint64_t prev_end = it->second.end_ns;
    it->second.end_ns = std::max(prev_end, end);
    if (r.start_ns <= prev_end) continue;  // back to back, or overlapping (another context's work)
    uint64_t gap = r.start_ns - prev_end;
    ++row.gaps;
    // When the call that queued this piece began.
    bool known = false;
    uint64_t queued_ns = 0;
    if (r.correlation_id != 0) {
      int64_t call = index.HostCall(r.correlation_id);
      if (call != WindowIndex::kNone) {
        known = true, queued_ns = w.host_events[static_cast<size_t>(call)].start_ns;
      } else if ((call = index.ApiRecord(r.correlation_id)) != WindowIndex::kNone) {
        known = true, queued_ns = w.device_records[static_cast<size_t>(call)].start_ns;
      }
    }
    if (known && queued_ns > prev_end) {
      row.host_wait_ns += gap;
    } else if (gap < kKernelWaitNs) {
      row.kernel_wait_ns += gap;
    } else {
      row.other_ns += gap;
    }
  }
  std::sort(s->stream_idle.begin(), s->stream_idle.end(), [](const StreamIdleRow& a, const StreamIdleRow& b) {
    return a.device != b.device ? a.device < b.device : a.stream < b.stream;
  });
}

template <typename W>
Summary Compute(const W& w, const WindowIndex& index) {
  Summary s;
  s.meta = w.meta;
  ComputeSpan(w, &s);
  std::vector<Interval> busy = BusyIntervals(w);
  s.has_gpu_work = !busy.empty();
  s.gpu_busy_ns = LengthWithin(busy, s.span_start_ns, s.span_end_ns);
  uint64_t span = Duration(s.span_start_ns, s.span_end_ns);
  s.gpu_busy_percent = span ? 100.0 * static_cast<double>(s.gpu_busy_ns) / static_cast<double>(span) : 0;
  ComputeTables(w, index, &s);
  ComputeMemory(RestOf(w), &s);
  ApiRecordNames api_names(RestOf(w));
  ComputeSteps(w, index, busy, &api_names, &s);
  ComputeLatency(w, index, &api_names, &s);
  ComputeKernelGaps(w, &s);
  ComputeIdleGaps(w, busy, &s);
  ComputeGpuSplit(w, &s);
  ComputeCollectives(w, &s);
  ComputeBreakdown(w, index, &api_names, &s);
  ComputeStreamIdle(w, index, &s);
  ComputeCallSites(w, index, &s);
  ComputeCompiledCode(w, index, &s);
  ComputeOperators(w, index, &s);
  ComputeTensorMemory(RestOf(w), &s);
  s.findings = ComputeFindings(w, s, index);
  return s;
}

}  // namespace

Summary ComputeSummary(const Window& w) { return ComputeSummary(w, WindowIndex(w)); }
Summary ComputeSummary(const Window& w, const WindowIndex& index) { return Compute(w, index); }
Summary ComputeSummary(const CompactWindow& w) { return Compute(w, WindowIndex(w)); }

}  // namespace prof
