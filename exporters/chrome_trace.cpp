// Mapping from the event model to Kineto's trace events:
//
//   HostEvent                      X cuda_runtime / cuda_driver   pid = process, tid = OS thread
//   DeviceRecord kRuntime/Driver   X cuda_runtime / cuda_driver   (only when no HostEvent has its correlation)
//   DeviceRecord kernel/memcpy/..  X kernel / gpu_memcpy / gpu_memset / cuda_sync   pid = device, tid = stream
//   StepSpan                       X user_annotation "ProfilerStep#N" on the main thread (tid = pid)
//   NvtxRange                      X user_annotation on its thread, and X gpu_user_annotation per
//                                  stream spanning the GPU work launched inside it
//   launch -> GPU work             s/f ac2g flow, id = correlation
//   AllocSample                    i "[memory]" (PyTorch's allocator event) + C counter per device
//
// Every X event on one (pid, tid) must nest or be disjoint (Perfetto and
// HTA rely on it), so events are emitted per track in start order through a
// stack of open slices; an event that would end after its enclosing slice is
// clipped to that slice's end (its true duration stays in the summary).
#include "exporters/chrome_trace.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "exporters/cuda_names.h"
#include "exporters/demangle.h"
#include "exporters/json_writer.h"
#include "exporters/occupancy.h"
#include "exporters/window_index.h"

namespace prof {
namespace {

// Kineto sorts GPU processes after CPU ones with this offset.
constexpr int64_t kGpuSortIndexBase = 16777216;

enum class Source : uint8_t { kStep, kNvtx, kGpuAnnotation, kHost, kApiRecord, kDevice };

// One X event to emit; `index` points into the Source's vector.
struct Slice {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t index;
  Source source;
};

// A GPU projection of an NVTX range on one stream.
struct GpuAnnotation {
  uint32_t name_id;
  uint32_t device;
  uint32_t stream;
  uint64_t start_ns;
  uint64_t end_ns;
};

uint64_t TrackKey(bool device, uint64_t pid, uint64_t tid) {
  return (uint64_t{device} << 63) | ((pid & 0x7FFFFFFF) << 32) | (tid & 0xFFFFFFFF);
}

class TraceWriter {
 public:
  TraceWriter(const Window& w, std::string_view trace_name, ByteSink& sink)
      : w_(w), trace_name_(trace_name), out_(sink), index_(w), names_(w) {}

  bool Write() {
    ComputeBase();
    AdjustSteps();
    BuildGpuAnnotations();
    out_.Raw("{\n");
    out_.Key("schemaVersion");
    out_.Int(1);
    out_.Raw(",\n");
    WriteDeviceProperties();
    WriteDistributedInfo();
    WriteLibprofInfo();
    out_.Key("traceEvents");
    out_.Raw("[\n");
    WriteMetadataEvents();
    WriteSlices();
    WriteMemory();
    out_.Raw("\n],\n");
    out_.Key("traceName");
    out_.String(trace_name_);
    out_.Raw(",\n");
    out_.Key("displayTimeUnit");
    out_.String("ms");
    out_.Raw(",\n");
    out_.Key("baseTimeNanoseconds");
    out_.Int(static_cast<int64_t>(base_ns_) + w_.meta.epoch_offset_ns);
    out_.Raw("\n}\n");
    return out_.Finish();
  }

 private:
  // --- time ---------------------------------------------------------------

  // The earliest known time in the window, so no timestamp is negative.
  void ComputeBase() {
    uint64_t base = UINT64_MAX;
    auto see = [&base](uint64_t t) {
      if (t != 0 && t < base) base = t;
    };
    see(w_.meta.start_ns);
    for (const auto& e : w_.host_events) see(e.start_ns);
    for (const auto& r : w_.device_records) see(r.start_ns);
    for (const auto& s : w_.steps) see(s.start_ns);
    for (const auto& n : w_.nvtx_ranges) see(n.start_ns);
    for (const auto& a : w_.alloc_samples) see(a.ts_ns);
    base_ns_ = base == UINT64_MAX ? 0 : base;
  }
  void Ts(uint64_t ns) { out_.Micros(ns > base_ns_ ? ns - base_ns_ : 0); }
  int64_t Rel(uint64_t ns) const { return static_cast<int64_t>(ns) - static_cast<int64_t>(base_ns_); }

