// The report page's data for one window, and folded stacks. Every number of
// the page's tables comes from the Summary (ComputeSummary's arithmetic,
// shared with .summary.txt); what the summary has no table for (the
// timeline, the flame graphs, the memory curve) is built here from the same
// records. Templates over the window, so the agent's Window and `prof`'s
// CompactWindow run the same code.
#include <algorithm>
#include <initializer_list>
#include <map>
#include <string_view>
#include <unordered_map>

#include "exporters/common/compact_window.h"
#include "exporters/common/demangle.h"
#include "exporters/common/json_writer.h"
#include "exporters/common/python_sites.h"
#include "exporters/report/report.h"
#include "exporters/common/window_index.h"

namespace prof {
namespace {

// Strings of the page's data, each written once and referred to by index.
class StringTable {
 public:
  uint32_t Id(const std::string& s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<uint32_t>(list_.size()));
    if (added) list_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> list_;
};

// A tree of stacks: each node's value is its subtree's total, and a path's
// value is added to every node on it.
class FlameTree {
 public:
  FlameTree() : nodes_(1) {}
  void Add(const std::vector<uint32_t>& path, uint64_t value) {
    if (value == 0) return;
    uint32_t node = 0;
    nodes_[0].value += value;
    for (uint32_t name : path) {
      auto [it, added] = index_.try_emplace({node, name}, static_cast<uint32_t>(nodes_.size()));
      if (added) {
        nodes_.push_back({name, 0, {}});
        nodes_[node].children.push_back(it->second);
      }
      node = it->second;
      nodes_[node].value += value;
    }
  }
  uint64_t total() const { return nodes_[0].value; }

  // [name, value, [children]] from the root (name -1); children below
  // kFlameMinFraction of the total join one "(other)" child of their parent.
  void Write(JsonWriter& out, uint32_t other_name) const { WriteNode(out, 0, other_name); }

  // Each node with a value of its own (more than its children's), as a
  // path of names from the root.
  template <typename F>
  void ForEachSelf(F&& f) const {
    std::vector<uint32_t> path;
    Walk(0, &path, f);
  }

 private:
  struct Node {
    uint32_t name;
    uint64_t value;
    std::vector<uint32_t> children;
  };
  void WriteNode(JsonWriter& out, uint32_t n, uint32_t other_name) const {
    const Node& node = nodes_[n];
    out.Char('[');
    if (n == 0) {
      out.Int(-1);
    } else {
      out.UInt(node.name);
    }
    out.Char(',');
    out.UInt(node.value);
    out.Raw(",[");
    std::vector<uint32_t> children = node.children;
    std::sort(children.begin(), children.end(),
              [this](uint32_t a, uint32_t b) { return nodes_[a].value > nodes_[b].value; });
    double min_value = static_cast<double>(total()) * kFlameMinFraction;
    uint64_t other = 0;
    bool first = true;
    for (uint32_t c : children) {
      if (static_cast<double>(nodes_[c].value) < min_value) {
        other += nodes_[c].value;
        continue;
      }
      if (!first) out.Char(',');
      first = false;
      WriteNode(out, c, other_name);
    }
    if (other > 0) {
      if (!first) out.Char(',');
      out.Char('[');
      out.UInt(other_name);
      out.Char(',');
      out.UInt(other);
      out.Raw(",[]]");
    }
    out.Raw("]]");
  }
  template <typename F>
  void Walk(uint32_t n, std::vector<uint32_t>* path, F& f) const {
    uint64_t children = 0;
    for (uint32_t c : nodes_[n].children) children += nodes_[c].value;
    if (n != 0 && nodes_[n].value > children) f(*path, nodes_[n].value - children);
    for (uint32_t c : nodes_[n].children) {
      path->push_back(nodes_[c].name);
      Walk(c, path, f);
      path->pop_back();
    }
  }

  std::vector<Node> nodes_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> index_;  // (parent, name) -> node
};

// A flame graph's input summed by what decides each record's path (its
// call's stack and API, its kernel's name, ...) before the tree sees it: a
// path is made once per key, at the key's first record (the string table
// keeps its order), and added to the tree once with the key's total, in the
// order of each key's first nonzero record. That builds the tree the
// record-by-record adds built, at a lookup per record.
class PathSums {
 public:
  struct Key {
    uint64_t source;  // what the path's frames and call come from
    uint32_t leaf;    // what ends it (a kernel's name, a copy's kind)
    bool operator==(const Key&) const = default;
  };
  template <typename MakePath>
  void Add(Key key, uint64_t value, MakePath&& make_path) {
    auto [it, added] = index_.try_emplace(key, entries_.size());
    if (added) entries_.push_back({make_path(), 0, false});
    Entry& e = entries_[it->second];
    if (value == 0) return;
    if (!e.placed) e.placed = true, order_.push_back(it->second);
    e.value += value;
  }
  FlameTree Tree() const {
    FlameTree tree;
    for (size_t i : order_) tree.Add(entries_[i].path, entries_[i].value);
    return tree;
  }

