// The summary's "GPU time by compiled code" table: the kernels that code
// compiled at run time launched, grouped by what compiled them, read from the
// Python stacks of their launching calls.
//
//  - A torch.compile graph. Inductor writes each graph it compiles (a
//    forward, a backward) as a Python module of its own in its cache folder
//    (/tmp/torchinductor_<user>/<xx>/c<hash>.py by default) and runs it from
//    torch/_inductor/ (CompiledFxGraph.__call__); that module's `call` then
//    launches the graph's Triton kernels (triton_poi_*, triton_red_*, ...)
//    and the library kernels it calls (cuBLAS, cuDNN). So the graph of a
//    launch is the outermost frame, on its stack, of a file outside the
//    installed packages whose caller is a file under torch/_inductor/; one row
//    per generated module and the frame that called the graph: the nearest
//    frame of the user's code outside it (the compiled function itself, as
//    TorchDynamo runs it: "model.py:80 in TinyLM.forward"), or, on a thread
//    with no frame of the user's code there (autograd's, running a compiled
//    backward), the stack's outermost frame.
//  - A @triton.jit kernel launched by the user's code: a stack through
//    triton/runtime/jit.py (JITFunction.run). One row per call site (the
//    innermost frame of the user's code); the kernels' names say which.
// Names are not used to find either: Inductor's kernel names repeat across
// graphs (each graph numbers its own from 0), and a user may name a kernel
// anything.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "exporters/common/compact_window.h"
#include "exporters/common/demangle.h"
#include "exporters/common/python_sites.h"
#include "exporters/common/window_index.h"
#include "exporters/summary/summary.h"
#include "exporters/summary/text_table.h"

