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

// As CUDA 12+ documents it: the device's primary context is initialised
// (retained) and made current on the calling thread.
SIM_RUNTIME_EXPORT cudaError_t cudaSetDevice(int device) {
  cudaSetDevice_v3020_params params{device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaSetDevice_v3020), "cudaSetDevice", &params, [&]() -> cudaError_t {
    if (device < 0 || device >= simhub_device_count()) return cudaErrorInvalidDevice;
    CUcontext context = nullptr;
    if (CUresult r = Driver().cuDevicePrimaryCtxRetain(&context, device); r != CUDA_SUCCESS) return FromDriver(r);
    simrt::RememberContext(device);
    return FromDriver(Driver().cuCtxSetCurrent(context));
  });
}

// The thread's device, from the driver's current context (no driver call:
// the runtime keeps it as its own state).
SIM_RUNTIME_EXPORT cudaError_t cudaGetDevice(int* device) {
  cudaGetDevice_v3020_params params{device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDevice_v3020), "cudaGetDevice", &params, [&] {
    if (!device) return cudaErrorInvalidValue;
    *device = simhub_current_device();
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

namespace {
// Data, not logic: one cudaDeviceProp field per driver attribute.
// Built from driver attributes, as the real runtime does (the toolkit's
// cudaDeviceProp, CUDA 13's layout).
cudaError_t FillDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return cudaErrorInvalidValue;
  if (device < 0 || device >= simhub_device_count()) return cudaErrorInvalidDevice;
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
  prop->pciDeviceID = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  prop->pciDomainID = attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  // A UUID of its own per device (bytes 0-3 "SIMG", then the ordinal).
  memcpy(prop->uuid.bytes, "SIMG", 4);
  prop->uuid.bytes[15] = static_cast<char>(device);
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
}
}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  cudaGetDeviceProperties_v12000_params params{prop, device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDeviceProperties_v12000), "cudaGetDeviceProperties", &params,
                          [&] { return FillDeviceProperties(prop, device); });
}

#if SIM_CUDA_MAJOR == 12
namespace {
// CUDA 12's struct cudaDeviceProp, which CUDA 12 programs pass to
// cudaGetDeviceProperties_v2 (its cuda_runtime_api.h maps the plain name to
// it). CUDA 13 removed fields from the middle (clockRate, computeMode,
// memoryClockRate, ...), so the toolkit's struct cannot be filled in place.
// Byte offsets as offsetof gives them with CUDA 12.9's driver_types.h
// (x86-64; the layout has been the same since 12.0, only reserved space
// shrank as fields were added at the end).
namespace prop12 {
constexpr size_t kSize = 1032;
constexpr size_t name = 0, uuid = 256, totalGlobalMem = 288, sharedMemPerBlock = 296, regsPerBlock = 304,
                 warpSize = 308, memPitch = 312, maxThreadsPerBlock = 320, maxThreadsDim = 324, maxGridSize = 336,
                 clockRate = 348, totalConstMem = 352, major = 360, minor = 364, textureAlignment = 368,
                 multiProcessorCount = 388, canMapHostMemory = 400, computeMode = 404, concurrentKernels = 576,
                 ECCEnabled = 580, pciBusID = 584, pciDeviceID = 588, pciDomainID = 592, asyncEngineCount = 600,
                 unifiedAddressing = 604, memoryClockRate = 608, memoryBusWidth = 612, l2CacheSize = 616,
                 maxThreadsPerMultiProcessor = 624, streamPrioritiesSupported = 628,
                 sharedMemPerMultiprocessor = 640, regsPerMultiprocessor = 648, managedMemory = 652,
                 concurrentManagedAccess = 676, cooperativeLaunch = 688, sharedMemPerBlockOptin = 696,
                 maxBlocksPerMultiProcessor = 712, memoryPoolsSupported = 744;
}  // namespace prop12

template <typename T>
void Put(void* prop, size_t offset, const T& value) {
  memcpy(static_cast<char*>(prop) + offset, &value, sizeof value);
}
}  // namespace

