// The summary's "Tensor memory" section: PyTorch's caching allocator
// (PROF_TORCH_MEMORY, collectors/python/tensor_memory.h) per device: its
// allocated bytes at the window's start, peak and end, each step's peak,
// and what is live at the peak, by Python line and largest first.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "exporters/common/format.h"
#include "exporters/common/operators.h"
#include "exporters/summary/summary.h"
#include "exporters/summary/text_table.h"

namespace prof {
namespace {

struct LiveBlock {
  uint64_t bytes;
  uint32_t site_id;
  uint64_t ts_ns;
};

bool ChangesAllocated(const TensorMemoryEvent& m) {
  auto kind = static_cast<TensorMemoryKind>(m.kind);
  return kind == TensorMemoryKind::kAlloc || kind == TensorMemoryKind::kFree;
}

// Each step's peak: the allocated bytes as the step starts, or higher within it.
void StepPeaks(const Window& w, const std::vector<const TensorMemoryEvent*>& events, TensorMemoryRow* row) {
  size_t at = 0;
  uint64_t current = row->start_allocated;
  for (const StepSpan& step : w.steps) {
    while (at < events.size() && events[at]->ts_ns < step.start_ns) current = events[at++]->total_allocated;
    uint64_t peak = current;
    while (at < events.size() && events[at]->ts_ns < step.end_ns) {
      current = events[at++]->total_allocated;
      peak = std::max(peak, current);
    }
    row->step_peaks.emplace_back(step.step, peak);
  }
}

// What is live at the peak: the blocks allocated in the window and not freed
// by then, and the rest (allocated before the window).
void LiveAtPeak(const Window& w, const std::vector<const TensorMemoryEvent*>& events, size_t peak_at,
                uint64_t origin_ns, TensorMemoryRow* row) {
  std::unordered_map<uint64_t, LiveBlock> live;
  for (size_t i = 0; i <= peak_at && i < events.size(); ++i) {
    const TensorMemoryEvent& m = *events[i];
    if (m.bytes > 0) live[m.addr] = {static_cast<uint64_t>(m.bytes), m.site_id, m.ts_ns};
    else live.erase(m.addr);
  }
  uint64_t in_window = 0;
  std::map<std::string, TensorLineRow> lines, modules;
  // The operator a block was allocated in (any thread's, entered last):
  // names a block without a Python line (autograd's threads run none), and
  // with module paths recorded, its module.
  OperatorIndex ops = WindowOperators(w);
  auto add = [](std::map<std::string, TensorLineRow>* rows, const std::string& key, uint64_t bytes) {
    TensorLineRow& entry = (*rows)[key];
    entry.site = key;
    entry.bytes += bytes;
    ++entry.blocks;
  };
  for (const auto& [addr, b] : live) {
    in_window += b.bytes;
    std::string site = w.String(b.site_id);
    int64_t op = ops.empty() ? -1 : ops.EnclosingOnAnyThread(b.ts_ns);
    if (site.empty() && op >= 0) site = "in " + w.String(w.nvtx_ranges[static_cast<size_t>(op)].name_id);
    add(&lines, site, b.bytes);
    if (ops.has_modules()) {
      int64_t module = ops.ModuleOf(op);
      add(&modules, module < 0 ? "" : std::string(ModulePath(w.String(w.nvtx_ranges[static_cast<size_t>(module)].name_id))),
          b.bytes);
    }
    row->largest.push_back({b.bytes, site, b.ts_ns > origin_ns ? b.ts_ns - origin_ns : 0});
  }
  row->held_from_before = row->peak_allocated > in_window ? row->peak_allocated - in_window : 0;
  auto by_bytes = [](const TensorLineRow& a, const TensorLineRow& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site;
  };
  for (auto& [id, line] : lines) row->lines.push_back(std::move(line));
  std::sort(row->lines.begin(), row->lines.end(), by_bytes);
  for (auto& [path, module] : modules) row->modules.push_back(std::move(module));
  std::sort(row->modules.begin(), row->modules.end(), by_bytes);
  std::sort(row->largest.begin(), row->largest.end(), [](const TensorBlockRow& a, const TensorBlockRow& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.alloc_ns < b.alloc_ns;
  });
  if (row->largest.size() > kTensorRowsShown) row->largest.resize(kTensorRowsShown);
}

TensorMemoryRow DeviceRow(const Window& w, int device) {
  TensorMemoryRow row;
  row.device = device;
  std::vector<const TensorMemoryEvent*> events;
  for (const TensorMemoryEvent& m : w.tensor_memory) {
    if (m.device != device) continue;
    row.peak_reserved = std::max(row.peak_reserved, m.total_reserved);
    if (!ChangesAllocated(m)) continue;
    events.push_back(&m);
    ++(m.bytes > 0 ? row.allocs : row.frees);
  }
  if (events.empty()) return row;
  const TensorMemoryEvent& first = *events.front();
  // Times from the window's start; a Kineto trace has none: its first step's.
  uint64_t origin = w.meta.start_ns != 0 ? w.meta.start_ns : !w.steps.empty() ? w.steps.front().start_ns : first.ts_ns;
  row.start_allocated = static_cast<uint64_t>(static_cast<int64_t>(first.total_allocated) - first.bytes);
  row.end_allocated = events.back()->total_allocated;
  row.peak_allocated = row.start_allocated;
  size_t peak_at = SIZE_MAX;  // SIZE_MAX: the peak is the start
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i]->total_allocated > row.peak_allocated) {
      row.peak_allocated = events[i]->total_allocated;
      peak_at = i;
    }
  }
  uint64_t peak_ts = peak_at == SIZE_MAX ? origin : events[peak_at]->ts_ns;
  row.reserved_at_peak = peak_at == SIZE_MAX ? first.total_reserved : events[peak_at]->total_reserved;
  row.peak_ns = peak_ts > origin ? peak_ts - origin : 0;
  for (const StepSpan& step : w.steps) {
    if (step.start_ns <= peak_ts && peak_ts < step.end_ns) row.peak_step = static_cast<int64_t>(step.step);
  }
  StepPeaks(w, events, &row);
  if (peak_at != SIZE_MAX) LiveAtPeak(w, events, peak_at, origin, &row);
  else row.held_from_before = row.peak_allocated;
  return row;
}