 private:
  struct Entry {
    std::vector<uint32_t> path;
    uint64_t value;
    bool placed;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.source * 0x9E3779B97F4A7C15ull ^ k.leaf); }
  };
  std::unordered_map<Key, size_t, KeyHash> index_;
  std::vector<Entry> entries_;
  std::vector<size_t> order_;
};

// The stacks of a window's calls as paths of string ids: Python frames
// (outermost first, "file.py:57 in fn") then the CUDA call's name.
template <typename W>
class CallPaths {
 public:
  CallPaths(const W& w, StringTable* strings) : w_(w), strings_(strings), python_(!RestOf(w).python.status.empty()) {}

  // The path of host event i.
  std::vector<uint32_t> OfHostEvent(size_t i) {
    const auto& e = w_.host_events[i];
    std::vector<uint32_t> path = Frames(e.stack_id);
    path.push_back(ApiNameId(e.api));
    return path;
  }
  // What decides a host event's path (PathSums::Key::source).
  uint64_t SourceOfHostEvent(size_t i) const {
    const auto& e = w_.host_events[i];
    return kFromCall | uint64_t{e.stack_id} << 16 | e.api;
  }
  // What decides the path OfWork gives r.
  template <typename R>
  uint64_t SourceOfWork(const WindowIndex& index, const R& r) const {
    if (r.capture_stack_id > 1) return kFromCapture | r.capture_stack_id;
    int64_t call = r.correlation_id == 0 ? WindowIndex::kNone : index.HostCall(r.correlation_id);
    if (call != WindowIndex::kNone) return SourceOfHostEvent(static_cast<size_t>(call));
    call = r.correlation_id == 0 ? WindowIndex::kNone : index.ApiRecord(r.correlation_id);
    if (call != WindowIndex::kNone) return kFromApiRecord | w_.device_records[static_cast<size_t>(call)].name_id;
    return 0;
  }
  // The path of a CUPTI API record (a call no wrapper saw: no stack).
  std::vector<uint32_t> OfApiRecord(size_t i) {
    std::vector<uint32_t> path = Frames(0);
    path.push_back(strings_->Id(w_.String(w_.device_records[i].name_id)));
    return path;
  }
  // The path of GPU work: the stack that captured its graph node, for work
  // a CUDA graph replayed; else the call that queued it (by correlation id).
  template <typename R>
  std::vector<uint32_t> OfWork(const WindowIndex& index, const R& r) {
    if (r.capture_stack_id > 1) {
      std::vector<uint32_t> path = Frames(r.capture_stack_id);
      path.push_back(strings_->Id("(captured in a CUDA graph)"));
      return path;
    }
    return OfCall(index, r.correlation_id);
  }
  // The path of the call that queued GPU work with this correlation id.
  std::vector<uint32_t> OfCall(const WindowIndex& index, uint32_t correlation) {
    int64_t call = correlation == 0 ? WindowIndex::kNone : index.HostCall(correlation);
    if (call != WindowIndex::kNone) return OfHostEvent(static_cast<size_t>(call));
    call = correlation == 0 ? WindowIndex::kNone : index.ApiRecord(correlation);
    if (call != WindowIndex::kNone) return OfApiRecord(static_cast<size_t>(call));
    return {strings_->Id("(launching call not recorded)")};
  }

 private:
  std::vector<uint32_t> Frames(uint32_t stack_id) {
    const PythonInfo& py = RestOf(w_).python;
    if (!python_) return {};
    if (stack_id <= 1 || stack_id >= py.stacks.size()) return {strings_->Id("(no Python frames)")};
    auto [it, added] = cache_.try_emplace(stack_id);
    if (added) {
      const std::vector<uint32_t>& frames = py.stacks[stack_id];  // innermost first
      for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
        std::string text = CallSiteText(RestOf(w_), *f);
        it->second.push_back(strings_->Id(text.empty() ? "(unknown frame)" : text));
      }
    }
    return it->second;
  }

  uint32_t ApiNameId(uint16_t api) {
    if (api >= api_ids_.size()) return strings_->Id(std::string(ApiName(static_cast<ApiId>(api))));
    if (api_ids_[api] == kUnset) api_ids_[api] = strings_->Id(std::string(ApiName(static_cast<ApiId>(api))));
    return api_ids_[api];
  }

  static constexpr uint64_t kFromCall = 1ull << 62, kFromCapture = 2ull << 62, kFromApiRecord = 3ull << 62;
  static constexpr uint32_t kUnset = UINT32_MAX;
  const W& w_;
  StringTable* strings_;
  bool python_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> cache_;
  std::vector<uint32_t> api_ids_ = std::vector<uint32_t>(kApiCount + 1, kUnset);
};

