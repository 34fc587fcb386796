// The summary's "GPU time by operator" table: PyTorch's operators
// (exporters/common/operators.h) by name, as torch.profiler's
// key_averages() counts them. A kernel, copy or memset counts as self time
// of the innermost operator around its launching call, and as total time of
// that operator and of every operator around it (an operator nested in one
// of the same name counts twice, as in key_averages). CPU time: the
// operators' own spans, summed.
#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "exporters/common/compact_window.h"
#include "exporters/common/operators.h"
#include "exporters/common/window_index.h"
#include "exporters/summary/summary.h"
#include "exporters/summary/text_table.h"

namespace prof {
namespace {

// The modules as a tree, depth first: each after the module that called it
// (first), callers' callees by total GPU time (then path), the outermost
// ones the same way. A module only reachable through a cycle of callers
// starts a tree of its own.
void ModuleTree(std::map<std::string_view, ModuleRow> modules,
                const std::map<std::string_view, std::string_view>& callers, std::vector<ModuleRow>* out) {
  std::map<std::string_view, std::vector<std::string_view>> callees;  // "" -> the outermost
  for (const auto& [path, row] : modules) {
    auto it = callers.find(path);
    std::string_view caller = it == callers.end() || !modules.count(it->second) ? std::string_view() : it->second;
    callees[caller].push_back(path);
  }
  for (auto& [caller, list] : callees) {
    std::sort(list.begin(), list.end(), [&](std::string_view a, std::string_view b) {
      uint64_t x = modules.at(a).total_gpu_ns, y = modules.at(b).total_gpu_ns;
      return x != y ? x > y : a < b;
    });
  }
  std::map<std::string_view, bool> placed;
  auto place = [&](auto&& self, std::string_view path, uint32_t depth) -> void {
    if (placed[path]) return;
    placed[path] = true;
    ModuleRow row = modules.at(path);
    row.path = std::string(path);
    row.depth = depth;
    out->push_back(std::move(row));
    auto it = callees.find(path);
    if (it == callees.end()) return;
    for (std::string_view callee : it->second) self(self, callee, depth + 1);
  };
  for (std::string_view root : callees[std::string_view()]) place(place, root, 0);
  for (const auto& [path, row] : modules) place(place, path, 0);
}

template <typename W>
void Compute(const W& w, const WindowIndex& index, Summary* s) {
  const std::vector<NvtxRange>& ranges = w.nvtx_ranges;
  OperatorIndex ops = WindowOperators(RestOf(w));
  if (ops.empty()) return;
  std::map<std::string_view, ModuleRow> modules;  // by path
  std::map<std::string_view, std::string_view> callers;  // path -> the path of the module that called it first
  std::unordered_map<uint32_t, size_t> row_of;  // name id -> row
  std::vector<size_t> row_of_range(ranges.size(), SIZE_MAX);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const NvtxRange& r = ranges[i];
    if (r.op_id == 0) continue;
    auto [it, inserted] = row_of.try_emplace(r.name_id, s->operators.size());
    if (inserted) s->operators.push_back({RestOf(w).String(r.name_id)});
    OperatorRow& row = s->operators[it->second];
    ++row.calls;
    row.cpu_ns += r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
    row_of_range[i] = it->second;
  }
  const std::vector<int64_t>& parents = ops.Parents();
  for (const auto& d : w.device_records) {
    DeviceKind kind = KindOf(d);
    if (kind != DeviceKind::kKernel && kind != DeviceKind::kMemcpy && kind != DeviceKind::kMemset) continue;
    uint64_t ns = d.end_ns > d.start_ns ? d.end_ns - d.start_ns : 0;
    s->operator_total_gpu_ns += ns;
    int64_t op = ops.OfCorrelation(w, index, d.correlation_id);
    if (op < 0) continue;
    OperatorRow& own = s->operators[row_of_range[static_cast<size_t>(op)]];
    own.self_gpu_ns += ns;
    if (kind == DeviceKind::kKernel) ++own.kernels;
    for (int64_t at = op; at >= 0; at = parents[static_cast<size_t>(at)]) {
      s->operators[row_of_range[static_cast<size_t>(at)]].total_gpu_ns += ns;
    }
    int64_t module = ops.ModuleOf(op);
    if (module < 0) continue;
    auto path = [&](int64_t m) { return ModulePath(RestOf(w).String(ranges[static_cast<size_t>(m)].name_id)); };
    ModuleRow& in = modules[path(module)];
    in.self_gpu_ns += ns;
    if (kind == DeviceKind::kKernel) ++in.kernels;
    std::vector<std::string_view> counted;  // a path that recurs above itself counts once
    for (int64_t m = module; m >= 0; m = ops.ModuleParent(m)) {
      std::string_view p = path(m);
      if (std::find(counted.begin(), counted.end(), p) != counted.end()) continue;
      counted.push_back(p);
      modules[p].total_gpu_ns += ns;
      int64_t caller = ops.ModuleParent(m);
      while (caller >= 0 && path(caller) == p) caller = ops.ModuleParent(caller);
      // The first caller seen, but a call with a caller over one without
      // (a window that starts inside a module's call lacks that call).
      auto [it, fresh] = callers.try_emplace(p, caller >= 0 ? path(caller) : std::string_view());
      if (!fresh && it->second.empty() && caller >= 0) it->second = path(caller);
    }
  }
  ModuleTree(std::move(modules), callers, &s->modules);
  std::sort(s->operators.begin(), s->operators.end(), [](const OperatorRow& a, const OperatorRow& b) {
    return std::tie(b.self_gpu_ns, b.total_gpu_ns, a.name) < std::tie(a.self_gpu_ns, a.total_gpu_ns, b.name);
  });
}

}  // namespace

