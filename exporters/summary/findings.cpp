#include "exporters/summary/findings.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "exporters/common/collectives.h"
#include "exporters/common/compact_window.h"
#include "exporters/common/cuda_names.h"
#include "exporters/common/format.h"
#include "exporters/common/operators.h"
#include "exporters/common/python_sites.h"
#include "exporters/summary/loss_kinds.h"
#include "exporters/summary/stats.h"
#include "exporters/summary/summary.h"
#include "exporters/summary/text_table.h"
#include "exporters/common/window_index.h"

namespace prof {
namespace {

constexpr uint8_t kCudaMemcpyDeviceToHost = 2;  // cudaMemcpyKind

uint64_t Duration(uint64_t start_ns, uint64_t end_ns) { return end_ns > start_ns ? end_ns - start_ns : 0; }

std::string ConfigValue(const WindowMeta& meta, const std::string& key) {
  for (const auto& [k, v] : meta.config) {
    if (k == key) return v;
  }
  return {};
}

// Allocation calls that go to the driver each time (the *Async and pool
// allocators are stream-ordered and cheap by design).
bool IsSynchronousAllocatorCall(ApiId id) {
  ApiKind kind = ApiKindOf(id);
  if (kind != ApiKind::kAlloc && kind != ApiKind::kFree) return false;
  switch (id) {
    case ApiId::cudaMallocAsync: case ApiId::cudaMallocAsync_ptsz: case ApiId::cudaFreeAsync:
    case ApiId::cudaFreeAsync_ptsz: case ApiId::cudaMallocFromPoolAsync: case ApiId::cudaMallocFromPoolAsync_ptsz:
    case ApiId::cuMemAllocAsync: case ApiId::cuMemFreeAsync:
      return false;
    default:
      return true;
  }
}

// Counts of calls of some sort inside steps, by API, with their host time.
struct CallTally {
  uint64_t count = 0;
  uint64_t time_ns = 0;
  uint64_t bytes = 0;
  size_t steps_with = 0;
  std::map<std::string, uint64_t> by_api;
  std::map<uint64_t, uint64_t> by_site;  // Python call site (CallSites::Key) -> calls (0: none)
  std::map<uint32_t, uint64_t> by_operator;  // innermost PyTorch operator's name id -> calls

  std::string Describe(size_t steps) const {
    std::string apis;
    for (const auto& [name, n] : by_api) apis += (apis.empty() ? "" : ", ") + name + " x" + std::to_string(n);
    return Printf("%llu calls in %zu of %zu steps (%.1f per step), %s blocked on the host: %s",
                  static_cast<unsigned long long>(count), steps_with, steps, steps ? double(count) / double(steps) : 0.0,
                  FormatDuration(static_cast<double>(time_ns)).c_str(), apis.c_str());
  }
};

// W: Window or CompactWindow.
template <typename W>
class FindingsBuilder {
 public:
  FindingsBuilder(const W& w, const Summary& s, const WindowIndex& index)
      : w_(w), s_(s), index_(index), sites_(RestOf(w)),
        operators_(WindowOperators(RestOf(w))) {}

  std::vector<Finding> Build() {
    InterceptionOnly();
    DataLoss();
    Partial();
    BoundBy();
    Communication();
    SyncsInSteps();
    DeviceToHostCopies();
    PageableCopies();
    AllocatorChurn();
    MemorySpike();
    AutogradOverhead();
    SmallElementwise();
    LaunchLatency();
    IdleGaps();
    return std::move(out_);
  }

 private:
  void Add(std::string id, std::string title, std::string evidence, std::string advice) {
    out_.push_back({std::move(id), std::move(title), std::move(evidence), std::move(advice)});
  }

  // Index of the step whose span holds t, or -1.
  int64_t StepOf(uint64_t t) const {
    auto it = std::upper_bound(w_.steps.begin(), w_.steps.end(), t,
                               [](uint64_t v, const StepSpan& st) { return v < st.start_ns; });
    if (it == w_.steps.begin()) return -1;
    --it;
    return t < it->end_ns ? it - w_.steps.begin() : -1;
  }

  // Tallies host calls matching `pick` that start inside a step. `skip`
  // excludes calls (the step markers themselves).
  template <typename Pick>
  CallTally Tally(Pick pick, const std::vector<bool>* skip = nullptr) const {
    CallTally t;
    std::vector<bool> seen(w_.steps.size());
    for (size_t i = 0; i < w_.host_events.size(); ++i) {
      const auto& e = w_.host_events[i];
      if ((skip && (*skip)[i]) || !pick(e)) continue;
      int64_t k = StepOf(e.start_ns);
      if (k < 0) continue;
      ++t.count;
      t.time_ns += Duration(e.start_ns, e.end_ns);
      t.bytes += e.bytes;
      ++t.by_api[std::string(ApiName(static_cast<ApiId>(e.api)))];
      ++t.by_site[sites_.Key(e.stack_id)];
      if (!operators_.empty()) {
        int64_t op = operators_.Enclosing(e.tid, e.start_ns);
        if (op >= 0) ++t.by_operator[RestOf(w_).nvtx_ranges[static_cast<size_t>(op)].name_id];
      }
      if (!seen[static_cast<size_t>(k)]) seen[static_cast<size_t>(k)] = true, ++t.steps_with;
    }
    return t;
  }

