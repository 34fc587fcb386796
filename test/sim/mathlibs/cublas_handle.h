// The state behind a cublasHandle_t (`struct cublasContext*` in
// cublas_api.h): what cuBLAS documents a handle to hold.
#pragma once

#include <cublas_v2.h>
#include <cuda.h>
#include <stdint.h>

#include "handle_magic.h"

struct cublasContext {
  uint64_t magic;  // kLiveBlasHandle while created, cleared by cublasDestroy; first (handle_magic.h)
  CUstream stream = nullptr;  // cublasSetStream; NULL: the legacy default stream
  void* workspace = nullptr;  // cublasSetWorkspace (the library's own until set)
  size_t workspace_bytes = 0;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  int sm_count_target = 0;
};

namespace simmath {

// CUBLAS_STATUS_NOT_INITIALIZED for a NULL or destroyed handle, as cuBLAS
// answers calls on a handle the library did not initialise.
inline bool LiveHandle(cublasHandle_t h) { return h != nullptr && h->magic == kLiveBlasHandle; }

// Whether FP32 GEMMs on this handle may use TF32 tensor cores
// (CUBLAS_TF32_TENSOR_OP_MATH; CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION is a flag bit).
inline bool Tf32Allowed(cublasHandle_t h) {
  return (h->math_mode & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH;
}

}  // namespace simmath