template <typename W>
FlameTree KernelFlame(const W& w, const WindowIndex& index, StringTable* strings) {
  DisplayNames names(RestOf(w));
  CallPaths<W> paths(w, strings);
  PathSums sums;
  for (const auto& r : w.device_records) {
    if (KindOf(r) != DeviceKind::kKernel) continue;
    sums.Add({paths.SourceOfWork(index, r), r.name_id}, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0, [&] {
      std::vector<uint32_t> path = paths.OfWork(index, r);
      path.push_back(strings->Id(names(r.name_id)));
      return path;
    });
  }
  return sums.Tree();
}

uint64_t Dur(uint64_t start_ns, uint64_t end_ns) { return end_ns > start_ns ? end_ns - start_ns : 0; }

// One JSON object's fields in the order written, closed when it goes out of
// scope: Object(out).U("a", 1).S("b", "x") writes {"a":1,"b":"x"}.
class Object {
 public:
  explicit Object(JsonWriter& out) : out_(out) { out_.Char('{'); }
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  ~Object() { out_.Char('}'); }
  Object& U(std::string_view key, uint64_t value) {
    Key(key).UInt(value);
    return *this;
  }
  Object& I(std::string_view key, int64_t value) {
    Key(key).Int(value);
    return *this;
  }
  Object& D(std::string_view key, double value) {
    Key(key).Double(value);
    return *this;
  }
  Object& S(std::string_view key, std::string_view value) {
    Key(key).String(value);
    return *this;
  }
  Object& B(std::string_view key, bool value) {
    Key(key).Bool(value);
    return *this;
  }
  // A field whose value the caller writes next.
  JsonWriter& Key(std::string_view key) {
    if (fields_++ != 0) out_.Char(',');
    out_.Key(key);
    return out_;
  }

 private:
  JsonWriter& out_;
  int fields_ = 0;
};

// A JSON array of unsigned numbers: [1,2,3].
void Numbers(JsonWriter& out, std::initializer_list<uint64_t> values) {
  out.Char('[');
  bool first = true;
  for (uint64_t v : values) {
    if (!first) out.Char(',');
    first = false;
    out.UInt(v);
  }
  out.Char(']');
}

void Row(JsonWriter& out, const TimeRow& r) {
  Object(out)
      .S("name", r.name)
      .D("percent", r.percent)
      .U("total", r.total_ns)
      .U("count", r.count)
      .D("avg", r.avg_ns)
      .D("med", r.median_ns)
      .U("min", r.min_ns)
      .U("max", r.max_ns)
      .D("stddev", r.stddev_ns);
}

template <typename T, typename F>
void Array(JsonWriter& out, const std::vector<T>& items, F&& each) {
  out.Char('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out.Char(',');
    each(items[i]);
  }
  out.Char(']');
}

void Breakdown(JsonWriter& out, const TimeBreakdown& b) {
  Numbers(out, {b.kernel_ns, b.comm_ns, b.memcpy_ns, b.memset_ns, b.runtime_ns, b.sync_ns, b.other_ns});
}

// The window's identity and its headline numbers.
void WriteOverview(JsonWriter& out, const Summary& s) {
  const WindowMeta& m = s.meta;
  out.Key("meta");
  Object(out)
      .S("name", m.name)
      .I("rank", m.rank_known ? m.rank : -1)
      .I("world", m.world_size)
      .U("first_step", m.first_step)
      .U("last_step", m.last_step)
      .S("partial", m.partial ? m.partial_reason : "")
      .S("step_description", m.step_description)
      .S("range_description", m.range_description)
      .S("host", m.hostname)
      .I("pid", m.pid)
      .S("version", m.libprof_version)
      .S("cupti", m.cupti_mode)
      .B("gpu_timings", m.has_gpu_timings)
      .S("python", s.python_status);
  out.Raw(",\"header\":");
  out.String(SummaryHeader(s));
  out.Raw(",\"span\":");
  out.UInt(Dur(s.span_start_ns, s.span_end_ns));
  out.Raw(",\"busy\":");
  out.UInt(s.gpu_busy_ns);
  out.Raw(",\"busy_percent\":");
  out.Double(s.gpu_busy_percent);
  out.Raw(",\"findings\":");
  Array(out, s.findings, [&](const Finding& f) {
    Object(out).S("id", f.id).S("title", f.title).S("evidence", f.evidence).S("advice", f.advice);
  });
}

// The tables `nsys stats` users know: kernels, API calls, memory operations
// by time and by size.
void WriteStatsTables(JsonWriter& out, const Summary& s) {
  auto row = [&](const TimeRow& r) { Row(out, r); };
  out.Raw(",\"kernels\":");
  Array(out, s.kernels, row);
  out.Raw(",\"api\":");
  Array(out, s.api_calls, row);
  out.Raw(",\"mem_time\":");
  Array(out, s.mem_time, row);
  out.Raw(",\"mem_size\":");
  Array(out, s.mem_size, [&](const SizeRow& r) {
    Object(out)
        .S("name", r.name)
        .U("total", r.total_bytes)
        .U("count", r.count)
        .D("avg", r.avg_bytes)
        .D("med", r.median_bytes)
        .U("min", r.min_bytes)
        .U("max", r.max_bytes)
        .D("stddev", r.stddev_bytes);
  });
  out.Raw(",\"mem_size_from_host\":");
  out.Bool(s.mem_size_from_host);
}