  // A step marker (a sync's return, a launch) may land inside the call that
  // made it; move such boundaries to the call's end so steps still contain
  // the main thread's calls rather than cut through them.
  void AdjustSteps() {
    steps_ = w_.steps;
    uint32_t main_tid = static_cast<uint32_t>(w_.meta.pid);
    size_t j = 0;
    for (const HostEvent& e : w_.host_events) {
      if (e.tid != main_tid) continue;
      while (j < steps_.size() && steps_[j].end_ns <= e.start_ns) ++j;
      if (j == steps_.size()) break;
      if (steps_[j].end_ns < e.end_ns && steps_[j].start_ns <= e.start_ns) {
        steps_[j].end_ns = e.end_ns;
        if (j + 1 < steps_.size() && steps_[j + 1].start_ns < e.end_ns) steps_[j + 1].start_ns = e.end_ns;
      }
    }
    for (size_t k = 1; k < steps_.size(); ++k) {  // keep them ordered and non-inverted
      steps_[k].start_ns = std::max(steps_[k].start_ns, steps_[k - 1].end_ns);
      steps_[k].end_ns = std::max(steps_[k].end_ns, steps_[k].start_ns);
    }
  }

  // For each NVTX range: per (device, stream), the span of GPU work whose
  // launch happened on the range's thread inside the range (Kineto's
  // gpu_user_annotation).
  void BuildGpuAnnotations() {
    for (const NvtxRange& range : w_.nvtx_ranges) {
      size_t first_annotation = gpu_annotations_.size();
      auto it = std::lower_bound(w_.host_events.begin(), w_.host_events.end(), range.start_ns,
                                 [](const HostEvent& e, uint64_t t) { return e.start_ns < t; });
      for (; it != w_.host_events.end() && it->start_ns < range.end_ns; ++it) {
        if (it->tid != range.tid || it->correlation_id == 0) continue;
        int64_t work = index_.FirstWork(it->correlation_id);
        if (work == WindowIndex::kNone) continue;
        const DeviceRecord& r = w_.device_records[static_cast<size_t>(work)];
        if (KindOf(r) == DeviceKind::kSync) continue;
        bool merged = false;
        for (size_t k = first_annotation; k < gpu_annotations_.size(); ++k) {
          GpuAnnotation& a = gpu_annotations_[k];
          if (a.device == r.device_id && a.stream == r.stream_id) {
            a.start_ns = std::min(a.start_ns, r.start_ns);
            a.end_ns = std::max(a.end_ns, r.end_ns);
            merged = true;
          }
        }
        if (!merged) gpu_annotations_.push_back({range.name_id, r.device_id, r.stream_id, r.start_ns, r.end_ns});
      }
    }
  }

  // --- header -------------------------------------------------------------

  void WriteDeviceProperties() {
    out_.Key("deviceProperties");
    out_.Char('[');
    for (size_t i = 0; i < w_.devices.size(); ++i) {
      const DeviceProps& d = w_.devices[i];
      out_.Raw(i ? ",\n  {" : "\n  {");
      out_.Key("id"); out_.Int(d.id);
      out_.Raw(", "); out_.Key("name"); out_.String(d.name);
      out_.Raw(", "); out_.Key("totalGlobalMem"); out_.UInt(d.total_global_mem);
      out_.Raw(", "); out_.Key("computeMajor"); out_.Int(d.compute_major);
      out_.Raw(", "); out_.Key("computeMinor"); out_.Int(d.compute_minor);
      out_.Raw(", "); out_.Key("maxThreadsPerBlock"); out_.Int(d.max_threads_per_block);
      out_.Raw(", "); out_.Key("maxThreadsPerMultiprocessor"); out_.Int(d.max_threads_per_sm);
      out_.Raw(", "); out_.Key("maxBlocksPerMultiprocessor"); out_.Int(d.max_blocks_per_sm);
      out_.Raw(", "); out_.Key("regsPerBlock"); out_.Int(d.max_regs_per_block);
      out_.Raw(", "); out_.Key("regsPerMultiprocessor"); out_.Int(d.max_regs_per_sm);
      out_.Raw(", "); out_.Key("warpSize"); out_.Int(d.warp_size);
      out_.Raw(", "); out_.Key("sharedMemPerBlock"); out_.Int(d.max_shared_per_block);
      out_.Raw(", "); out_.Key("sharedMemPerMultiprocessor"); out_.Int(d.max_shared_per_sm);
      out_.Raw(", "); out_.Key("numSms"); out_.Int(d.sm_count);
      out_.Char('}');
    }
    out_.Raw("],\n");
  }

