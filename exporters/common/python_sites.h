// Python stacks of a sealed window, as the exporters use them: the
// python_function slices of the Chrome trace and the call site (innermost
// frame of the user's own code) that the summary and findings name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/window.h"

namespace prof {

// One python_function slice on a thread.
struct PySlice {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t tid;
  uint32_t frame_id;   // PythonInfo::frames
  uint32_t parent;     // index + 1 of the enclosing slice; 0 at the top
  uint32_t depth;      // 0 = outermost
  uint32_t via;        // the Python thread whose frame this is (PythonInfo::via); 0: tid's own
};

// Builds the slices from the host events' stacks. Per thread, consecutive
// recorded calls whose stacks agree on a frame (same file, function and line
// at the same depth from the outermost) share that frame's slice, which spans
// from the first such call's start to the last one's end. A call without a
// stack ends every open slice, and so does a barrier between two calls
// (`barriers`: per thread, sorted times; step boundaries and NVTX range
// edges), so slices nest with the steps and ranges drawn on that thread.
// Slices come out sorted by (start, depth).
std::vector<PySlice> BuildPythonSlices(const Window& w,
                                       const std::vector<std::pair<uint32_t, std::vector<uint64_t>>>& barriers);

// "<file>(<line>): <function>", Kineto's python_function name; for a frame
// of another thread's stack (via != 0), " (via thread <via>)" follows.
std::string PythonSliceName(const Window& w, uint32_t frame_id, uint32_t via = 0);

// " (via thread <tid>)": how slices and call sites mark a stack charged to
// calls made on a waiting Python thread's behalf; "" for tid 0.
std::string ViaSuffix(uint32_t via_tid);

// Whether a frame's file is the user's own code: not the standard library
// (".../lib/python3.N/...", "<frozen ...>"), not site-packages or
// dist-packages; or under one of the comma-separated `user_prefixes`
// (PROF_PYTHON_USER), which always count as the user's.
bool IsUserFile(const std::string& file, const std::string& user_prefixes);

// The innermost user frame of a stack (a frame id), or 0 when the stack has
// none. `user_prefixes`: PROF_PYTHON_USER.
uint32_t CallSiteFrame(const Window& w, uint32_t stack_id, const std::string& user_prefixes);

// "train.py:57 in train_step" (the file's last path component), plus
// ViaSuffix(via).
std::string CallSiteText(const Window& w, uint32_t frame_id, uint32_t via = 0);

// The innermost user frame of a stack that is a named function: lambdas
// and comprehensions ("<lambda>", "<listcomp>", "<genexpr>") belong to the
// function around them; a module's top level ("<module>") counts. 0 when
// none.
uint32_t FunctionFrame(const Window& w, uint32_t stack_id, const std::string& user_prefixes);

// "train_step in train.py": the frame's function and file, no line.
std::string CallSiteFunctionText(const Window& w, uint32_t frame_id);

// PROF_PYTHON_USER as the window's metadata recorded it.
std::string PythonUserPrefixes(const Window& w);

// The call site of each stack of a window, worked out once per stack.
class CallSites {
 public:
  explicit CallSites(const Window& w) : w_(w), user_(PythonUserPrefixes(w)), site_(w.python.stacks.size(), kUnknown) {}
  // The call-site frame of a host event's stack (0: none).
  uint32_t Of(uint32_t stack_id) {
    if (stack_id >= site_.size()) return 0;
    if (site_[stack_id] == kUnknown) site_[stack_id] = CallSiteFrame(w_, stack_id, user_);
    return site_[stack_id];
  }
  std::string Text(uint32_t frame_id) const { return CallSiteText(w_, frame_id); }
  // The call site with the thread it was charged through: frame id in the
  // low 32 bits, PythonInfo::via in the high ones (0 when there is no site).
  uint64_t Key(uint32_t stack_id) {
    uint32_t site = Of(stack_id);
    return site == 0 ? 0 : site | (uint64_t{w_.python.Via(stack_id)} << 32);
  }
  std::string KeyText(uint64_t key) const {
    return CallSiteText(w_, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  }

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  const Window& w_;
  std::string user_;
  std::vector<uint32_t> site_;
};

}  // namespace prof