// The runtime's own CUPTI name and id for it in CUDA 12 (cbid 440, which
// CUDA 13's header calls cudaGetDeviceProperties_v12000).
SIM_RUNTIME_EXPORT cudaError_t cudaGetDeviceProperties_v2(void* prop, int device) {
  cudaGetDeviceProperties_v12000_params params{static_cast<cudaDeviceProp*>(prop), device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDeviceProperties_v12000), "cudaGetDeviceProperties_v2", &params,
                          [&]() -> cudaError_t {
    if (!prop) return cudaErrorInvalidValue;
    cudaDeviceProp p13;
    if (cudaError_t e = FillDeviceProperties(&p13, device); e != cudaSuccess) return e;
    memset(prop, 0, prop12::kSize);
    using namespace prop12;
    Put(prop, name, p13.name);
    Put(prop, uuid, p13.uuid);
    Put(prop, totalGlobalMem, p13.totalGlobalMem);
    Put(prop, sharedMemPerBlock, p13.sharedMemPerBlock);
    Put(prop, regsPerBlock, p13.regsPerBlock);
    Put(prop, warpSize, p13.warpSize);
    Put(prop, memPitch, p13.memPitch);
    Put(prop, maxThreadsPerBlock, p13.maxThreadsPerBlock);
    Put(prop, maxThreadsDim, p13.maxThreadsDim);
    Put(prop, maxGridSize, p13.maxGridSize);
    Put(prop, totalConstMem, p13.totalConstMem);
    Put(prop, major, p13.major);
    Put(prop, minor, p13.minor);
    Put(prop, textureAlignment, p13.textureAlignment);
    Put(prop, multiProcessorCount, p13.multiProcessorCount);
    Put(prop, canMapHostMemory, p13.canMapHostMemory);
    Put(prop, concurrentKernels, p13.concurrentKernels);
    Put(prop, ECCEnabled, p13.ECCEnabled);
    Put(prop, pciBusID, p13.pciBusID);
    Put(prop, asyncEngineCount, p13.asyncEngineCount);
    Put(prop, unifiedAddressing, p13.unifiedAddressing);
    Put(prop, memoryBusWidth, p13.memoryBusWidth);
    Put(prop, l2CacheSize, p13.l2CacheSize);
    Put(prop, maxThreadsPerMultiProcessor, p13.maxThreadsPerMultiProcessor);
    Put(prop, streamPrioritiesSupported, p13.streamPrioritiesSupported);
    Put(prop, sharedMemPerMultiprocessor, p13.sharedMemPerMultiprocessor);
    Put(prop, regsPerMultiprocessor, p13.regsPerMultiprocessor);
    Put(prop, managedMemory, p13.managedMemory);
    Put(prop, concurrentManagedAccess, p13.concurrentManagedAccess);
    Put(prop, cooperativeLaunch, p13.cooperativeLaunch);
    Put(prop, sharedMemPerBlockOptin, p13.sharedMemPerBlockOptin);
    Put(prop, maxBlocksPerMultiProcessor, p13.maxBlocksPerMultiProcessor);
    Put(prop, memoryPoolsSupported, p13.memoryPoolsSupported);
    // The fields CUDA 13 dropped, from the same driver attributes.
    const auto& d = Driver();
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      d.cuDeviceGetAttribute(&v, a, device);
      return v;
    };
    Put(prop, clockRate, attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
    Put(prop, computeMode, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE));
    Put(prop, memoryClockRate, attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE));
    Put(prop, pciDeviceID, attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
    Put(prop, pciDomainID, attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
    return cudaSuccess;
  });
}
#endif

// The current device's primary context.
SIM_RUNTIME_EXPORT cudaError_t cudaDeviceReset(void) {
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceReset_v3020), "cudaDeviceReset", nullptr, [&] {
    const int device = simhub_current_device();
    cudaError_t error = FromDriver(Driver().cuDevicePrimaryCtxReset(device));
    simrt::ForgetContext(device);
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