  void WriteDistributedInfo() {
    out_.Key("distributedInfo");
    out_.Char('{');
    out_.Key("rank"); out_.Int(w_.meta.rank);
    out_.Raw(", "); out_.Key("world_size"); out_.Int(w_.meta.world_size);
    out_.Raw("},\n");
  }

  void WriteLibprofInfo() {
    const WindowMeta& m = w_.meta;
    out_.Key("libprof");
    out_.Raw("{\n  ");
    out_.Key("version"); out_.String(m.libprof_version);
    out_.Raw(",\n  "); out_.Key("name"); out_.String(m.name);
    out_.Raw(",\n  "); out_.Key("hostname"); out_.String(m.hostname);
    out_.Raw(",\n  "); out_.Key("pid"); out_.Int(m.pid);
    out_.Raw(",\n  "); out_.Key("rank_known"); out_.Bool(m.rank_known);
    out_.Raw(",\n  "); out_.Key("window");
    out_.Char('{');
    out_.Key("first_step"); out_.UInt(m.first_step);
    out_.Raw(", "); out_.Key("last_step"); out_.UInt(m.last_step);
    out_.Raw(", "); out_.Key("start_ns"); out_.Int(static_cast<int64_t>(m.start_ns) + m.epoch_offset_ns);
    out_.Raw(", "); out_.Key("end_ns"); out_.Int(static_cast<int64_t>(m.end_ns) + m.epoch_offset_ns);
    out_.Raw(", "); out_.Key("partial"); out_.Bool(m.partial);
    out_.Raw(", "); out_.Key("partial_reason"); out_.String(m.partial_reason);
    out_.Char('}');
    out_.Raw(",\n  "); out_.Key("cupti_mode"); out_.String(m.cupti_mode);
    out_.Raw(",\n  "); out_.Key("gpu_timings"); out_.Bool(m.has_gpu_timings);
    out_.Raw(",\n  "); out_.Key("cuda_runtime_version"); out_.Int(m.cuda_runtime_version);
    out_.Raw(",\n  "); out_.Key("cuda_driver_version"); out_.Int(m.cuda_driver_version);
    out_.Raw(",\n  "); out_.Key("cupti_api_version"); out_.UInt(m.cupti_api_version);
    out_.Raw(",\n  "); out_.Key("losses");
    const LossCounts& l = m.losses;
    out_.Char('{');
    out_.Key("host_events_dropped"); out_.UInt(l.host_events_dropped);
    out_.Raw(", "); out_.Key("device_records_dropped"); out_.UInt(l.device_records_dropped);
    out_.Raw(", "); out_.Key("cupti_records_dropped"); out_.UInt(l.cupti_records_dropped);
    out_.Raw(", "); out_.Key("device_records_missing"); out_.UInt(l.device_records_missing);
    out_.Raw(", "); out_.Key("unknown_activity_kinds"); out_.UInt(l.unknown_activity_kinds);
    out_.Raw(", "); out_.Key("alloc_samples_dropped"); out_.UInt(l.alloc_samples_dropped);
    out_.Char('}');
    // Exact step spans and what was still allocated: `prof summary` rebuilds
    // the window from these (ns relative to baseTimeNanoseconds).
    out_.Raw(",\n  "); out_.Key("steps");
    out_.Char('[');
    for (size_t i = 0; i < w_.steps.size(); ++i) {
      const StepSpan& st = w_.steps[i];
      out_.Raw(i ? ",[" : "[");
      out_.UInt(st.step); out_.Char(','); out_.Int(Rel(st.start_ns)); out_.Char(','); out_.Int(Rel(st.end_ns));
      out_.Char(']');
    }
    out_.Char(']');
    out_.Raw(",\n  "); out_.Key("live_at_end");
    out_.Raw("{\"columns\":[\"ptr\",\"bytes\",\"alloc_ns\",\"api\",\"device\",\"mem_kind\"],\"rows\":[");
    for (size_t i = 0; i < w_.live_at_end.size(); ++i) {
      const LiveAllocation& a = w_.live_at_end[i];
      out_.Raw(i ? ",[" : "[");
      out_.UInt(a.ptr); out_.Char(','); out_.UInt(a.bytes); out_.Char(','); out_.Int(Rel(a.alloc_ns));
      out_.Raw(",\""); out_.Raw(ApiName(static_cast<ApiId>(a.api))); out_.Raw("\",");
      out_.Int(a.device); out_.Char(','); out_.UInt(a.mem_kind); out_.Char(']');
    }
    out_.Raw("]}");
    out_.Raw(",\n  "); out_.Key("config");
    out_.Char('{');
    for (size_t i = 0; i < m.config.size(); ++i) {
      if (i) out_.Raw(", ");
      out_.String(m.config[i].first);
      out_.Char(':');
      out_.String(m.config[i].second);
    }
    out_.Raw("}\n},\n");
  }

