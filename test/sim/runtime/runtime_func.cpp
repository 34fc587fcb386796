// Runtime: kernel attributes and the occupancy calculator for registered
// kernels, described as ../kernel_model.h describes every kernel.
#include <algorithm>
#include <map>
#include <mutex>

#include "../kernel_model.h"
#include "registry.h"

using simrt::RuntimeCall;

namespace {

using namespace sim;  // the kernel model's constants

struct FuncSettings {
  int max_dynamic_shared = kDefaultMaxDynamicShared;
  int carveout = -1;
  cudaFuncCache cache = cudaFuncCachePreferNone;
};
struct Settings {
  std::mutex mutex;
  std::map<const void*, FuncSettings> by_stub;
};
Settings& TheSettings() {
  static Settings* settings = new Settings();
  return *settings;
}
FuncSettings SettingsOf(const void* func) {
  Settings& s = TheSettings();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.by_stub.find(func);
  return it == s.by_stub.end() ? FuncSettings{} : it->second;
}

// Active blocks of `block_size` threads per SM (0 when the block cannot run).
int ActiveBlocks(const void* func, int block_size, size_t dynamic_shared) {
  return ActiveBlocksPerSm(block_size, dynamic_shared, SettingsOf(func).max_dynamic_shared);
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  cudaFuncGetAttributes_v3020_params params{attr, func};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaFuncGetAttributes_v3020), "cudaFuncGetAttributes", &params,
                     [&]() -> cudaError_t {
    if (!attr) return cudaErrorInvalidValue;
    if (!simrt::RegisteredName(func)) return cudaErrorInvalidDeviceFunction;
    const FuncSettings settings = SettingsOf(func);
    *attr = cudaFuncAttributes{};
    attr->maxThreadsPerBlock = kMaxThreadsPerBlock;
    attr->numRegs = kRegistersPerThread;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = settings.max_dynamic_shared;
    attr->preferredShmemCarveout = settings.carveout;
    return cudaSuccess;
  }, simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  cudaFuncSetAttribute_v9000_params params{func, attr, value};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaFuncSetAttribute_v9000), "cudaFuncSetAttribute", &params,
                     [&]() -> cudaError_t {
    if (!simrt::RegisteredName(func)) return cudaErrorInvalidDeviceFunction;
    Settings& s = TheSettings();
    std::lock_guard<std::mutex> lock(s.mutex);
    FuncSettings& f = s.by_stub[func];
    switch (attr) {
      case cudaFuncAttributeMaxDynamicSharedMemorySize:
        if (value < 0 || value > kOptInMaxShared) return cudaErrorInvalidValue;
        f.max_dynamic_shared = value;
        return cudaSuccess;
      case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100) return cudaErrorInvalidValue;
        f.carveout = value;
        return cudaSuccess;
      case cudaFuncAttributeClusterDimMustBeSet:
      case cudaFuncAttributeRequiredClusterWidth:
      case cudaFuncAttributeRequiredClusterHeight:
      case cudaFuncAttributeRequiredClusterDepth:
        return cudaErrorInvalidValue;  // read-only, set at compile time
      case cudaFuncAttributeNonPortableClusterSizeAllowed:
      case cudaFuncAttributeClusterSchedulingPolicyPreference:
        return cudaSuccess;  // accepted, no effect on the model
      default:
        return cudaErrorInvalidValue;
    }
  }, simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache cacheConfig) {
  cudaFuncSetCacheConfig_v3020_params params{func, cacheConfig};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaFuncSetCacheConfig_v3020), "cudaFuncSetCacheConfig", &params,
                     [&]() -> cudaError_t {
    if (!simrt::RegisteredName(func)) return cudaErrorInvalidDeviceFunction;
    if (cacheConfig < cudaFuncCachePreferNone || cacheConfig > cudaFuncCachePreferEqual) return cudaErrorInvalidValue;
    Settings& s = TheSettings();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.by_stub[func].cache = cacheConfig;  // a preference: no effect on the model
    return cudaSuccess;
  }, simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                                     int blockSize,
                                                                                     size_t dynamicSMemSize,
                                                                                     unsigned int flags) {
  cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000_params params{numBlocks, func, blockSize,
                                                                             dynamicSMemSize, flags};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000),
                     "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", &params, [&]() -> cudaError_t {
    if (!numBlocks || (flags & ~cudaOccupancyDisableCachingOverride)) return cudaErrorInvalidValue;
    if (!simrt::RegisteredName(func)) return cudaErrorInvalidDeviceFunction;
    *numBlocks = ActiveBlocks(func, blockSize, dynamicSMemSize);
    return cudaSuccess;
  }, simrt::RegisteredName(func));
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func,
                                                                            int blockSize, size_t dynamicSMemSize) {
  cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6050_params params{numBlocks, func, blockSize, dynamicSMemSize};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6050),
                     "cudaOccupancyMaxActiveBlocksPerMultiprocessor", &params, [&]() -> cudaError_t {
    if (!numBlocks) return cudaErrorInvalidValue;
    if (!simrt::RegisteredName(func)) return cudaErrorInvalidDeviceFunction;
    *numBlocks = ActiveBlocks(func, blockSize, dynamicSMemSize);
    return cudaSuccess;
  }, simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, const void* func,
                                                                        int numBlocks, int blockSize) {
  cudaOccupancyAvailableDynamicSMemPerBlock_v10200_params params{dynamicSmemSize, func, numBlocks, blockSize};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaOccupancyAvailableDynamicSMemPerBlock_v10200),
                     "cudaOccupancyAvailableDynamicSMemPerBlock", &params, [&]() -> cudaError_t {
    if (!dynamicSmemSize || numBlocks <= 0) return cudaErrorInvalidValue;
    if (!simrt::RegisteredName(func)) return cudaErrorInvalidDeviceFunction;
    if (ActiveBlocks(func, blockSize, 0) < numBlocks) {
      *dynamicSmemSize = 0;  // that many blocks never fit, whatever the shared memory
      return cudaSuccess;
    }
    const size_t per_block = kSharedPerSm / static_cast<size_t>(numBlocks);
    const size_t available = per_block > kReservedSharedPerBlock ? per_block - kReservedSharedPerBlock : 0;
    *dynamicSmemSize = std::min(available, static_cast<size_t>(SettingsOf(func).max_dynamic_shared));
    return cudaSuccess;
  }, simrt::RegisteredName(func));
}