// Per step, where the time went, and where each stream stood idle.
void WriteStepTime(JsonWriter& out, const Summary& s) {
  // The rows the summary lists (ListedStepRows), and how many there are in all.
  std::vector<StepRow> listed;
  for (size_t i : ListedStepRows(s.steps)) listed.push_back(s.steps[i]);
  out.Raw(",\"steps_total\":");
  out.UInt(s.steps.size());
  out.Raw(",\"steps_first\":");
  out.UInt(kStepRowsFirst);
  out.Raw(",\"steps\":");
  Array(out, listed, [&](const StepRow& r) {
    Object step(out);
    step.U("step", r.step)
        .U("wall", r.wall_ns)
        .U("busy", r.gpu_busy_ns)
        .D("busy_percent", r.gpu_busy_percent)
        .U("kernels", r.kernels)
        .U("launches", r.launches)
        .U("syncs", r.syncs)
        .U("copies", r.copies)
        .U("allocs", r.allocs);
    Breakdown(step.Key("breakdown"), r.breakdown);
  });
  out.Raw(",\"breakdown\":");
  Breakdown(out, s.breakdown);
  out.Raw(",\"stream_idle\":");
  Array(out, s.stream_idle, [&](const StreamIdleRow& r) {
    Numbers(out, {r.device, r.stream, r.gaps, r.host_wait_ns, r.kernel_wait_ns, r.other_ns});
  });
}

void WriteCallSites(JsonWriter& out, const Summary& s) {
  out.Raw(",\"call_sites\":");
  Array(out, s.call_sites, [&](const CallSiteRow& r) {
    Object(out)
        .S("site", r.site)
        .S("file", r.file)
        .U("gpu", r.gpu_ns)
        .U("kernels", r.kernels)
        .U("launches", r.launches)
        .U("syncs", r.syncs)
        .U("copies", r.copies)
        .U("allocs", r.allocs)
        .U("calls", r.calls);
  });
}

// Like the writers above, one JSON key per row field: data, not logic.
// Memory by device and kind, and what was still allocated at the end (the
// first kLiveRowsShown allocations, with totals over all of them).
void WriteMemory(JsonWriter& out, const Summary& s) {
  out.Raw(",\"memory\":");
  Array(out, s.memory, [&](const MemoryRow& r) {
    Object(out)
        .I("device", r.device)
        .U("kind", r.mem_kind)
        .U("allocs", r.allocs)
        .U("frees", r.frees)
        .U("allocated", r.bytes_allocated)
        .U("freed", r.bytes_freed)
        .U("peak", r.peak_bytes);
  });
  uint64_t live_total = 0;
  for (const LiveAllocation& a : s.live) live_total += a.bytes;
  out.Raw(",\"live_count\":");
  out.UInt(s.live.size());
  out.Raw(",\"live_bytes\":");
  out.UInt(live_total);
  out.Raw(",\"live\":[");
  for (size_t i = 0; i < s.live.size() && i < kLiveRowsShown; ++i) {
    const LiveAllocation& a = s.live[i];
    if (i) out.Char(',');
    Object(out)
        .U("bytes", a.bytes)
        .I("device", a.device)
        .U("kind", a.mem_kind)
        .S("api", ApiName(static_cast<ApiId>(a.api)))
        .S("site", i < s.live_sites.size() ? s.live_sites[i] : "");
  }
  out.Char(']');
}

// The first `n` rows of a table (the ones the summary shows).
template <typename Row>
std::vector<Row> FirstRows(const std::vector<Row>& rows, size_t n) {
  return std::vector<Row>(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), n)));
}

