// Mapping from the event model to Kineto's trace events:
//
//   HostEvent                      X cuda_runtime / cuda_driver   pid = process, tid = OS thread
//   DeviceRecord kRuntime/Driver   X cuda_runtime / cuda_driver   (only when no HostEvent has its correlation)
//   DeviceRecord kernel/memcpy/..  X kernel / gpu_memcpy / gpu_memset / cuda_sync   pid = device, tid = stream
//   StepSpan                       X user_annotation "ProfilerStep#N" on the main thread (tid = pid)
//   HostEvent stacks               X python_function "<file>(<line>): <function>" on the calling
//                                  thread (python_sites.h), enclosing the calls made under them
//   NvtxRange                      X user_annotation on its thread, and X gpu_user_annotation per
//                                  stream spanning the GPU work launched inside it
//   NvtxRange of a PyTorch op      X cpu_op (a record_function label: user_annotation) with
//                                  Kineto's args; the calls inside it and their GPU work carry its
//                                  "External id" (common/operators.h)
//   CollectiveCall                 X cpu_op "ncclAllReduce" ... on its thread, with Kineto's
//                                  collective args; the same args on the kernel it launched
//   launch -> GPU work             s/f ac2g flow, id = correlation
//   AllocSample                    i "[memory]" (PyTorch's allocator event) + C counter per device
//
// Every X event on one (pid, tid) must nest or be disjoint (Perfetto and
// HTA rely on it), so events are emitted per track in start order through a
// stack of open slices; an event that would end after its enclosing slice is
// clipped to that slice's end (its true duration stays in the summary).
//
// This file writes the slices and flows; chrome_trace_metadata.cpp the header
// and process/thread names, chrome_trace_memory.cpp the allocator events.
#include "exporters/trace/chrome_trace.h"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "exporters/trace/chrome_trace_parts.h"
#include "exporters/common/collectives.h"
#include "exporters/common/cuda_names.h"
#include "exporters/common/demangle.h"
#include "exporters/common/json_writer.h"
#include "exporters/common/operators.h"
#include "exporters/common/python_sites.h"
#include "exporters/common/window_index.h"
#include "exporters/job/rank_facts.h"
#include "model/collectives.h"

namespace prof {
namespace {

// kPython before kHost: a frame's slice encloses a call with the same span.
// kCollective before kHost: an NCCL call encloses the launch it makes.
enum class Source : uint8_t { kStep, kNvtx, kGpuAnnotation, kPython, kCollective, kHost, kApiRecord, kDevice };

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

// `text` as JsonWriter::String writes it: quoted and escaped.
std::string QuoteJson(std::string_view text) {
  std::string out = "\"";
  AppendJsonEscaped(text, &out);
  out += '"';
  return out;
}

// Quoted JSON names by id, each made once; an id past `size` is made each
// time (Window::String maps such ids to "").
class QuotedNames {
 public:
  using Source = std::function<std::string_view(uint32_t)>;
  QuotedNames(size_t size, Source source) : cache_(size), source_(std::move(source)) {}
  const std::string& operator()(uint32_t id) {
    std::string& quoted = id < cache_.size() ? cache_[id] : scratch_;
    // A quoted string is never empty: empty means not made yet.
    if (quoted.empty() || id >= cache_.size()) quoted = QuoteJson(source_(id));
    return quoted;
  }

 private:
  std::vector<std::string> cache_;
  Source source_;
  std::string scratch_;
};

class TraceWriter {
 public:
  TraceWriter(const Window& w, const WindowIndex& index, std::string_view trace_name, ByteSink& sink,
              RankEvents* job)
      : w_(w), trace_name_(trace_name), out_(sink), events_(out_, chrome::TimeBase(w)), index_(index), names_(w),
        job_(job) {}

  bool Write() {
    AdjustSteps();
    BuildGpuAnnotations();
    out_.Raw("{\n");
    out_.Key("schemaVersion");
    out_.Int(1);
    out_.Raw(",\n");
    chrome::WriteHeader(w_, events_);
    out_.Key("traceEvents");
    out_.Raw("[\n");
    chrome::WriteProcessMetadata(w_, events_);
    WriteSlices();
    chrome::WriteMemoryEvents(w_, events_);
    out_.Raw("\n],\n");
    out_.Key("traceName");
    out_.String(trace_name_);
    out_.Raw(",\n");
    out_.Key("displayTimeUnit");
    out_.String("ms");
    out_.Raw(",\n");
    out_.Key("baseTimeNanoseconds");
    out_.Int(static_cast<int64_t>(events_.base_ns()) + w_.meta.epoch_offset_ns);
    out_.Raw("\n}\n");
    return out_.Finish();
  }

