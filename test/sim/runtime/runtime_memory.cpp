// Runtime: allocators (device, stream-ordered, pinned host, managed, pitched).
#include <cstddef>
#include <cstring>

#include "personality.h"
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;

namespace {

CUdeviceptr* AsDevicePtr(void** p) { return reinterpret_cast<CUdeviceptr*>(p); }
CUdeviceptr DevicePtr(void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// cudaMalloc of 0 bytes succeeds with a null pointer and never reaches the driver.
cudaError_t Malloc(void** devPtr, size_t size) {
  if (!devPtr) return cudaErrorInvalidValue;
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  return FromDriver(Driver().cuMemAlloc(AsDevicePtr(devPtr), size));
}

cudaError_t MallocAsync(void** devPtr, size_t size, cudaStream_t stream, bool per_thread) {
  if (!devPtr) return cudaErrorInvalidValue;
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  return FromDriver(Driver(per_thread).cuMemAllocAsync(AsDevicePtr(devPtr), size, simrt::S(stream)));
}

cudaError_t FreeAsync(void* devPtr, cudaStream_t stream, bool per_thread) {
  return FromDriver(Driver(per_thread).cuMemFreeAsync(DevicePtr(devPtr), simrt::S(stream)));
}

cudaError_t MallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream, bool per_thread) {
  if (!ptr) return cudaErrorInvalidValue;
  return FromDriver(Driver(per_thread).cuMemAllocFromPoolAsync(AsDevicePtr(ptr), size,
                                                                reinterpret_cast<CUmemoryPool>(pool), simrt::S(stream)));
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  cudaMalloc_v3020_params params{devPtr, size};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMalloc_v3020), "cudaMalloc", &params, [&] { return Malloc(devPtr, size); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaFree(void* devPtr) {
  cudaFree_v3020_params params{devPtr};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaFree_v3020), "cudaFree", &params, [&] {
    return devPtr ? FromDriver(Driver().cuMemFree(DevicePtr(devPtr))) : cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  cudaMallocAsync_v11020_params params{devPtr, size, hStream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocAsync_v11020), "cudaMallocAsync", &params,
                          [&] { return MallocAsync(devPtr, size, hStream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  cudaMallocAsync_ptsz_v11020_params params{devPtr, size, hStream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocAsync_ptsz_v11020), "cudaMallocAsync_ptsz", &params,
                          [&] { return MallocAsync(devPtr, size, hStream, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  cudaFreeAsync_v11020_params params{devPtr, hStream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaFreeAsync_v11020), "cudaFreeAsync", &params,
                          [&] { return FreeAsync(devPtr, hStream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  cudaFreeAsync_ptsz_v11020_params params{devPtr, hStream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaFreeAsync_ptsz_v11020), "cudaFreeAsync_ptsz", &params,
                          [&] { return FreeAsync(devPtr, hStream, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                       cudaStream_t stream) {
  cudaMallocFromPoolAsync_v11020_params params{ptr, size, memPool, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocFromPoolAsync_v11020), "cudaMallocFromPoolAsync", &params,
                          [&] { return MallocFromPoolAsync(ptr, size, memPool, stream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                            cudaStream_t stream) {
  cudaMallocFromPoolAsync_ptsz_v11020_params params{ptr, size, memPool, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocFromPoolAsync_ptsz_v11020), "cudaMallocFromPoolAsync_ptsz",
                          &params, [&] { return MallocFromPoolAsync(ptr, size, memPool, stream, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  cudaDeviceGetDefaultMemPool_v11020_params params{memPool, device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceGetDefaultMemPool_v11020), "cudaDeviceGetDefaultMemPool", &params,
                          [&] {
    return FromDriver(Driver().cuDeviceGetDefaultMemPool(reinterpret_cast<CUmemoryPool*>(memPool), device));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  cudaMallocHost_v3020_params params{ptr, size};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocHost_v3020), "cudaMallocHost", &params, [&] {
    if (!ptr) return cudaErrorInvalidValue;
    // As NVIDIA's runtime: cudaMallocHost is cuMemHostAlloc with no flags.
    return FromDriver(Driver().cuMemHostAlloc(ptr, size, 0));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  cudaHostAlloc_v3020_params params{pHost, size, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaHostAlloc_v3020), "cudaHostAlloc", &params, [&] {
    if (!pHost) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuMemHostAlloc(pHost, size, flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  cudaFreeHost_v3020_params params{ptr};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaFreeHost_v3020), "cudaFreeHost", &params,
                          [&] { return FromDriver(Driver().cuMemFreeHost(ptr)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  cudaMallocManaged_v6000_params params{devPtr, size, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocManaged_v6000), "cudaMallocManaged", &params, [&] {
    if (!devPtr) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuMemAllocManaged(AsDevicePtr(devPtr), size, flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  cudaMallocPitch_v3020_params params{devPtr, pitch, width, height};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocPitch_v3020), "cudaMallocPitch", &params, [&] {
    if (!devPtr || !pitch) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuMemAllocPitch(AsDevicePtr(devPtr), pitch, width, height, /*ElementSizeBytes=*/4));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  cudaMemGetInfo_v3020_params params{free, total};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemGetInfo_v3020), "cudaMemGetInfo", &params,
                          [&] { return FromDriver(Driver().cuMemGetInfo(free, total)); });
}

// Since CUDA 11 ordinary host memory is not an error: it is "unregistered".
// CUDA 13 appended `long reserved[8]` to struct cudaPointerAttributes; a
// CUDA 12 caller's struct ends before it (24 bytes, CUDA 12.9's
// driver_types.h), so the CUDA 12 personality writes only that much.
#if SIM_CUDA_MAJOR == 12
constexpr size_t kPointerAttributesSize = offsetof(cudaPointerAttributes, reserved);
static_assert(kPointerAttributesSize == 24);
#else
constexpr size_t kPointerAttributesSize = sizeof(cudaPointerAttributes);
#endif

SIM_RUNTIME_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  cudaPointerGetAttributes_v4000_params params{attributes, ptr};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaPointerGetAttributes_v4000), "cudaPointerGetAttributes", &params,
                          [&]() -> cudaError_t {
    if (!attributes) return cudaErrorInvalidValue;
    const auto address = reinterpret_cast<CUdeviceptr>(ptr);
    unsigned memory_type = 0;
    unsigned managed = 0;
    cudaPointerAttributes a{};
    if (Driver().cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) != CUDA_SUCCESS) {
      a.type = cudaMemoryTypeUnregistered;
      a.device = -2;  // no device's
      a.hostPointer = const_cast<void*>(ptr);
    } else {
      Driver().cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address);
      a.type = managed ? cudaMemoryTypeManaged
                       : (memory_type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost : cudaMemoryTypeDevice);
      Driver().cuPointerGetAttribute(&a.device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address);
      Driver().cuPointerGetAttribute(&a.devicePointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, address);
      Driver().cuPointerGetAttribute(&a.hostPointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, address);
    }
    memcpy(attributes, &a, kPointerAttributesSize);
    return cudaSuccess;
  });
}