// PyTorch's tensor memory per device: the summary's section as data (the
// rows it shows, the held row first).
void WriteTensorMemory(JsonWriter& out, const Summary& s) {
  out.Raw(",\"tensor_status\":");
  out.String(s.meta.tensor_memory);
  out.Raw(",\"tensor_memory\":");
  Array(out, s.tensor_memory, [&](const TensorMemoryRow& r) {
    Object row(out);
    row.I("device", r.device)
        .U("peak", r.peak_allocated)
        .I("peak_step", r.peak_step)
        .U("peak_ns", r.peak_ns)
        .U("reserved_at_peak", r.reserved_at_peak)
        .U("start", r.start_allocated)
        .U("end", r.end_allocated)
        .U("allocs", r.allocs)
        .U("frees", r.frees);
    Array(row.Key("step_peaks"), r.step_peaks,
          [&](const std::pair<uint64_t, uint64_t>& p) { Numbers(out, {p.first, p.second}); });
    std::vector<TensorLineRow> lines{{kTensorHeldText, r.held_from_before, 0}};
    for (size_t i = 0; i < r.lines.size() && i < kTensorRowsShown; ++i) {
      lines.push_back({TensorSiteText(r.lines[i].site), r.lines[i].bytes, r.lines[i].blocks});
    }
    Array(row.Key("lines"), lines, [&](const TensorLineRow& l) {
      Object(out).U("bytes", l.bytes).U("blocks", l.blocks).S("site", l.site);
    });
    Array(row.Key("modules"), FirstRows(r.modules, kTensorRowsShown), [&](const TensorLineRow& m) {
      Object(out).U("bytes", m.bytes).U("blocks", m.blocks).S("path", TensorModuleText(m.site));
    });
    Array(row.Key("largest"), r.largest, [&](const TensorBlockRow& b) {
      Object(out).U("bytes", b.bytes).U("alloc_ns", b.alloc_ns).S("site", TensorSiteText(b.site));
    });
  });
}

// PyTorch's operators and module tree: the rows the summary shows, with
// how many it leaves out and the GPU time the shares are of.
void WriteOperators(JsonWriter& out, const Summary& s) {
  out.Raw(",\"operator_gpu_total\":");
  out.UInt(s.operator_total_gpu_ns);
  out.Raw(",\"operators_more\":");
  out.UInt(s.operators.size() > kOperatorRowsShown ? s.operators.size() - kOperatorRowsShown : 0);
  out.Raw(",\"operators\":");
  Array(out, FirstRows(s.operators, kOperatorRowsShown), [&](const OperatorRow& r) {
    Object(out)
        .S("name", r.name)
        .U("self", r.self_gpu_ns)
        .U("total", r.total_gpu_ns)
        .U("kernels", r.kernels)
        .U("calls", r.calls)
        .U("cpu", r.cpu_ns);
  });
  out.Raw(",\"modules_more\":");
  out.UInt(s.modules.size() > kModuleRowsShown ? s.modules.size() - kModuleRowsShown : 0);
  out.Raw(",\"modules\":");
  Array(out, FirstRows(s.modules, kModuleRowsShown), [&](const ModuleRow& r) {
    Object(out).S("path", r.path).U("self", r.self_gpu_ns).U("total", r.total_gpu_ns).U("kernels", r.kernels).U(
        "depth", r.depth);
  });
}

// Idle gaps, launch latency and what the window lost.
void WriteGapsAndLosses(JsonWriter& out, const Summary& s) {
  out.Raw(",\"idle_gaps\":");
  out.UInt(s.idle_gaps.size());
  out.Raw(",\"idle_gap_total\":");
  out.UInt(s.idle_gap_total_ns);
  out.Raw(",\"latency\":[");
  out.UInt(s.launch_latency.count);
  out.Char(',');
  out.Double(s.launch_latency.median_ns);
  out.Char(',');
  out.Double(s.launch_latency.p99_ns);
  out.Char(',');
  out.UInt(s.launch_latency.max_ns);
  out.Raw("],\"losses\":");
  const LossCounts& l = s.meta.losses;
  Numbers(out, {l.host_events_dropped, l.device_records_dropped, l.cupti_records_dropped, l.device_records_missing,
                l.alloc_samples_dropped});
}

void WriteSummary(JsonWriter& out, const Summary& s) {
  WriteOverview(out, s);
  WriteStatsTables(out, s);
  WriteStepTime(out, s);
  WriteCallSites(out, s);
  WriteMemory(out, s);
  WriteTensorMemory(out, s);
  WriteOperators(out, s);
  WriteGapsAndLosses(out, s);
}

// One lane of the timeline: items in start order, then merged where they lie
// closer than `bin` (the page cannot draw them apart at full zoom-out).
struct Item {
  uint64_t start;
  uint64_t end;
  uint32_t name;
  uint32_t site;
};

