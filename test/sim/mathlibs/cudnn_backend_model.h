// What executing a cuDNN backend plan costs on the simulated device, and
// what its kernel is called (README "cuDNN graph API"). Pure: the same
// operation graph and knob always give the same kernel and grid.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "cudnn_backend_descriptor.h"

namespace simdnn {

// FLOPs one block of the sim's GEMM model does (mathlibs/gemm_model.h: a
// 128x128 output tile over a 256-deep slice of k), so a FLOP costs the same
// in a cuDNN graph as in a cuBLAS GEMM: 10 ns per 8.4 MFLOP, ~839 TFLOP/s.
inline constexpr int64_t kFlopsPerBlock = 2LL * 128 * 128 * 256;
inline constexpr unsigned kThreadsPerBlock = 384;  // three warpgroups, as sm_90 flash-attention kernels use
inline constexpr int64_t kKernelCfgMax = 7;        // the engine's one knob: CUDNN_KNOB_TYPE_KERNEL_CFG in [0, 7]
inline constexpr int64_t kHeuristicKernelCfg = 3;  // the value the heuristics choose

struct KernelPlan {
  std::string kernel;
  std::string graph;  // "sdpa_fprop", "sdpa_bprop" or "generic"
  std::string ops;    // the graph's operations in order, comma-separated
  unsigned grid[3];
  unsigned block[3];
  int64_t flops;
  int64_t workspace_bytes;
  std::vector<int64_t> uids;  // non-virtual tensors: the variant pack must give each a pointer
};

// Checks an operation graph's operations (each an operation descriptor
// whose tensors are finalized tensor descriptors); false with `why` if not.
bool CheckGraph(const State& graph, std::string* why);

// The kernel a plan for `graph` launches with the engine's KERNEL_CFG knob.
KernelPlan PlanKernel(const State& graph, int64_t kernel_cfg);

}  // namespace simdnn
