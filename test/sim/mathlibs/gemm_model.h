// The cost model and kernel names of the simulated GEMMs (README, "Math
// libraries"). Pure: the same problem always gives the same kernel and
// grid. The simulated driver times a kernel as base + per-block cost
// (driver/timing.h), so the grid carries the work: one block per
// 128x128 tile of the output and per 256-deep slice of k, per batch entry.
#pragma once

#include <cublas_api.h>
#include <library_types.h>
#include <stdint.h>

#include <string>

namespace simmath {

// The model's constants: numbers, not logic.
inline constexpr int64_t kTileM = 128;
inline constexpr int64_t kTileN = 128;
inline constexpr int64_t kSliceK = 256;
inline constexpr unsigned kThreadsPerBlock = 256;

struct GemmProblem {
  int64_t m, n, k, batch;
  cublasOperation_t trans_a, trans_b;
  cudaDataType_t a_type, b_type, c_type;
  cublasComputeType_t compute;
  bool tf32;  // FP32 inputs may run on TF32 tensor cores (math mode or compute type says so)
};

struct GemmPlan {
  std::string kernel;
  unsigned grid[3];
  unsigned block[3];
};

// Kernel name (NVIDIA's naming scheme, not a specific binary's kernel)
// and grid for a problem. m, n, batch must be positive; k >= 0.
GemmPlan PlanGemm(const GemmProblem& p);

// Whether the model has a name token for this data type.
bool KnownDataType(cudaDataType_t t);

}  // namespace simmath
