// PyTorch's operators in a window: the NVTX ranges that carry an op_id
// (collectors/nvtx/torch_op_name.h), as Kineto links its cpu_op events:
// each CUDA call and the GPU work it launched belong to the innermost
// operator around the call on its thread (Kineto's "External id"), and a
// backward operator to the thread that ran its forward one (same sequence
// number).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exporters/common/window_index.h"
#include "model/window.h"

namespace prof {

class OperatorIndex {
 public:
  OperatorIndex(const Window& w, const WindowIndex& index);

  bool empty() const { return ops_.empty(); }
  // Index into w.nvtx_ranges of the innermost operator around a call made
  // on `tid` at `t_ns`; -1 if none.
  int64_t Enclosing(uint32_t tid, uint64_t t_ns) const;
  // The operator whose call launched the work of `correlation`; -1 if none.
  int64_t OfCorrelation(uint32_t correlation) const;
  // The thread that ran sequence number `seq`'s forward operator (the first
  // operator with it in the window); 0 when the window has none.
  uint32_t ForwardThread(int32_t seq) const;

 private:
  struct Op {
    uint64_t start_ns;
    uint64_t end_ns;
    int64_t range;   // index into w.nvtx_ranges
    int64_t parent;  // index into the thread's ops, -1 at the top
  };
  const Window& w_;
  const WindowIndex& index_;
  std::unordered_map<uint32_t, std::vector<Op>> ops_;  // tid -> its operators by start
  std::unordered_map<int32_t, uint32_t> forward_tid_;
};

// Kineto's category for an operator range: "user_annotation" for a
// record_function label (no namespace, no sequence number, not a backward
// function: "Optimizer.step#AdamW.step"), "cpu_op" for the rest.
const char* OperatorCategory(std::string_view name, int32_t seq);

// True when `shapes` is a JSON list of lists of integers (what PyTorch writes
// for input shapes), so it can go into a trace as it is.
bool IsShapeList(std::string_view shapes);

}  // namespace prof