void RenderStepPeaks(const TensorMemoryRow& r, std::string* out) {
  if (r.step_peaks.empty()) return;
  *out += " Peak allocated by step:";
  if (r.step_peaks.size() <= 20) {
    for (const auto& [step, bytes] : r.step_peaks) *out += Printf(" %llu: %llu;", (unsigned long long)step, (unsigned long long)bytes);
    out->pop_back();
    *out += "\n";
    return;
  }
  auto [low, high] = std::minmax_element(r.step_peaks.begin(), r.step_peaks.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
  *out += Printf(" highest step %llu: %llu; lowest step %llu: %llu (%zu steps)\n", (unsigned long long)high->first,
                 (unsigned long long)high->second, (unsigned long long)low->first, (unsigned long long)low->second,
                 r.step_peaks.size());
}

}  // namespace

std::string TensorSiteText(const std::string& site) {
  if (site.empty()) return "(no Python line: autograd's threads, C++)";
  if (site.compare(0, 3, "in ") == 0) return site.substr(3) + " (no Python line)";
  return site;
}

std::string TensorModuleText(const std::string& path) { return path.empty() ? "(outside every module)" : path; }

const char* const kTensorHeldText = "(allocated before the window: parameters, optimizer state, caches)";

void ComputeTensorMemory(const Window& w, Summary* s) {
  std::vector<int> devices;
  for (const TensorMemoryEvent& m : w.tensor_memory) {
    if (std::find(devices.begin(), devices.end(), m.device) == devices.end()) devices.push_back(m.device);
  }
  std::sort(devices.begin(), devices.end());
  for (int d : devices) s->tensor_memory.push_back(DeviceRow(w, d));
}

void RenderTensorMemory(const Summary& s, std::string* out) {
  const std::string& status = s.meta.tensor_memory;
  if (s.tensor_memory.empty() && (status.empty() || status == "on")) return;
  *out += "\n== Tensor memory (PyTorch's caching allocator) ==\n";
  if (!status.empty() && status != "on") *out += " (" + status + ")\n";
  for (const TensorMemoryRow& r : s.tensor_memory) {
    *out += Printf(" GPU %d: peak %s allocated (%llu bytes)", r.device, FormatBytes(double(r.peak_allocated)).c_str(),
                   (unsigned long long)r.peak_allocated);
    if (r.peak_step >= 0) *out += Printf(" in step %lld", (long long)r.peak_step);
    *out += Printf(", %s ms into the window, %s reserved then (peak reserved %s); %s at the window's start, %s at "
                   "its end; %llu allocations, %llu frees\n",
                   Ms(double(r.peak_ns)).c_str(), FormatBytes(double(r.reserved_at_peak)).c_str(),
                   FormatBytes(double(r.peak_reserved)).c_str(), FormatBytes(double(r.start_allocated)).c_str(),
                   FormatBytes(double(r.end_allocated)).c_str(), (unsigned long long)r.allocs,
                   (unsigned long long)r.frees);
    RenderStepPeaks(r, out);
    TextTable lines({"Bytes", "Size", "Blocks", "Live at the peak, by Python line"});
    lines.AddRow({Grouped((unsigned long long)r.held_from_before), FormatBytes(double(r.held_from_before)), "-",
                  kTensorHeldText});
    for (size_t i = 0; i < r.lines.size() && i < kTensorRowsShown; ++i) {
      const TensorLineRow& l = r.lines[i];
      lines.AddRow({Grouped((unsigned long long)l.bytes), FormatBytes(double(l.bytes)),
                    Grouped((unsigned long long)l.blocks), TensorSiteText(l.site)});
    }
    *out += lines.Render();
    if (!r.modules.empty()) {
      TextTable modules({"Bytes", "Size", "Blocks", "Live at the peak, by module (allocated in the window)"});
      for (size_t i = 0; i < r.modules.size() && i < kTensorRowsShown; ++i) {
        const TensorLineRow& m = r.modules[i];
        modules.AddRow({Grouped((unsigned long long)m.bytes), FormatBytes(double(m.bytes)),
                        Grouped((unsigned long long)m.blocks), TensorModuleText(m.site)});
      }
      *out += modules.Render();
    }
    if (r.largest.empty()) continue;
    TextTable largest({"Bytes", "Size", "Allocated (ms)", "Largest blocks live at the peak, allocated in the window"});
    for (const TensorBlockRow& b : r.largest) {
      largest.AddRow({Grouped((unsigned long long)b.bytes), FormatBytes(double(b.bytes)), Ms(double(b.alloc_ns)),
                      TensorSiteText(b.site)});
    }
    *out += largest.Render();
  }
}

}  // namespace prof