namespace prof {
namespace {

bool UnderInductor(std::string_view file) { return file.find("/torch/_inductor/") != std::string_view::npos; }
bool TritonJit(std::string_view file) { return file.ends_with("/triton/runtime/jit.py"); }
// A file of an installed package or the standard library, or no file (<string>).
bool Library(const std::string& file) { return !IsUserFile(file, ""); }

// What compiled the code a call ran, and who called it. kind 0: none.
struct Origin {
  uint8_t kind = 0;          // kGraph or kJit
  uint32_t code_frame = 0;   // kGraph: the generated module's frame
  uint32_t caller = 0;       // frame id ("called from"; 0: none)
};
constexpr uint8_t kGraph = 1, kJit = 2;

Origin OriginOf(const Window& w, uint32_t stack_id, const std::string& user_prefixes) {
  Origin o;
  if (stack_id <= 1 || stack_id >= w.python.stacks.size()) return o;
  const std::vector<uint32_t>& frames = w.python.stacks[stack_id];  // innermost first
  auto file = [&](size_t i) -> const std::string& {
    static const std::string* const kNone = new std::string;  // never destroyed: used at exit
    return frames[i] < w.python.frames.size() ? w.String(w.python.frames[frames[i]].file_id) : *kNone;
  };
  // The graph: from the outermost frame inwards, the first generated module entered from torch/_inductor/.
  for (size_t i = frames.size(); i-- > 1;) {
    if (!UnderInductor(file(i)) || UnderInductor(file(i - 1)) || Library(file(i - 1))) continue;
    o.kind = kGraph;
    o.code_frame = frames[i - 1];
    for (size_t j = i; j < frames.size(); ++j) {
      if (IsUserFile(file(j), user_prefixes)) {
        o.caller = frames[j];
        return o;
      }
    }
    o.caller = frames.back();
    return o;
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!TritonJit(file(i))) continue;
    o.kind = kJit;
    o.caller = CallSiteFrame(w, stack_id, user_prefixes);
    return o;
  }
  return o;
}

template <typename W>
void Compute(const W& w, const WindowIndex& index, Summary* s) {
  const Window& rest = RestOf(w);
  if (rest.python.stacks.size() <= 2) return;
  std::string user = PythonUserPrefixes(rest);
  std::vector<Origin> origin(rest.python.stacks.size());
  std::vector<bool> known(rest.python.stacks.size());
  auto origin_of = [&](uint32_t stack_id) -> const Origin& {
    static const Origin kNone;
    if (stack_id >= origin.size()) return kNone;
    if (!known[stack_id]) origin[stack_id] = OriginOf(rest, stack_id, user), known[stack_id] = true;
    return origin[stack_id];
  };
  // Row key: kind, the generated module's file (0 for @triton.jit), the caller frame, the thread it came via.
  using Key = std::tuple<uint8_t, uint32_t, uint32_t, uint32_t>;
  auto key_of = [&](uint32_t stack_id) -> Key {
    const Origin& o = origin_of(stack_id);
    if (o.kind == 0) return {0, 0, 0, 0};
    uint32_t file = o.kind == kGraph ? rest.python.frames[o.code_frame].file_id : 0;
    return {o.kind, file, o.caller, rest.python.Via(stack_id)};
  };
  struct Acc {
    CompiledCodeRow row;
    std::set<uint32_t> names;  // kernel name ids
  };
  std::map<Key, Acc> rows;
  for (const auto& e : w.host_events) {
    if (ApiKindOf(static_cast<ApiId>(e.api)) != ApiKind::kLaunch) continue;
    Key k = key_of(e.stack_id);
    if (std::get<0>(k) != 0) ++rows[k].row.launches;
  }
  DisplayNames names(rest);
  for (const auto& d : w.device_records) {
    DeviceKind kind = KindOf(d);
    if (kind != DeviceKind::kKernel && kind != DeviceKind::kMemcpy && kind != DeviceKind::kMemset) continue;
    uint64_t ns = d.end_ns > d.start_ns ? d.end_ns - d.start_ns : 0;
    s->compiled_total_gpu_ns += ns;
    // Work a CUDA graph replayed belongs where its node was captured (a
    // torch.compile "reduce-overhead" graph is captured from its module).
    uint32_t stack = d.capture_stack_id > 1 ? d.capture_stack_id : 0;
    if (stack == 0) {
      int64_t call = d.correlation_id == 0 ? WindowIndex::kNone : index.HostCall(d.correlation_id);
      if (call == WindowIndex::kNone) continue;
      stack = w.host_events[static_cast<size_t>(call)].stack_id;
    }
    Key k = key_of(stack);
    if (std::get<0>(k) == 0) continue;
    Acc& a = rows[k];
    a.row.gpu_ns += ns;
    if (kind == DeviceKind::kKernel) ++a.row.kernels, a.names.insert(d.name_id);
  }
  for (auto& [key, a] : rows) {
    auto [kind, file, caller, via] = key;
    CompiledCodeRow& r = a.row;
    r.graph = kind == kGraph;
    r.kernel_names = a.names.size();
    if (r.graph) {
      r.code = rest.String(file);
    } else {
      std::vector<std::string> shown;
      for (uint32_t id : a.names) shown.push_back(names(id));
      std::sort(shown.begin(), shown.end());
      r.code = "@triton.jit";
      for (size_t i = 0; i < shown.size(); ++i) r.code += (i == 0 ? " " : ", ") + shown[i];
    }
    bool user_caller = caller != 0 && IsUserFile(rest.String(rest.python.frames[caller].file_id), user);
    r.called_from = caller == 0 ? "(no Python frames)" : CallSiteText(rest, caller, via);
    if (caller != 0 && !user_caller) r.called_from += " (no frame of your code)";
    s->compiled_code.push_back(std::move(r));
  }
  std::sort(s->compiled_code.begin(), s->compiled_code.end(), [](const CompiledCodeRow& a, const CompiledCodeRow& b) {
    return std::tie(b.gpu_ns, b.launches, a.code, a.called_from) < std::tie(a.gpu_ns, a.launches, b.code, b.called_from);
  });
}

}  // namespace

void ComputeCompiledCode(const Window& w, const WindowIndex& index, Summary* s) { Compute(w, index, s); }
void ComputeCompiledCode(const CompactWindow& w, const WindowIndex& index, Summary* s) { Compute(w, index, s); }

// Only when some kernel came from compiled code (every other summary is unchanged).
void RenderCompiledCode(const Summary& s, std::string* out) {
  if (s.compiled_code.empty()) return;
  *out += "\n== GPU time by compiled code (torch.compile graphs by their generated module; @triton.jit kernels) ==\n";
  TextTable t({"GPU time (%)", "GPU time (ns)", "Kernels", "Launches", "Kernel names", "Compiled code, called from"});
  uint64_t total = s.compiled_total_gpu_ns;
  for (const CompiledCodeRow& r : s.compiled_code) {
    t.AddRow({Grouped(total ? 100.0 * double(r.gpu_ns) / double(total) : 0.0, 1), std::to_string(r.gpu_ns),
              std::to_string(r.kernels), std::to_string(r.launches), std::to_string(r.kernel_names),
              r.code + ", called from " + r.called_from});
  }
  *out += t.Render();
}

}  // namespace prof
