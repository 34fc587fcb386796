#include "tools/prof/trace/window_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "exporters/common/cuda_names.h"
#include "model/api_ids.h"
#include "tools/prof/trace/field_values.h"
#include "tools/prof/trace/window_meta.h"

namespace prof::tool {
namespace {

// Where a WindowReader puts a call and a GPU record: the agent's records, or their
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
  // record_order.cpp's in-place cycle walk (collectors/cupti), over a ChunkedVector: the two share only base/.
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

}  // namespace

template <typename W>
void WindowReader<W>::Prime(const JsonValue& l) {
  if (!l.is_object()) return;
  libprof_ = true;
  w_.meta.pid = static_cast<int>(IntMember(l, "pid", 0));
  have_steps_ = l.Get("steps").is_array();
  JsonValue graphs = l.Get("python").Get("graph_capture_stacks");
  if (!graphs.is_object()) return;
  JsonValue stacks = graphs.Get("stacks");
  for (JsonValue st = stacks.is_array() ? stacks.first() : JsonValue(); st.valid(); st = stacks.next(st)) {
    std::vector<uint32_t>& frames = capture_stacks_.emplace_back();
    for (JsonValue f = st.is_array() ? st.first() : JsonValue(); f.valid(); f = st.next(f)) {
      if (f.is_string()) frames.push_back(InternSliceName(std::string(f.str())));
    }
  }
  JsonValue nodes = graphs.Get("nodes");
  for (JsonValue n = nodes.is_array() ? nodes.first() : JsonValue(); n.valid(); n = nodes.next(n)) {
    JsonValue id = n.is_array() ? n.first() : JsonValue();
    JsonValue index = id.valid() ? n.next(id) : JsonValue();
    if (!id.is_number() || !index.is_number()) continue;
    auto i = NumOf<uint32_t>(index, UINT32_MAX);
    if (i < capture_stacks_.size()) capture_of_node_[NumOf<uint64_t>(id, 0)] = i + 1;
  }
}

template <typename W>
void WindowReader<W>::ReadEvent(const JsonValue& e, const Unmerge& fix) {
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
    if (name.rfind("nccl", 0) == 0) return ReadCollective(e, name, start, end);
    return ReadOperator(e, name, start, end);
  }
  if (cat == "user_annotation") {
    if (name.rfind("ProfilerStep#", 0) == 0) {
      if (!have_steps_) {
        uint64_t step = std::strtoull(name.c_str() + 13, nullptr, 10);
        w_.steps.push_back({step, start, end});
      }
      return;
    }
    if (Arg<uint32_t>(e, "External id", 0) != 0) return ReadOperator(e, name, start, end);
    if (StrArg(e, "source", "") == "nvtx" || !libprof_) {
      NvtxRange r{start, end, Intern(name), static_cast<uint32_t>(IntMember(e, "tid", 0)), Arg<uint32_t>(e, "depth", 0)};
      w_.nvtx_ranges.push_back(r);
    }
  }
}

// A PyTorch operator (libprof's, or Kineto's cpu_op and record_function
// spans): an NVTX range with its External id, as the agent holds it.
template <typename W>
void WindowReader<W>::ReadOperator(const JsonValue& e, const std::string& name, uint64_t start, uint64_t end) {
  uint32_t op_id = Arg<uint32_t>(e, "External id", 0);
  if (op_id == 0) return;
  NvtxRange r{start, end, Intern(name), static_cast<uint32_t>(IntMember(e, "tid", 0)), 0};
  r.op_id = op_id;
  r.seq = Arg<int32_t>(e, "Sequence number", -1);
  w_.nvtx_ranges.push_back(r);
}

template <typename W>
void WindowReader<W>::Finish(const JsonValue& top) {
  ReadTraceMembers(top, &w_.meta, &w_.devices);
  JsonValue libprof = top.Get("libprof");
  if (libprof.is_object()) ReadLibprofBlock(libprof, &w_.meta, &w_.python, &w_.steps, &w_.live_at_end);
  StableSortByStart(&w_.host_events);
  StableSortByStart(&w_.device_records);
  StableSortByStart(&w_.nvtx_ranges);
  std::stable_sort(w_.steps.begin(), w_.steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.step < b.step; });
  std::stable_sort(w_.alloc_samples.begin(), w_.alloc_samples.end(),
                   [](const AllocSample& a, const AllocSample& b) { return a.ts_ns < b.ts_ns; });
  std::stable_sort(w_.tensor_memory.begin(), w_.tensor_memory.end(),
                   [](const TensorMemoryEvent& a, const TensorMemoryEvent& b) { return a.ts_ns < b.ts_ns; });
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

