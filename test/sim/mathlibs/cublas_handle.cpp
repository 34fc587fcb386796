// cuBLAS handle management, versions and status strings (cuBLAS library
// documentation, "cuBLAS Helper Function Reference").
#include "cublas_handle.h"

#include <cuda_runtime_api.h>

#include <new>

#include "launch.h"
#include "status_names.h"

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  // "CUBLAS_STATUS_NOT_INITIALIZED: the CUDA Runtime initialization failed".
  if (!simmath::DriverReady()) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasContext* h = new (std::nothrow) cublasContext();
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  h->magic = simmath::kLiveBlasHandle;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->magic = 0;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  return simmath::CublasProperty(type, value);
}

size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = reinterpret_cast<CUstream>(stream);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = reinterpret_cast<cudaStream_t>(handle->stream);
  return CUBLAS_STATUS_SUCCESS;
}

// "workspace pointer must be aligned to at least 256 bytes ... otherwise
// CUBLAS_STATUS_INVALID_VALUE"; size 0 (or NULL) returns to the library's own.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (workspace && reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (!workspace && workspaceSizeInBytes > 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = workspaceSizeInBytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const unsigned base = static_cast<unsigned>(mode) & 0xf;
  const unsigned flags = static_cast<unsigned>(mode) & ~0xfu;
  if (base > CUBLAS_TF32_TENSOR_OP_MATH || (flags & ~static_cast<unsigned>(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)))
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

// One setter and getter per handle mode: cuBLAS's API, each checking its own values.
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED) return CUBLAS_STATUS_INVALID_VALUE;
  handle->atomics_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->atomics_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (smCountTarget < 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->sm_count_target = smCountTarget;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int* smCountTarget) {
  if (!simmath::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!smCountTarget) return CUBLAS_STATUS_INVALID_VALUE;
  *smCountTarget = handle->sm_count_target;
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"

extern "C" {
const char* cublasGetStatusName(cublasStatus_t status) { return simmath::CublasStatusName(status); }
const char* cublasGetStatusString(cublasStatus_t status) { return simmath::CublasStatusString(status); }
}  // extern "C"