  // --- events -------------------------------------------------------------

  void BeginEvent() {
    out_.Raw(first_event_ ? "  {" : ",\n  {");
    first_event_ = false;
  }

  void Metadata(const char* name, int64_t pid, int64_t tid, const char* arg, std::string_view value) {
    BeginEvent();
    out_.Raw("\"ph\":\"M\",\"name\":\"");
    out_.Raw(name);
    out_.Raw("\",\"pid\":"); out_.Int(pid);
    out_.Raw(",\"tid\":"); out_.Int(tid);
    out_.Raw(",\"ts\":0.000,\"args\":{\""); out_.Raw(arg); out_.Raw("\":");
    out_.String(value);
    out_.Raw("}}");
  }
  void MetadataInt(const char* name, int64_t pid, int64_t tid, const char* arg, int64_t value) {
    BeginEvent();
    out_.Raw("\"ph\":\"M\",\"name\":\"");
    out_.Raw(name);
    out_.Raw("\",\"pid\":"); out_.Int(pid);
    out_.Raw(",\"tid\":"); out_.Int(tid);
    out_.Raw(",\"ts\":0.000,\"args\":{\""); out_.Raw(arg); out_.Raw("\":");
    out_.Int(value);
    out_.Raw("}}");
  }

  std::string ThreadLabel(uint32_t tid) const {
    for (const auto& [id, name] : w_.thread_names) {
      if (id == tid) return "thread " + std::to_string(tid) + " (" + name + ")";
    }
    return "thread " + std::to_string(tid);
  }

  void WriteMetadataEvents() {
    const int64_t pid = w_.meta.pid;
    std::string process = w_.meta.name.empty() ? "libprof" : w_.meta.name;
    Metadata("process_name", pid, 0, "name", process);
    Metadata("process_labels", pid, 0, "labels", "CPU");
    MetadataInt("process_sort_index", pid, 0, "sort_index", pid);

    std::vector<uint32_t> threads{static_cast<uint32_t>(pid)};
    for (const auto& e : w_.host_events) threads.push_back(e.tid);
    for (const auto& n : w_.nvtx_ranges) threads.push_back(n.tid);
    for (const auto& a : w_.alloc_samples) threads.push_back(a.tid);
    for (const auto& r : w_.device_records) {
      if (IsApiRecord(r)) threads.push_back(r.thread_id);
    }
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (uint32_t tid : threads) {
      Metadata("thread_name", pid, tid, "name", ThreadLabel(tid));
      MetadataInt("thread_sort_index", pid, tid, "sort_index", tid);
    }

    std::vector<uint64_t> streams;  // device << 32 | stream
    for (const auto& d : w_.devices) streams.push_back(uint64_t(uint32_t(d.id)) << 32 | kCuptiInvalidStream);
    for (const auto& r : w_.device_records) {
      if (IsGpuWork(KindOf(r))) streams.push_back(uint64_t{r.device_id} << 32 | StreamTid(r));
    }
    for (const auto& a : w_.alloc_samples) {
      if (a.device >= 0) streams.push_back(uint64_t(uint32_t(a.device)) << 32 | kCuptiInvalidStream);
    }
    std::sort(streams.begin(), streams.end());
    streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
    int64_t last_device = -1;
    for (uint64_t key : streams) {
      int64_t device = static_cast<int64_t>(key >> 32);
      uint32_t stream = static_cast<uint32_t>(key);
      if (device != last_device) {
        std::string label = "GPU " + std::to_string(device);
        Metadata("process_name", device, 0, "name", process);
        Metadata("process_labels", device, 0, "labels", label);
        MetadataInt("process_sort_index", device, 0, "sort_index", kGpuSortIndexBase + device);
        last_device = device;
      }
      if (stream == kCuptiInvalidStream) continue;
      Metadata("thread_name", device, stream, "name", "stream " + std::to_string(stream));
      MetadataInt("thread_sort_index", device, stream, "sort_index", stream);
    }
  }

