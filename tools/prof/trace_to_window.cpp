#include "tools/prof/trace_to_window.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "exporters/cuda_names.h"

namespace prof::tool {
namespace {

using nlohmann::json;

// µs (possibly fractional, possibly absolute epoch µs) -> whole ns.
uint64_t ToNs(const json& us) {
  if (us.is_number_unsigned()) return us.get<uint64_t>() * 1000;
  if (us.is_number_integer()) return static_cast<uint64_t>(std::max<int64_t>(0, us.get<int64_t>())) * 1000;
  if (us.is_number()) return static_cast<uint64_t>(std::llround(std::max(0.0, us.get<double>()) * 1000.0));
  return 0;
}

template <typename T>
T Arg(const json& e, const char* key, T fallback) {
  if (!e.contains("args") || !e["args"].is_object()) return fallback;
  const json& args = e["args"];
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

int64_t IntOf(const json& v, int64_t fallback) { return v.is_number() ? v.get<int64_t>() : fallback; }

// Index of `name` in `names` (as cuda_names.cpp spells them), or fallback.
template <typename NameOf>
uint8_t Lookup(const std::string& name, NameOf name_of, int count, uint8_t fallback) {
  for (int i = 0; i < count; ++i) {
    if (name == name_of(static_cast<uint8_t>(i))) return static_cast<uint8_t>(i);
  }
  return fallback;
}

class Reader {
 public:
  explicit Reader(Window* w) : w_(*w) { w_.strings.assign(1, ""); }

  bool Read(const json& trace, std::string* error) {
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
      *error = "no traceEvents array";
      return false;
    }
    ReadMeta(trace);
    for (const json& e : trace["traceEvents"]) {
      if (e.is_object()) ReadEvent(e);
    }
    Finish(trace);
    return true;
  }

 private:
  uint32_t Intern(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<uint32_t>(w_.strings.size()));
    if (inserted) w_.strings.push_back(s);
    return it->second;
  }