  // "<label>a x5, b x2, c x1": the three keys with the most counts (ties by
  // key), each named by text_of; "" when there are none.
  template <typename Key, typename TextOf>
  static std::string TopThree(const std::map<Key, uint64_t>& counts, const char* label, TextOf text_of) {
    std::vector<std::pair<uint64_t, Key>> ranked;
    for (const auto& [key, n] : counts) ranked.emplace_back(n, key);
    if (ranked.empty()) return "";
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::string text = label;
    for (size_t i = 0; i < ranked.size() && i < 3; ++i) {
      text += (i ? ", " : "") + text_of(ranked[i].second) + " x" + std::to_string(ranked[i].first);
    }
    return text;
  }

  // "; top call sites: train.py:57 in train_step x5, ..." (Python
  // processes only), the three sites with the most calls.
  std::string TopSites(std::map<uint64_t, uint64_t> by_site) {
    by_site.erase(0);  // calls without a Python stack
    return TopThree(by_site, "; top call sites: ", [this](uint64_t site) { return sites_.KeyText(site); });
  }

  // "; operators: aten::_local_scalar_dense (.item()) x5, ..." (PyTorch
  // processes with operators recorded), the three with the most calls.
  std::string TopOperators(const std::map<uint32_t, uint64_t>& by_operator) {
    return TopThree(by_operator, "; operators: ", [this](uint32_t name_id) {
      const std::string& name = RestOf(w_).String(name_id);
      std::string_view spelled = OperatorInPython(name);
      return spelled.empty() ? name : name + " (" + std::string(spelled) + ")";
    });
  }

  // "; most kernels launched in: aten::copy_ x140, ..." (PyTorch processes
  // with operators recorded): the operators whose own kernels are the most,
  // which fusing (torch.compile) would cut.
  std::string KernelOperators() {
    if (operators_.empty()) return "";
    std::map<uint32_t, uint64_t> by_operator;
    for (const auto& d : w_.device_records) {
      if (KindOf(d) != DeviceKind::kKernel) continue;
      int64_t op = operators_.OfCorrelation(w_, index_, d.correlation_id);
      if (op >= 0) ++by_operator[RestOf(w_).nvtx_ranges[static_cast<size_t>(op)].name_id];
    }
    return TopThree(by_operator, "; most kernels launched in: ",
                    [this](uint32_t name_id) { return RestOf(w_).String(name_id); });
  }

  void InterceptionOnly() {
    // Without a CUDA call there is nothing CUPTI would have timed: that is
    // no profile at all, not an interception-only one.
    if (w_.meta.has_gpu_timings || w_.host_events.empty()) return;
    if (w_.meta.cupti_mode == kNotLibprofCuptiMode) {
      Add("interception-only", "No GPU timings: the trace holds CUDA calls but no GPU activity",
          Printf("%zu CUDA calls and no kernel, copy or memset on the GPU; GPU busy, kernel times and launch "
                 "latency are unknown",
                 static_cast<size_t>(w_.host_events.size())),
          "record GPU activity too (torch.profiler: ProfilerActivity.CUDA; or run under libprof)");
      return;
    }
    Add("interception-only", "No GPU timings: CUPTI activity was not available",
        "CUPTI mode: " + (w_.meta.cupti_mode.empty() ? std::string("unknown") : w_.meta.cupti_mode) +
            "; only host-side CUDA calls were recorded, so GPU busy, kernel times and launch latency are unknown",
        "check PROF_CUPTI_LIB and that no other profiler holds CUPTI (one subscriber only)");
  }

  void DataLoss() {
    const LossCounts& l = w_.meta.losses;
    std::string parts;
    auto part = [&parts](const char* what, uint64_t n, const DeviceLossKinds* kinds = nullptr) {
      if (!n) return;
      parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
      // Which tables undercount: the device records by kind.
      if (kinds != nullptr && kinds->total() != 0) parts += " (" + LossKindsText(*kinds) + ")";
    };
    part("host events dropped (buffer full)", l.host_events_dropped);
    part("device records dropped (buffer pool exhausted)", l.device_records_dropped, &l.dropped_kinds);
    part("records dropped by CUPTI", l.cupti_records_dropped);
    part("device records never delivered", l.device_records_missing, &l.missing_kinds);
    part("device records CUPTI delivered without timestamps (work still running when CUPTI was flushed)",
         l.device_records_untimed, &l.untimed_kinds);
    part("records of unknown kinds", l.unknown_activity_kinds);
    part("calls whose host event came after the window was sealed (their thread was descheduled between the "
         "call's return and its record)",
         l.host_events_late);
    part("calls whose own CUPTI record never came (what shows a call no wrapper recorded)", l.api_records_missing);
    part("allocation samples dropped", l.alloc_samples_dropped);
    part("NVTX ranges dropped (range store full)", l.nvtx_ranges_dropped);
    part("NVTX range names dropped (name table full)", l.nvtx_names_dropped);
    part("launches whose GPU records CUPTI wrote for another profiler in the process (it held CUPTI's activity API, "
         "which this CUPTI lets one client use; the program's own profiler kept working)",
         l.device_records_elsewhere);
    if (l.unrecorded_start_ns != 0) {
      parts += (parts.empty() ? "" : ", ") + Printf("the window's first %.3f ms not recorded (libprof's agent thread "
                                                    "turned recording on late: a loaded machine)",
                                                    static_cast<double>(l.unrecorded_start_ns) / 1e6);
    }
    if (parts.empty()) return;
    // Each cure for the losses that happened, and only those.
    std::string advice;
    auto cure = [&advice](bool when, const char* text) {
      if (when) advice += (advice.empty() ? "" : "; ") + std::string(text);
    };
    cure(l.host_events_dropped || l.device_records_dropped || l.alloc_samples_dropped || l.nvtx_ranges_dropped ||
             l.nvtx_names_dropped,
         "raise PROF_BUFFER_MB, or shorten the window (PROF_ACTIVE)");
    cure(l.cupti_records_dropped, "CUPTI's own buffers overflowed: shorten the window (PROF_ACTIVE) or record fewer "
                                  "activities (PROF_ACTIVITIES)");
    cure(l.device_records_missing || l.device_records_untimed,
         "the GPU work had not finished when the window was sealed: raise PROF_FLUSH_TIMEOUT_MS, or let the window "
         "end before the process does");
    // Records that did come late, not dropped ones: a thread descheduled
    // between a call's return and its record.
    cure(l.host_events_late || (l.api_records_missing && !l.cupti_records_dropped && !l.device_records_dropped),
         "a busy machine: leave libprof's writer and the program's threads a core, or raise PROF_FLUSH_TIMEOUT_MS");
    cure(l.unknown_activity_kinds, "records of kinds this libprof does not decode: a newer CUPTI (see PROF_CUPTI_LIB)");
    cure(l.device_records_elsewhere,
         "let the program's own profiler (torch.profiler) finish before libprof's window, or use a CUPTI that lets "
         "several subscribers record (13.2, as in PyTorch's cu13 wheels); under CUDA_INJECTION64_PATH libprof cannot "
         "see it let go: LD_PRELOAD lets libprof take CUPTI back when it does");
    cure(l.unrecorded_start_ns != 0,
         "give libprof's agent thread time: a longer PROF_STEP=time: or more PROF_WARMUP steps");
    Add("data-loss", "Some data was lost: tables and findings undercount", parts, advice);
  }