  // Synchronization records without a stream (context sync) go on tid 0.
  static uint32_t StreamTid(const DeviceRecord& r) {
    return r.stream_id == kCuptiInvalidStream ? 0 : r.stream_id;
  }

  // Start order; on equal starts the longer (enclosing) slice first, and
  // steps/ranges before the calls they contain.
  static bool Before(const Slice& a, const Slice& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    return a.source < b.source;
  }

  // `bulk` (host events or device records: already in start order from the
  // session) merged with the few `extra` slices; sorting only what is not
  // already sorted keeps this linear for a sealed window.
  static std::vector<Slice> Ordered(std::vector<Slice> bulk, std::vector<Slice> extra) {
    if (!std::is_sorted(bulk.begin(), bulk.end(), Before)) std::sort(bulk.begin(), bulk.end(), Before);
    if (!std::is_sorted(extra.begin(), extra.end(), Before)) std::sort(extra.begin(), extra.end(), Before);
    std::vector<Slice> out(bulk.size() + extra.size());
    std::merge(bulk.begin(), bulk.end(), extra.begin(), extra.end(), out.begin(), Before);
    return out;
  }

  // Host tracks and GPU tracks never share a (pid, tid), so each side is
  // ordered on its own; only the order within a track matters for nesting.
  void WriteSlices() {
    std::vector<Slice> host, host_extra, device, device_extra;
    host.reserve(w_.host_events.size());
    for (uint32_t i = 0; i < w_.host_events.size(); ++i) {
      host.push_back({w_.host_events[i].start_ns, w_.host_events[i].end_ns, i, Source::kHost});
    }
    for (uint32_t i = 0; i < steps_.size(); ++i) {
      host_extra.push_back({steps_[i].start_ns, steps_[i].end_ns, i, Source::kStep});
    }
    for (uint32_t i = 0; i < w_.nvtx_ranges.size(); ++i) {
      host_extra.push_back({w_.nvtx_ranges[i].start_ns, w_.nvtx_ranges[i].end_ns, i, Source::kNvtx});
    }
    device.reserve(w_.device_records.size());
    for (uint32_t i = 0; i < w_.device_records.size(); ++i) {
      const DeviceRecord& r = w_.device_records[i];
      if (IsApiRecord(r)) {
        if (index_.ApiRecordShown(i)) host_extra.push_back({r.start_ns, r.end_ns, i, Source::kApiRecord});
      } else if (IsGpuWork(KindOf(r))) {
        device.push_back({r.start_ns, r.end_ns, i, Source::kDevice});
      }
    }
    for (uint32_t i = 0; i < gpu_annotations_.size(); ++i) {
      device_extra.push_back({gpu_annotations_[i].start_ns, gpu_annotations_[i].end_ns, i, Source::kGpuAnnotation});
    }
    // Once the sink failed (disk full) nothing more can land: stop early.
    for (const Slice& s : Ordered(std::move(host), std::move(host_extra))) {
      if (!out_.ok()) return;
      Emit(s);
    }
    for (const Slice& s : Ordered(std::move(device), std::move(device_extra))) {
      if (!out_.ok()) return;
      Emit(s);
    }
  }

  void Emit(const Slice& s) {
    switch (s.source) {
      case Source::kStep: EmitStep(steps_[s.index]); break;
      case Source::kNvtx: EmitNvtx(w_.nvtx_ranges[s.index]); break;
      case Source::kGpuAnnotation: EmitGpuAnnotation(gpu_annotations_[s.index]); break;
      case Source::kHost: EmitHostEvent(s.index); break;
      case Source::kApiRecord: EmitApiRecord(s.index); break;
      case Source::kDevice: EmitDeviceRecord(w_.device_records[s.index]); break;
    }
  }

  // Clips [start, end) to the enclosing open slice on its track; returns the
  // end to write.
  uint64_t Nest(uint64_t key, uint64_t start_ns, uint64_t end_ns) {
    if (end_ns < start_ns) end_ns = start_ns;
    if (key != last_key_) {
      stack_ = &tracks_[key];
      last_key_ = key;
    }
    std::vector<uint64_t>& open = *stack_;
    while (!open.empty() && open.back() <= start_ns) open.pop_back();
    // A zero-length slice at a parent's end is still inside it.
    if (!open.empty() && end_ns > open.back()) end_ns = open.back();
    open.push_back(end_ns);
    return end_ns;
  }

