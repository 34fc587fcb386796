#include "tools/prof/trace_to_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>
#include <unordered_map>

#include "exporters/summary/findings.h"
#include "model/collectives.h"
#include "tools/prof/event_fields.h"
#include "tools/prof/json_stream.h"
#include "tools/prof/merge.h"

#include "exporters/common/compact_window.h"
#include "exporters/common/cuda_names.h"

namespace prof::tool {
namespace {

// Numbers from a trace are converted without undefined behaviour: a value a
// field cannot hold is treated as absent.

// µs (possibly fractional, possibly absolute epoch µs) -> whole ns,
// saturating at INT64_MAX.
uint64_t ToNs(const JsonValue& us) {
  if (!us.is_number()) return 0;
  uint64_t u;
  int64_t i;
  if (us.is_integer() && us.ToUint64(&u)) return u * 1000;  // wraps as before for > 1.8e16 µs
  if (us.is_integer() && us.ToInt64(&i)) return 0;         // negative
  double ns = std::max(0.0, us.number()) * 1000.0;
  if (!(ns < 9.2e18)) return static_cast<uint64_t>(INT64_MAX);
  return static_cast<uint64_t>(std::llround(ns));
}

// As a document's get<int64_t>(): integers exactly (above INT64_MAX: modulo
// 2^64), fractions truncated; out-of-range floats give the fallback.
int64_t IntOf(const JsonValue& v, int64_t fallback) {
  if (!v.is_number()) return fallback;
  int64_t i;
  uint64_t u;
  if (v.is_integer() && v.ToInt64(&i)) return i;
  if (v.is_integer() && v.ToUint64(&u)) return static_cast<int64_t>(u);
  double d = v.number();
  if (d > -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  return fallback;
}

// A number (or bool) converted to T as a static_cast would, when T can
// hold its integer part; otherwise `fallback`.
template <typename T>
T NumOf(const JsonValue& v, T fallback) {
  if (v.is_bool()) return static_cast<T>(v.boolean());
  if (!v.is_number()) return fallback;
  int64_t i;
  uint64_t u;
  if (v.is_integer() && v.ToInt64(&i)) return static_cast<T>(i);
  if (v.is_integer() && v.ToUint64(&u)) return static_cast<T>(u);
  double d = v.number();
  if constexpr (std::is_same_v<T, bool>) {
    return d != 0;
  } else {
    if (d > static_cast<double>(std::numeric_limits<T>::min()) - 1.0 &&
        d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0) {
      return static_cast<T>(d);
    }
    return fallback;
  }
}

JsonValue ArgOf(const JsonValue& e, const char* key) {
  JsonValue args = e.Get("args");
  if (!args.is_object()) return {};
  JsonValue v = args.Get(key);
  return v.is_null() ? JsonValue() : v;
}
template <typename T>
T Arg(const JsonValue& e, const char* key, T fallback) {
  return NumOf<T>(ArgOf(e, key), fallback);
}
std::string StrArg(const JsonValue& e, const char* key, const std::string& fallback) {
  JsonValue v = ArgOf(e, key);
  return v.is_string() ? std::string(v.str()) : fallback;
}
bool BoolArg(const JsonValue& e, const char* key, bool fallback) {
  JsonValue v = ArgOf(e, key);
  return v.is_bool() ? v.boolean() : fallback;
}
std::string StrOf(const JsonValue& obj, const char* key, const std::string& fallback) {
  JsonValue v = obj.Get(key);
  return v.is_string() ? std::string(v.str()) : fallback;
}
bool BoolOf(const JsonValue& obj, const char* key, bool fallback) {
  JsonValue v = obj.Get(key);
  return v.is_bool() ? v.boolean() : fallback;
}
int64_t IntMember(const JsonValue& obj, const char* key, int64_t fallback) {
  JsonValue v = obj.Get(key);
  return v.valid() ? IntOf(v, fallback) : fallback;
}

// Index of `name` in `names` (as cuda_names.cpp spells them), or fallback.
template <typename NameOf>
uint8_t Lookup(const std::string& name, NameOf name_of, int count, uint8_t fallback) {
  for (int i = 0; i < count; ++i) {
    if (name == name_of(static_cast<uint8_t>(i))) return static_cast<uint8_t>(i);
  }
  return fallback;
}

// An event of a `prof merge` output mapped back onto its input: its own
// pid, and its times shifted back by `shift_ns`.
struct Unmerge {
  bool active = false;
  int64_t pid = 0;
  int64_t shift_ns = 0;
};

// Where a Reader puts a call and a GPU record: the agent's records, or their
// compact form.
void Add(std::vector<HostEvent>* v, const HostEvent& e) { v->push_back(e); }
void Add(std::vector<DeviceRecord>* v, const DeviceRecord& r) { v->push_back(r); }
void Add(ChunkedVector<CompactHostEvent>* v, const HostEvent& e) { v->push_back(CompactHostEvent::From(e)); }
void Add(ChunkedVector<CompactDeviceRecord>* v, const DeviceRecord& r) { v->push_back(CompactDeviceRecord::From(r)); }

template <typename T>
void StableSortByStart(std::vector<T>* v) {
  std::stable_sort(v->begin(), v->end(), [](const T& a, const T& b) { return a.start_ns < b.start_ns; });
}

// The same order for chunked records without a second copy of them: an
// index is sorted (4 bytes per record) and the records are permuted in
// place along its cycles. libprof's traces arrive sorted: nothing moves.
template <typename T>
void StableSortByStart(ChunkedVector<T>* v) {
  ChunkedVector<T>& c = *v;
  bool sorted = true;
  for (size_t i = 1; i < c.size() && sorted; ++i) sorted = !(c[i].start_ns < c[i - 1].start_ns);
  if (sorted) return;
  std::vector<uint32_t> from(c.size());  // from[i]: the record that goes to i
  for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<uint32_t>(i);
  std::stable_sort(from.begin(), from.end(), [&c](uint32_t a, uint32_t b) { return c[a].start_ns < c[b].start_ns; });
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == i) continue;
    T held = c[i];
    size_t j = i;
    while (from[j] != i) {
      size_t k = from[j];
      c[j] = c[k];
      from[j] = static_cast<uint32_t>(j);
      j = k;
    }
    c[j] = held;
    from[j] = static_cast<uint32_t>(j);
  }
}

// W: Window (TraceToWindow) or CompactWindow (`prof summary`).
template <typename W>
class Reader {
 public:
  explicit Reader(W* w) : w_(*w) { w_.strings.assign(1, ""); }

