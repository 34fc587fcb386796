// The trace's header (deviceProperties, distributedInfo, libprof's own
// block) and its process/thread metadata events, named and sorted as Kineto
// names them.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/trace/chrome_trace_parts.h"
#include "exporters/common/collectives.h"
#include "exporters/common/cuda_names.h"
#include "exporters/common/python_sites.h"
#include "exporters/common/window_index.h"
#include "model/collectives.h"

namespace prof::chrome {
namespace {

// Kineto sorts GPU processes after CPU ones with this offset.
constexpr int64_t kGpuSortIndexBase = 16777216;

// Data, not logic: one key per DeviceProps field, in Kineto's names.
void WriteDeviceProperties(const Window& w, JsonWriter& out) {
  out.Key("deviceProperties");
  out.Char('[');
  for (size_t i = 0; i < w.devices.size(); ++i) {
    const DeviceProps& d = w.devices[i];
    out.Raw(i ? ",\n  {" : "\n  {");
    out.Key("id"); out.Int(d.id);
    out.Raw(", "); out.Key("name"); out.String(d.name);
    out.Raw(", "); out.Key("totalGlobalMem"); out.UInt(d.total_global_mem);
    out.Raw(", "); out.Key("computeMajor"); out.Int(d.compute_major);
    out.Raw(", "); out.Key("computeMinor"); out.Int(d.compute_minor);
    out.Raw(", "); out.Key("maxThreadsPerBlock"); out.Int(d.max_threads_per_block);
    out.Raw(", "); out.Key("maxThreadsPerMultiprocessor"); out.Int(d.max_threads_per_sm);
    out.Raw(", "); out.Key("maxBlocksPerMultiprocessor"); out.Int(d.max_blocks_per_sm);
    out.Raw(", "); out.Key("regsPerBlock"); out.Int(d.max_regs_per_block);
    out.Raw(", "); out.Key("regsPerMultiprocessor"); out.Int(d.max_regs_per_sm);
    out.Raw(", "); out.Key("warpSize"); out.Int(d.warp_size);
    out.Raw(", "); out.Key("sharedMemPerBlock"); out.Int(d.max_shared_per_block);
    out.Raw(", "); out.Key("sharedMemPerMultiprocessor"); out.Int(d.max_shared_per_sm);
    out.Raw(", "); out.Key("numSms"); out.Int(d.sm_count);
    out.Char('}');
  }
  out.Raw("],\n");
}

// As torch.profiler writes it (backend, rank, world_size, pg_count,
// pg_config, nccl_version) when the process is an NCCL rank; rank and
// world size alone otherwise. HTA finds the rank with `"rank":\s+(\d+)`.
void WriteDistributedInfo(const Window& w, JsonWriter& out) {
  CollectiveIndex collectives(w);
  // Kineto's spacing, `"key": value`: HTA's rank pattern needs the space.
  auto key = [&out](const char* k) {
    out.Char('"');
    out.Raw(k);
    out.Raw("\": ");
  };
  out.Raw("\"distributedInfo\": ");
  out.Char('{');
  if (!w.communicators.empty()) {
    key("backend"); out.String("nccl");
    out.Raw(", ");
  }
  key("rank"); out.Int(collectives.Rank());
  out.Raw(", "); key("world_size"); out.Int(collectives.WorldSize());
  if (!w.communicators.empty()) {
    out.Raw(", "); key("pg_count"); out.UInt(w.communicators.size());
    out.Raw(", "); key("pg_config"); out.Char('[');
    for (size_t i = 0; i < w.communicators.size(); ++i) {
      const CommInfo& c = w.communicators[i];
      if (i) out.Raw(", ");
      out.Char('{');
      key("pg_name"); out.String(CommName(c.id));
      out.Raw(", "); key("pg_desc"); out.String(c.parent ? "split" : (c.nranks == collectives.WorldSize() ? "default_pg" : ""));
      out.Raw(", "); key("backend_config"); out.String("cuda:nccl");
      out.Raw(", "); key("pg_size"); out.Int(c.nranks);
      out.Raw(", "); key("pg_rank"); out.Int(c.rank);
      std::string ranks = CommRanks(c, collectives.WorldSize());
      if (!ranks.empty() && c.nranks <= 30) {
        out.Raw(", "); key("ranks"); out.Raw(ranks);
      }
      out.Char('}');
    }
    out.Char(']');
    std::string version = NcclVersionText(w.meta.nccl_version);
    out.Raw(", "); key("nccl_version"); out.String(version.empty() ? "unknown" : version);
  }
  out.Raw("},\n");
}

// The libprof block's fields, one per line: `,\n  "key":` before each but
// the first.
void Field(JsonWriter& out, std::string_view key) {
  out.Raw(",\n  ");
  out.Key(key);
}

// Who wrote the window and what it covers.
void WriteIdentity(const WindowMeta& m, JsonWriter& out) {
  out.Key("version"); out.String(m.libprof_version);
  Field(out, "name"); out.String(m.name);
  Field(out, "hostname"); out.String(m.hostname);
  if (!m.process.empty()) {
    Field(out, "process"); out.String(m.process);
  }
  Field(out, "pid"); out.Int(m.pid);
  Field(out, "rank_known"); out.Bool(m.rank_known);
  Field(out, "window");
  out.Char('{');
  out.Key("first_step"); out.UInt(m.first_step);
  out.Raw(", "); out.Key("last_step"); out.UInt(m.last_step);
  out.Raw(", "); out.Key("start_ns"); out.Int(static_cast<int64_t>(m.start_ns) + m.epoch_offset_ns);
  out.Raw(", "); out.Key("end_ns"); out.Int(static_cast<int64_t>(m.end_ns) + m.epoch_offset_ns);
  out.Raw(", "); out.Key("partial"); out.Bool(m.partial);
  out.Raw(", "); out.Key("partial_reason"); out.String(m.partial_reason);
  out.Char('}');
  if (!m.step_description.empty()) {
    Field(out, "step"); out.String(m.step_description);
  }
  if (!m.range_description.empty()) {
    Field(out, "range"); out.String(m.range_description);
  }
  if (!m.tensor_memory.empty()) {
    Field(out, "tensor_memory"); out.String(m.tensor_memory);
  }
}

// How it was recorded: CUPTI's mode and the CUDA versions.
void WriteRecording(const WindowMeta& m, JsonWriter& out) {
  Field(out, "cupti_mode"); out.String(m.cupti_mode);
  Field(out, "gpu_timings"); out.Bool(m.has_gpu_timings);
  Field(out, "cuda_runtime_version"); out.Int(m.cuda_runtime_version);
  Field(out, "cuda_driver_version"); out.Int(m.cuda_driver_version);
  Field(out, "cupti_api_version"); out.UInt(m.cupti_api_version);
}

// The stacks that created the graph nodes this window replayed, once each,
// and which node each op's record names: `"graph_capture_stacks": {"stacks":
// [[frame, ...], ...], "nodes": [[node id, stack index], ...]}`, frames
// innermost first as python_function slices name them. Nothing without such
// a node.
void WriteGraphCaptureStacks(const Window& w, JsonWriter& out) {
  std::map<uint64_t, uint32_t> node_stack;
  for (const DeviceRecord& r : w.device_records) {
    if (r.graph_node_id != 0 && r.capture_stack_id > 1 && r.capture_stack_id < w.python.stacks.size()) {
      node_stack.emplace(r.graph_node_id, r.capture_stack_id);
    }
  }
  if (node_stack.empty()) return;
  std::map<uint32_t, size_t> index_of;  // stack id -> index in "stacks"
  for (const auto& [node, stack] : node_stack) index_of.emplace(stack, 0);
  out.Raw(", "); out.Key("graph_capture_stacks"); out.Raw("{"); out.Key("stacks"); out.Char('[');
  size_t next = 0;
  for (auto& [stack, index] : index_of) {
    index = next++;
    if (index) out.Char(',');
    out.Char('[');
    const std::vector<uint32_t>& frames = w.python.stacks[stack];
    for (size_t i = 0; i < frames.size(); ++i) {
      if (i) out.Char(',');
      out.String(PythonSliceName(w, frames[i], w.python.Via(stack)));
    }
    out.Char(']');
  }
  out.Raw("], "); out.Key("nodes"); out.Char('[');
  bool first = true;
  for (const auto& [node, stack] : node_stack) {
    if (!first) out.Char(',');
    first = false;
    out.Char('['); out.UInt(node); out.Char(','); out.UInt(index_of[stack]); out.Char(']');
  }
  out.Raw("]}");
}

// Python stacks: what was recorded, which threads had no Python frames when
// they made a recorded call (C++ threads: not an error), and which threads'
// calls were charged to a waiting Python thread's stack.
void WritePython(const Window& w, JsonWriter& out) {
  Field(out, "python");
  out.Char('{');
  out.Key("stacks"); out.String(w.python.status);
  out.Raw(", "); out.Key("threads_without_python_frames"); out.Char('[');
  std::vector<uint32_t> tids;
  for (const HostEvent& e : w.host_events) {
    if (e.stack_id == 1 && std::find(tids.begin(), tids.end(), e.tid) == tids.end()) tids.push_back(e.tid);
  }
  std::sort(tids.begin(), tids.end());
  for (size_t i = 0; i < tids.size(); ++i) {
    if (i) out.Char(',');
    out.UInt(tids[i]);
  }
  out.Char(']');
  // [thread, Python thread, calls], by thread.
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> via;
  for (const HostEvent& e : w.host_events) {
    if (uint32_t v = w.python.Via(e.stack_id); v != 0) ++via[{e.tid, v}];
  }
  out.Raw(", "); out.Key("threads_via"); out.Char('[');
  bool first = true;
  for (const auto& [key, calls] : via) {
    if (!first) out.Char(',');
    first = false;
    out.Char('['); out.UInt(key.first); out.Char(','); out.UInt(key.second); out.Char(','); out.UInt(calls);
    out.Char(']');
  }
  out.Char(']');
  WriteGraphCaptureStacks(w, out);
  out.Char('}');
}

// The loss counters, in the trace's order. The last ones are written only
// when there are any (traces read the same as before they existed).
struct LossField {
  const char* key;
  uint64_t LossCounts::*count;
  bool only_if_any;
};
constexpr LossField kLossFields[] = {
    {"host_events_dropped", &LossCounts::host_events_dropped, false},
    {"device_records_dropped", &LossCounts::device_records_dropped, false},
    {"cupti_records_dropped", &LossCounts::cupti_records_dropped, false},
    {"device_records_missing", &LossCounts::device_records_missing, false},
    {"device_records_untimed", &LossCounts::device_records_untimed, false},
    {"unknown_activity_kinds", &LossCounts::unknown_activity_kinds, false},
    {"alloc_samples_dropped", &LossCounts::alloc_samples_dropped, false},
    {"nvtx_ranges_dropped", &LossCounts::nvtx_ranges_dropped, false},
    {"nvtx_names_dropped", &LossCounts::nvtx_names_dropped, false},
    {"unrecorded_start_ns", &LossCounts::unrecorded_start_ns, false},
    {"host_events_late", &LossCounts::host_events_late, true},
    {"api_records_missing", &LossCounts::api_records_missing, true},
    {"device_records_elsewhere", &LossCounts::device_records_elsewhere, true},
};

// The device-record counters by kind, each written only when it holds any:
// "<counter>_by_kind": {"kernel": n, "memcpy": n, "memset": n}.
struct LossKindsField {
  const char* key;
  DeviceLossKinds LossCounts::*kinds;
};
constexpr LossKindsField kLossKindsFields[] = {
    {"device_records_missing_by_kind", &LossCounts::missing_kinds},
    {"device_records_untimed_by_kind", &LossCounts::untimed_kinds},
    {"device_records_dropped_by_kind", &LossCounts::dropped_kinds},
};

void WriteLosses(const LossCounts& l, JsonWriter& out) {
  Field(out, "losses");
  out.Char('{');
  bool first = true;
  for (const LossField& f : kLossFields) {
    uint64_t n = l.*f.count;
    if (f.only_if_any && n == 0) continue;
    if (!first) out.Raw(", ");
    first = false;
    out.Key(f.key);
    out.UInt(n);
  }
  for (const LossKindsField& f : kLossKindsFields) {
    const DeviceLossKinds& k = l.*f.kinds;
    if (k.total() == 0) continue;
    out.Raw(", ");
    out.Key(f.key);
    out.Char('{');
    out.Key("kernel"); out.UInt(k.kernels); out.Raw(", ");
    out.Key("memcpy"); out.UInt(k.copies); out.Raw(", ");
    out.Key("memset"); out.UInt(k.memsets);
    out.Char('}');
  }
  out.Char('}');
}

// Exact step spans and what was still allocated: `prof summary` rebuilds
// the window from these (ns relative to baseTimeNanoseconds).
void WriteStepsAndLive(const Window& w, EventStream& s) {
  JsonWriter& out = s.out;
  Field(out, "steps");
  out.Char('[');
  for (size_t i = 0; i < w.steps.size(); ++i) {
    const StepSpan& st = w.steps[i];
    out.Raw(i ? ",[" : "[");
    out.UInt(st.step); out.Char(','); out.Int(s.Rel(st.start_ns)); out.Char(','); out.Int(s.Rel(st.end_ns));
    out.Char(']');
  }
  out.Char(']');
  Field(out, "live_at_end");
  out.Raw("{\"columns\":[\"ptr\",\"bytes\",\"alloc_ns\",\"api\",\"device\",\"mem_kind\"],\"rows\":[");
  for (size_t i = 0; i < w.live_at_end.size(); ++i) {
    const LiveAllocation& a = w.live_at_end[i];
    out.Raw(i ? ",[" : "[");
    out.UInt(a.ptr); out.Char(','); out.UInt(a.bytes); out.Char(','); out.Int(s.Rel(a.alloc_ns));
    out.Raw(",\""); out.Raw(ApiName(static_cast<ApiId>(a.api))); out.Raw("\",");
    out.Int(a.device); out.Char(','); out.UInt(a.mem_kind); out.Char(']');
  }
  out.Raw("]}");
}

// The PROF_* settings the window was recorded with.
void WriteConfig(const WindowMeta& m, JsonWriter& out) {
  Field(out, "config");
  out.Char('{');
  for (size_t i = 0; i < m.config.size(); ++i) {
    if (i) out.Raw(", ");
    out.String(m.config[i].first);
    out.Char(':');
    out.String(m.config[i].second);
  }
  out.Char('}');
}

void WriteLibprofInfo(const Window& w, EventStream& s) {
  JsonWriter& out = s.out;
  out.Key("libprof");
  out.Raw("{\n  ");
  WriteIdentity(w.meta, out);
  WriteRecording(w.meta, out);
  if (!w.python.status.empty()) WritePython(w, out);
  WriteLosses(w.meta.losses, out);
  WriteStepsAndLive(w, s);
  WriteConfig(w.meta, out);
  out.Raw("\n},\n");
}

// Everything of a metadata event up to its one argument's value.
JsonWriter& BeginMetadata(EventStream& s, const char* name, int64_t pid, int64_t tid, const char* arg) {
  JsonWriter& out = s.out;
  s.Begin();
  out.Raw("\"ph\":\"M\",\"name\":\"");
  out.Raw(name);
  out.Raw("\",\"pid\":"); out.Int(pid);
  out.Raw(",\"tid\":"); out.Int(tid);
  out.Raw(",\"ts\":0.000,\"args\":{\""); out.Raw(arg); out.Raw("\":");
  return out;
}

void Metadata(EventStream& s, const char* name, int64_t pid, int64_t tid, const char* arg, std::string_view value) {
  JsonWriter& out = BeginMetadata(s, name, pid, tid, arg);
  out.String(value);
  out.Raw("}}");
}
void MetadataInt(EventStream& s, const char* name, int64_t pid, int64_t tid, const char* arg, int64_t value) {
  JsonWriter& out = BeginMetadata(s, name, pid, tid, arg);
  out.Int(value);
  out.Raw("}}");
}

// Appends `value` unless it equals the last element (sort + unique follow).
template <typename T>
void AddDistinct(T value, std::vector<T>* out) {
  if (out->empty() || out->back() != value) out->push_back(value);
}

std::string ThreadLabel(const Window& w, uint32_t tid) {
  for (const auto& [id, name] : w.thread_names) {
    if (id == tid) return "thread " + std::to_string(tid) + " (" + name + ")";
  }
  return "thread " + std::to_string(tid);
}

}  // namespace

void WriteProcessMetadata(const Window& w, EventStream& s) {
  const int64_t pid = w.meta.pid;
  std::string process = w.meta.name.empty() ? "libprof" : w.meta.name;
  Metadata(s, "process_name", pid, 0, "name", process);
  Metadata(s, "process_labels", pid, 0, "labels", "CPU");
  MetadataInt(s, "process_sort_index", pid, 0, "sort_index", pid);

  // Events come in long runs from one thread or stream: AddDistinct skips
  // repeats of the last value, so what gets sorted is a few entries, not
  // one per event.
  std::vector<uint32_t> threads{static_cast<uint32_t>(pid)};
  for (const auto& e : w.host_events) AddDistinct(e.tid, &threads);
  for (const auto& n : w.nvtx_ranges) AddDistinct(n.tid, &threads);
  for (const auto& a : w.alloc_samples) AddDistinct(a.tid, &threads);
  for (const auto& r : w.device_records) {
    if (IsApiRecord(r)) AddDistinct(r.thread_id, &threads);
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  for (uint32_t tid : threads) {
    Metadata(s, "thread_name", pid, tid, "name", ThreadLabel(w, tid));
    MetadataInt(s, "thread_sort_index", pid, tid, "sort_index", tid);
  }

  std::vector<uint64_t> streams;  // device << 32 | stream
  for (const auto& d : w.devices) streams.push_back(uint64_t(uint32_t(d.id)) << 32 | kCuptiInvalidStream);
  for (const auto& r : w.device_records) {
    if (IsGpuWork(KindOf(r))) AddDistinct(uint64_t{r.device_id} << 32 | StreamTid(r), &streams);
  }
  for (const auto& a : w.alloc_samples) {
    if (a.device >= 0) AddDistinct(uint64_t(uint32_t(a.device)) << 32 | kCuptiInvalidStream, &streams);
  }
  for (const auto& m : w.tensor_memory) AddDistinct(uint64_t(uint32_t(m.device)) << 32 | kCuptiInvalidStream, &streams);
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  int64_t last_device = -1;
  for (uint64_t key : streams) {
    int64_t device = static_cast<int64_t>(key >> 32);
    uint32_t stream = static_cast<uint32_t>(key);
    if (device != last_device) {
      std::string label = "GPU " + std::to_string(device);
      Metadata(s, "process_name", device, 0, "name", process);
      Metadata(s, "process_labels", device, 0, "labels", label);
      MetadataInt(s, "process_sort_index", device, 0, "sort_index", kGpuSortIndexBase + device);
      last_device = device;
    }
    if (stream == kCuptiInvalidStream) continue;
    Metadata(s, "thread_name", device, stream, "name", "stream " + std::to_string(stream));
    MetadataInt(s, "thread_sort_index", device, stream, "sort_index", stream);
  }
}

uint64_t TimeBase(const Window& w) {
  uint64_t base = UINT64_MAX;
  auto see = [&base](uint64_t t) {
    if (t != 0 && t < base) base = t;
  };
  see(w.meta.start_ns);
  for (const auto& e : w.host_events) see(e.start_ns);
  for (const auto& r : w.device_records) see(r.start_ns);
  for (const auto& st : w.steps) see(st.start_ns);
  for (const auto& n : w.nvtx_ranges) see(n.start_ns);
  for (const auto& a : w.alloc_samples) see(a.ts_ns);
  for (const auto& m : w.tensor_memory) see(m.ts_ns);
  return base == UINT64_MAX ? 0 : base;
}

void WriteHeader(const Window& w, EventStream& s) {
  WriteDeviceProperties(w, s.out);
  WriteDistributedInfo(w, s.out);
  WriteLibprofInfo(w, s);
}

}  // namespace prof::chrome