template <typename W>
uint64_t WindowReader<W>::TimeNs(const JsonValue& ts) const {
  if (!fix_.active || fix_.shift_ns == 0 || !ts.is_number()) return ToNs(ts);
  double shifted = std::round(ts.number() * 1000.0 - static_cast<double>(fix_.shift_ns)) / 1000.0;
  double ns = std::max(0.0, shifted) * 1000.0;
  if (!(ns < 9.2e18)) return static_cast<uint64_t>(INT64_MAX);
  return static_cast<uint64_t>(std::llround(ns));
}

template <typename W>
std::pair<uint64_t, uint64_t> WindowReader<W>::Span(const JsonValue& e) const {
  // A slice drawn clipped to nest on its track keeps in its args how much
  // of its start was clipped and its true duration
  // (exporters/trace/chrome_trace.cpp).
  JsonValue args = e.Get("args");
  bool is_args = args.is_object();
  uint64_t start = TimeNs(e.Get("ts"));
  if (is_args && args.Has("clipped start")) start -= std::min(start, ToNs(args.Get("clipped start")));
  uint64_t dur = ToNs(is_args && args.Has("unclipped dur") ? args.Get("unclipped dur") : e.Get("dur"));
  return {start, start + dur};
}

template <typename W>
void WindowReader<W>::ReadThreadName(const JsonValue& e) {
  std::string label = StrArg(e, "name", "");
  // "thread <tid> (<name>)" -> name
  auto open = label.find(" (");
  if (open == std::string::npos || label.back() != ')') return;
  w_.thread_names.emplace_back(static_cast<uint32_t>(IntMember(e, "tid", 0)),
                               label.substr(open + 2, label.size() - open - 3));
}

template <typename W>
void WindowReader<W>::ReadApiCall(const JsonValue& e, const std::string& cat, const std::string& name, uint64_t start, uint64_t end) {
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

template <typename W>
void WindowReader<W>::ReadDeviceWork(const JsonValue& e, const std::string& cat, const std::string& name,
                                     uint64_t start, uint64_t end) {
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
  if (!capture_of_node_.empty()) {
    auto node = capture_of_node_.find(Arg<uint64_t>(e, "graph node id", 0));
    if (node != capture_of_node_.end()) r.capture_stack_id = node->second;  // resolved in RebuildPythonStacks
  }
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

template <typename W>
void WindowReader<W>::ParseCopyName(const std::string& name, DeviceRecord* r) {
  auto space = name.find(' ');
  auto open = name.find(" (");
  auto arrow = name.find(" -> ");
  if (space == std::string::npos || open == std::string::npos || arrow == std::string::npos) return;
  if (open < space + 1 || arrow < open + 2 || name.size() < arrow + 5) return;
  r->copy_kind = Lookup(name.substr(space + 1, open - space - 1), MemcpyKindName, 11, 0);
  r->src_kind = Lookup(name.substr(open + 2, arrow - open - 2), MemoryKindName, 8, 0);
  r->dst_kind = Lookup(name.substr(arrow + 4, name.size() - arrow - 5), MemoryKindName, 8, 0);
}

template <typename W>
void WindowReader<W>::ReadMemory(const JsonValue& e) {
  // No "api": the caching allocator's tensor block (Kineto's profile_memory
  // events, libprof's PROF_TORCH_MEMORY ones).
  if (!ArgOf(e, "api").is_string()) {
    TensorMemoryEvent m{};
    m.ts_ns = TimeNs(e.Get("ts"));
    m.addr = Arg<uint64_t>(e, "Addr", 0);
    m.bytes = Arg<int64_t>(e, "Bytes", 0);
    m.total_allocated = Arg<uint64_t>(e, "Total Allocated", 0);
    m.total_reserved = Arg<uint64_t>(e, "Total Reserved", 0);
    m.device = static_cast<int16_t>(Arg<int>(e, "Device Id", -1));
    m.kind = static_cast<uint8_t>(m.bytes >= 0 ? TensorMemoryKind::kAlloc : TensorMemoryKind::kFree);
    std::string site = StrArg(e, "Python line", "");
    if (!site.empty()) m.site_id = Intern(site);
    if (Arg<int>(e, "Device Type", 1) == 1) w_.tensor_memory.push_back(m);
    return;
  }
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

// The other members are instantiated where they are defined
// (window_collectives.cpp, python_stacks.cpp).
template class WindowReader<Window>;
template class WindowReader<CompactWindow>;

}  // namespace prof::tool