 private:
  // `text` as a quoted JSON string, valid until the next call.
  std::string_view Quoted(std::string_view text) {
    quote_scratch_ = QuoteJson(text);
    return quote_scratch_;
  }

  // --- the job analysis' events (exporters/job/rank_facts.h) --------------
  // What `prof` reads back from the trace for its job analysis, taken as it
  // is written: the same true spans on the same clock (baseTimeNanoseconds +
  // ts, ns), so facts computed from them equal those computed from the file.

  std::pair<int64_t, int64_t> JobSpan(uint64_t start_ns, uint64_t end_ns) const {
    int64_t start = static_cast<int64_t>(std::max(start_ns, events_.base_ns())) + w_.meta.epoch_offset_ns;
    return {start, start + static_cast<int64_t>(end_ns > start_ns ? end_ns - start_ns : 0)};
  }
  void JobCall(std::string_view cat, std::string_view name, int64_t tid, uint64_t start_ns, uint64_t end_ns,
               uint64_t correlation = 0) {
    if (job_ == nullptr || !IsJobCall(cat, name)) return;
    auto [start, end] = JobSpan(start_ns, end_ns);
    job_->calls.push_back({start, end, tid, job_->Intern(name), correlation});
  }

  // `quoted_name`: the kernel's name as written (a JSON string); only
  // whether it is NCCL's is read from it.
  void JobKernelOf(const DeviceRecord& r, std::string_view quoted_name, const CollectiveCall* c) {
    auto [start, end] = JobSpan(r.start_ns, r.end_ns);
    std::string_view name = quoted_name.size() >= 2 ? quoted_name.substr(1, quoted_name.size() - 2) : quoted_name;
    if (c == nullptr) {
      job_->kernels.push_back(MakeJobKernel(start, end, name, "", "", ""));
    } else {
      job_->kernels.push_back(MakeJobKernel(start, end, name, CollKinetoName(c->func),
                                            CommName(c->comm_id), std::to_string(c->seq)));
    }
    job_->kernels.back().correlation = r.correlation_id;
  }
  void JobTransferOf(const DeviceRecord& r) {
    auto [start, end] = JobSpan(r.start_ns, r.end_ns);
    job_->transfers.push_back({start, end, r.correlation_id});
  }

  // --- time ---------------------------------------------------------------

  void Ts(uint64_t ns) { events_.Ts(ns); }

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
      // Kineto projects record_function ranges, not operators or module calls.
      if (range.op_id != 0 || !ModulePath(w_.String(range.name_id)).empty()) continue;
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

  // --- slices -------------------------------------------------------------

  // Start order; on equal starts the longer (enclosing) slice first, and
  // steps/ranges before the calls they contain.
  static bool Before(const Slice& a, const Slice& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    if (a.source != b.source) return a.source < b.source;
    // Python slices of equal span: outer first (they are built outer first).
    return a.source == Source::kPython && a.index < b.index;
  }

  // Sorts `v` by Before. Host events and device records arrive in start
  // order, where only runs of equal starts can be out of order (e.g. a
  // shorter slice first): those runs are put in order in place, stably, so
  // a sealed window costs one linear pass instead of a full sort.
  static void SortSlices(std::vector<Slice>* v) {
    auto starts_ascending = [](const Slice& a, const Slice& b) { return a.start_ns < b.start_ns; };
    if (!std::is_sorted(v->begin(), v->end(), starts_ascending)) {
      std::sort(v->begin(), v->end(), Before);
      return;
    }
    for (auto run = v->begin(); run != v->end();) {
      auto end = run + 1;
      while (end != v->end() && end->start_ns == run->start_ns) ++end;
      if (end - run > 32) {
        std::stable_sort(run, end, Before);
      } else {
        for (auto i = run + 1; i < end; ++i) {  // insertion sort: runs are short
          Slice x = *i;
          auto j = i;
          for (; j != run && Before(x, *(j - 1)); --j) *j = *(j - 1);
          *j = x;
        }
      }
      run = end;
    }
  }