void ComputeOperators(const Window& w, const WindowIndex& index, Summary* s) { Compute(w, index, s); }
void ComputeOperators(const CompactWindow& w, const WindowIndex& index, Summary* s) { Compute(w, index, s); }

namespace {

// The module tree: each path indented under the module that called it
// (ModuleTree's order).
void RenderModules(const Summary& s, std::string* out) {
  if (s.modules.empty()) return;
  *out += "\n== GPU time by module (nn.Module calls by attribute path; backward work under its forward module) ==\n";
  TextTable t({"Total GPU (%)", "Total GPU time (ns)", "Self GPU time (ns)", "Kernels", "Module"});
  uint64_t total = s.operator_total_gpu_ns;
  size_t shown = 0;
  for (const ModuleRow& r : s.modules) {
    if (shown++ == kModuleRowsShown) break;
    t.AddRow({Grouped(total ? 100.0 * double(r.total_gpu_ns) / double(total) : 0.0, 1), std::to_string(r.total_gpu_ns),
              std::to_string(r.self_gpu_ns), std::to_string(r.kernels), std::string(2 * r.depth, ' ') + r.path});
  }
  *out += t.Render();
  if (s.modules.size() > kModuleRowsShown) {
    *out += " (" + std::to_string(s.modules.size() - kModuleRowsShown) + " more modules)\n";
  }
}

}  // namespace

// Only when the window has operators.
void RenderOperators(const Summary& s, std::string* out) {
  if (s.operators.empty()) return;
  *out += "\n== GPU time by operator (PyTorch; self: kernels it launched itself; total: with the operators it "
          "called) ==\n";
  TextTable t({"Self GPU (%)", "Self GPU time (ns)", "Total GPU time (ns)", "Kernels", "Calls", "CPU time (ns)",
               "Operator"});
  uint64_t total = s.operator_total_gpu_ns;
  size_t shown = 0;
  for (const OperatorRow& r : s.operators) {
    if (shown++ == kOperatorRowsShown) break;
    t.AddRow({Grouped(total ? 100.0 * double(r.self_gpu_ns) / double(total) : 0.0, 1), std::to_string(r.self_gpu_ns),
              std::to_string(r.total_gpu_ns), std::to_string(r.kernels), std::to_string(r.calls),
              std::to_string(r.cpu_ns), r.name});
  }
  *out += t.Render();
  if (s.operators.size() > kOperatorRowsShown) {
    *out += " (" + std::to_string(s.operators.size() - kOperatorRowsShown) + " more operators, with less self GPU time)\n";
  }
  RenderModules(s, out);
}

}  // namespace prof