  void ReadMeta(const json& t) {
    WindowMeta& m = w_.meta;
    // baseTimeNanoseconds: times become ns since it, and it is the offset to
    // the epoch. Kineto traces without it carry absolute epoch µs.
    m.epoch_offset_ns = t.contains("baseTimeNanoseconds") ? IntOf(t["baseTimeNanoseconds"], 0) : 0;
    if (t.contains("distributedInfo") && t["distributedInfo"].is_object()) {
      const json& d = t["distributedInfo"];
      m.rank = static_cast<int>(IntOf(d.value("rank", json(0)), 0));
      m.world_size = static_cast<int>(IntOf(d.value("world_size", json(1)), 1));
      m.rank_known = d.contains("rank");
    }
    m.name = t.value("traceName", std::string());
    m.has_gpu_timings = true;
    m.cupti_mode = "unknown (not a libprof trace)";
    if (t.contains("deviceProperties") && t["deviceProperties"].is_array()) {
      for (const json& d : t["deviceProperties"]) {
        DeviceProps p;
        p.id = static_cast<int>(IntOf(d.value("id", json(0)), 0));
        p.name = d.value("name", std::string());
        p.total_global_mem = static_cast<uint64_t>(IntOf(d.value("totalGlobalMem", json(0)), 0));
        p.compute_major = static_cast<int>(IntOf(d.value("computeMajor", json(0)), 0));
        p.compute_minor = static_cast<int>(IntOf(d.value("computeMinor", json(0)), 0));
        p.sm_count = static_cast<int>(IntOf(d.value("numSms", json(0)), 0));
        p.warp_size = static_cast<int>(IntOf(d.value("warpSize", json(32)), 32));
        p.max_threads_per_block = static_cast<int>(IntOf(d.value("maxThreadsPerBlock", json(0)), 0));
        p.max_threads_per_sm = static_cast<int>(IntOf(d.value("maxThreadsPerMultiprocessor", json(0)), 0));
        p.max_blocks_per_sm = static_cast<int>(IntOf(d.value("maxBlocksPerMultiprocessor", json(0)), 0));
        p.max_regs_per_block = static_cast<int>(IntOf(d.value("regsPerBlock", json(0)), 0));
        p.max_regs_per_sm = static_cast<int>(IntOf(d.value("regsPerMultiprocessor", json(0)), 0));
        p.max_shared_per_block = static_cast<int>(IntOf(d.value("sharedMemPerBlock", json(0)), 0));
        p.max_shared_per_sm = static_cast<int>(IntOf(d.value("sharedMemPerMultiprocessor", json(0)), 0));
        w_.devices.push_back(p);
      }
    }
    if (!t.contains("libprof") || !t["libprof"].is_object()) return;
    const json& l = t["libprof"];
    libprof_ = true;
    m.libprof_version = l.value("version", std::string());
    m.name = l.value("name", m.name);
    m.hostname = l.value("hostname", std::string());
    m.pid = static_cast<int>(IntOf(l.value("pid", json(0)), 0));
    m.rank_known = l.value("rank_known", m.rank_known);
    m.cupti_mode = l.value("cupti_mode", std::string());
    m.has_gpu_timings = l.value("gpu_timings", true);
    m.cuda_runtime_version = static_cast<int>(IntOf(l.value("cuda_runtime_version", json(0)), 0));
    m.cuda_driver_version = static_cast<int>(IntOf(l.value("cuda_driver_version", json(0)), 0));
    m.cupti_api_version = static_cast<uint32_t>(IntOf(l.value("cupti_api_version", json(0)), 0));
    if (l.contains("window") && l["window"].is_object()) {
      const json& win = l["window"];
      m.first_step = static_cast<uint64_t>(IntOf(win.value("first_step", json(0)), 0));
      m.last_step = static_cast<uint64_t>(IntOf(win.value("last_step", json(0)), 0));
      m.partial = win.value("partial", false);
      m.partial_reason = win.value("partial_reason", std::string());
      // Window bounds are epoch ns; back onto this trace's clock.
      m.start_ns = FromEpoch(IntOf(win.value("start_ns", json(0)), 0));
      m.end_ns = FromEpoch(IntOf(win.value("end_ns", json(0)), 0));
    }
    if (l.contains("losses") && l["losses"].is_object()) {
      const json& x = l["losses"];
      auto get = [&x](const char* k) { return static_cast<uint64_t>(IntOf(x.value(k, json(0)), 0)); };
      m.losses = {get("host_events_dropped"),    get("device_records_dropped"), get("cupti_records_dropped"),
                  get("device_records_missing"), get("unknown_activity_kinds"), get("alloc_samples_dropped")};
    }
    if (l.contains("config") && l["config"].is_object()) {
      for (auto& [k, v] : l["config"].items()) m.config.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    if (l.contains("steps") && l["steps"].is_array()) {
      for (const json& s : l["steps"]) {
        if (!s.is_array() || s.size() < 3) continue;
        w_.steps.push_back({static_cast<uint64_t>(IntOf(s[0], 0)), Rel(IntOf(s[1], 0)), Rel(IntOf(s[2], 0))});
      }
      have_steps_ = true;
    }
    if (l.contains("live_at_end") && l["live_at_end"].is_object() && l["live_at_end"].contains("rows")) {
      for (const json& r : l["live_at_end"]["rows"]) {
        if (!r.is_array() || r.size() < 6) continue;
        LiveAllocation a{};
        a.ptr = static_cast<uint64_t>(IntOf(r[0], 0));
        a.bytes = static_cast<uint64_t>(IntOf(r[1], 0));
        a.alloc_ns = Rel(IntOf(r[2], 0));
        a.api = ApiOf(r[3].is_string() ? r[3].get<std::string>() : "");
        a.device = static_cast<int16_t>(IntOf(r[4], -1));
        a.mem_kind = static_cast<uint8_t>(IntOf(r[5], 0));
        w_.live_at_end.push_back(a);
      }
    }
  }

  uint64_t Rel(int64_t ns) const { return ns > 0 ? static_cast<uint64_t>(ns) : 0; }
  uint64_t FromEpoch(int64_t epoch_ns) const {
    return epoch_ns > w_.meta.epoch_offset_ns ? static_cast<uint64_t>(epoch_ns - w_.meta.epoch_offset_ns) : 0;
  }
  static uint16_t ApiOf(const std::string& name) {
    ApiId id = ApiId::kCount;
    ApiFromName(name, &id);
    return static_cast<uint16_t>(id);
  }

  // Start and end in ns; the true duration when the slice was clipped.
  static std::pair<uint64_t, uint64_t> Span(const json& e) {
    uint64_t start = ToNs(e.value("ts", json(0)));
    uint64_t dur = ToNs(e.contains("args") && e["args"].is_object() && e["args"].contains("unclipped dur")
                            ? e["args"]["unclipped dur"]
                            : e.value("dur", json(0)));
    return {start, start + dur};
  }

  void ReadEvent(const json& e) {
    const std::string ph = e.value("ph", std::string());
    const std::string cat = e.value("cat", std::string());
    const std::string name = e.value("name", std::string());
    if (ph == "M") {
      if (name == "thread_name" && IntOf(e.value("pid", json(-1)), -1) == w_.meta.pid) ReadThreadName(e);
      return;
    }
    if (ph == "i" && name == "[memory]") return ReadMemory(e);
    if (ph != "X") return;
    auto [start, end] = Span(e);
    if (cat == "cuda_runtime" || cat == "cuda_driver") return ReadApiCall(e, cat, name, start, end);
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync") {
      return ReadDeviceWork(e, cat, name, start, end);
    }
    if (cat == "user_annotation") {
      if (name.rfind("ProfilerStep#", 0) == 0) {
        if (!have_steps_) {
          uint64_t step = std::strtoull(name.c_str() + 13, nullptr, 10);
          w_.steps.push_back({step, start, end});
        }
        return;
      }
      if (Arg<std::string>(e, "source", "") == "nvtx" || !libprof_) {
        NvtxRange r{start, end, Intern(name), static_cast<uint32_t>(IntOf(e.value("tid", json(0)), 0)),
                    Arg<uint32_t>(e, "depth", 0), 0};
        w_.nvtx_ranges.push_back(r);
      }
    }
  }