  // `"ph":"X","cat":"<cat>","name":<name>,"pid":..,"tid":..,"ts":..,"dur":..`
  void SliceHead(const char* cat, std::string_view name, bool device, int64_t pid, int64_t tid, uint64_t start_ns,
                 uint64_t end_ns) {
    uint64_t nested_end_ns = Nest(TrackKey(device, static_cast<uint64_t>(pid), static_cast<uint64_t>(tid)), start_ns, end_ns);
    unclipped_dur_ns_ = nested_end_ns < end_ns ? end_ns - start_ns : 0;
    end_ns = nested_end_ns;
    BeginEvent();
    out_.Raw("\"ph\":\"X\",\"cat\":\"");
    out_.Raw(cat);
    out_.Raw("\",\"name\":");
    out_.String(name);
    out_.Raw(",\"pid\":"); out_.Int(pid);
    out_.Raw(",\"tid\":"); out_.Int(tid);
    out_.Raw(",\"ts\":"); Ts(start_ns);
    out_.Raw(",\"dur\":"); out_.Micros(end_ns - start_ns);
  }

  // Closes a slice's args; a clipped slice keeps its true duration there
  // (`prof summary` reads it back).
  void EndArgs() {
    if (unclipped_dur_ns_ != 0) {
      out_.Raw(",\"unclipped dur\":");
      out_.Micros(unclipped_dur_ns_);
    }
    out_.Raw("}}");
  }

  void EmitStep(const StepSpan& s) {
    step_name_.assign("ProfilerStep#");
    step_name_ += std::to_string(s.step);
    SliceHead("user_annotation", step_name_, false, w_.meta.pid, w_.meta.pid, s.start_ns, s.end_ns);
    out_.Raw(",\"args\":{\"step\":"); out_.UInt(s.step); EndArgs();
  }

  void EmitNvtx(const NvtxRange& n) {
    SliceHead("user_annotation", w_.String(n.name_id), false, w_.meta.pid, n.tid, n.start_ns, n.end_ns);
    out_.Raw(",\"args\":{\"source\":\"nvtx\",\"depth\":"); out_.UInt(n.depth); EndArgs();
  }

  void EmitGpuAnnotation(const GpuAnnotation& a) {
    SliceHead("gpu_user_annotation", w_.String(a.name_id), true, a.device, a.stream, a.start_ns, a.end_ns);
    out_.Raw(",\"args\":{\"device\":"); out_.UInt(a.device);
    out_.Raw(",\"stream\":"); out_.UInt(a.stream); EndArgs();
  }