  // Emits `bulk` (host events or device records) merged with the few
  // `extra` slices (steps, ranges, annotations) in Before order, without
  // building the merged vector (a copy of every slice). On equal keys the
  // bulk slice goes first, as std::merge would put it.
  void EmitOrdered(std::vector<Slice> bulk, std::vector<Slice> extra) {
    SortSlices(&bulk);
    SortSlices(&extra);
    size_t i = 0, j = 0;
    while (i < bulk.size() || j < extra.size()) {
      // Once the sink failed (disk full) nothing more can land: stop early.
      if (!out_.ok()) return;
      bool take_extra = j < extra.size() && (i == bulk.size() || Before(extra[j], bulk[i]));
      Emit(take_extra ? extra[j++] : bulk[i++]);
    }
  }

  // Host tracks and GPU tracks never share a (pid, tid), so each side is
  // ordered on its own; only the order within a track matters for nesting.
  void WriteSlices() {
    std::vector<Slice> host, host_extra, api_records, device, device_extra;
    host.reserve(w_.host_events.size());
    for (uint32_t i = 0; i < w_.host_events.size(); ++i) {
      host.push_back({w_.host_events[i].start_ns, w_.host_events[i].end_ns, i, Source::kHost});
    }
    for (uint32_t i = 0; i < steps_.size(); ++i) {
      host_extra.push_back({steps_[i].start_ns, steps_[i].end_ns, i, Source::kStep});
    }
    // An operator or module call running across a step's start (the step
    // marker a call inside it: a launch in the model's first layer) is drawn
    // from the last step start it crosses, where the work it belongs to is
    // (it belongs to the window its end is in): steps enclose everything on
    // the main thread. Its args keep its true start.
    std::vector<uint64_t> step_starts;
    for (const StepSpan& st : steps_) step_starts.push_back(st.start_ns);
    for (uint32_t i = 0; i < w_.nvtx_ranges.size(); ++i) {
      const NvtxRange& r = w_.nvtx_ranges[i];
      bool own = r.op_id != 0 || !ModulePath(w_.String(r.name_id)).empty();
      uint64_t start = r.start_ns;
      auto crossed = std::lower_bound(step_starts.begin(), step_starts.end(), r.end_ns);
      if (own && r.tid == static_cast<uint32_t>(w_.meta.pid) && crossed != step_starts.begin() &&
          *(crossed - 1) > r.start_ns) {
        start = *(crossed - 1);
      }
      host_extra.push_back({start, r.end_ns, i, Source::kNvtx});
    }
    for (uint32_t i = 0; i < w_.collectives.size(); ++i) {
      host_extra.push_back({w_.collectives[i].start_ns, w_.collectives[i].end_ns, i, Source::kCollective});
    }
    BuildPythonFunctions();
    for (uint32_t i = 0; i < py_slices_.size(); ++i) {
      host_extra.push_back({py_slices_[i].start_ns, py_slices_[i].end_ns, i, Source::kPython});
    }
    device.reserve(w_.device_records.size());
    for (uint32_t i = 0; i < w_.device_records.size(); ++i) {
      const DeviceRecord& r = w_.device_records[i];
      if (IsApiRecord(r)) {
        if (index_.ApiRecordShown(r)) api_records.push_back({r.start_ns, r.end_ns, i, Source::kApiRecord});
      } else if (IsGpuWork(KindOf(r))) {
        device.push_back({r.start_ns, r.end_ns, i, Source::kDevice});
      }
    }
    for (uint32_t i = 0; i < gpu_annotations_.size(); ++i) {
      device_extra.push_back({gpu_annotations_[i].start_ns, gpu_annotations_[i].end_ns, i, Source::kGpuAnnotation});
    }
    // API records only CUPTI saw (one per call a wrapper does not cover)
    // can be as many as the host events: they arrive in start order, so
    // they are put in order linearly and merged with the steps and ranges
    // rather than sorted with them.
    SortSlices(&api_records);
    SortSlices(&host_extra);
    std::vector<Slice> extra(api_records.size() + host_extra.size());
    std::merge(api_records.begin(), api_records.end(), host_extra.begin(), host_extra.end(), extra.begin(), Before);
    api_records = {};
    EmitOrdered(std::move(host), std::move(extra));
    EmitOrdered(std::move(device), std::move(device_extra));
  }

