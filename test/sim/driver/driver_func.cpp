// Driver: kernel attributes, occupancy and tensor maps, the queries a JIT or
// a framework's own launcher makes before cuLaunchKernel (PyTorch's NVRTC
// kernels, Triton's launcher). Every kernel is the one ../kernel_model.h
// describes; cuFuncSetAttribute keeps the dynamic shared memory limit.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cstring>

#include "../kernel_model.h"
#include "device.h"
#include "driver_call.h"
#include "modules.h"

using sim::InitializedDriverCall;

namespace {

CUresult FuncAttribute(int* value, CUfunction_attribute attribute, CUfunction f) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!sim::IsKernel(f)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = sim::kMaxThreadsPerBlock; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *value = 0; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = sim::kRegistersPerThread; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = sim::kBinaryVersion; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = f->max_dynamic_shared.load(); return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult SetFuncAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  if (!sim::IsKernel(f)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > sim::kOptInMaxShared) return CUDA_ERROR_INVALID_VALUE;
      f->max_dynamic_shared.store(value);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return value < -1 || value > 100 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;  // a hint the model has no use for
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // read-only or unknown
  }
}

// The checks cuTensorMapEncodeTiled documents that do not need the device:
// rank 1..5 (3..5 when interleaved), a 16-byte aligned global address (32
// when interleaved), strides that are multiples of 16 below 2^40, box sizes
// 1..256, element strides 1..8.
CUresult EncodeTiled(CUtensorMap* map, cuuint32_t rank, const void* address, const cuuint64_t* dims,
                     const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* element_strides,
                     CUtensorMapInterleave interleave) {
  if (!map || !address || !dims || !box || !element_strides) return CUDA_ERROR_INVALID_VALUE;
  const bool interleaved = interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  if (rank < (interleaved ? 3u : 1u) || rank > 5) return CUDA_ERROR_INVALID_VALUE;
  if (reinterpret_cast<uintptr_t>(address) % (interleaved ? 32 : 16) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (rank > 1 && !strides) return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (1ull << 32)) return CUDA_ERROR_INVALID_VALUE;
    if (box[i] == 0 || box[i] > 256) return CUDA_ERROR_INVALID_VALUE;
    if (element_strides[i] == 0 || element_strides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
    if (i + 1 < rank && (strides[i] % 16 != 0 || strides[i] >= (1ull << 40))) return CUDA_ERROR_INVALID_VALUE;
  }
  // The map is opaque to its user; the sim's kernels never read it.
  std::memset(map, 0, sizeof(*map));
  std::memcpy(map, &address, sizeof(address));
  return CUDA_SUCCESS;
}

}  // namespace

SIM_DRIVER_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  cuFuncGetAttribute_params params{pi, attrib, hfunc};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuFuncGetAttribute), "cuFuncGetAttribute", &params,
                               [&] { return FuncAttribute(pi, attrib, hfunc); });
}

SIM_DRIVER_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  cuFuncSetAttribute_params params{hfunc, attrib, value};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuFuncSetAttribute), "cuFuncSetAttribute", &params,
                               [&] { return SetFuncAttribute(hfunc, attrib, value); });
}

SIM_DRIVER_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  cuFuncSetCacheConfig_params params{hfunc, config};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuFuncSetCacheConfig), "cuFuncSetCacheConfig", &params,
                               [&]() -> CUresult {
                                 if (!sim::IsKernel(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
                                 return config > CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                                       int blockSize, size_t dynamicSMemSize) {
  cuOccupancyMaxActiveBlocksPerMultiprocessor_params params{numBlocks, func, blockSize, dynamicSMemSize};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuOccupancyMaxActiveBlocksPerMultiprocessor),
                               "cuOccupancyMaxActiveBlocksPerMultiprocessor", &params, [&]() -> CUresult {
                                 if (!numBlocks) return CUDA_ERROR_INVALID_VALUE;
                                 if (!sim::IsKernel(func)) return CUDA_ERROR_INVALID_HANDLE;
                                 *numBlocks = sim::ActiveBlocksPerSm(blockSize, dynamicSMemSize,
                                                                     func->max_dynamic_shared.load());
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                                  cuuint32_t tensorRank, void* globalAddress,
                                                  const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                                  const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                                  CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                  CUtensorMapL2promotion l2Promotion,
                                                  CUtensorMapFloatOOBfill oobFill) {
  cuTensorMapEncodeTiled_params params{tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
                                       globalStrides, boxDim, elementStrides, interleave, swizzle,
                                       l2Promotion, oobFill};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuTensorMapEncodeTiled), "cuTensorMapEncodeTiled", &params, [&] {
    return EncodeTiled(tensorMap, tensorRank, globalAddress, globalDim, globalStrides, boxDim, elementStrides,
                       interleave);
  });
}