  void Partial() {
    if (!w_.meta.partial) return;
    Add("partial-window", "The window ended early (" + w_.meta.partial_reason + ")",
        Printf("steps %llu-%llu recorded", static_cast<unsigned long long>(w_.meta.first_step),
               static_cast<unsigned long long>(w_.meta.last_step)),
        "the process ended during the window; the last step may be incomplete");
  }

  // When the call that queued a piece of GPU work began: its host event's
  // start, else its CUPTI API record's. False when neither is in the window.
  bool QueuedAt(uint32_t correlation, uint64_t* start_ns) const {
    if (correlation == 0) return false;
    int64_t call = index_.HostCall(correlation);
    if (call != WindowIndex::kNone) {
      *start_ns = w_.host_events[static_cast<size_t>(call)].start_ns;
      return true;
    }
    call = index_.ApiRecord(correlation);
    if (call == WindowIndex::kNone) return false;
    *start_ns = w_.device_records[static_cast<size_t>(call)].start_ns;
    return true;
  }

  // Whether the GPU idles because it waits for launches: per stream, each
  // kernel with work before it (`kernels`), those that found the stream
  // drained and were launched only after it drained (`waited`: HTA's host
  // wait, the host had not queued them yet), and the GPU idle of those waits
  // shorter than kIdleGapMinNs (`short_wait_ns`; longer ones are idle-gaps',
  // the host busy elsewhere). A host that queues its kernels ahead and then
  // does other work leaves them back to back: they did not wait.
  struct LaunchWaits {
    uint64_t kernels = 0;
    uint64_t waited = 0;
    uint64_t short_wait_ns = 0;
  };
  LaunchWaits CountLaunchWaits() const {
    LaunchWaits lw;
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> last_end;  // (device, stream) -> end of its work so far
    for (const auto& r : w_.device_records) {
      DeviceKind kind = KindOf(r);
      if (kind != DeviceKind::kKernel && kind != DeviceKind::kMemcpy && kind != DeviceKind::kMemset) continue;
      uint64_t end = std::max(r.start_ns, r.end_ns);
      auto [it, first] = last_end.try_emplace({r.device_id, r.stream_id}, end);
      if (first) continue;
      uint64_t prev_end = it->second;
      it->second = std::max(prev_end, end);
      if (kind != DeviceKind::kKernel) continue;
      ++lw.kernels;
      uint64_t queued_ns = 0;
      if (r.start_ns <= prev_end || !QueuedAt(r.correlation_id, &queued_ns) || queued_ns <= prev_end) continue;
      ++lw.waited;
      if (r.start_ns - prev_end < kIdleGapMinNs) lw.short_wait_ns += r.start_ns - prev_end;
    }
    return lw;
  }