  void Emit(const Slice& s) {
    switch (s.source) {
      case Source::kStep: EmitStep(steps_[s.index]); break;
      case Source::kNvtx: EmitNvtx(w_.nvtx_ranges[s.index], s.start_ns); break;
      case Source::kGpuAnnotation: EmitGpuAnnotation(gpu_annotations_[s.index]); break;
      case Source::kPython: EmitPython(s.index); break;
      case Source::kCollective: EmitCollective(w_.collectives[s.index]); break;
      case Source::kHost: EmitHostEvent(s.index); break;
      case Source::kApiRecord: EmitApiRecord(s.index); break;
      case Source::kDevice: EmitDeviceRecord(w_.device_records[s.index]); break;
    }
  }

  // Fits [start, end) into its track's nesting; returns the span to draw.
  // A slice that would end after its enclosing one is clipped to it. A
  // stream op (kernel, copy, memset) that starts inside the previous op on
  // its stream and ends after it starts where that one ends instead: a stream
  // runs its ops one after the other, so the overlap is the GPU-to-host clock
  // conversion's, and an op clipped to it would vanish from what Perfetto and
  // HTA read.
  std::pair<uint64_t, uint64_t> Nest(uint64_t key, bool stream_op, uint64_t start_ns, uint64_t end_ns) {
    if (end_ns < start_ns) end_ns = start_ns;
    if (key != last_key_) {
      track_ = &tracks_[key];
      last_key_ = key;
    }
    std::vector<OpenSlice>& open = track_->open;
    while (!open.empty() && open.back().end_ns <= start_ns) open.pop_back();
    while (stream_op && !open.empty() && open.back().stream_op && open.back().end_ns < end_ns) {
      start_ns = open.back().end_ns;
      open.pop_back();
    }
    // A zero-length slice at a parent's end is still inside it.
    if (!open.empty() && end_ns > open.back().end_ns) end_ns = open.back().end_ns;
    open.push_back({end_ns, stream_op});
    return {start_ns, end_ns};
  }

  // `"ph":"X","cat":"<cat>","name":<name>,"pid":..,"tid":..,"ts":..,"dur":..`;
  // `quoted_name` is already a JSON string (Quoted(), or one of the caches).
  // `drawn_from_ns`: where to draw it from when later than its start (the
  // args keep its true span).
  void SliceHead(const char* cat, std::string_view quoted_name, bool device, int64_t pid, int64_t tid,
                 uint64_t start_ns, uint64_t end_ns, bool stream_op = false, uint64_t drawn_from_ns = 0) {
    auto [drawn_start_ns, drawn_end_ns] = Nest(TrackKey(device, static_cast<uint64_t>(pid), static_cast<uint64_t>(tid)),
                                               stream_op, std::max(start_ns, drawn_from_ns), end_ns);
    bool clipped = drawn_start_ns != start_ns || drawn_end_ns < end_ns;
    unclipped_dur_ns_ = clipped ? end_ns - start_ns : 0;
    start_clipped_ns_ = drawn_start_ns - start_ns;
    start_ns = drawn_start_ns;
    end_ns = drawn_end_ns;
    events_.Begin();
    out_.Raw("\"ph\":\"X\",\"cat\":\"");
    out_.Raw(cat);
    out_.Raw("\",\"name\":");
    out_.Raw(quoted_name);
    // `,"pid":..,"tid":..,"ts":` is the same for every slice of a track:
    // written once per track (checked against the ids: keys may collide).
    Track& track = *track_;
    if (track.ids.empty() || track.pid != pid || track.tid != tid) {
      track.pid = pid;
      track.tid = tid;
      track.ids = ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
    }
    out_.Raw(track.ids);
    Ts(start_ns);
    out_.Raw(",\"dur\":"); out_.Micros(end_ns - start_ns);
  }

  // Closes a slice's args; a clipped slice keeps its true duration there
  // (`prof summary` reads it back).
  void EndArgs() {
    if (start_clipped_ns_ != 0) {
      out_.Raw(",\"clipped start\":");
      out_.Micros(start_clipped_ns_);
    }
    if (unclipped_dur_ns_ != 0) {
      out_.Raw(",\"unclipped dur\":");
      out_.Micros(unclipped_dur_ns_);
    }
    out_.Raw("}}");
  }