  // What reading events needs from the "libprof" member.
  void Prime(const JsonValue& l) {
    if (!l.is_object()) return;
    libprof_ = true;
    w_.meta.pid = static_cast<int>(IntMember(l, "pid", 0));
    have_steps_ = l.Get("steps").is_array();
  }

  void ReadEvent(const JsonValue& e, const Unmerge& fix) {
    fix_ = fix;
    const std::string ph = StrOf(e, "ph", "");
    const std::string cat = StrOf(e, "cat", "");
    const std::string name = StrOf(e, "name", "");
    if (ph == "M") {
      int64_t pid = fix.active ? fix.pid : IntMember(e, "pid", -1);
      if (name == "thread_name" && pid == w_.meta.pid) ReadThreadName(e);
      return;
    }
    if (ph == "i" && name == "[memory]") return ReadMemory(e);
    if (ph != "X") return;
    auto [start, end] = Span(e);
    if (cat == "cuda_runtime" || cat == "cuda_driver") return ReadApiCall(e, cat, name, start, end);
    if (cat == "python_function") {
      py_slices_.push_back({start, end, static_cast<uint32_t>(IntMember(e, "tid", 0)), InternSliceName(name)});
      return;
    }
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync") {
      return ReadDeviceWork(e, cat, name, start, end);
    }
    if (cat == "cpu_op") {
      if (name.rfind("nccl", 0) == 0) ReadCollective(e, name, start, end);
      return;
    }
    if (cat == "user_annotation") {
      if (name.rfind("ProfilerStep#", 0) == 0) {
        if (!have_steps_) {
          uint64_t step = std::strtoull(name.c_str() + 13, nullptr, 10);
          w_.steps.push_back({step, start, end});
        }
        return;
      }
      if (StrArg(e, "source", "") == "nvtx" || !libprof_) {
        NvtxRange r{start, end, Intern(name), static_cast<uint32_t>(IntMember(e, "tid", 0)), Arg<uint32_t>(e, "depth", 0),
                    0};
        w_.nvtx_ranges.push_back(r);
      }
    }
  }