  // Starts the ac2g flow of `correlation` here when GPU work is on record.
  void FlowStart(uint32_t correlation, int64_t tid, uint64_t ts_ns) {
    if (correlation == 0 || index_.FirstWork(correlation) == WindowIndex::kNone) return;
    BeginEvent();
    out_.Raw("\"ph\":\"s\",\"id\":"); out_.UInt(correlation);
    out_.Raw(",\"pid\":"); out_.Int(w_.meta.pid);
    out_.Raw(",\"tid\":"); out_.Int(tid);
    out_.Raw(",\"ts\":"); Ts(ts_ns);
    out_.Raw(",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
  }

  void EmitHostEvent(uint32_t index) {
    const HostEvent& e = w_.host_events[index];
    bool driver = (e.flags & kHostEventDriver) != 0;
    SliceHead(driver ? "cuda_driver" : "cuda_runtime", ApiName(static_cast<ApiId>(e.api)), false, w_.meta.pid,
              e.tid, e.start_ns, e.end_ns);
    out_.Raw(",\"args\":{\"correlation\":"); out_.UInt(e.correlation_id);
    if (e.bytes != 0) { out_.Raw(",\"bytes\":"); out_.UInt(e.bytes); }
    if (e.device >= 0) { out_.Raw(",\"device\":"); out_.Int(e.device); }
    if (e.result != 0) { out_.Raw(",\"result\":"); out_.Int(e.result); }
    if (e.flags & kHostEventViaProcAddr) out_.Raw(",\"via cuGetProcAddress\":true");
    if (ApiKindOf(static_cast<ApiId>(e.api)) == ApiKind::kMemcpy) {
      out_.Raw(",\"cudaMemcpyKind\":");
      out_.UInt(e.copy_kind);
    }
    EndArgs();
    // One start per correlation: the call the index maps it to.
    if (index_.HostCall(e.correlation_id) == int64_t{index}) FlowStart(e.correlation_id, e.tid, e.start_ns);
  }

  void EmitApiRecord(uint32_t index) {
    const DeviceRecord& r = w_.device_records[index];
    const char* cat = KindOf(r) == DeviceKind::kDriverApi ? "cuda_driver" : "cuda_runtime";
    SliceHead(cat, w_.String(r.name_id), false, w_.meta.pid, r.thread_id, r.start_ns, r.end_ns);
    out_.Raw(",\"args\":{\"cbid\":"); out_.UInt(r.cbid);
    out_.Raw(",\"correlation\":"); out_.UInt(r.correlation_id);
    out_.Raw(",\"source\":\"cupti\"");
    EndArgs();
    if (index_.ApiRecord(r.correlation_id) == int64_t{index}) FlowStart(r.correlation_id, r.thread_id, r.start_ns);
  }

  const DeviceProps* Props(uint32_t device) const {
    for (const DeviceProps& d : w_.devices) {
      if (static_cast<uint32_t>(d.id) == device) return &d;
    }
    return nullptr;
  }

  const std::string& CopyName(const DeviceRecord& r) {
    bool memset = KindOf(r) == DeviceKind::kMemset;
    size_t key = memset ? 1000 + (r.dst_kind & 0xF) : (r.copy_kind & 0xF) * 256 + (r.src_kind & 0xF) * 16 + (r.dst_kind & 0xF);
    auto [it, inserted] = copy_names_.try_emplace(key);
    if (inserted) it->second = memset ? MemsetName(r) : MemcpyName(r);
    return it->second;
  }

  void CommonDeviceArgs(const DeviceRecord& r) {
    out_.Raw(",\"args\":{\"device\":"); out_.UInt(r.device_id);
    out_.Raw(",\"context\":"); out_.UInt(r.context_id);
    out_.Raw(",\"stream\":"); out_.Int(r.stream_id == kCuptiInvalidStream ? -1 : int64_t{r.stream_id});
    out_.Raw(",\"correlation\":"); out_.UInt(r.correlation_id);
    if (r.graph_id != 0) { out_.Raw(",\"graph id\":"); out_.UInt(r.graph_id); }
  }

  void EmitDeviceRecord(const DeviceRecord& r) {
    int64_t tid = StreamTid(r);
    switch (KindOf(r)) {
      case DeviceKind::kKernel: {
        SliceHead("kernel", names_(r.name_id), true, r.device_id, tid, r.start_ns, r.end_ns);
        CommonDeviceArgs(r);
        out_.Raw(",\"registers per thread\":"); out_.UInt(r.registers_per_thread);
        out_.Raw(",\"shared memory\":"); out_.UInt(uint64_t{r.static_shared_bytes} + r.dynamic_shared_bytes);
        Occupancy occ;
        const DeviceProps* props = Props(r.device_id);
        if (props && ComputeOccupancy(r, *props, &occ)) {
          out_.Raw(",\"blocks per SM\":"); out_.Double(occ.blocks_per_sm);
          out_.Raw(",\"warps per SM\":"); out_.Double(occ.warps_per_sm);
        }
        out_.Raw(",\"grid\":["); out_.Int(r.grid[0]); out_.Char(','); out_.Int(r.grid[1]); out_.Char(','); out_.Int(r.grid[2]);
        out_.Raw("],\"block\":["); out_.Int(r.block[0]); out_.Char(','); out_.Int(r.block[1]); out_.Char(','); out_.Int(r.block[2]);
        out_.Char(']');
        if (props && occ.has_achieved) {
          out_.Raw(",\"est. achieved occupancy %\":");
          out_.Int(static_cast<int64_t>(occ.achieved_percent + 0.5));
        }
        EndArgs();
        break;
      }
      case DeviceKind::kMemcpy:
      case DeviceKind::kMemset: {
        bool copy = KindOf(r) == DeviceKind::kMemcpy;
        SliceHead(copy ? "gpu_memcpy" : "gpu_memset", CopyName(r), true, r.device_id, tid, r.start_ns, r.end_ns);
        CommonDeviceArgs(r);
        out_.Raw(",\"bytes\":"); out_.UInt(r.bytes);
        uint64_t dur = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
        out_.Raw(",\"memory bandwidth (GB/s)\":");  // bytes per ns = GB/s
        out_.Double(dur ? static_cast<double>(r.bytes) / static_cast<double>(dur) : 0.0);
        EndArgs();
        break;
      }
      case DeviceKind::kSync: {
        const char* kind = SyncKindName(r.cbid);
        SliceHead("cuda_sync", kind, true, r.device_id, tid, r.start_ns, r.end_ns);
        CommonDeviceArgs(r);
        out_.Raw(",\"cuda_sync_kind\":\""); out_.Raw(kind); out_.Char('"');
        EndArgs();
        break;
      }
      default:
        return;
    }
    // The flow's finish, bound to the enclosing slice ("bp":"e"), only on
    // the correlation's first GPU work so each start has one finish.
    if (r.correlation_id != 0 && index_.FirstWork(r.correlation_id) == &r - w_.device_records.data() &&
        (index_.HostCall(r.correlation_id) != WindowIndex::kNone ||
         index_.ApiRecord(r.correlation_id) != WindowIndex::kNone)) {
      BeginEvent();
      out_.Raw("\"ph\":\"f\",\"id\":"); out_.UInt(r.correlation_id);
      out_.Raw(",\"pid\":"); out_.UInt(r.device_id);
      out_.Raw(",\"tid\":"); out_.Int(tid);
      out_.Raw(",\"ts\":"); Ts(r.start_ns);
      out_.Raw(",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
    }
  }

  // PyTorch's allocator events, plus a counter of live bytes per device.
  void WriteMemory() {
    static constexpr const char* kKindNames[] = {"device", "host pinned", "managed", "async pool", "vmm"};
    for (const AllocSample& a : w_.alloc_samples) {
      BeginEvent();
      out_.Raw("\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":");
      out_.Int(w_.meta.pid);
      out_.Raw(",\"tid\":"); out_.UInt(a.tid);
      out_.Raw(",\"ts\":"); Ts(a.ts_ns);
      out_.Raw(",\"args\":{\"Addr\":"); out_.UInt(a.ptr);
      out_.Raw(",\"Bytes\":"); out_.Int(a.delta_bytes);
      out_.Raw(",\"Total Allocated\":"); out_.UInt(a.total_bytes);
      // No caching allocator at the CUDA API level: reserved = allocated.
      out_.Raw(",\"Total Reserved\":"); out_.UInt(a.total_bytes);
      out_.Raw(",\"Device Id\":"); out_.Int(a.device);
      out_.Raw(",\"Device Type\":"); out_.Int(a.device >= 0 ? 1 : 0);  // c10::DeviceType CUDA / CPU
      out_.Raw(",\"api\":\""); out_.Raw(ApiName(static_cast<ApiId>(a.api)));
      out_.Raw("\",\"mem kind\":"); out_.UInt(a.mem_kind); out_.Raw("}}");

      BeginEvent();
      const char* kind = a.mem_kind < std::size(kKindNames) ? kKindNames[a.mem_kind] : "other";
      out_.Raw("\"ph\":\"C\",\"name\":\"allocated bytes (");
      out_.Raw(kind);
      out_.Raw(")\",\"pid\":");
      out_.Int(a.device >= 0 ? int64_t{a.device} : int64_t{w_.meta.pid});
      out_.Raw(",\"tid\":0,\"ts\":"); Ts(a.ts_ns);
      out_.Raw(",\"args\":{\"bytes\":"); out_.UInt(a.total_bytes); out_.Raw("}}");
    }
  }

  const Window& w_;
  std::string_view trace_name_;
  JsonWriter out_;
  WindowIndex index_;
  DisplayNames names_;
  uint64_t base_ns_ = 0;
  std::vector<StepSpan> steps_;
  std::vector<GpuAnnotation> gpu_annotations_;
  bool first_event_ = true;
  std::unordered_map<uint64_t, std::vector<uint64_t>> tracks_;  // track -> ends of open slices
  uint64_t last_key_ = UINT64_MAX;
  std::vector<uint64_t>* stack_ = nullptr;
  std::unordered_map<size_t, std::string> copy_names_;
  std::string step_name_;
  uint64_t unclipped_dur_ns_ = 0;  // the last slice's true duration when it was clipped, else 0
};

}  // namespace

bool WriteChromeTrace(const Window& window, std::string_view trace_name, ByteSink& sink) {
  // JsonWriter holds a 64 KiB buffer: keep it off the writer thread's stack.
  auto writer = std::make_unique<TraceWriter>(window, trace_name, sink);
  return writer->Write();
}

}  // namespace prof
