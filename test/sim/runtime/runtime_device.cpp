// Runtime: versions, devices, properties, streams, reset.
#include <cstring>

#include "personality.h"
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::RuntimeCall;

SIM_RUNTIME_EXPORT cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  cudaRuntimeGetVersion_v3020_params params{runtimeVersion};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaRuntimeGetVersion_v3020), "cudaRuntimeGetVersion", &params, [&] {
    if (!runtimeVersion) return cudaErrorInvalidValue;
    *runtimeVersion = SIM_CUDA_VERSION;
    return cudaSuccess;
  });
}

// Without a usable driver the real runtime reports version 0 and success.
SIM_RUNTIME_EXPORT cudaError_t cudaDriverGetVersion(int* driverVersion) {
  cudaDriverGetVersion_v3020_params params{driverVersion};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaDriverGetVersion_v3020), "cudaDriverGetVersion", &params, [&] {
    if (!driverVersion) return cudaErrorInvalidValue;
    *driverVersion = 0;
    if (simrt::Ready() != cudaSuccess) return cudaSuccess;
    return FromDriver(Driver().cuDriverGetVersion(driverVersion));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  cudaGetDeviceCount_v3020_params params{count};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDeviceCount_v3020), "cudaGetDeviceCount", &params, [&] {
    if (!count) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuDeviceGetCount(count));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaSetDevice(int device) {
  cudaSetDevice_v3020_params params{device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaSetDevice_v3020), "cudaSetDevice", &params, [&] {
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetDevice(int* device) {
  cudaGetDevice_v3020_params params{device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDevice_v3020), "cudaGetDevice", &params, [&] {
    if (!device) return cudaErrorInvalidValue;
    *device = 0;
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceGetAttribute_v5000_params params{value, attr, device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceGetAttribute_v5000), "cudaDeviceGetAttribute", &params, [&] {
    // cudaDeviceAttr and CUdevice_attribute share their numbering.
    return FromDriver(Driver().cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
  });
}

// Built from driver attributes, as the real runtime does.
SIM_RUNTIME_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  cudaGetDeviceProperties_v12000_params params{prop, device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDeviceProperties_v12000), "cudaGetDeviceProperties", &params,
                          [&]() -> cudaError_t {
    if (!prop) return cudaErrorInvalidValue;
    if (device != 0) return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    const auto& d = Driver();
    if (CUresult r = d.cuDeviceGetName(prop->name, sizeof prop->name, device); r != CUDA_SUCCESS) return FromDriver(r);
    d.cuDeviceTotalMem(&prop->totalGlobalMem, device);
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      d.cuDeviceGetAttribute(&v, a, device);
      return v;
    };
    prop->sharedMemPerBlock = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
    prop->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    prop->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    prop->memPitch = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH));
    prop->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    prop->maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    prop->maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    prop->maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    prop->maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    prop->maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    prop->maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    prop->totalConstMem = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY));
    prop->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    prop->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    prop->textureAlignment = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
    prop->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    prop->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
    prop->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
    prop->ECCEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
    prop->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    prop->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
    prop->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
    prop->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    prop->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    prop->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    prop->streamPrioritiesSupported = attr(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
    prop->sharedMemPerMultiprocessor = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
    prop->regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    prop->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
    prop->concurrentManagedAccess = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
    prop->cooperativeLaunch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
    prop->sharedMemPerBlockOptin = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    prop->maxBlocksPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    prop->memoryPoolsSupported = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceReset(void) {
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceReset_v3020), "cudaDeviceReset", nullptr, [&] {
    cudaError_t error = FromDriver(Driver().cuDevicePrimaryCtxReset(0));
    simrt::ForgetContext();
    return error;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  cudaStreamCreate_v3020_params params{pStream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamCreate_v3020), "cudaStreamCreate", &params, [&] {
    if (!pStream) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuStreamCreate(reinterpret_cast<CUstream*>(pStream), CU_STREAM_DEFAULT));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  cudaStreamCreateWithFlags_v5000_params params{pStream, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamCreateWithFlags_v5000), "cudaStreamCreateWithFlags", &params, [&] {
    if (!pStream) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuStreamCreate(reinterpret_cast<CUstream*>(pStream), flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  cudaStreamCreateWithPriority_v5050_params params{pStream, flags, priority};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamCreateWithPriority_v5050), "cudaStreamCreateWithPriority", &params,
                          [&] {
    if (!pStream) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuStreamCreateWithPriority(reinterpret_cast<CUstream*>(pStream), flags, priority));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  cudaStreamDestroy_v5050_params params{stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamDestroy_v5050), "cudaStreamDestroy", &params, [&] {
    return FromDriver(Driver().cuStreamDestroy(reinterpret_cast<CUstream>(stream)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  cudaDeviceGetStreamPriorityRange_v5050_params params{leastPriority, greatestPriority};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceGetStreamPriorityRange_v5050), "cudaDeviceGetStreamPriorityRange",
                          &params, [&] {
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;  // an H100's range (driver/device.h)
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  cudaDeviceGetPCIBusId_v4010_params params{pciBusId, len, device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceGetPCIBusId_v4010), "cudaDeviceGetPCIBusId", &params,
                          [&] { return FromDriver(Driver().cuDeviceGetPCIBusId(pciBusId, len, device)); });
}