  void BoundBy() {
    if (!s_.has_gpu_work) return;
    uint64_t span = Duration(s_.span_start_ns, s_.span_end_ns);
    uint64_t launches = 0;
    for (const StepRow& r : s_.steps) launches += r.launches;
    uint64_t kernels = 0, from_graphs = 0;
    for (const auto& r : w_.device_records) {
      if (KindOf(r) != DeviceKind::kKernel) continue;
      ++kernels;
      if (r.graph_id != 0) ++from_graphs;
    }
    // Both verdicts are about kernels: a window of copies alone (or of
    // nothing the GPU ran) is neither, whatever its busy share.
    if (kernels == 0) return;
    // "Busy" is computing: time the GPU only spends in collectives (waiting
    // for a peer, transferring) is not (compute_busy_percent).
    // Short kernels on an idle GPU are launch overhead only when the GPU
    // idles waiting for their launches; a host busy outside CUDA between
    // bursts of kernels it queued ahead is idle-gaps' finding instead.
    // Most kernels waited for their launch; those waits are most of the
    // GPU's idle in stretches under 1 ms (the longer ones are idle-gaps':
    // the host busy elsewhere, or off its core), and not a trifle next to
    // all of its idle (microseconds between long host pauses: fix those).
    LaunchWaits lw;
    if (s_.compute_busy_percent < kOverheadBusyPercent && s_.median_kernel_ns < kShortKernelNs) lw = CountLaunchWaits();
    uint64_t short_idle_ns = s_.gpu_idle_ns > s_.idle_gap_total_ns ? s_.gpu_idle_ns - s_.idle_gap_total_ns : 0;
    auto percent = [](uint64_t part, uint64_t whole) {
      return whole ? std::min(100.0, 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : 0.0;
    };
    double waited_percent = percent(lw.waited, lw.kernels);
    double short_idle_percent = percent(lw.short_wait_ns, short_idle_ns);
    double idle_percent = percent(lw.short_wait_ns, s_.gpu_idle_ns);
    if (s_.compute_busy_percent < kOverheadBusyPercent && s_.median_kernel_ns < kShortKernelNs &&
        waited_percent >= kLaunchWaitPercent && short_idle_percent >= kLaunchWaitShortIdlePercent &&
        idle_percent >= kLaunchWaitIdlePercent) {
      // A step that already replays CUDA graphs gains nothing from "capture
      // it in a graph": its idle time is between the replays.
      bool graphs = from_graphs * 2 > kernels;
      std::string evidence =
          Printf("GPU busy %.1f%% of %s (threshold < %.0f%%); median kernel %s (threshold < %s); median idle "
                 "between kernels on a stream %s; %llu launches in %zu steps",
                 s_.compute_busy_percent, FormatDuration(static_cast<double>(span)).c_str(), kOverheadBusyPercent,
                 FormatDuration(s_.median_kernel_ns).c_str(), FormatDuration(kShortKernelNs).c_str(),
                 FormatDuration(s_.median_kernel_gap_ns).c_str(), static_cast<unsigned long long>(launches),
                 s_.steps.size());
      evidence += Printf("; %llu of %llu kernels (%.0f%%; threshold >= %.0f%%) found their stream drained and "
                         "were launched only after, waiting %s in all: %.0f%% of the GPU's %s idle in stretches under "
                         "%s (threshold >= %.0f%%), %.0f%% of its %s idle (threshold >= %.0f%%)",
                         static_cast<unsigned long long>(lw.waited), static_cast<unsigned long long>(lw.kernels),
                         waited_percent, kLaunchWaitPercent, FormatDuration(static_cast<double>(lw.short_wait_ns)).c_str(),
                         short_idle_percent, FormatDuration(static_cast<double>(short_idle_ns)).c_str(),
                         FormatDuration(double(kIdleGapMinNs)).c_str(), kLaunchWaitShortIdlePercent, idle_percent,
                         FormatDuration(static_cast<double>(s_.gpu_idle_ns)).c_str(), kLaunchWaitIdlePercent);
      if (from_graphs > 0) {
        evidence += Printf("; %llu of %llu kernels ran from CUDA graphs", static_cast<unsigned long long>(from_graphs),
                           static_cast<unsigned long long>(kernels));
      }
      evidence += KernelOperators();
      Add("overhead-bound", "Overhead-bound: the GPU waits for the host to launch its short kernels", evidence,
          graphs ? "the step already replays CUDA graphs, so the idle time is outside them: capture more of the "
                   "step into the graph (host work between replays shows as gaps), fuse the graph's short "
                   "kernels, or raise the batch size"
                 : "launch fewer, larger kernels: fuse operations (torch.compile), capture the step in a CUDA "
                   "graph, or raise the batch size");
    } else if (s_.compute_busy_percent >= kComputeBusyPercent) {
      std::string top;
      for (size_t i = 0, shown = 0; i < s_.kernels.size() && shown < 3; ++i) {
        if (IsCommunicationKernelName(s_.kernels[i].name)) continue;
        top += Printf("%s%s %.1f%%", shown++ ? "; " : "", s_.kernels[i].name.c_str(), s_.kernels[i].percent);
      }
      Add("compute-bound", "Compute-bound: the GPU is busy; speed comes from the kernels themselves",
          Printf("GPU busy computing %.1f%% of %s (threshold >= %.0f%%); top kernels by GPU time: %s", s_.compute_busy_percent,
                 FormatDuration(static_cast<double>(span)).c_str(), kComputeBusyPercent, top.c_str()),
          "optimize the top kernels (Nsight Compute), use mixed precision or tensor cores");
    }
  }

  // With PROF_STEP=sync (or api:<a sync call>) the call that ends each step
  // is the marker, not a problem: skip the last one in each step.
  std::vector<bool> StepMarkers() const {
    std::vector<bool> skip(w_.host_events.size());
    std::string step = ConfigValue(w_.meta, "PROF_STEP");
    ApiId marker_api = ApiId::kCount;
    bool any_sync = step == "sync";
    if (step.rfind("api:", 0) == 0 && !ApiFromName(step.substr(4), &marker_api)) return skip;
    if (!any_sync && marker_api == ApiId::kCount) return skip;
    std::vector<int64_t> last(w_.steps.size(), -1);
    for (size_t i = 0; i < w_.host_events.size(); ++i) {
      auto id = static_cast<ApiId>(w_.host_events[i].api);
      if (any_sync ? !IsBlockingSync(id) : id != marker_api) continue;
      int64_t k = StepOf(w_.host_events[i].start_ns);
      if (k >= 0) last[static_cast<size_t>(k)] = static_cast<int64_t>(i);
    }
    for (int64_t i : last) {
      if (i >= 0) skip[static_cast<size_t>(i)] = true;
    }
    return skip;
  }

  void SyncsInSteps() {
    std::vector<bool> markers = StepMarkers();
    CallTally t = Tally([](const auto& e) { return IsBlockingSync(static_cast<ApiId>(e.api)); }, &markers);
    if (t.count == 0) return;
    Add("sync-in-step", "Synchronization inside steps: the host waits for the GPU and the launch queue drains",
        t.Describe(s_.steps.size()) + TopSites(t.by_site) + TopOperators(t.by_operator),
        "remove the synchronize (or move it out of the step); read results back asynchronously "
        "(non_blocking copies, events) and check values less often");
  }

  // A device-to-host copy makes the host wait for the GPU when the call is
  // synchronous (cudaMemcpy, not *Async) or lands in pageable memory (then
  // even cudaMemcpyAsync is staged synchronously). Async copies into pinned
  // memory do not block and are not counted.
  void DeviceToHostCopies() {
    const WindowIndex& index = index_;
    CallTally t = Tally([&](const auto& e) {
      auto id = static_cast<ApiId>(e.api);
      if (ApiKindOf(id) != ApiKind::kMemcpy || e.copy_kind != kCudaMemcpyDeviceToHost) return false;
      if (ApiName(id).find("Async") == std::string_view::npos) return true;
      int64_t work = e.correlation_id ? index.FirstWork(e.correlation_id) : WindowIndex::kNone;
      return work != WindowIndex::kNone &&
             w_.device_records[static_cast<size_t>(work)].dst_kind == kCuptiMemoryPageable;
    });
    if (t.count == 0) return;
    Add("d2h-copy-in-step", "Blocking device-to-host copies inside steps: each one waits for the GPU to catch up",
        t.Describe(s_.steps.size()) + ", " + FormatBytes(static_cast<double>(t.bytes)) + " copied" +
            TopSites(t.by_site) + TopOperators(t.by_operator),
        "avoid .item()/.cpu()/printing tensors inside the step; copy into pinned memory with "
        "non_blocking=True (cudaMemcpyAsync) and read it a step later");
  }

  void PageableCopies() {
    const WindowIndex& index = index_;
    uint64_t count = 0, bytes = 0, time_ns = 0;
    std::map<uint64_t, uint64_t> by_site;
    for (const auto& r : w_.device_records) {
      if (KindOf(r) != DeviceKind::kMemcpy) continue;
      if (r.src_kind != kCuptiMemoryPageable && r.dst_kind != kCuptiMemoryPageable) continue;
      // Attribute to the step of the issuing call when known, else GPU start.
      int64_t call = index.HostCall(r.correlation_id);
      uint64_t t = call != WindowIndex::kNone && r.correlation_id ? w_.host_events[static_cast<size_t>(call)].start_ns
                                                                  : r.start_ns;
      if (StepOf(t) < 0) continue;
      if (call != WindowIndex::kNone && r.correlation_id) ++by_site[sites_.Key(w_.host_events[static_cast<size_t>(call)].stack_id)];
      ++count;
      bytes += r.bytes;
      time_ns += Duration(r.start_ns, r.end_ns);
    }
    if (count == 0) return;
    Add("pageable-copy", "Copies from/to pageable host memory inside steps: staged and synchronous",
        Printf("%llu copies, %s, %s of GPU copy time", static_cast<unsigned long long>(count),
               FormatBytes(static_cast<double>(bytes)).c_str(), FormatDuration(static_cast<double>(time_ns)).c_str()) +
            TopSites(by_site),
        "use pinned host memory (pin_memory=True, cudaMallocHost) so copies can be asynchronous");
  }

  void AllocatorChurn() {
    // Steady state: every step of the window but its first (which may still
    // be warming caches), or the only step.
    std::vector<bool> skip(w_.host_events.size());
    if (w_.steps.size() > 1) {
      for (size_t i = 0; i < w_.host_events.size(); ++i) skip[i] = StepOf(w_.host_events[i].start_ns) == 0;
    }
    CallTally t = Tally([](const auto& e) { return IsSynchronousAllocatorCall(static_cast<ApiId>(e.api)); }, &skip);
    if (t.count == 0) return;
    size_t steady = w_.steps.size() > 1 ? w_.steps.size() - 1 : w_.steps.size();
    Add("allocator-churn", "cudaMalloc/cudaFree in steady-state steps: each call can synchronize the device",
        t.Describe(steady) + " (first step of the window not counted)" + TopSites(t.by_site) +
            TopOperators(t.by_operator),
        "allocate once and reuse buffers, use a caching allocator or stream-ordered cudaMallocAsync");
  }

  // PyTorch's tensors: one allocation site holds most of what the window
  // added at the memory peak (TensorMemoryRow::lines), and a good share of
  // the peak itself.
  void MemorySpike() {
    for (const TensorMemoryRow& r : s_.tensor_memory) {
      if (r.lines.empty() || r.peak_allocated <= r.held_from_before) continue;
      const TensorLineRow& top = r.lines.front();
      uint64_t added = r.peak_allocated - r.held_from_before;
      if (top.bytes < kMemorySpikeMinBytes || static_cast<double>(top.bytes) < kMemorySpikeShareOfAdded * static_cast<double>(added) ||
          static_cast<double>(top.bytes) < kMemorySpikeShareOfPeak * static_cast<double>(r.peak_allocated)) {
        continue;
      }
      std::string step = r.peak_step >= 0 ? Printf(" in step %lld", static_cast<long long>(r.peak_step)) : "";
      // With module paths: the module whose calls allocated the most of what is live then.
      std::string module;
      if (!r.modules.empty() && !r.modules.front().site.empty()) {
        const TensorLineRow& m = r.modules.front();
        module = Printf("; by module, %s allocated %s of it (%.0f%%)", m.site.c_str(),
                        FormatBytes(static_cast<double>(m.bytes)).c_str(),
                        100.0 * static_cast<double>(m.bytes) / static_cast<double>(r.peak_allocated));
      }
      Add("memory-spike", Printf("One allocation site sets GPU %d's memory peak", r.device),
          Printf("PyTorch's tensors peak at %s%s (%s held from before the window); at the peak %s of it (%.0f%%) was "
                 "allocated by %s, in %llu block%s%s",
                 FormatBytes(static_cast<double>(r.peak_allocated)).c_str(), step.c_str(),
                 FormatBytes(static_cast<double>(r.held_from_before)).c_str(), FormatBytes(static_cast<double>(top.bytes)).c_str(),
                 100.0 * static_cast<double>(top.bytes) / static_cast<double>(r.peak_allocated),
                 TensorSiteText(top.site).c_str(), static_cast<unsigned long long>(top.blocks), top.blocks == 1 ? "" : "s",
                 module.c_str()),
          "lower the peak where that site allocates: free or reuse its tensors sooner, shrink them (a smaller "
          "micro-batch; activation checkpointing, torch.utils.checkpoint, around the module that runs it), or move "
          "the work out of the step's peak; the summary's Tensor memory section lists what else is live then");
    }
  }

  // PyTorch's backward pass: the threads autograd ran backward operators
  // on (an operator whose sequence number's forward operator ran on another
  // thread) spend far more time in their outermost operators than the GPU
  // spends on the work they launched.
  void AutogradOverhead() {
    if (operators_.empty()) return;
    const std::vector<NvtxRange>& ranges = RestOf(w_).nvtx_ranges;
    std::set<uint32_t> threads;
    for (const NvtxRange& r : ranges) {
      if (r.op_id == 0 || r.seq < 0) continue;
      uint32_t forward = operators_.ForwardThread(r.seq);
      if (forward != 0 && forward != r.tid) threads.insert(r.tid);
    }
    if (threads.empty()) return;
    uint64_t cpu_ns = 0;
    std::map<uint32_t, uint64_t> cpu_by_name;
    const std::vector<int64_t>& parents = operators_.Parents();
    for (size_t i = 0; i < ranges.size(); ++i) {
      const NvtxRange& r = ranges[i];
      if (r.op_id == 0 || parents[i] >= 0 || threads.count(r.tid) == 0) continue;
      uint64_t ns = Duration(std::max(r.start_ns, s_.span_start_ns), std::min(r.end_ns, s_.span_end_ns));
      cpu_ns += ns;
      cpu_by_name[r.name_id] += ns;
    }
    uint64_t gpu_ns = 0;
    for (const auto& d : w_.device_records) {
      DeviceKind kind = KindOf(d);
      if (kind != DeviceKind::kKernel && kind != DeviceKind::kMemcpy && kind != DeviceKind::kMemset) continue;
      int64_t call = index_.HostCall(d.correlation_id);
      if (call == WindowIndex::kNone || d.correlation_id == 0) continue;
      if (threads.count(w_.host_events[static_cast<size_t>(call)].tid) != 0) gpu_ns += Duration(d.start_ns, d.end_ns);
    }
    uint64_t span = Duration(s_.span_start_ns, s_.span_end_ns);
    if (span == 0 || static_cast<double>(cpu_ns) < kAutogradWindowShare * static_cast<double>(span) ||
        static_cast<double>(cpu_ns) < kAutogradCpuOverGpu * static_cast<double>(gpu_ns)) {
      return;
    }
    std::vector<std::pair<uint64_t, uint32_t>> top;
    for (const auto& [name, ns] : cpu_by_name) top.emplace_back(ns, name);
    std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::string names;
    for (size_t i = 0; i < top.size() && i < 3; ++i) {
      // Autograd's wrapper around each node: the node's name says it.
      std::string_view name = RestOf(w_).String(top[i].second);
      constexpr std::string_view kNodeWrapper = "autograd::engine::evaluate_function: ";
      if (name.substr(0, kNodeWrapper.size()) == kNodeWrapper) name.remove_prefix(kNodeWrapper.size());
      names += (i ? ", " : "") + std::string(name) + " " + FormatDuration(static_cast<double>(top[i].first));
    }
    Add("autograd-overhead", "The backward pass costs the host far more than the GPU: autograd overhead",
        Printf("autograd's thread%s spent %s in operators (%.0f%% of the window), the GPU %s on the work they "
               "launched (%.1fx; threshold >= %.0fx); most host time in: %s",
               threads.size() == 1 ? "" : "s", FormatDuration(static_cast<double>(cpu_ns)).c_str(),
               100.0 * static_cast<double>(cpu_ns) / static_cast<double>(span),
               FormatDuration(static_cast<double>(gpu_ns)).c_str(),
               gpu_ns ? static_cast<double>(cpu_ns) / static_cast<double>(gpu_ns) : 0.0, kAutogradCpuOverGpu,
               names.c_str()),
        "fewer, larger backward operations: torch.compile compiles the backward pass too (fused kernels, "
        "fewer autograd nodes), a CUDA graph replays it without the host, a larger batch gives each node more "
        "work");
  }

  // Where a kernel's work belongs for fusing: the module its operator ran in
  // (module paths recorded), else the Python function that launched it
  // (its call site's; a backward kernel, charged to the line that waits in
  // backward(), belongs to no function it could be fused in). "" when
  // neither is known.
  std::string FusionUnit(uint32_t correlation) {
    int64_t call = index_.HostCall(correlation);
    if (operators_.has_modules()) {
      int64_t module = operators_.ModuleOf(operators_.OfCorrelation(w_, index_, correlation));
      if (module >= 0) {
        std::string_view path = ModulePath(RestOf(w_).String(RestOf(w_).nvtx_ranges[static_cast<size_t>(module)].name_id));
        if (!path.empty()) return "module " + std::string(path);
      }
    }
    if (call == WindowIndex::kNone || correlation == 0) return "";
    uint32_t stack = w_.host_events[static_cast<size_t>(call)].stack_id;
    if (RestOf(w_).python.Via(stack) != 0) return "";
    auto [it, fresh] = function_of_stack_.try_emplace(stack, 0);
    if (fresh) it->second = FunctionFrame(RestOf(w_), stack, PythonUserPrefixes(RestOf(w_)));
    return it->second == 0 ? "" : CallSiteFunctionText(RestOf(w_), it->second);
  }

  // Many short elementwise kernels (PyTorch's elementwise_kernel family)
  // from one module or function: each is a launch and a trip through
  // memory that one fused kernel would share.
  void SmallElementwise() {
    if (w_.steps.empty()) return;
    struct Unit {
      uint64_t kernels = 0, gpu_ns = 0;
      std::vector<uint64_t> durations;
      std::map<uint32_t, uint64_t> by_operator;
    };
    std::map<std::string, Unit> units;
    uint64_t kernels = 0;
    for (const auto& d : w_.device_records) {
      if (KindOf(d) != DeviceKind::kKernel || StepOf(d.start_ns) < 0) continue;
      ++kernels;
      uint64_t ns = Duration(d.start_ns, d.end_ns);
      if (static_cast<double>(ns) >= kShortKernelNs ||
          RestOf(w_).String(d.name_id).find("elementwise_kernel") == std::string::npos) {
        continue;
      }
      std::string unit = FusionUnit(d.correlation_id);
      if (unit.empty()) continue;
      Unit& u = units[unit];
      ++u.kernels;
      u.gpu_ns += ns;
      u.durations.push_back(ns);
      int64_t op = operators_.OfCorrelation(w_, index_, d.correlation_id);
      if (op >= 0) ++u.by_operator[RestOf(w_).nvtx_ranges[static_cast<size_t>(op)].name_id];
    }
    const std::pair<const std::string, Unit>* top = nullptr;
    for (const auto& entry : units) {
      if (top == nullptr || entry.second.kernels > top->second.kernels) top = &entry;
    }
    double steps = static_cast<double>(w_.steps.size());
    if (top == nullptr || static_cast<double>(top->second.kernels) < kElementwisePerStep * steps ||
        static_cast<double>(top->second.kernels) < kElementwiseShareOfKernels * static_cast<double>(kernels)) {
      return;
    }
    const Unit& u = top->second;
    std::vector<uint64_t> durations = u.durations;
    std::string operators = TopThree(u.by_operator, "; operators: ", [this](uint32_t name_id) {
      return RestOf(w_).String(name_id);
    });
    Add("small-elementwise", "Many small elementwise kernels from one place: " + top->first,
        Printf("%.1f elementwise kernels per step under %s each (threshold >= %.0f per step) from %s, %.0f%% of the "
               "window's kernels (threshold >= %.0f%%), median %s, %s of GPU time in all%s",
               static_cast<double>(u.kernels) / steps, FormatDuration(kShortKernelNs).c_str(), kElementwisePerStep,
               top->first.c_str(), 100.0 * static_cast<double>(u.kernels) / static_cast<double>(kernels),
               100.0 * kElementwiseShareOfKernels, FormatDuration(Describe(&durations).median).c_str(),
               FormatDuration(static_cast<double>(u.gpu_ns)).c_str(), operators.c_str()),
        "fuse them: torch.compile that " + std::string(top->first.starts_with("module ") ? "module" : "function") +
            " (Inductor fuses chains of elementwise ops into one kernel), or write the chain with fewer, fused "
            "ops; each launch costs host time and a trip through GPU memory");
  }

  // Collectives nothing overlaps: the GPU waits for peers or transfers.
  void Communication() {
    uint64_t span = Duration(s_.span_start_ns, s_.span_end_ns);
    if (!s_.has_gpu_work || span == 0) return;
    double comm_percent = 100.0 * static_cast<double>(s_.gpu_comm_ns) / static_cast<double>(span);
    if (comm_percent < kCommunicationPercent) return;
    std::string top = "none with its kernel on record";
    if (!s_.collectives.empty() && s_.collectives.front().kernels > 0) {
      const CollectiveRow& r = s_.collectives.front();
      top = Printf("%s of %s B x%llu, avg %s, bus bandwidth %.1f GB/s", r.name.c_str(),
                   Grouped(static_cast<unsigned long long>(r.bytes)).c_str(), static_cast<unsigned long long>(r.count),
                   FormatDuration(r.avg_ns).c_str(), r.busbw_gbps);
    }
    Add("communication", "Communication: the GPU spends much of the window in collectives that no compute overlaps",
        Printf("communication only %.1f%% of %s (threshold >= %.0f%%), overlapped with compute %.1f%%, computing "
               "%.1f%%; top collective by time: %s",
               comm_percent, FormatDuration(static_cast<double>(span)).c_str(), kCommunicationPercent,
               100.0 * static_cast<double>(s_.gpu_overlap_ns) / static_cast<double>(span), s_.compute_busy_percent,
               top.c_str()),
        "a collective's kernel lasts its wait for the last rank plus the transfer: if bus bandwidth is far below "
        "the link's, a rank arrives late (prof merge names it); else overlap communication with compute "
        "(gradient buckets during the backward pass) or communicate less");
  }

  void LaunchLatency() {
    const LatencyStats& l = s_.launch_latency;
    if (l.count == 0 || !s_.has_gpu_work) return;
    if (l.median_ns <= kLaunchLatencyNs || s_.gpu_busy_percent >= kLaunchLatencyBusyPercent) return;
    Add("launch-latency", "Slow launches: work reaches an idle GPU long after it was launched",
        Printf("launch call -> GPU start: median %s, p99 %s, max %s over %llu launches (threshold: median > %s "
               "while GPU busy < %.0f%%; busy %.1f%%)",
               FormatDuration(l.median_ns).c_str(), FormatDuration(l.p99_ns).c_str(),
               FormatDuration(static_cast<double>(l.max_ns)).c_str(), static_cast<unsigned long long>(l.count),
               FormatDuration(kLaunchLatencyNs).c_str(), kLaunchLatencyBusyPercent, s_.gpu_busy_percent),
        "look for stream waits on events, other processes sharing the GPU, or a slow driver path");
  }

  void IdleGaps() {
    uint64_t span = Duration(s_.span_start_ns, s_.span_end_ns);
    if (span == 0 || s_.idle_gaps.empty()) return;
    double percent = 100.0 * static_cast<double>(s_.idle_gap_total_ns) / static_cast<double>(span);
    if (percent < kIdleGapWindowPercent) return;
    std::string largest;
    // What the host did in the gaps named, each kind explained once.
    bool none = false, sync = false, copy = false, alloc = false;
    std::string other;
    for (size_t i = 0; i < s_.idle_gaps.size() && i < 3; ++i) {
      const IdleGap& g = s_.idle_gaps[i];
      largest += Printf("%s%s at +%s (host: %s)", i ? "; " : "", FormatDuration(double(g.end_ns - g.start_ns)).c_str(),
                        FormatDuration(double(g.start_ns - s_.span_start_ns)).c_str(),
                        g.host_activity.empty() ? "no CUDA call" : g.host_activity.c_str());
      ApiId id = ApiId::kCount;
      if (g.host_activity.empty() || !ApiFromName(g.host_activity, &id)) {
        none = none || g.host_activity.empty();
        if (!g.host_activity.empty() && other.find(g.host_activity) == std::string::npos) {
          other += (other.empty() ? "" : ", ") + g.host_activity;
        }
        continue;
      }
      switch (ApiKindOf(id)) {
        case ApiKind::kSync: sync = true; break;
        case ApiKind::kMemcpy: case ApiKind::kMemset: copy = true; break;
        case ApiKind::kAlloc: case ApiKind::kFree: alloc = true; break;
        default:
          if (other.find(g.host_activity) == std::string::npos) other += (other.empty() ? "" : ", ") + g.host_activity;
      }
    }
    std::string advice;
    auto explain = [&advice](bool when, const std::string& text) {
      if (when) advice += (advice.empty() ? "" : "; ") + text;
    };
    explain(none, "'no CUDA call': the host was busy elsewhere (data loading, Python, I/O): overlap it with GPU work "
                  "(DataLoader workers, prefetching)");
    explain(sync, "a synchronize: the host waited while the GPU had nothing queued, so the next work was launched "
                  "only after the wait; launch it before synchronizing, or synchronize less often");
    explain(copy, "a copy or memset call: a synchronous or pageable copy holds the host (staging through a bounce "
                  "buffer); use pinned memory and cudaMemcpyAsync");
    explain(alloc, "an allocator call: cudaMalloc/cudaFree go to the driver and can synchronize; allocate once and "
                   "reuse buffers (a caching allocator, cudaMallocAsync)");
    explain(!other.empty(), "the host spent the gap inside " + other +
                                ": move such calls out of the loop, or look at why they take this long");
    Add("idle-gaps", "The GPU sits idle for long stretches",
        Printf("%zu gaps of >= %s add up to %s (%.1f%% of the window; threshold %.0f%%); largest: %s",
               s_.idle_gaps.size(), FormatDuration(double(kIdleGapMinNs)).c_str(),
               FormatDuration(double(s_.idle_gap_total_ns)).c_str(), percent, kIdleGapWindowPercent, largest.c_str()),
        advice);
  }

  const W& w_;
  const Summary& s_;
  const WindowIndex& index_;
  mutable CallSites sites_;  // caches per stack id
  OperatorIndex operators_;
  std::unordered_map<uint32_t, uint32_t> function_of_stack_;  // FusionUnit's: stack id -> FunctionFrame
  std::vector<Finding> out_;
};

}  // namespace

std::vector<Finding> ComputeFindings(const Window& window, const Summary& summary, const WindowIndex& index) {
  return FindingsBuilder<Window>(window, summary, index).Build();
}

std::vector<Finding> ComputeFindings(const CompactWindow& window, const Summary& summary, const WindowIndex& index) {
  return FindingsBuilder<CompactWindow>(window, summary, index).Build();
}

std::vector<Finding> ComputeFindings(const Window& window, const Summary& summary) {
  return ComputeFindings(window, summary, WindowIndex(window));
}

}  // namespace prof