  void EmitStep(const StepSpan& s) {
    step_name_.assign("ProfilerStep#");
    step_name_ += std::to_string(s.step);
    SliceHead("user_annotation", Quoted(step_name_), false, w_.meta.pid, w_.meta.pid, s.start_ns, s.end_ns);
    out_.Raw(",\"args\":{\"step\":"); out_.UInt(s.step); EndArgs();
    if (job_ != nullptr) {
      auto [start, end] = JobSpan(s.start_ns, s.end_ns);
      job_->steps.push_back({s.step, start, end});
    }
  }

  // python_function slices break at the edges of what else is drawn on a
  // thread (steps on the main thread, NVTX ranges), so they nest with it.
  void BuildPythonFunctions() {
    if (w_.python.stacks.size() <= 2) return;
    std::unordered_map<uint32_t, std::vector<uint64_t>> edges;
    auto main_tid = static_cast<uint32_t>(w_.meta.pid);
    for (const StepSpan& st : steps_) {
      edges[main_tid].push_back(st.start_ns);
      edges[main_tid].push_back(st.end_ns);
    }
    for (const NvtxRange& r : w_.nvtx_ranges) {
      edges[r.tid].push_back(r.start_ns);
      edges[r.tid].push_back(r.end_ns);
    }
    std::vector<std::pair<uint32_t, std::vector<uint64_t>>> barriers;
    for (auto& [tid, times] : edges) {
      std::sort(times.begin(), times.end());
      barriers.emplace_back(tid, std::move(times));
    }
    py_slices_ = BuildPythonSlices(w_, barriers);
    py_names_.assign(w_.python.frames.size(), std::string());
  }

  void EmitPython(uint32_t index) {
    const PySlice& p = py_slices_[index];
    std::string via_name;
    if (p.via != 0) via_name = QuoteJson(PythonSliceName(w_, p.frame_id, p.via));
    std::string& name = p.via != 0 ? via_name : py_names_[p.frame_id];
    if (name.empty()) name = QuoteJson(PythonSliceName(w_, p.frame_id));
    SliceHead("python_function", name, false, w_.meta.pid, p.tid, p.start_ns, p.end_ns);
    if (job_ != nullptr) {
      auto [start, end] = JobSpan(p.start_ns, p.end_ns);
      job_->python.push_back({start, end, p.tid, job_->Intern(PythonSliceName(w_, p.frame_id, p.via))});
    }
    out_.Raw(",\"args\":{\"Python id\":"); out_.UInt(index + 1);
    out_.Raw(",\"Python parent id\":");
    if (p.parent == 0) out_.Raw("null");
    else out_.UInt(p.parent);
    if (p.via != 0) {
      out_.Raw(",\"via thread\":"); out_.UInt(p.via);
    }
    EndArgs();
  }

  // drawn_from_ns: where WriteSlices draws it from (its start, or a step's).
  void EmitNvtx(const NvtxRange& n, uint64_t drawn_from_ns) {
    if (n.op_id != 0) return EmitOperator(n, drawn_from_ns);
    SliceHead("user_annotation", quoted_strings_(n.name_id), false, w_.meta.pid, n.tid, n.start_ns, n.end_ns, false,
              drawn_from_ns);
    JobCall("user_annotation", w_.strings[n.name_id], n.tid, std::max(n.start_ns, drawn_from_ns), n.end_ns);
    out_.Raw(",\"args\":{\"source\":\"nvtx\",\"depth\":"); out_.UInt(n.depth); EndArgs();
  }

