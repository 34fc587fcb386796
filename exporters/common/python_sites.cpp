#include "exporters/common/python_sites.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace prof {

std::vector<PySlice> BuildPythonSlices(const Window& w,
                                       const std::vector<std::pair<uint32_t, std::vector<uint64_t>>>& barriers) {
  struct Open {
    uint32_t frame_id;
    uint32_t slice;  // index into out
    uint32_t via;
  };
  struct ThreadState {
    std::vector<Open> open;  // outermost first
    const std::vector<uint64_t>* barriers = nullptr;
    size_t passed = 0;  // barriers at or before the last call's start
  };
  std::vector<PySlice> out;
  const PythonInfo& py = w.python;
  if (py.stacks.size() <= 2) return out;
  std::unordered_map<uint32_t, ThreadState> threads;
  for (const auto& [tid, times] : barriers) threads[tid].barriers = &times;
  for (const HostEvent& e : w.host_events) {
    ThreadState& t = threads[e.tid];
    if (t.barriers != nullptr) {
      size_t passed = t.passed;
      while (passed < t.barriers->size() && (*t.barriers)[passed] <= e.start_ns) ++passed;
      if (passed != t.passed) t.open.clear();
      t.passed = passed;
    }
    if (e.stack_id <= 1 || e.stack_id >= py.stacks.size()) {
      t.open.clear();
      continue;
    }
    const std::vector<uint32_t>& frames = py.stacks[e.stack_id];  // innermost first
    uint32_t via = py.Via(e.stack_id);
    size_t depth = frames.size();
    size_t keep = 0;
    while (keep < t.open.size() && keep < depth && t.open[keep].frame_id == frames[depth - 1 - keep] &&
           t.open[keep].via == via) {
      ++keep;
    }
    t.open.resize(keep);
    for (size_t d = keep; d < depth; ++d) {
      uint32_t parent = d == 0 ? 0 : t.open[d - 1].slice + 1;
      t.open.push_back({frames[depth - 1 - d], static_cast<uint32_t>(out.size()), via});
      out.push_back({e.start_ns, e.end_ns, e.tid, frames[depth - 1 - d], parent, static_cast<uint32_t>(d), via});
    }
    for (const Open& o : t.open) out[o.slice].end_ns = std::max(out[o.slice].end_ns, e.end_ns);
  }
  return out;
}

std::string ViaSuffix(uint32_t via_tid) {
  return via_tid == 0 ? std::string() : " (via thread " + std::to_string(via_tid) + ")";
}

std::string PythonSliceName(const Window& w, uint32_t frame_id, uint32_t via) {
  if (frame_id >= w.python.frames.size()) return "<unknown>" + ViaSuffix(via);
  const PyFrame& f = w.python.frames[frame_id];
  return w.String(f.file_id) + "(" + std::to_string(f.line) + "): " + w.String(f.function_id) + ViaSuffix(via);
}

namespace {

// ".../lib/python3.<N>/..." (the standard library of a CPython install).
bool InStdlib(std::string_view file) {
  size_t at = file.find("/lib/python3.");
  if (at == std::string_view::npos) return false;
  size_t i = at + 13;
  while (i < file.size() && file[i] >= '0' && file[i] <= '9') ++i;
  return i > at + 13 && i < file.size() && file[i] == '/';
}

}  // namespace

bool IsUserFile(const std::string& file, const std::string& user_prefixes) {
  std::string_view prefixes = user_prefixes;
  while (!prefixes.empty()) {
    size_t comma = prefixes.find(',');
    std::string_view p = prefixes.substr(0, comma);
    if (!p.empty() && file.starts_with(p)) return true;
    if (comma == std::string_view::npos) break;
    prefixes.remove_prefix(comma + 1);
  }
  if (file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos) return false;
  if (file.starts_with("<")) return false;  // <frozen importlib._bootstrap>, <string>
  return !InStdlib(file);
}

uint32_t CallSiteFrame(const Window& w, uint32_t stack_id, const std::string& user_prefixes) {
  if (stack_id <= 1 || stack_id >= w.python.stacks.size()) return 0;
  for (uint32_t frame_id : w.python.stacks[stack_id]) {
    if (frame_id < w.python.frames.size() && IsUserFile(w.String(w.python.frames[frame_id].file_id), user_prefixes)) {
      return frame_id;
    }
  }
  return 0;
}

uint32_t FunctionFrame(const Window& w, uint32_t stack_id, const std::string& user_prefixes) {
  if (stack_id <= 1 || stack_id >= w.python.stacks.size()) return 0;
  for (uint32_t frame_id : w.python.stacks[stack_id]) {
    if (frame_id >= w.python.frames.size()) continue;
    const PyFrame& f = w.python.frames[frame_id];
    const std::string& function = w.String(f.function_id);
    if ((function.starts_with("<") && function != "<module>") || !IsUserFile(w.String(f.file_id), user_prefixes)) {
      continue;
    }
    return frame_id;
  }
  return 0;
}

namespace {

std::string FileBaseName(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

}  // namespace

std::string CallSiteText(const Window& w, uint32_t frame_id, uint32_t via) {
  if (frame_id == 0 || frame_id >= w.python.frames.size()) return "";
  const PyFrame& f = w.python.frames[frame_id];
  return FileBaseName(w.String(f.file_id)) + ":" + std::to_string(f.line) + " in " + w.String(f.function_id) +
         ViaSuffix(via);
}

std::string CallSiteFunctionText(const Window& w, uint32_t frame_id) {
  if (frame_id == 0 || frame_id >= w.python.frames.size()) return "";
  const PyFrame& f = w.python.frames[frame_id];
  return w.String(f.function_id) + " in " + FileBaseName(w.String(f.file_id));
}

std::string PythonUserPrefixes(const Window& w) {
  for (const auto& [k, v] : w.meta.config) {
    if (k == "PROF_PYTHON_USER") return v;
  }
  return {};
}

}  // namespace prof