  void ReadThreadName(const json& e) {
    std::string label = Arg<std::string>(e, "name", "");
    // "thread <tid> (<name>)" -> name
    auto open = label.find(" (");
    if (open == std::string::npos || label.back() != ')') return;
    w_.thread_names.emplace_back(static_cast<uint32_t>(IntOf(e.value("tid", json(0)), 0)),
                                 label.substr(open + 2, label.size() - open - 3));
  }

  void ReadApiCall(const json& e, const std::string& cat, const std::string& name, uint64_t start, uint64_t end) {
    ApiId id;
    uint32_t tid = static_cast<uint32_t>(IntOf(e.value("tid", json(0)), 0));
    uint32_t correlation = Arg<uint32_t>(e, "correlation", 0);
    if (Arg<std::string>(e, "source", "") != "cupti" && ApiFromName(name, &id)) {
      HostEvent h{};
      h.start_ns = start;
      h.end_ns = end;
      h.bytes = Arg<uint64_t>(e, "bytes", 0);
      h.correlation_id = correlation;
      h.tid = tid;
      h.result = Arg<int32_t>(e, "result", 0);
      h.api = static_cast<uint16_t>(id);
      h.device = static_cast<int16_t>(Arg<int>(e, "device", -1));
      h.copy_kind = static_cast<uint8_t>(Arg<int>(e, "cudaMemcpyKind", 0));
      h.flags = cat == "cuda_driver" ? kHostEventDriver : kHostEventNone;
      if (Arg<bool>(e, "via cuGetProcAddress", false)) h.flags |= kHostEventViaProcAddr;
      w_.host_events.push_back(h);
      return;
    }
    // A call libprof does not intercept (or a CUPTI API record): keep it for
    // the API table and for flows, as the agent would have.
    DeviceRecord r{};
    r.start_ns = start;
    r.end_ns = end;
    r.correlation_id = correlation;
    r.name_id = Intern(name);
    r.cbid = Arg<uint32_t>(e, "cbid", 0);
    r.thread_id = tid;
    r.kind = static_cast<uint8_t>(cat == "cuda_driver" ? DeviceKind::kDriverApi : DeviceKind::kRuntimeApi);
    w_.device_records.push_back(r);
  }