  // A PyTorch operator (exporters/common/operators.h), with Kineto's args:
  // "Fwd thread id" is 0 on the forward thread, as in Kineto, and elsewhere
  // the forward thread's OS id (Kineto numbers threads its own way).
  void EmitOperator(const NvtxRange& n, uint64_t drawn_from_ns) {
    const char* cat = OperatorCategory(w_.String(n.name_id), n.seq);
    SliceHead(cat, quoted_strings_(n.name_id), false, w_.meta.pid, n.tid, n.start_ns, n.end_ns, false, drawn_from_ns);
    JobCall(cat, w_.String(n.name_id), n.tid, std::max(n.start_ns, drawn_from_ns), n.end_ns);
    out_.Raw(",\"args\":{\"External id\":"); out_.UInt(n.op_id);
    if (n.seq >= 0) {
      out_.Raw(",\"Sequence number\":"); out_.Int(n.seq);
      uint32_t forward = operators_.ForwardThread(n.seq);
      out_.Raw(",\"Fwd thread id\":"); out_.UInt(forward == n.tid ? 0 : forward);
    }
    ModuleArg(operators_.ModuleOf(&n - w_.nvtx_ranges.data()));
    if (n.shapes_id != 0) {
      std::string_view shapes = w_.String(n.shapes_id);
      out_.Raw(",\"Input Dims\":");
      if (IsShapeList(shapes)) out_.Raw(shapes);
      else out_.String(shapes);
    }
    EndArgs();
  }

  // `,"External id":<op id>` when an operator encloses the call.
  void ExternalId(int64_t op) {
    if (op < 0) return;
    out_.Raw(",\"External id\":"); out_.UInt(w_.nvtx_ranges[static_cast<size_t>(op)].op_id);
  }

  // `,"Module":"<path>"` for a module call's range.
  void ModuleArg(int64_t module) {
    if (module < 0) return;
    out_.Raw(",\"Module\":"); out_.String(ModulePath(w_.String(w_.nvtx_ranges[static_cast<size_t>(module)].name_id)));
  }

  // Args as Kineto's: no "device" or "stream", which only GPU work
  // carries (HTA counts every event with a "stream" as a kernel).
  void EmitGpuAnnotation(const GpuAnnotation& a) {
    SliceHead("gpu_user_annotation", quoted_strings_(a.name_id), true, a.device, a.stream, a.start_ns, a.end_ns);
    out_.Raw(",\"args\":{\"source\":\"nvtx\"");
    EndArgs();
  }

