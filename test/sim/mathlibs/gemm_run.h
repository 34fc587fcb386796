// One path for every simulated cuBLAS GEMM: the documented argument checks,
// the quick return, the launch on the handle's stream and its truth line.
#pragma once

#include <cublas_v2.h>
#include <cuda.h>
#include <stdint.h>

#include <string>

#include "gemm_model.h"

namespace simmath {

struct GemmCall {
  const char* api;  // entry point, for the truth log
  GemmProblem problem;
  int64_t lda, ldb, ldc;
  const void* alpha;
  const void* beta;
};

// CUBLAS_STATUS_NOT_INITIALIZED (handle), INVALID_VALUE (operations,
// sizes, leading dimensions, alpha/beta, as cublas<t>gemm documents),
// NOT_SUPPORTED (a type combination cublasGemmEx's table lacks), SUCCESS
// without a launch when there is nothing to compute, EXECUTION_FAILED when
// the launch fails.
cublasStatus_t RunGemm(cublasHandle_t handle, const GemmCall& call);

// The cublasGemmEx table of supported (compute type, A/B type, C type).
bool GemmExSupported(cublasComputeType_t compute, cudaDataType_t ab, cudaDataType_t c);

// Launches a planned GEMM on `stream` and logs it; false if the launch failed.
bool LaunchGemm(const char* lib, const char* api, const GemmProblem& p, CUstream stream, const std::string& extra);

}  // namespace simmath