// A timeline lane's blocks, made as its items come, in start order: an item
// and those that follow it within `bin` of its end form one block, named
// after its longest item. (Records and a thread's calls are in start order;
// an item that were not would be drawn from the previous one's start.)
class Lane {
 public:
  void Add(Item it, uint64_t bin) {
    if (it.start < last_start_) it.start = last_start_, it.end = std::max(it.end, it.start);
    last_start_ = it.start;
    if (count_ != 0 && it.start < std::max(block_.end, block_.start + bin)) {
      ++count_;
      if (Dur(it.start, it.end) > longest_) longest_ = Dur(it.start, it.end), block_.name = it.name, block_.site = it.site;
      block_.end = std::max(block_.end, it.end);
      return;
    }
    Close();
    block_ = it, longest_ = Dur(it.start, it.end), count_ = 1;
  }
  bool empty() const { return blocks_.empty() && count_ == 0; }
  void Write(JsonWriter& out, const std::string& label, const char* kind, uint64_t origin) {
    Close();
    out.Raw("{\"label\":");
    out.String(label);
    out.Raw(",\"kind\":\"");
    out.Raw(kind);
    out.Raw("\",\"items\":[");
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (i) out.Char(',');
      const Block& b = blocks_[i];
      Numbers(out, {b.item.start - origin, Dur(b.item.start, b.item.end), b.item.name, b.item.site, b.count});
    }
    out.Raw("]}");
  }

 private:
  struct Block {
    Item item;
    uint64_t count;
  };
  void Close() {
    if (count_ != 0) blocks_.push_back({block_, count_});
    count_ = 0;
  }
  std::vector<Block> blocks_;
  Item block_{};
  uint64_t longest_ = 0, count_ = 0, last_start_ = 0;
};

// A lane by key, the last one found kept: consecutive records are mostly of
// one lane.
template <typename Key>
class LastLane {
 public:
  explicit LastLane(std::map<Key, Lane>& lanes) : lanes_(lanes) {}
  Lane& operator()(const Key& key) {
    if (last_ == nullptr || !(key_ == key)) last_ = &lanes_[key], key_ = key;
    return *last_;
  }

 private:
  std::map<Key, Lane>& lanes_;
  Key key_{};
  Lane* last_ = nullptr;
};

// The string ids of the timeline's items: each stack's site, kernel's,
// copy's, API's and record's name looked up once, at its first use (so the
// table's order is that of the items).
template <typename W>
class ItemNames {
 public:
  ItemNames(const W& w, const WindowIndex& index, StringTable* strings)
      : w_(w), index_(index), strings_(strings), names_(RestOf(w)), sites_(RestOf(w)), no_site_(strings->Id("")),
        site_ids_(RestOf(w).python.stacks.size(), kUnset), kernel_ids_(RestOf(w).strings.size(), kUnset),
        record_ids_(RestOf(w).strings.size(), kUnset) {}

  uint32_t NoSite() const { return no_site_; }
  uint32_t SiteOfStack(uint32_t stack_id) {
    auto make = [&] {
      uint32_t frame = sites_.Of(stack_id);
      return frame == 0 ? no_site_ : strings_->Id(sites_.Text(frame));
    };
    return stack_id < site_ids_.size() ? Once(&site_ids_[stack_id], make) : make();
  }
  // GPU work's site: where its graph node was captured, for work a graph
  // replayed; else its launching call's.
  template <typename R>
  uint32_t SiteOfWork(const R& r) {
    if (r.capture_stack_id > 1) return SiteOfStack(r.capture_stack_id);
    int64_t call = r.correlation_id == 0 ? WindowIndex::kNone : index_.HostCall(r.correlation_id);
    return call == WindowIndex::kNone ? no_site_ : SiteOfStack(w_.host_events[static_cast<size_t>(call)].stack_id);
  }
  template <typename R>
  uint32_t Work(DeviceKind kind, const R& r) {
    if (kind == DeviceKind::kKernel) {
      auto make = [&] { return strings_->Id(names_(r.name_id)); };
      return r.name_id < kernel_ids_.size() ? Once(&kernel_ids_[r.name_id], make) : make();
    }
    if (kind == DeviceKind::kMemcpy) {
      return Once(&copy_ids_[r.copy_kind & 0xF], [&] { return strings_->Id(CopyOperation(r.copy_kind)); });
    }
    return Once(&copy_ids_[16], [&] { return strings_->Id(std::string("[CUDA memset]")); });
  }
  uint32_t Api(uint16_t api) {
    auto make = [&] { return strings_->Id(std::string(ApiName(static_cast<ApiId>(api)))); };
    return api < api_ids_.size() ? Once(&api_ids_[api], make) : make();
  }
  uint32_t Record(uint32_t name_id) {
    auto make = [&] { return strings_->Id(RestOf(w_).String(name_id)); };
    return name_id < record_ids_.size() ? Once(&record_ids_[name_id], make) : make();
  }

 private:
  static constexpr uint32_t kUnset = UINT32_MAX;
  template <typename F>
  static uint32_t Once(uint32_t* slot, F&& make) {
    if (*slot == kUnset) *slot = make();
    return *slot;
  }

  const W& w_;
  const WindowIndex& index_;
  StringTable* strings_;
  DisplayNames names_;
  CallSites sites_;
  uint32_t no_site_;
  std::vector<uint32_t> site_ids_, kernel_ids_, record_ids_;
  std::vector<uint32_t> copy_ids_ = std::vector<uint32_t>(17, kUnset);
  std::vector<uint32_t> api_ids_ = std::vector<uint32_t>(kApiCount + 1, kUnset);
};