  // Starts the ac2g flow of `correlation` here when GPU work is on record.
  void FlowStart(uint32_t correlation, int64_t tid, uint64_t ts_ns) {
    if (correlation == 0 || index_.FirstWork(correlation) == WindowIndex::kNone) return;
    events_.Begin();
    out_.Raw("\"ph\":\"s\",\"id\":"); out_.UInt(correlation);
    out_.Raw(",\"pid\":"); out_.Int(w_.meta.pid);
    out_.Raw(",\"tid\":"); out_.Int(tid);
    out_.Raw(",\"ts\":"); Ts(ts_ns);
    out_.Raw(",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
  }

  // An NCCL call: named as NCCL's API function, with the args Kineto puts
  // on record_param_comms (its kernel carries the same).
  void EmitCollective(const CollectiveCall& c) {
    std::string name = std::string("\"nccl") + CollFuncName(c.func) + "\"";
    SliceHead("cpu_op", name, false, w_.meta.pid, c.tid, c.start_ns, c.end_ns);
    JobCall("cpu_op", std::string_view(name).substr(1, name.size() - 2), c.tid, c.start_ns, c.end_ns,
            c.correlation_id);
    out_.Raw(",\"args\":{\"Rank\":"); out_.Int(collectives_.Rank());
    out_.Raw(collectives_.KernelArgs(c));
    if (c.correlation_id != 0) { out_.Raw(",\"correlation\":"); out_.UInt(c.correlation_id); }
    // The cudaStream_t handle, not under "stream": that key is Kineto's GPU
    // stream id, and tools (HTA) take any event carrying it for GPU work.
    if (c.stream != 0) { out_.Raw(",\"stream handle\":"); out_.UInt(c.stream); }
    if (c.result != 0) { out_.Raw(",\"result\":"); out_.Int(c.result); }
    out_.Raw(c.source == static_cast<uint8_t>(CollSource::kProfilerPlugin) ? ",\"source\":\"nccl profiler plugin\""
                                                                           : ",\"source\":\"nccl wrapper\"");
    EndArgs();
  }

  void EmitHostEvent(uint32_t index) {
    const HostEvent& e = w_.host_events[index];
    bool driver = (e.flags & kHostEventDriver) != 0;
    SliceHead(driver ? "cuda_driver" : "cuda_runtime", quoted_apis_(e.api), false, w_.meta.pid,
              e.tid, e.start_ns, e.end_ns);
    JobCall(driver ? "cuda_driver" : "cuda_runtime", ApiName(static_cast<ApiId>(e.api)), e.tid, e.start_ns, e.end_ns,
            e.correlation_id);
    out_.Raw(",\"args\":{\"correlation\":"); out_.UInt(e.correlation_id);
    if (!operators_.empty()) ExternalId(operators_.Enclosing(e.tid, e.start_ns));
    if (e.bytes != 0) { out_.Raw(",\"bytes\":"); out_.UInt(e.bytes); }
    if (e.device >= 0) { out_.Raw(",\"device\":"); out_.Int(e.device); }
    if (e.result != 0) { out_.Raw(",\"result\":"); out_.Int(e.result); }
    if (e.flags & kHostEventViaProcAddr) out_.Raw(",\"via cuGetProcAddress\":true");
    if (e.flags & kHostEventViaCupti) out_.Raw(",\"via CUPTI callbacks\":true");
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
    SliceHead(cat, quoted_strings_(r.name_id), false, w_.meta.pid, r.thread_id, r.start_ns, r.end_ns);
    JobCall(cat, w_.strings[r.name_id], r.thread_id, r.start_ns, r.end_ns, r.correlation_id);
    out_.Raw(",\"args\":{\"cbid\":"); out_.UInt(r.cbid);
    out_.Raw(",\"correlation\":"); out_.UInt(r.correlation_id);
    if (!operators_.empty()) ExternalId(operators_.Enclosing(r.thread_id, r.start_ns));
    out_.Raw(",\"source\":\"cupti\"");
    EndArgs();
    if (index_.ApiRecord(r.correlation_id) == int64_t{index}) FlowStart(r.correlation_id, r.thread_id, r.start_ns);
  }

  // The copy's name as a quoted JSON string.
  const std::string& CopyName(const DeviceRecord& r) {
    bool memset = KindOf(r) == DeviceKind::kMemset;
    size_t key = memset ? 1000 + (r.dst_kind & 0xF) : (r.copy_kind & 0xF) * 256 + (r.src_kind & 0xF) * 16 + (r.dst_kind & 0xF);
    auto [it, inserted] = copy_names_.try_emplace(key);
    if (inserted) it->second = QuoteJson(memset ? MemsetName(r) : MemcpyName(r));
    return it->second;
  }

  void CommonDeviceArgs(const DeviceRecord& r) {
    out_.Raw(",\"args\":{\"device\":"); out_.UInt(r.device_id);
    out_.Raw(",\"context\":"); out_.UInt(r.context_id);
    out_.Raw(",\"stream\":"); out_.Int(r.stream_id == kCuptiInvalidStream ? -1 : int64_t{r.stream_id});
    out_.Raw(",\"correlation\":"); out_.UInt(r.correlation_id);
    if (!operators_.empty()) {
      int64_t op = operators_.OfCorrelation(w_, index_, r.correlation_id);
      ExternalId(op);
      if (operators_.has_modules()) ModuleArg(operators_.ModuleOf(op));
    }
    if (r.graph_id != 0) { out_.Raw(",\"graph id\":"); out_.UInt(r.graph_id); }
    if (r.graph_node_id != 0) { out_.Raw(",\"graph node id\":"); out_.UInt(r.graph_node_id); }
    if (r.capture_stack_id > 1) out_.Raw(CapturedAt(r.capture_stack_id));
  }

  // `,"captured at":"<call site>"`: the line that created a replayed node
  // (the stack itself is in the header's graph_capture_stacks).
  const std::string& CapturedAt(uint32_t stack_id) {
    auto [it, inserted] = captured_at_.try_emplace(stack_id);
    if (inserted) {
      uint64_t key = capture_sites_.Key(stack_id);
      if (key != 0) it->second = ",\"captured at\":" + QuoteJson(capture_sites_.KeyText(key));
    }
    return it->second;
  }

  void EmitDeviceRecord(const DeviceRecord& r) {
    int64_t tid = chrome::StreamTid(r);
    switch (KindOf(r)) {
      case DeviceKind::kKernel: {
        const std::string& name = quoted_kernels_(r.name_id);
        SliceHead("kernel", name, true, r.device_id, tid, r.start_ns, r.end_ns, true);
        CommonDeviceArgs(r);
        out_.Raw(kernel_args_(r));
        const CollectiveCall* c = collectives_.ForCorrelation(r.correlation_id);
        if (c != nullptr) out_.Raw(collectives_.KernelArgs(*c));
        EndArgs();
        if (job_ != nullptr) JobKernelOf(r, name, c);
        break;
      }
      case DeviceKind::kMemcpy:
      case DeviceKind::kMemset: {
        bool copy = KindOf(r) == DeviceKind::kMemcpy;
        SliceHead(copy ? "gpu_memcpy" : "gpu_memset", CopyName(r), true, r.device_id, tid, r.start_ns, r.end_ns,
                  true);
        CommonDeviceArgs(r);
        out_.Raw(",\"bytes\":"); out_.UInt(r.bytes);
        uint64_t dur = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
        out_.Raw(",\"memory bandwidth (GB/s)\":");  // bytes per ns = GB/s
        out_.Double(dur ? static_cast<double>(r.bytes) / static_cast<double>(dur) : 0.0);
        EndArgs();
        if (job_ != nullptr) JobTransferOf(r);
        break;
      }
      case DeviceKind::kSync: {
        const char* kind = SyncKindName(r.cbid);
        SliceHead("cuda_sync", Quoted(kind), true, r.device_id, tid, r.start_ns, r.end_ns);
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
      events_.Begin();
      out_.Raw("\"ph\":\"f\",\"id\":"); out_.UInt(r.correlation_id);
      out_.Raw(",\"pid\":"); out_.UInt(r.device_id);
      out_.Raw(",\"tid\":"); out_.Int(tid);
      out_.Raw(",\"ts\":"); Ts(r.start_ns);
      out_.Raw(",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
    }
  }

  const Window& w_;
  std::string_view trace_name_;
  JsonWriter out_;
  chrome::EventStream events_;  // uses out_: declared after it
  const WindowIndex& index_;
  DisplayNames names_;
  chrome::KernelArgs kernel_args_{w_};
  CollectiveIndex collectives_{w_};
  OperatorIndex operators_{w_.nvtx_ranges, [this](uint32_t id) { return !ModulePath(w_.String(id)).empty(); }};
  // Names repeat on many events: each is escaped and quoted once.
  QuotedNames quoted_kernels_{w_.strings.size(), [this](uint32_t id) -> std::string_view { return names_(id); }};
  QuotedNames quoted_strings_{w_.strings.size(), [this](uint32_t id) -> std::string_view { return w_.String(id); }};
  QuotedNames quoted_apis_{kApiCount + 1, [](uint32_t id) { return ApiName(static_cast<ApiId>(id)); }};
  std::string quote_scratch_;
  std::vector<StepSpan> steps_;
  std::vector<GpuAnnotation> gpu_annotations_;
  std::vector<PySlice> py_slices_;
  std::vector<std::string> py_names_;  // frame id -> quoted slice name
  struct OpenSlice {
    uint64_t end_ns;
    bool stream_op;
  };
  struct Track {
    std::vector<OpenSlice> open;
    int64_t pid = 0;
    int64_t tid = 0;
    std::string ids;  // `,"pid":<pid>,"tid":<tid>,"ts":`, made at the track's first slice
  };
  std::unordered_map<uint64_t, Track> tracks_;
  uint64_t last_key_ = UINT64_MAX;
  Track* track_ = nullptr;
  std::unordered_map<size_t, std::string> copy_names_;
  std::string step_name_;
  CallSites capture_sites_{w_};
  std::unordered_map<uint32_t, std::string> captured_at_;  // capture stack id -> its args text
  uint64_t unclipped_dur_ns_ = 0;    // the last slice's true duration when it was clipped, else 0
  RankEvents* job_;                  // null: not taken
  uint64_t start_clipped_ns_ = 0;   // how much later than its true start the last slice was drawn (Nest)
};

}  // namespace

bool WriteChromeTrace(const Window& window, const WindowIndex& index, std::string_view trace_name, ByteSink& sink,
                      RankEvents* job) {
  // JsonWriter holds a 64 KiB buffer: keep it off the writer thread's stack.
  auto writer = std::make_unique<TraceWriter>(window, index, trace_name, sink, job);
  return writer->Write();
}

bool WriteChromeTrace(const Window& window, std::string_view trace_name, ByteSink& sink) {
  return WriteChromeTrace(window, WindowIndex(window), trace_name, sink);
}

}  // namespace prof