  // `top`: the trace's top-level members other than traceEvents.
  void Finish(const JsonValue& top) {
    ReadMeta(top);
    StableSortByStart(&w_.host_events);
    StableSortByStart(&w_.device_records);
    StableSortByStart(&w_.nvtx_ranges);
    std::stable_sort(w_.steps.begin(), w_.steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.step < b.step; });
    std::stable_sort(w_.alloc_samples.begin(), w_.alloc_samples.end(),
                     [](const AllocSample& a, const AllocSample& b) { return a.ts_ns < b.ts_ns; });
    RebuildPythonStacks();
    ReadCommunicators(top);
    WindowMeta& m = w_.meta;
    if (!libprof_ && !w_.steps.empty()) {
      m.first_step = w_.steps.front().step;
      m.last_step = w_.steps.back().step;
    }
    if (!libprof_) {
      // GPU activity recorded: any kernel, copy or memset on a device.
      m.has_gpu_timings = std::any_of(w_.device_records.begin(), w_.device_records.end(), [](const auto& r) {
        auto kind = static_cast<DeviceKind>(r.kind);
        return kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset;
      });
      if (m.name.empty()) m.name = "trace";
    }
  }

 private:
  uint32_t Intern(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<uint32_t>(w_.strings.size()));
    if (inserted) w_.strings.push_back(s);
    return it->second;
  }

  // python_function names are many slices of few names: each is held once.
  uint32_t InternSliceName(const std::string& s) {
    auto [it, inserted] = slice_name_ids_.try_emplace(s, static_cast<uint32_t>(slice_names_.size()));
    if (inserted) slice_names_.push_back(s);
    return it->second;
  }

  void ReadMeta(const JsonValue& t) {
    WindowMeta& m = w_.meta;
    // baseTimeNanoseconds: times become ns since it, and it is the offset to
    // the epoch. Kineto traces without it carry absolute epoch µs.
    m.epoch_offset_ns = IntMember(t, "baseTimeNanoseconds", 0);
    JsonValue d = t.Get("distributedInfo");
    if (d.is_object()) {
      m.rank = static_cast<int>(IntMember(d, "rank", 0));
      m.world_size = static_cast<int>(IntMember(d, "world_size", 1));
      m.rank_known = d.Has("rank");
    }
    m.name = StrOf(t, "traceName", "");
    m.has_gpu_timings = true;
    m.cupti_mode = kNotLibprofCuptiMode;
    JsonValue props = t.Get("deviceProperties");
    for (JsonValue dev = props.is_array() ? props.first() : JsonValue(); dev.valid(); dev = props.next(dev)) {
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
      w_.devices.push_back(p);
    }
    JsonValue l = t.Get("libprof");
    if (!l.is_object()) return;
    m.libprof_version = StrOf(l, "version", "");
    m.name = StrOf(l, "name", m.name);
    m.hostname = StrOf(l, "hostname", "");
    m.process = StrOf(l, "process", "");
    m.pid = static_cast<int>(IntMember(l, "pid", 0));
    m.rank_known = BoolOf(l, "rank_known", m.rank_known);
    m.cupti_mode = StrOf(l, "cupti_mode", "");
    m.step_description = StrOf(l, "step", "");
    m.range_description = StrOf(l, "range", "");
    m.has_gpu_timings = BoolOf(l, "gpu_timings", true);
    m.cuda_runtime_version = static_cast<int>(IntMember(l, "cuda_runtime_version", 0));
    m.cuda_driver_version = static_cast<int>(IntMember(l, "cuda_driver_version", 0));
    m.cupti_api_version = static_cast<uint32_t>(IntMember(l, "cupti_api_version", 0));
    JsonValue python = l.Get("python");
    if (python.is_object()) w_.python.status = StrOf(python, "stacks", "");
    JsonValue win = l.Get("window");
    if (win.is_object()) {
      m.first_step = static_cast<uint64_t>(IntMember(win, "first_step", 0));
      m.last_step = static_cast<uint64_t>(IntMember(win, "last_step", 0));
      m.partial = BoolOf(win, "partial", false);
      m.partial_reason = StrOf(win, "partial_reason", "");
      // Window bounds are epoch ns; back onto this trace's clock.
      m.start_ns = FromEpoch(IntMember(win, "start_ns", 0));
      m.end_ns = FromEpoch(IntMember(win, "end_ns", 0));
    }
    JsonValue x = l.Get("losses");
    if (x.is_object()) {
      auto get = [&x](const char* k) { return static_cast<uint64_t>(IntMember(x, k, 0)); };
      LossCounts& l = m.losses;
      l.host_events_dropped = get("host_events_dropped");
      l.device_records_dropped = get("device_records_dropped");
      l.cupti_records_dropped = get("cupti_records_dropped");
      l.device_records_missing = get("device_records_missing");
      l.device_records_untimed = get("device_records_untimed");
      l.unknown_activity_kinds = get("unknown_activity_kinds");
      l.alloc_samples_dropped = get("alloc_samples_dropped");
      l.nvtx_ranges_dropped = get("nvtx_ranges_dropped");
      l.nvtx_names_dropped = get("nvtx_names_dropped");
      l.unrecorded_start_ns = get("unrecorded_start_ns");
      l.host_events_late = get("host_events_late");
      l.api_records_missing = get("api_records_missing");
    }
    JsonValue config = l.Get("config");
    for (JsonValue v = config.is_object() ? config.first() : JsonValue(); v.valid(); v = config.next(v)) {
      m.config.emplace_back(std::string(v.key()), v.is_string() ? std::string(v.str()) : v.Dump());
    }
    JsonValue steps = l.Get("steps");
    for (JsonValue s = steps.is_array() ? steps.first() : JsonValue(); s.valid(); s = steps.next(s)) {
      if (!s.is_array() || s.size() < 3) continue;
      JsonValue a = s.first(), b = s.next(a), c = s.next(b);
      w_.steps.push_back({static_cast<uint64_t>(IntOf(a, 0)), Rel(IntOf(b, 0)), Rel(IntOf(c, 0))});
    }
    JsonValue live = l.Get("live_at_end");
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
      w_.live_at_end.push_back(a);
    }
  }

  uint64_t Rel(int64_t ns) const { return ns > 0 ? static_cast<uint64_t>(ns) : 0; }
  uint64_t FromEpoch(int64_t epoch_ns) const {
    return epoch_ns > w_.meta.epoch_offset_ns
               ? static_cast<uint64_t>(epoch_ns) - static_cast<uint64_t>(w_.meta.epoch_offset_ns)
               : 0;
  }
  static uint16_t ApiOf(const std::string& name) {
    ApiId id = ApiId::kCount;
    ApiFromName(name, &id);
    return static_cast<uint16_t>(id);
  }

  // A timestamp, shifted back onto its input's clock for a merged trace
  // (as the merge shifted it: whole ns, three decimals of µs).
  uint64_t TimeNs(const JsonValue& ts) const {
    if (!fix_.active || fix_.shift_ns == 0 || !ts.is_number()) return ToNs(ts);
    double shifted = std::round(ts.number() * 1000.0 - static_cast<double>(fix_.shift_ns)) / 1000.0;
    double ns = std::max(0.0, shifted) * 1000.0;
    if (!(ns < 9.2e18)) return static_cast<uint64_t>(INT64_MAX);
    return static_cast<uint64_t>(std::llround(ns));
  }

  // Start and end in ns; the true duration when the slice was clipped.
  std::pair<uint64_t, uint64_t> Span(const JsonValue& e) const {
    uint64_t start = TimeNs(e.Get("ts"));
    uint64_t dur = ToNs(e.Get("args").is_object() && e.Get("args").Has("unclipped dur") ? e.Get("args").Get("unclipped dur")
                                                                                          : e.Get("dur"));
    return {start, start + dur};
  }

  // An NCCL call as libprof writes it (exporters/trace/chrome_trace.cpp): a cpu_op
  // "nccl<Operation>" with the args Kineto puts on record_param_comms, its
  // launch's correlation and where it was seen. The count NCCL was passed
  // comes back from the element counts as collectives.cpp wrote them.
  void ReadCollective(const JsonValue& e, const std::string& name, uint64_t start, uint64_t end) {
    JsonValue seq = ArgOf(e, "Seq");
    constexpr uint8_t kUnknown = 0xFF;
    const uint8_t func = Lookup(name.substr(4), CollFuncName, static_cast<int>(CollFunc::kCount), kUnknown);
    if (!seq.is_number() || func == kUnknown) return;
    CollectiveCall c{};
    c.start_ns = start;
    c.end_ns = end;
    c.comm_id = CommIdOf(StrArg(e, "Process Group Name", ""));
    const uint64_t in = Arg<uint64_t>(e, "In msg nelems", 0), out = Arg<uint64_t>(e, "Out msg nelems", 0);
    const int group = Arg<int>(e, "Group size", 0);
    switch (static_cast<CollFunc>(func)) {
      case CollFunc::kReduceScatter:
      case CollFunc::kScatter: c.count = out; break;
      case CollFunc::kAlltoAll: c.count = group > 0 ? in / static_cast<uint64_t>(group) : in; break;
      default: c.count = in; break;  // AllGather and Gather: in is the count too
    }
    c.seq = NumOf<uint64_t>(seq, 0);
    c.stream = Arg<uint64_t>(e, "stream handle", Arg<uint64_t>(e, "stream", 0));  // "stream" in older traces
    c.tid = static_cast<uint32_t>(IntMember(e, "tid", 0));
    c.correlation_id = Arg<uint32_t>(e, "correlation", 0);
    c.root_or_peer = static_cast<CollFunc>(func) == CollFunc::kSend   ? Arg<int32_t>(e, "Dst Rank", -1)
                     : static_cast<CollFunc>(func) == CollFunc::kRecv ? Arg<int32_t>(e, "Src Rank", -1)
                                                                      : -1;
    c.result = Arg<int32_t>(e, "result", 0);
    c.func = func;
    c.datatype = static_cast<int8_t>(Lookup(StrArg(e, "dtype", ""), CollDtypeName, 12, kUnknown));
    c.source = static_cast<uint8_t>(StrArg(e, "source", "") == "nccl profiler plugin" ? CollSource::kProfilerPlugin
                                                                                       : CollSource::kWrapper);
    w_.collectives.push_back(c);
    if (group > 0) comm_sizes_.emplace(c.comm_id, group);
  }

  // "0x<hex>" as libprof names a communicator, or a number (PyTorch's
  // process group names); 0 otherwise.
  static uint64_t CommIdOf(const std::string& name) {
    if (name.empty()) return 0;
    const bool hex = name.size() > 2 && name[0] == '0' && (name[1] == 'x' || name[1] == 'X');
    char* end = nullptr;
    const uint64_t id = std::strtoull(name.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
    return end != nullptr && *end == '\0' ? id : 0;
  }

  // The communicators of a window with NCCL calls: distributedInfo's
  // pg_config as libprof and torch.profiler write it, then any other one the
  // calls name, sized by their "Group size" (a merged trace keeps no
  // pg_config per rank).
  void ReadCommunicators(const JsonValue& top) {
    if (w_.collectives.empty()) return;
    std::stable_sort(w_.collectives.begin(), w_.collectives.end(),
                     [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
    JsonValue d = top.valid() ? top.Get("distributedInfo") : JsonValue();
    JsonValue pgs = d.is_object() ? d.Get("pg_config") : JsonValue();
    std::map<uint64_t, CommInfo> comms;
    for (JsonValue pg = pgs.is_array() ? pgs.first() : JsonValue(); pg.valid(); pg = pgs.next(pg)) {
      if (!pg.is_object()) continue;
      CommInfo c;
      c.id = CommIdOf(StrOf(pg, "pg_name", ""));
      c.nranks = static_cast<int>(IntMember(pg, "pg_size", 0));
      c.rank = static_cast<int>(IntMember(pg, "pg_rank", w_.meta.rank));
      comms.emplace(c.id, c);
    }
    for (const auto& [id, size] : comm_sizes_) {
      CommInfo c;
      c.id = id;
      c.nranks = size;
      c.rank = w_.meta.rank;
      comms.emplace(id, c);
    }
    for (const auto& [id, c] : comms) w_.communicators.push_back(c);
    // "2.28.9" -> 22809, as NCCL_VERSION_CODE.
    const std::string version = d.is_object() ? StrOf(d, "nccl_version", "") : "";
    int major = 0, minor = 0, patch = 0;
    if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) == 3 && major > 0 && minor >= 0 &&
        patch >= 0 && minor < 100 && patch < 100) {
      w_.meta.nccl_version = major * 10000 + minor * 100 + patch;
    }
  }

  void ReadThreadName(const JsonValue& e) {
    std::string label = StrArg(e, "name", "");
    // "thread <tid> (<name>)" -> name
    auto open = label.find(" (");
    if (open == std::string::npos || label.back() != ')') return;
    w_.thread_names.emplace_back(static_cast<uint32_t>(IntMember(e, "tid", 0)),
                                 label.substr(open + 2, label.size() - open - 3));
  }

  void ReadApiCall(const JsonValue& e, const std::string& cat, const std::string& name, uint64_t start, uint64_t end) {
    ApiId id;
    uint32_t tid = static_cast<uint32_t>(IntMember(e, "tid", 0));
    uint32_t correlation = Arg<uint32_t>(e, "correlation", 0);
    if (StrArg(e, "source", "") != "cupti" && ApiFromName(name, &id)) {
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
      if (BoolArg(e, "via cuGetProcAddress", false)) h.flags |= kHostEventViaProcAddr;
      if (BoolArg(e, "via CUPTI callbacks", false)) h.flags |= kHostEventViaCupti;
      Add(&w_.host_events, h);
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
    Add(&w_.device_records, r);
  }

  void ReadDeviceWork(const JsonValue& e, const std::string& cat, const std::string& name, uint64_t start,
                      uint64_t end) {
    DeviceRecord r{};
    r.start_ns = start;
    r.end_ns = end;
    r.correlation_id = Arg<uint32_t>(e, "correlation", 0);
    int64_t pid = fix_.active ? fix_.pid : IntMember(e, "pid", 0);
    r.device_id = static_cast<uint32_t>(Arg<int64_t>(e, "device", pid));
    r.context_id = Arg<uint32_t>(e, "context", 0);
    int64_t stream = Arg<int64_t>(e, "stream", IntMember(e, "tid", 0));
    r.stream_id = stream < 0 ? kCuptiInvalidStream : static_cast<uint32_t>(stream);
    r.graph_id = Arg<uint32_t>(e, "graph id", 0);
    r.bytes = Arg<uint64_t>(e, "bytes", 0);
    if (cat == "kernel") {
      r.kind = static_cast<uint8_t>(DeviceKind::kKernel);
      r.name_id = Intern(name);
      auto dims = [&e](const char* key, int32_t* out) {
        // As a document's get<std::vector<int32_t>>: all numbers, or none.
        JsonValue v = ArgOf(e, key);
        std::vector<int32_t> values;
        for (JsonValue c = v.is_array() ? v.first() : JsonValue(); c.valid(); c = v.next(c)) {
          if (!c.is_number() && !c.is_bool()) {
            values.clear();
            break;
          }
          values.push_back(NumOf<int32_t>(c, 1));
        }
        for (size_t i = 0; i < 3; ++i) out[i] = i < values.size() ? values[i] : 1;
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
      if (open != std::string::npos && name.size() >= open + 2) {
        r.dst_kind = Lookup(name.substr(open + 1, name.size() - open - 2), MemoryKindName, 8, 0);
      }
    } else {
      r.kind = static_cast<uint8_t>(DeviceKind::kSync);
      std::string kind = StrArg(e, "cuda_sync_kind", name);
      r.cbid = Lookup(kind, [](uint8_t i) { return SyncKindName(i); }, 5, 0);
    }
    Add(&w_.device_records, r);
  }

  // "Memcpy HtoD (Pageable -> Device)"
  static void ParseCopyName(const std::string& name, DeviceRecord* r) {
    auto space = name.find(' ');
    auto open = name.find(" (");
    auto arrow = name.find(" -> ");
    if (space == std::string::npos || open == std::string::npos || arrow == std::string::npos) return;
    if (open < space + 1 || arrow < open + 2 || name.size() < arrow + 5) return;
    r->copy_kind = Lookup(name.substr(space + 1, open - space - 1), MemcpyKindName, 11, 0);
    r->src_kind = Lookup(name.substr(open + 2, arrow - open - 2), MemoryKindName, 8, 0);
    r->dst_kind = Lookup(name.substr(arrow + 4, name.size() - arrow - 5), MemoryKindName, 8, 0);
  }

  void ReadMemory(const JsonValue& e) {
    AllocSample a{};
    a.ts_ns = TimeNs(e.Get("ts"));
    a.ptr = Arg<uint64_t>(e, "Addr", 0);
    a.delta_bytes = Arg<int64_t>(e, "Bytes", 0);
    a.total_bytes = Arg<uint64_t>(e, "Total Allocated", 0);
    a.tid = static_cast<uint32_t>(IntMember(e, "tid", 0));
    a.api = ApiOf(StrArg(e, "api", ""));
    a.device = static_cast<int16_t>(Arg<int>(e, "Device Id", -1));
    a.mem_kind = static_cast<uint8_t>(Arg<int>(e, "mem kind", 0));
    w_.alloc_samples.push_back(a);
  }

  // python_function slices back into stacks: each call's stack is the
  // slices on its thread that enclose it (they nest), outermost last in the
  // frame list as the agent stores it; a slice's name "<file>(<line>):
  // <function>" is its frame. The status comes from libprof.python.stacks.
  void RebuildPythonStacks() {
    if (py_slices_.empty()) return;
    w_.python.frames.assign(1, PyFrame{});
    w_.python.stacks.assign(2, {});
    w_.python.via.clear();
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> frame_ids;  // slice name id -> (frame id, via thread)
    std::map<std::pair<std::vector<uint32_t>, uint32_t>, uint32_t> stack_ids;
    std::map<std::string, uint32_t> by_text;  // frame text -> frame id (one frame, own or via)
    auto frame_of = [&](uint32_t name_id) -> std::pair<uint32_t, uint32_t> {
      auto [it, inserted] = frame_ids.try_emplace(name_id, std::pair<uint32_t, uint32_t>{0, 0});
      if (inserted) {
        std::string name = slice_names_[name_id];
        // " (via thread <tid>)": a frame of a waiting Python thread's stack.
        uint32_t via = 0;
        size_t mark = name.rfind(" (via thread ");
        if (mark != std::string::npos && name.back() == ')') {
          via = static_cast<uint32_t>(std::strtoul(name.c_str() + mark + 13, nullptr, 10));
          name.resize(mark);
        }
        auto [known, fresh] = by_text.try_emplace(name, static_cast<uint32_t>(w_.python.frames.size()));
        it->second = {known->second, via};
        if (!fresh) return it->second;
        PyFrame f{};
        size_t close = name.rfind("): ");
        size_t open = close == std::string::npos ? std::string::npos : name.rfind('(', close);
        if (open == std::string::npos) {
          f.file_id = Intern(name), f.line = -1;
        } else {
          f.file_id = Intern(name.substr(0, open));
          f.line = std::atoi(name.c_str() + open + 1);
          f.function_id = Intern(name.substr(close + 3));
        }
        w_.python.frames.push_back(f);
      }
      return it->second;
    };
    std::stable_sort(py_slices_.begin(), py_slices_.end(), [](const PySliceIn& a, const PySliceIn& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::unordered_map<uint32_t, std::vector<size_t>> by_tid;  // slice indexes per thread, in start order
    for (size_t i = 0; i < py_slices_.size(); ++i) by_tid[py_slices_[i].tid].push_back(i);
    std::unordered_map<uint32_t, std::pair<size_t, std::vector<size_t>>> sweep;  // tid -> (next slice, open slices)
    for (auto& e : w_.host_events) {  // in start order (sorted above)
      auto it = by_tid.find(e.tid);
      if (it == by_tid.end()) continue;
      auto& [next, open] = sweep[e.tid];
      const std::vector<size_t>& slices = it->second;
      while (next < slices.size() && py_slices_[slices[next]].start_ns <= e.start_ns) {
        size_t s = slices[next++];
        while (!open.empty() && py_slices_[open.back()].end_ns < py_slices_[s].end_ns) open.pop_back();
        open.push_back(s);
      }
      while (!open.empty() && py_slices_[open.back()].end_ns < e.end_ns) open.pop_back();
      std::vector<uint32_t> frames;
      uint32_t via = 0;
      for (auto s = open.rbegin(); s != open.rend(); ++s) {
        if (py_slices_[*s].end_ns >= e.end_ns) {
          auto [frame, frame_via] = frame_of(py_slices_[*s].name_id);
          frames.push_back(frame);
          via = frame_via;
        }
      }
      if (frames.empty()) continue;
      auto [sid, inserted] =
          stack_ids.try_emplace({frames, via}, static_cast<uint32_t>(w_.python.stacks.size()));
      if (inserted) {
        w_.python.stacks.push_back(frames);
        if (via != 0) w_.python.via.resize(w_.python.stacks.size(), 0), w_.python.via.back() = via;
      }
      e.stack_id = sid->second & 0xFFFFFF;
    }
  }

  struct PySliceIn {
    uint64_t start_ns, end_ns;
    uint32_t tid;
    uint32_t name_id;  // slice_names_
  };

  W& w_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<PySliceIn> py_slices_;
  std::unordered_map<std::string, uint32_t> slice_name_ids_;
  std::vector<std::string> slice_names_;
  bool libprof_ = false;
  bool have_steps_ = false;
  Unmerge fix_;
  std::map<uint64_t, int> comm_sizes_;  // communicator -> "Group size" of its calls
};

// Streams a trace into Readers: one, or one per input of a merged trace.
template <typename W>
class WindowsHandler : public TraceStreamHandler {
 public:
  // `known`: top-level members from an earlier pass (for members that
  // came after the events).
  explicit WindowsHandler(std::map<std::string, std::string> known) : members_(std::move(known)) {}

  void Member(std::string_view key, const JsonValue& value) override {
    std::string k(key);
    if (events_seen_ && (k == "libprof" || k == "libprof_merge" || k == "baseTimeNanoseconds") && !members_.count(k)) {
      late_ = true;
    }
    members_[k] = std::string(value.raw());
  }

  void EventsBegin(bool is_array) override {
    events_seen_ = true;
    is_array_ = is_array;
    skipped_ = SkippedEvents();
    readers_.clear();
    windows_.clear();
    slot_docs_.clear();
    merged_ = false;
    auto merge = members_.find("libprof_merge");
    JsonDoc merge_doc;
    std::string ignored;
    if (merge != members_.end() && ParseJson(merge->second, &merge_doc, &ignored)) {
      merged_ = true;
      SetUpSlots(JsonValue(&merge_doc, 0));
      return;
    }
    windows_.resize(1);
    readers_.push_back(std::make_unique<Reader<W>>(&windows_[0]));
    JsonDoc libprof;
    auto l = members_.find("libprof");
    primed_with_ = l != members_.end() ? l->second : std::string();
    if (l != members_.end() && ParseJson(l->second, &libprof, &ignored)) readers_[0]->Prime(JsonValue(&libprof, 0));
  }

  void Event(uint64_t index, const JsonValue& e) override {
    // An event whose pid, tid, ts or dur has the wrong type is not read
    // (its place on the timeline is unknown); it is counted.
    if (const char* field = WrongTypedField(e)) return skipped_.Add(e, index, field);
    if (!merged_) {
      if (e.is_object()) readers_[0]->ReadEvent(e, Unmerge{});
      return;
    }
    // Inverse of the merge: pid blocks name the input.
    if (!e.is_object()) return;
    JsonValue pid = e.Get("pid");
    int64_t p;
    if (!pid.is_number() || !pid.ToInt64(&p) || p < kMergePidBlock) return;  // string pids hold nothing read here
    size_t slot = static_cast<size_t>(p / kMergePidBlock - 1);
    if (slot >= readers_.size()) return;
    if (e.StringOr("ph", "") == "M" && e.StringOr("name", "") == "process_labels") return;
    Unmerge fix;
    fix.active = true;
    fix.pid = p % kMergePidBlock;
    fix.shift_ns = shifts_[slot];
    readers_[slot]->ReadEvent(e, fix);
  }
  void EventsEnd(uint64_t) override {}

  bool Finish(std::vector<W>* windows, std::string* error) {
    if (!is_array_) {
      *error = "no traceEvents array";
      return false;
    }
    std::string ignored;
    if (merged_) {
      for (size_t slot = 0; slot < readers_.size(); ++slot) {
        JsonDoc top;
        if (!ParseJson(slot_docs_[slot], &top, &ignored)) top.Clear();
        readers_[slot]->Finish(top.nodes.empty() ? JsonValue() : JsonValue(&top, 0));
      }
    } else {
      std::string text = "{";
      for (const auto& [key, raw] : members_) {
        if (text.size() > 1) text += ',';
        AppendJsonString(&text, key);
        text += ':';
        text += raw;
      }
      text += '}';
      JsonDoc top;
      if (!ParseJson(text, &top, &ignored)) top.Clear();
      readers_[0]->Finish(top.nodes.empty() ? JsonValue() : JsonValue(&top, 0));
    }
    *windows = std::move(windows_);
    return true;
  }

  // Whether reading the events again, knowing the members that came after
  // them, could read them differently. A single trace's events depend only
  // on its libprof block (Prime) and on whether it is a merge; a merge's
  // also on baseTimeNanoseconds (each input's shift), which libprof writes
  // after the events: a single trace is read once.
  bool late() const {
    if (!late_ || merged_) return late_;
    auto l = members_.find("libprof");
    return members_.count("libprof_merge") || (l != members_.end() ? l->second : std::string()) != primed_with_;
  }
  const std::map<std::string, std::string>& members() const { return members_; }
  const SkippedEvents& skipped() const { return skipped_; }

 private:
  // One reader per input of the merge, with the top-level members the
  // input had (its rank, libprof block and baseTimeNanoseconds).
  void SetUpSlots(const JsonValue& merge) {
    JsonValue inputs = merge.is_object() ? merge.Get("inputs") : JsonValue();
    JsonDoc merged_top;
    std::string ignored, dist_raw = "{}";
    int64_t world = 1, base = 0;
    auto dist = members_.find("distributedInfo");
    JsonDoc dist_doc;
    if (dist != members_.end() && ParseJson(dist->second, &dist_doc, &ignored)) {
      JsonValue d(&dist_doc, 0);
      if (d.is_object()) world = IntMember(d, "world_size", 1);
    }
    auto b = members_.find("baseTimeNanoseconds");
    JsonDoc base_doc;
    if (b != members_.end() && ParseJson(b->second, &base_doc, &ignored)) base = IntOf(JsonValue(&base_doc, 0), 0);
    auto props = members_.find("deviceProperties");
    size_t n = 0;
    for (JsonValue s = inputs.is_array() ? inputs.first() : JsonValue(); s.valid(); s = inputs.next(s)) ++n;
    windows_.resize(n);
    size_t slot = 0;
    for (JsonValue s = inputs.is_array() ? inputs.first() : JsonValue(); s.valid(); s = inputs.next(s), ++slot) {
      readers_.push_back(std::make_unique<Reader<W>>(&windows_[slot]));
      int64_t source_base = s.is_object() ? IntMember(s, "baseTimeNanoseconds", 0) : 0;
      int64_t shift = 0;
      if (__builtin_sub_overflow(source_base, base, &shift) ||
          __builtin_sub_overflow(shift, s.is_object() ? IntMember(s, "clock_offset_ns", 0) : 0, &shift)) {
        shift = 0;
      }
      shifts_.push_back(shift);
      std::string text = "{\"distributedInfo\":{\"rank\":" +
                         std::to_string(s.is_object() ? IntMember(s, "rank", 0) : 0) +
                         ",\"world_size\":" + std::to_string(world) + "}";
      if (props != members_.end()) text += ",\"deviceProperties\":" + props->second;
      JsonValue l = s.is_object() ? s.Get("libprof") : JsonValue();
      if (l.valid()) {
        text += ",\"libprof\":" + std::string(l.raw());
        readers_.back()->Prime(l);
      }
      text += ",\"baseTimeNanoseconds\":" + std::to_string(source_base) + "}";
      slot_docs_.push_back(std::move(text));
    }
  }

  std::map<std::string, std::string> members_;  // top-level members: raw JSON text
  bool events_seen_ = false, is_array_ = false, late_ = false, merged_ = false;
  std::string primed_with_;  // the libprof member the events were read with ("": none)
  std::vector<W> windows_;
  std::vector<std::unique_ptr<Reader<W>>> readers_;
  std::vector<int64_t> shifts_;
  std::vector<std::string> slot_docs_;
  SkippedEvents skipped_;
};

template <typename W>
bool ReadWindowsFrom(const std::function<std::unique_ptr<ByteSource>(std::string*)>& open, const std::string& label,
                     std::vector<W>* windows, std::string* error, SkippedEvents* skipped = nullptr) {
  std::map<std::string, std::string> known;
  for (int pass = 0; pass < 2; ++pass) {
    std::unique_ptr<ByteSource> source = open(error);
    if (!source) return false;
    WindowsHandler<W> handler(known);
    TraceStreamResult read = StreamTrace(source.get(), &handler);
    if (!read.ok) {
      *error = read.error.rfind("syntax error", 0) == 0 ? "rule strict-json: " + label + ": " + read.error : read.error;
      return false;
    }
    // The libprof block (or a merge's) after the events: read them again
    // knowing it.
    if (handler.late() && pass == 0) {
      known = handler.members();
      continue;
    }
    if (skipped) *skipped = handler.skipped();
    return handler.Finish(windows, error);
  }
  return false;
}

}  // namespace

bool ReadWindows(const std::string& path, uint64_t max_unpacked_bytes, std::vector<CompactWindow>* windows,
                 std::string* error, SkippedEvents* skipped) {
  return ReadWindowsFrom([&](std::string* e) { return OpenFileSource(path, max_unpacked_bytes, e); }, path, windows,
                         error, skipped);
}

bool ReadWindowsFromBytes(std::string_view bytes, std::vector<Window>* windows, std::string* error,
                          SkippedEvents* skipped) {
  return ReadWindowsFrom([&](std::string*) { return MemorySource(bytes); }, "trace", windows, error, skipped);
}

bool ReadWindowsFromBytes(std::string_view bytes, std::vector<CompactWindow>* windows, std::string* error,
                          SkippedEvents* skipped) {
  return ReadWindowsFrom([&](std::string*) { return MemorySource(bytes); }, "trace", windows, error, skipped);
}

bool TraceToWindow(const nlohmann::json& trace, Window* window, std::string* error) {
  *window = Window{};
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    *error = "no traceEvents array";
    return false;
  }
  // Read as a single trace even if it carries a merge's block: callers of
  // this form split merged traces themselves (SplitMerged).
  nlohmann::json copy = trace;
  copy.erase("libprof_merge");
  std::string text = copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::vector<Window> windows;
  if (!ReadWindowsFrom([&](std::string*) { return MemorySource(text); }, "trace", &windows, error)) return false;
  if (windows.size() != 1) {
    *error = "no traceEvents array";
    return false;
  }
  *window = std::move(windows[0]);
  return true;
}

}  // namespace prof::tool
