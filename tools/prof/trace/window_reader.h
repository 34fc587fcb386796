// One trace's events into one window's records (W: Window, for
// TraceToWindow, or CompactWindow, what `prof summary` holds): CUDA calls
// into host events, kernels, copies, memsets and synchronizations into
// device records, NCCL calls into collectives, [memory] instants into
// allocation samples, steps, NVTX ranges, thread names, and python_function
// slices back into the calls' stacks. Exact for libprof's traces (times are
// whole nanoseconds, clipped slices carry their true duration); best effort
// for other Kineto traces (categories libprof does not model are skipped).
//
// The reader's members are defined by concern and instantiated there for
// both W: window_reader.cpp (events, calls, GPU work, memory, the finish),
// window_collectives.cpp (NCCL calls and communicators), python_stacks.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "exporters/common/compact_window.h"
#include "model/window.h"
#include "tools/prof/json/json_value.h"

namespace prof::tool {

// An event of a `prof merge` output mapped back onto its input: its own
// pid, and its times shifted back by `shift_ns`.
struct Unmerge {
  bool active = false;
  int64_t pid = 0;
  int64_t shift_ns = 0;
};

template <typename W>
class WindowReader {
 public:
  explicit WindowReader(W* w) : w_(*w) { w_.strings.assign(1, ""); }

  // What reading events needs from the "libprof" member.
  void Prime(const JsonValue& l);
  // One event (an object) of the trace; `fix` maps a merged trace's event
  // back onto its input.
  void ReadEvent(const JsonValue& e, const Unmerge& fix);
  // `top`: the trace's top-level members other than traceEvents.
  void Finish(const JsonValue& top);

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

  // A timestamp, shifted back onto its input's clock for a merged trace
  // (as the merge shifted it: whole ns, three decimals of µs).
  uint64_t TimeNs(const JsonValue& ts) const;
  // Start and end in ns; the true duration when the slice was clipped.
  std::pair<uint64_t, uint64_t> Span(const JsonValue& e) const;

  void ReadThreadName(const JsonValue& e);
  void ReadApiCall(const JsonValue& e, const std::string& cat, const std::string& name, uint64_t start, uint64_t end);
  void ReadDeviceWork(const JsonValue& e, const std::string& cat, const std::string& name, uint64_t start,
                      uint64_t end);
  // "Memcpy HtoD (Pageable -> Device)"
  static void ParseCopyName(const std::string& name, DeviceRecord* r);
  void ReadMemory(const JsonValue& e);

  // An NCCL call as libprof writes it (exporters/trace/chrome_trace.cpp): a cpu_op
  // "nccl<Operation>" with the args Kineto puts on record_param_comms, its
  // launch's correlation and where it was seen. The count NCCL was passed
  // comes back from the element counts as collectives.cpp wrote them.
  void ReadCollective(const JsonValue& e, const std::string& name, uint64_t start, uint64_t end);
  void ReadOperator(const JsonValue& e, const std::string& name, uint64_t start, uint64_t end);
  // "0x<hex>" as libprof names a communicator, or a number (PyTorch's
  // process group names); 0 otherwise.
  static uint64_t CommIdOf(const std::string& name);
  // The communicators of a window with NCCL calls: distributedInfo's
  // pg_config as libprof and torch.profiler write it, then any other one the
  // calls name, sized by their "Group size" (a merged trace keeps no
  // pg_config per rank).
  void ReadCommunicators(const JsonValue& top);

  // python_function slices back into stacks: each call's stack is the
  // slices on its thread that enclose it (they nest), outermost last in the
  // frame list as the agent stores it; a slice's name "<file>(<line>):
  // <function>" is its frame. The status comes from libprof.python.stacks.
  void RebuildPythonStacks();

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
  // libprof.python.graph_capture_stacks: the stacks (frames as slice name
  // ids, innermost first) and node id -> stack index + 1; a graph op's
  // capture_stack_id holds that index + 1 until RebuildPythonStacks.
  std::vector<std::vector<uint32_t>> capture_stacks_;
  std::unordered_map<uint64_t, uint32_t> capture_of_node_;
  bool libprof_ = false;
  bool have_steps_ = false;
  Unmerge fix_;
  std::map<uint64_t, int> comm_sizes_;  // communicator -> "Group size" of its calls
};

extern template class WindowReader<Window>;
extern template class WindowReader<CompactWindow>;

}  // namespace prof::tool