template <typename W>
void WriteTimeline(JsonWriter& out, const W& w, const WindowIndex& index, const Summary& s, StringTable* strings) {
  uint64_t origin = s.span_start_ns, span = Dur(s.span_start_ns, s.span_end_ns);
  uint64_t bin = std::max<uint64_t>(1, span / kTimelineBins);
  ItemNames<W> names(w, index, strings);
  auto clip = [&](uint64_t t) { return std::min(std::max(t, s.span_start_ns), std::max(s.span_start_ns, s.span_end_ns)); };
  std::map<std::pair<uint32_t, uint32_t>, Lane> gpu;  // (device, stream)
  std::map<uint32_t, Lane> host;                      // tid
  LastLane<std::pair<uint32_t, uint32_t>> gpu_lane(gpu);
  LastLane<uint32_t> host_lane(host);
  for (const auto& r : w.device_records) {
    DeviceKind kind = KindOf(r);
    if (kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset) {
      uint32_t name = names.Work(kind, r);
      gpu_lane({r.device_id, r.stream_id}).Add({clip(r.start_ns), clip(r.end_ns), name, names.SiteOfWork(r)}, bin);
    }
  }
  // A thread's lane: its CUPTI API records (calls no wrapper saw) merged
  // with its calls, both in start order; a record before a call that starts
  // with it.
  std::map<uint32_t, std::pair<std::vector<Item>, size_t>> records;  // tid -> (items, next)
  if constexpr (std::is_same_v<W, Window>) {
    for (const auto& r : w.device_records) {
      if (IsApiRecord(r) && index.ApiRecordShown(r)) {
        records[r.thread_id].first.push_back({clip(r.start_ns), clip(r.end_ns), names.Record(r.name_id), names.NoSite()});
      }
    }
  }
  auto records_until = [&](uint32_t tid, uint64_t t) {
    auto it = records.find(tid);
    if (it == records.end()) return;
    auto& [items, next] = it->second;
    for (; next < items.size() && items[next].start <= t; ++next) host[tid].Add(items[next], bin);
  };
  for (const auto& e : w.host_events) {
    uint64_t start = clip(e.start_ns);
    if (!records.empty()) records_until(e.tid, start);
    host_lane(e.tid).Add({start, clip(e.end_ns), names.Api(e.api), names.SiteOfStack(e.stack_id)}, bin);
  }
  for (auto& [tid, rest] : records) records_until(tid, UINT64_MAX);
  std::unordered_map<uint32_t, std::string> thread_names;
  for (const auto& [tid, name] : RestOf(w).thread_names) thread_names[tid] = name;
  out.Raw("\"timeline\":{\"bin\":");
  out.UInt(bin);
  out.Raw(",\"lanes\":[");
  bool first = true;
  for (auto& [key, lane] : gpu) {
    if (!first) out.Char(',');
    first = false;
    lane.Write(out, "GPU " + std::to_string(key.first) + " stream " + std::to_string(key.second), "gpu", origin);
  }
  for (auto& [tid, lane] : host) {
    if (lane.empty()) continue;
    if (!first) out.Char(',');
    first = false;
    auto name = thread_names.find(tid);
    std::string label = "thread " + std::to_string(tid);
    if (name != thread_names.end() && !name->second.empty()) label += " (" + name->second + ")";
    lane.Write(out, label, "host", origin);
  }
  // Steps as [step, start, duration]; past kTimelineSteps, runs of
  // consecutive steps as one span [first step, start, duration, last step]
  // (a 100,000-step window would draw each step under a hundredth of a pixel).
  out.Raw("],\"steps\":[");
  const std::vector<StepSpan>& steps = RestOf(w).steps;
  const size_t per_span = (steps.size() + kTimelineSteps - 1) / std::max<size_t>(1, kTimelineSteps);
  for (size_t i = 0; i < steps.size(); i += per_span) {
    const StepSpan& a = steps[i];
    const StepSpan& b = steps[std::min(steps.size(), i + per_span) - 1];
    if (i != 0) out.Char(',');
    if (per_span <= 1) {
      Numbers(out, {a.step, clip(a.start_ns) - origin, Dur(clip(a.start_ns), clip(a.end_ns))});
    } else {
      Numbers(out, {a.step, clip(a.start_ns) - origin, Dur(clip(a.start_ns), clip(b.end_ns)), b.step});
    }
  }
  out.Raw("]}");
}