  void ReadDeviceWork(const json& e, const std::string& cat, const std::string& name, uint64_t start, uint64_t end) {
    DeviceRecord r{};
    r.start_ns = start;
    r.end_ns = end;
    r.correlation_id = Arg<uint32_t>(e, "correlation", 0);
    r.device_id = static_cast<uint32_t>(Arg<int64_t>(e, "device", IntOf(e.value("pid", json(0)), 0)));
    r.context_id = Arg<uint32_t>(e, "context", 0);
    int64_t stream = Arg<int64_t>(e, "stream", IntOf(e.value("tid", json(0)), 0));
    r.stream_id = stream < 0 ? kCuptiInvalidStream : static_cast<uint32_t>(stream);
    r.graph_id = Arg<uint32_t>(e, "graph id", 0);
    r.bytes = Arg<uint64_t>(e, "bytes", 0);
    if (cat == "kernel") {
      r.kind = static_cast<uint8_t>(DeviceKind::kKernel);
      r.name_id = Intern(name);
      auto dims = [&e](const char* key, int32_t* out) {
        std::vector<int32_t> v = Arg<std::vector<int32_t>>(e, key, {});
        for (size_t i = 0; i < 3; ++i) out[i] = i < v.size() ? v[i] : 1;
      };
      dims("grid", r.grid);
      dims("block", r.block);
      r.registers_per_thread = Arg<uint32_t>(e, "registers per thread", 0);
      r.static_shared_bytes = Arg<uint32_t>(e, "shared memory", 0);
    } else if (cat == "gpu_memcpy") {
      r.kind = static_cast<uint8_t>(DeviceKind::kMemcpy);
      ParseCopyName(name, &r);
    } else if (cat == "gpu_memset") {
      r.kind = static_cast<uint8_t>(DeviceKind::kMemset);
      auto open = name.find('(');
      if (open != std::string::npos) {
        r.dst_kind = Lookup(name.substr(open + 1, name.size() - open - 2), MemoryKindName, 8, 0);
      }
    } else {
      r.kind = static_cast<uint8_t>(DeviceKind::kSync);
      std::string kind = Arg<std::string>(e, "cuda_sync_kind", name);
      r.cbid = Lookup(kind, [](uint8_t i) { return SyncKindName(i); }, 5, 0);
    }
    w_.device_records.push_back(r);
  }

  // "Memcpy HtoD (Pageable -> Device)"
  static void ParseCopyName(const std::string& name, DeviceRecord* r) {
    auto space = name.find(' ');
    auto open = name.find(" (");
    auto arrow = name.find(" -> ");
    if (space == std::string::npos || open == std::string::npos || arrow == std::string::npos) return;
    r->copy_kind = Lookup(name.substr(space + 1, open - space - 1), MemcpyKindName, 11, 0);
    r->src_kind = Lookup(name.substr(open + 2, arrow - open - 2), MemoryKindName, 8, 0);
    r->dst_kind = Lookup(name.substr(arrow + 4, name.size() - arrow - 5), MemoryKindName, 8, 0);
  }

  void ReadMemory(const json& e) {
    AllocSample a{};
    a.ts_ns = ToNs(e.value("ts", json(0)));
    a.ptr = Arg<uint64_t>(e, "Addr", 0);
    a.delta_bytes = Arg<int64_t>(e, "Bytes", 0);
    a.total_bytes = Arg<uint64_t>(e, "Total Allocated", 0);
    a.tid = static_cast<uint32_t>(IntOf(e.value("tid", json(0)), 0));
    a.api = ApiOf(Arg<std::string>(e, "api", ""));
    a.device = static_cast<int16_t>(Arg<int>(e, "Device Id", -1));
    a.mem_kind = static_cast<uint8_t>(Arg<int>(e, "mem kind", 0));
    w_.alloc_samples.push_back(a);
  }

  void Finish(const json& t) {
    auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
    std::stable_sort(w_.host_events.begin(), w_.host_events.end(), by_start);
    std::stable_sort(w_.device_records.begin(), w_.device_records.end(), by_start);
    std::stable_sort(w_.nvtx_ranges.begin(), w_.nvtx_ranges.end(), by_start);
    std::stable_sort(w_.steps.begin(), w_.steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.step < b.step; });
    std::stable_sort(w_.alloc_samples.begin(), w_.alloc_samples.end(),
                     [](const AllocSample& a, const AllocSample& b) { return a.ts_ns < b.ts_ns; });
    WindowMeta& m = w_.meta;
    if (!libprof_ && !w_.steps.empty()) {
      m.first_step = w_.steps.front().step;
      m.last_step = w_.steps.back().step;
    }
    if (!libprof_) {
      m.has_gpu_timings = std::any_of(w_.device_records.begin(), w_.device_records.end(), [](const DeviceRecord& r) {
        return static_cast<DeviceKind>(r.kind) == DeviceKind::kKernel;
      });
      if (m.name.empty()) m.name = "trace";
    }
    (void)t;
  }

  Window& w_;
  std::unordered_map<std::string, uint32_t> ids_;
  bool libprof_ = false;
  bool have_steps_ = false;
};

}  // namespace

bool TraceToWindow(const nlohmann::json& trace, Window* window, std::string* error) {
  *window = Window{};
  return Reader(window).Read(trace, error);
}

}  // namespace prof::tool
