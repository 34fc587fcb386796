// PyTorch's operators in a window: the NVTX ranges that carry an op_id
// (collectors/nvtx/torch_op_name.h), as Kineto links its cpu_op events:
// each CUDA call and the GPU work it launched belong to the innermost
// operator around the call on its thread (Kineto's "External id"), and a
// backward operator to the thread that ran its forward one (same sequence
// number).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "exporters/common/window_index.h"
#include "model/window.h"

namespace prof {

class OperatorIndex {
 public:
  // is_module: whether a range's name is a module call's ("nn.Module: <path>",
  // collectors/python/README.md); none without it. The index reads `ranges`
  // for its life.
  explicit OperatorIndex(const std::vector<NvtxRange>& ranges,
                         const std::function<bool(uint32_t name_id)>& is_module = nullptr);

  bool empty() const { return ops_.empty(); }
  // Index into the ranges of the innermost operator around a call made on
  // `tid` at `t_ns`; -1 if none.
  int64_t Enclosing(uint32_t tid, uint64_t t_ns) const;
  // For what happened at t_ns on a thread not known: of the innermost
  // operators around t_ns on each thread, the one entered last; -1 if none.
  int64_t EnclosingOnAnyThread(uint64_t t_ns) const;
  // The operator enclosing the call that launched the work of
  // `correlation` (a Window's or a CompactWindow's); -1 if none.
  template <typename W>
  int64_t OfCorrelation(const W& w, const WindowIndex& index, uint32_t correlation) const {
    if (ops_.empty() || correlation == 0) return -1;
    int64_t host = index.HostCall(correlation);
    if (host != WindowIndex::kNone) {
      const auto& e = w.host_events[static_cast<size_t>(host)];
      return Enclosing(e.tid, e.start_ns);
    }
    if constexpr (std::is_same_v<W, Window>) {
      int64_t api = index.ApiRecord(correlation);
      if (api == WindowIndex::kNone) return -1;
      const DeviceRecord& r = w.device_records[static_cast<size_t>(api)];
      return Enclosing(r.thread_id, r.start_ns);
    }
    return -1;
  }
  // Per range, the index of the operator that encloses it on its thread;
  // -1 for the outermost (and for ranges that are not operators).
  const std::vector<int64_t>& Parents() const { return parent_range_; }
  // The thread that ran sequence number `seq`'s forward operator (the first
  // operator with it in the window); 0 when the window has none.
  uint32_t ForwardThread(int32_t seq) const;
  // The module call around operator range `op`: the innermost module range
  // around it on its thread, or for an operator autograd ran for a forward
  // one elsewhere (its own sequence number, or its enclosing operator's),
  // that forward operator's. Index into the ranges, or -1.
  int64_t ModuleOf(int64_t op) const { return op < 0 ? -1 : module_of_[static_cast<size_t>(op)]; }
  bool has_modules() const { return has_modules_; }
  // The module call around module range `module` on its thread, or -1.
  int64_t ModuleParent(int64_t module) const { return module < 0 ? -1 : module_parent_[static_cast<size_t>(module)]; }

 private:
  struct Op {
    uint64_t start_ns;
    uint64_t end_ns;
    int64_t range;   // index into the ranges
    int64_t parent;  // index into the thread's ops, -1 at the top
  };
  const std::vector<NvtxRange>& ranges_;
  std::unordered_map<uint32_t, std::vector<Op>> ops_;  // tid -> its operators by start
  std::vector<int64_t> parent_range_;
  std::unordered_map<int32_t, int64_t> forward_op_;  // seq -> its forward operator's range
  std::vector<int64_t> module_of_;
  std::vector<int64_t> module_parent_;
  bool has_modules_ = false;
};

// A module call's range, as collectors/python/torch_ops.cpp names it:
// "nn.Module: <attribute path>"; its path, or "" for another name.
inline std::string_view ModulePath(std::string_view name) {
  return name.starts_with(kModuleRangePrefix) ? name.substr(kModuleRangePrefix.size()) : std::string_view();
}

// The operators of a window's ranges, its module calls told by their names
// (a CompactWindow's: RestOf() it). The index reads `w`'s ranges for its life.
inline OperatorIndex WindowOperators(const Window& w) {
  return OperatorIndex(w.nvtx_ranges, [&w](uint32_t id) { return !ModulePath(w.String(id)).empty(); });
}

// Kineto's category for an operator range: "user_annotation" for a
// record_function label (no namespace, no sequence number, not a backward
// function: "Optimizer.step#AdamW.step"), "cpu_op" for the rest.
const char* OperatorCategory(std::string_view name, int32_t seq);

// How Python code usually reaches an operator that makes the host wait
// (".item()" for aten::_local_scalar_dense), or "" for the rest.
std::string_view OperatorInPython(std::string_view name);

// True when `shapes` is a JSON list of lists of integers (what PyTorch writes
// for input shapes), so it can go into a trace as it is.
bool IsShapeList(std::string_view shapes);

}  // namespace prof