// Live bytes per device and memory kind over the window: the highest total
// of each 1/kMemoryPoints of the span (so the peak is kept).
void WriteMemorySeries(JsonWriter& out, const Window& rest, const Summary& s) {
  uint64_t origin = s.span_start_ns, span = Dur(s.span_start_ns, s.span_end_ns);
  uint64_t bin = std::max<uint64_t>(1, span / kMemoryPoints);
  std::map<std::pair<int, int>, std::vector<std::pair<uint64_t, uint64_t>>> series;
  auto add = [&](std::pair<int, int> key, uint64_t ts_ns, uint64_t total) {
    auto& points = series[key];
    uint64_t t = ts_ns > origin ? ts_ns - origin : 0;
    if (!points.empty() && points.back().first / bin == t / bin) {
      points.back().second = std::max(points.back().second, total);
    } else {
      points.emplace_back(t, total);
    }
  };
  for (const AllocSample& a : rest.alloc_samples) add({a.device, a.mem_kind}, a.ts_ns, a.total_bytes);
  // PyTorch's tensors: the page's kind kTensorSeriesKind.
  for (const TensorMemoryEvent& m : rest.tensor_memory) add({m.device, kTensorSeriesKind}, m.ts_ns, m.total_allocated);
  out.Raw("\"memory_series\":[");
  bool first = true;
  for (const auto& [key, points] : series) {
    if (!first) out.Char(',');
    first = false;
    Object series_json(out);
    series_json.I("device", key.first).I("kind", key.second);
    Array(series_json.Key("points"), points,
          [&](const std::pair<uint64_t, uint64_t>& p) { Numbers(out, {p.first, p.second}); });
  }
  out.Char(']');
}

template <typename W>
std::string WindowJson(const W& w, const WindowIndex& index, const Summary& s, const std::string& label,
                       const std::string& trace_file) {
  std::string json;
  StringSink sink(&json);
  JsonWriter out(sink);
  StringTable strings;
  out.Raw("{\"label\":");
  out.String(label);
  out.Raw(",\"trace_file\":");
  out.String(trace_file);
  out.Char(',');
  WriteSummary(out, s);
  out.Char(',');
  WriteTimeline(out, w, index, s, &strings);
  out.Char(',');
  WriteMemorySeries(out, RestOf(w), s);

  // Flame graphs: kernel time, synchronize time, copy bytes.
  FlameTree kernels = KernelFlame(w, index, &strings);
  PathSums sync_sums, copy_sums;
  CallPaths<W> paths(w, &strings);
  for (size_t i = 0; i < w.host_events.size(); ++i) {
    const auto& e = w.host_events[i];
    if (!IsBlockingSync(static_cast<ApiId>(e.api))) continue;
    sync_sums.Add({paths.SourceOfHostEvent(i), 0}, Dur(e.start_ns, e.end_ns), [&] { return paths.OfHostEvent(i); });
  }
  for (const auto& r : w.device_records) {
    DeviceKind kind = KindOf(r);
    if (kind != DeviceKind::kMemcpy && kind != DeviceKind::kMemset) continue;
    uint32_t leaf = kind == DeviceKind::kMemcpy ? r.copy_kind : 0x100;
    copy_sums.Add({paths.SourceOfWork(index, r), leaf}, r.bytes, [&] {
      std::vector<uint32_t> path = paths.OfWork(index, r);
      path.push_back(strings.Id(kind == DeviceKind::kMemcpy ? CopyOperation(r.copy_kind) : "[CUDA memset]"));
      return path;
    });
  }
  FlameTree syncs = sync_sums.Tree(), copies = copy_sums.Tree();
  uint32_t other = strings.Id("(other: each below 0.01%)");
  out.Raw(",\"flame\":{\"kernel\":");
  kernels.Write(out, other);
  out.Raw(",\"sync\":");
  syncs.Write(out, other);
  out.Raw(",\"copy\":");
  copies.Write(out, other);
  out.Raw("},\"strings\":");
  Array(out, strings.list(), [&](const std::string& text) { out.String(text); });
  out.Char('}');
  out.Finish();
  return json;
}

template <typename W>
std::string Folded(const W& w, const WindowIndex& index) {
  StringTable strings;
  FlameTree tree = KernelFlame(w, index, &strings);
  std::string out;
  tree.ForEachSelf([&](const std::vector<uint32_t>& path, uint64_t value) {
    for (size_t i = 0; i < path.size(); ++i) {
      if (i) out += ';';
      // ';' separates frames and a newline ends the line: neither may be in a name.
      for (char c : strings.list()[path[i]]) out += (c == ';' ? ',' : (c == '\n' || c == '\r') ? ' ' : c);
    }
    out += ' ';
    out += std::to_string(value);
    out += '\n';
  });
  return out;
}

}  // namespace

std::string ReportWindowJson(const Window& w, const WindowIndex& index, const Summary& s, const std::string& label,
                             const std::string& trace_file) {
  return WindowJson(w, index, s, label, trace_file);
}
std::string ReportWindowJson(const CompactWindow& w, const WindowIndex& index, const Summary& s,
                             const std::string& label, const std::string& trace_file) {
  return WindowJson(w, index, s, label, trace_file);
}
std::string FoldedStacks(const Window& w, const WindowIndex& index) { return Folded(w, index); }
std::string FoldedStacks(const CompactWindow& w, const WindowIndex& index) { return Folded(w, index); }

}  // namespace prof
