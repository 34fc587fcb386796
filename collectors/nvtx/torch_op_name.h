// PyTorch's NVTX profiler (torch.autograd.profiler.emit_nvtx, and the
// operator ranges libprof turns on itself: collectors/python/torch_ops.h)
// names each operator's range
//
//   <name>[, seq = <n>][, op_id = <id>][, sizes = <shapes>][, input_op_ids = <ids>]
//
// (torch/csrc/profiler/util.cpp, getNvtxStr): the sequence number only on
// operators autograd records, the shapes only with record_shapes. Each text
// is unique (op_id counts up), so a range's name is split before it is
// interned: the name and the shapes repeat every step, the numbers do not.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/events.h"

namespace prof::nvtx {

struct TorchOpName {
  std::string_view name;    // "aten::mm"
  std::string_view shapes;  // "[[16, 8], [8, 64]]"; empty without record_shapes
  uint64_t op_id = 0;
  int64_t seq = -1;  // -1: none
};

// True when `text` names a module call's range, as the agent's module hooks
// push them (collectors/python/torch_ops.cpp): "nn.Module: <path>".
inline bool IsModuleCall(std::string_view text) { return text.starts_with(kModuleRangePrefix); }

// True when `text` is an operator range as above (it has an op_id); false
// leaves *out alone and the text is an ordinary range name.
bool ParseTorchOpName(std::string_view text, TorchOpName* out);

}  // namespace prof::nvtx
