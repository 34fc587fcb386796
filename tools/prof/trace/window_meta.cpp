#include "tools/prof/trace/window_meta.h"

#include <string>

#include "exporters/summary/findings.h"
#include "tools/prof/json/json_dump.h"
#include "tools/prof/trace/field_values.h"

namespace prof::tool {
namespace {

uint64_t Rel(int64_t ns) { return ns > 0 ? static_cast<uint64_t>(ns) : 0; }

// Epoch ns back onto the trace's clock (ns since baseTimeNanoseconds).
uint64_t FromEpoch(int64_t epoch_ns, int64_t epoch_offset_ns) {
  return epoch_ns > epoch_offset_ns ? static_cast<uint64_t>(epoch_ns) - static_cast<uint64_t>(epoch_offset_ns) : 0;
}

// Data, not logic: one DeviceProps field per Kineto key.
DeviceProps ReadDevice(const JsonValue& dev) {
  DeviceProps p;
  auto get = [&dev](const char* key, int64_t fallback) {
    return dev.is_object() ? IntMember(dev, key, fallback) : fallback;
  };
  p.id = static_cast<int>(get("id", 0));
  p.name = dev.is_object() ? StrOf(dev, "name", "") : "";
  p.total_global_mem = static_cast<uint64_t>(get("totalGlobalMem", 0));
  p.compute_major = static_cast<int>(get("computeMajor", 0));
  p.compute_minor = static_cast<int>(get("computeMinor", 0));
  p.sm_count = static_cast<int>(get("numSms", 0));
  p.warp_size = static_cast<int>(get("warpSize", 32));
  p.max_threads_per_block = static_cast<int>(get("maxThreadsPerBlock", 0));
  p.max_threads_per_sm = static_cast<int>(get("maxThreadsPerMultiprocessor", 0));
  p.max_blocks_per_sm = static_cast<int>(get("maxBlocksPerMultiprocessor", 0));
  p.max_regs_per_block = static_cast<int>(get("regsPerBlock", 0));
  p.max_regs_per_sm = static_cast<int>(get("regsPerMultiprocessor", 0));
  p.max_shared_per_block = static_cast<int>(get("sharedMemPerBlock", 0));
  p.max_shared_per_sm = static_cast<int>(get("sharedMemPerMultiprocessor", 0));
  return p;
}

// What the agent knew about its process and its CUDA stack.
void ReadProcess(const JsonValue& l, WindowMeta* m) {
  m->libprof_version = StrOf(l, "version", "");
  m->name = StrOf(l, "name", m->name);
  m->hostname = StrOf(l, "hostname", "");
  m->process = StrOf(l, "process", "");
  m->pid = static_cast<int>(IntMember(l, "pid", 0));
  m->rank_known = BoolOf(l, "rank_known", m->rank_known);
  m->cupti_mode = StrOf(l, "cupti_mode", "");
  m->step_description = StrOf(l, "step", "");
  m->range_description = StrOf(l, "range", "");
  m->tensor_memory = StrOf(l, "tensor_memory", "");
  m->has_gpu_timings = BoolOf(l, "gpu_timings", true);
  m->cuda_runtime_version = static_cast<int>(IntMember(l, "cuda_runtime_version", 0));
  m->cuda_driver_version = static_cast<int>(IntMember(l, "cuda_driver_version", 0));
  m->cupti_api_version = static_cast<uint32_t>(IntMember(l, "cupti_api_version", 0));
}

void ReadWindowBounds(const JsonValue& win, WindowMeta* m) {
  m->first_step = static_cast<uint64_t>(IntMember(win, "first_step", 0));
  m->last_step = static_cast<uint64_t>(IntMember(win, "last_step", 0));
  m->partial = BoolOf(win, "partial", false);
  m->partial_reason = StrOf(win, "partial_reason", "");
  // Window bounds are epoch ns; back onto this trace's clock.
  m->start_ns = FromEpoch(IntMember(win, "start_ns", 0), m->epoch_offset_ns);
  m->end_ns = FromEpoch(IntMember(win, "end_ns", 0), m->epoch_offset_ns);
}

// Data, not logic: one LossCounts field per key.
void ReadLosses(const JsonValue& x, LossCounts* l) {
  auto get = [&x](const char* k) { return static_cast<uint64_t>(IntMember(x, k, 0)); };
  l->host_events_dropped = get("host_events_dropped");
  l->device_records_dropped = get("device_records_dropped");
  l->cupti_records_dropped = get("cupti_records_dropped");
  l->device_records_missing = get("device_records_missing");
  l->device_records_untimed = get("device_records_untimed");
  l->unknown_activity_kinds = get("unknown_activity_kinds");
  l->alloc_samples_dropped = get("alloc_samples_dropped");
  l->nvtx_ranges_dropped = get("nvtx_ranges_dropped");
  l->nvtx_names_dropped = get("nvtx_names_dropped");
  l->unrecorded_start_ns = get("unrecorded_start_ns");
  l->host_events_late = get("host_events_late");
  l->api_records_missing = get("api_records_missing");
  l->device_records_elsewhere = get("device_records_elsewhere");
  auto kinds = [&x](const char* k, DeviceLossKinds* out) {
    JsonValue v = x.Get(k);
    if (!v.is_object()) return;
    out->kernels = static_cast<uint64_t>(IntMember(v, "kernel", 0));
    out->copies = static_cast<uint64_t>(IntMember(v, "memcpy", 0));
    out->memsets = static_cast<uint64_t>(IntMember(v, "memset", 0));
  };
  kinds("device_records_missing_by_kind", &l->missing_kinds);
  kinds("device_records_untimed_by_kind", &l->untimed_kinds);
  kinds("device_records_dropped_by_kind", &l->dropped_kinds);
}

// [step, start, end] rows.
void ReadSteps(const JsonValue& steps, std::vector<StepSpan>* out) {
  for (JsonValue s = steps.is_array() ? steps.first() : JsonValue(); s.valid(); s = steps.next(s)) {
    if (!s.is_array() || s.size() < 3) continue;
    JsonValue a = s.first(), b = s.next(a), c = s.next(b);
    out->push_back({static_cast<uint64_t>(IntOf(a, 0)), Rel(IntOf(b, 0)), Rel(IntOf(c, 0))});
  }
}

// {"rows": [[ptr, bytes, alloc_ns, api, device, mem kind], ...]}
void ReadLiveAtEnd(const JsonValue& live, std::vector<LiveAllocation>* out) {
  JsonValue rows = live.is_object() ? live.Get("rows") : JsonValue();
  for (JsonValue r = rows.is_array() ? rows.first() : JsonValue(); r.valid(); r = rows.next(r)) {
    if (!r.is_array() || r.size() < 6) continue;
    JsonValue f[6];
    f[0] = r.first();
    for (int i = 1; i < 6; ++i) f[i] = r.next(f[i - 1]);
    LiveAllocation a{};
    a.ptr = static_cast<uint64_t>(IntOf(f[0], 0));
    a.bytes = static_cast<uint64_t>(IntOf(f[1], 0));
    a.alloc_ns = Rel(IntOf(f[2], 0));
    a.api = ApiOf(f[3].is_string() ? std::string(f[3].str()) : "");
    a.device = static_cast<int16_t>(IntOf(f[4], -1));
    a.mem_kind = static_cast<uint8_t>(IntOf(f[5], 0));
    out->push_back(a);
  }
}

}  // namespace

void ReadTraceMembers(const JsonValue& t, WindowMeta* m, std::vector<DeviceProps>* devices) {
  // baseTimeNanoseconds: times become ns since it, and it is the offset to
  // the epoch. Kineto traces without it carry absolute epoch µs.
  m->epoch_offset_ns = IntMember(t, "baseTimeNanoseconds", 0);
  JsonValue d = t.Get("distributedInfo");
  if (d.is_object()) {
    m->rank = static_cast<int>(IntMember(d, "rank", 0));
    m->world_size = static_cast<int>(IntMember(d, "world_size", 1));
    m->rank_known = d.Has("rank");
  }
  m->name = StrOf(t, "traceName", "");
  m->has_gpu_timings = true;
  m->cupti_mode = kNotLibprofCuptiMode;
  JsonValue props = t.Get("deviceProperties");
  for (JsonValue dev = props.is_array() ? props.first() : JsonValue(); dev.valid(); dev = props.next(dev)) {
    devices->push_back(ReadDevice(dev));
  }
}

void ReadLibprofBlock(const JsonValue& l, WindowMeta* m, PythonInfo* python, std::vector<StepSpan>* steps,
                      std::vector<LiveAllocation>* live_at_end) {
  ReadProcess(l, m);
  JsonValue py = l.Get("python");
  if (py.is_object()) python->status = StrOf(py, "stacks", "");
  JsonValue win = l.Get("window");
  if (win.is_object()) ReadWindowBounds(win, m);
  JsonValue losses = l.Get("losses");
  if (losses.is_object()) ReadLosses(losses, &m->losses);
  JsonValue config = l.Get("config");
  for (JsonValue v = config.is_object() ? config.first() : JsonValue(); v.valid(); v = config.next(v)) {
    m->config.emplace_back(std::string(v.key()), v.is_string() ? std::string(v.str()) : v.Dump());
  }
  ReadSteps(l.Get("steps"), steps);
  ReadLiveAtEnd(l.Get("live_at_end"), live_at_end);
}

}  // namespace prof::tool
