// Driver: allocation (device, host, managed, stream-ordered, virtual memory).
// "Device memory" is host memory, so the program can really move bytes.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>
#include <sys/mman.h>

#include <mutex>
#include <unordered_map>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph.h"
#include "pools.h"

namespace sim {
namespace {

// One MEMORY2-style op for an allocation or a free on `device`.
void EmitMemoryOp(Device& device, int kind, const void* ptr, size_t bytes, int memory_kind, CUstream stream,
                  bool stream_ordered) {
  SimOp op{};
  op.kind = kind;
  op.correlation_id = OuterCorrelationId();
  op.device_id = static_cast<uint32_t>(device.ordinal());
  op.context_id = device.ContextUid();
  op.stream_id = stream_ordered ? device.StreamId(stream) : 0;
  op.launch_ns = op.start_ns = op.end_ns = simhub_now_ns();
  op.bytes = bytes;
  op.address = reinterpret_cast<uint64_t>(ptr);
  op.src_kind = op.dst_kind = memory_kind;
  EmitOp(op);
}

CUresult AllocateInto(void** out, size_t bytes, int memory_kind, CUstream stream, bool stream_ordered,
                      CUmemoryPool pool = nullptr) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  // On the current device (stream-ordered: the stream's).
  Device& device = stream_ordered ? Device::Of(stream) : Device::Get();
  if (stream_ordered && !device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  // Stream capture: CUDA makes an allocation node of a stream-ordered
  // allocation (not modelled: refused); any other allocation is a
  // potentially unsafe call.
  if (CUresult r = CUDA_SUCCESS; stream_ordered && CaptureUnsupported(stream, &r)) return r;
  if (!stream_ordered) {
    if (CUresult r = CaptureCheckUnsafe(); r != CUDA_SUCCESS) return r;
  }
  device.RetainPrimaryContext();
  if (bytes == 0) {
    *out = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = device.Allocate(bytes, memory_kind);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = p;
  if (stream_ordered) PoolAllocated(pool ? pool : CurrentPool(device.ordinal()), p, bytes);
  EmitMemoryOp(device, SIM_OP_MEM_ALLOC, p, bytes, memory_kind, stream, stream_ordered);
  return CUDA_SUCCESS;
}

// Frees after the device has finished what was enqueued (cuMemFree and
// cuMemFreeHost synchronise, as the real ones do); stream-ordered frees don't.
CUresult ReleaseFrom(void* ptr, int expected_kind, CUstream stream, bool stream_ordered) {
  if (!ptr) return CUDA_SUCCESS;
  Device& device = stream_ordered ? Device::Of(stream) : Device::Get();
  if (stream_ordered && !device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CUDA_SUCCESS; stream_ordered && CaptureUnsupported(stream, &r)) return r;  // a free node: not modelled
  if (!stream_ordered) {
    if (CUresult r = CaptureCheckUnsafe(); r != CUDA_SUCCESS) return r;  // it synchronises the device
  }
  if (!stream_ordered) WaitUntilNs(device.DeviceDoneNs());
  const int kind = Device::KindOf(ptr);
  const int owner = Device::DeviceOf(ptr);
  size_t bytes = 0;
  if (!device.Release(ptr, expected_kind, &bytes)) return CUDA_ERROR_INVALID_VALUE;
  PoolReleased(ptr);
  // The record names the device whose memory it was.
  EmitMemoryOp(owner >= 0 && !stream_ordered ? *Device::At(owner) : device, SIM_OP_MEM_FREE, ptr, bytes, kind, stream,
               stream_ordered);
  return CUDA_SUCCESS;
}

void** AsPtr(CUdeviceptr* dptr) { return reinterpret_cast<void**>(dptr); }

// Virtual memory management: physical handles and reserved ranges.
struct PhysicalHandles {
  std::mutex mutex;
  std::unordered_map<CUmemGenericAllocationHandle, size_t> size_of;  // handle -> bytes
  CUmemGenericAllocationHandle next = 1;
};
PhysicalHandles& Physical() {
  static PhysicalHandles* handles = new PhysicalHandles();  // never destroyed: usable from atexit
  return *handles;
}
constexpr size_t kGranularityBytes = 2u << 20;

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  cuMemAlloc_v2_params params{dptr, bytesize};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAlloc_v2), "cuMemAlloc_v2", &params, [&] {
    return sim::AllocateInto(sim::AsPtr(dptr), bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                              unsigned int ElementSizeBytes) {
  cuMemAllocPitch_v2_params params{dptr, pPitch, WidthInBytes, Height, ElementSizeBytes};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocPitch_v2), "cuMemAllocPitch_v2", &params, [&]() -> CUresult {
    if (!pPitch) return CUDA_ERROR_INVALID_VALUE;
    const size_t pitch = (WidthInBytes + 511) / 512 * 512;  // rows aligned like the texture pitch
    *pPitch = pitch;
    return sim::AllocateInto(sim::AsPtr(dptr), pitch * Height, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  cuMemFree_v2_params params{dptr};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemFree_v2), "cuMemFree_v2", &params, [&] {
    return sim::ReleaseFrom(reinterpret_cast<void*>(dptr), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  cuMemAllocManaged_params params{dptr, bytesize, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocManaged), "cuMemAllocManaged", &params, [&] {
    return sim::AllocateInto(sim::AsPtr(dptr), bytesize, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  cuMemAllocHost_v2_params params{pp, bytesize};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocHost_v2), "cuMemAllocHost_v2", &params, [&] {
    return sim::AllocateInto(pp, bytesize, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  cuMemHostAlloc_params params{pp, bytesize, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemHostAlloc), "cuMemHostAlloc", &params, [&] {
    return sim::AllocateInto(pp, bytesize, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemFreeHost(void* p) {
  cuMemFreeHost_params params{p};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemFreeHost), "cuMemFreeHost", &params, [&] {
    return sim::ReleaseFrom(p, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, nullptr, false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  cuMemAllocAsync_params params{dptr, bytesize, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocAsync), "cuMemAllocAsync", &params, [&] {
    return sim::AllocateInto(sim::AsPtr(dptr), bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, hStream, true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                   CUstream hStream) {
  cuMemAllocFromPoolAsync_params params{dptr, bytesize, pool, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocFromPoolAsync), "cuMemAllocFromPoolAsync", &params,
                               [&]() -> CUresult {
                                 if (!sim::IsPool(pool)) return CUDA_ERROR_INVALID_VALUE;
                                 return sim::AllocateInto(sim::AsPtr(dptr), bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                                          hStream, true, pool);
                               });
}

SIM_DRIVER_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  cuMemFreeAsync_params params{dptr, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemFreeAsync), "cuMemFreeAsync", &params, [&] {
    return sim::ReleaseFrom(reinterpret_cast<void*>(dptr), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, hStream, true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  cuMemGetInfo_v2_params params{free_bytes, total_bytes};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemGetInfo_v2), "cuMemGetInfo_v2", &params, [&]() -> CUresult {
    if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
    *total_bytes = sim::Device::kTotalMemBytes;
    *free_bytes = sim::Device::kTotalMemBytes - sim::Device::Get().DeviceBytesInUse();
    return CUDA_SUCCESS;
  });
}

// ---- virtual memory management: reserve (PROT_NONE), create, map (read/write), unmap.

SIM_DRIVER_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                         CUmemAllocationGranularity_flags option) {
  cuMemGetAllocationGranularity_params params{granularity, prop, option};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemGetAllocationGranularity), "cuMemGetAllocationGranularity",
                               &params, [&]() -> CUresult {
                                 if (!granularity || !prop) return CUDA_ERROR_INVALID_VALUE;
                                 *granularity = sim::kGranularityBytes;
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                               unsigned long long flags) {
  cuMemAddressReserve_params params{ptr, size, alignment, addr, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAddressReserve), "cuMemAddressReserve", &params, [&]() -> CUresult {
    if (!ptr || size == 0 || size % sim::kGranularityBytes) return CUDA_ERROR_INVALID_VALUE;
    void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  cuMemAddressFree_params params{ptr, size};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAddressFree), "cuMemAddressFree", &params, [&]() -> CUresult {
    return munmap(reinterpret_cast<void*>(ptr), size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                       const CUmemAllocationProp* prop, unsigned long long flags) {
  cuMemCreate_params params{handle, size, prop, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemCreate), "cuMemCreate", &params, [&]() -> CUresult {
    if (!handle || !prop || size == 0 || size % sim::kGranularityBytes) return CUDA_ERROR_INVALID_VALUE;
    sim::PhysicalHandles& physical = sim::Physical();
    std::lock_guard<std::mutex> lock(physical.mutex);
    *handle = physical.next++;
    physical.size_of[*handle] = size;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  cuMemRelease_params params{handle};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemRelease), "cuMemRelease", &params, [&]() -> CUresult {
    sim::PhysicalHandles& physical = sim::Physical();
    std::lock_guard<std::mutex> lock(physical.mutex);
    return physical.size_of.erase(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// Mapping makes the range readable and writable; the same handle mapped
// twice does not alias (a documented simplification).
SIM_DRIVER_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                    unsigned long long flags) {
  cuMemMap_params params{ptr, size, offset, handle, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemMap), "cuMemMap", &params, [&]() -> CUresult {
    {
      sim::PhysicalHandles& physical = sim::Physical();
      std::lock_guard<std::mutex> lock(physical.mutex);
      auto it = physical.size_of.find(handle);
      if (it == physical.size_of.end() || offset + size > it->second) return CUDA_ERROR_INVALID_VALUE;
    }
    if (mprotect(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE) != 0) return CUDA_ERROR_INVALID_VALUE;
    sim::Device::Get().Register(reinterpret_cast<void*>(ptr), size, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  cuMemUnmap_params params{ptr, size};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemUnmap), "cuMemUnmap", &params, [&]() -> CUresult {
    void* p = reinterpret_cast<void*>(ptr);
    sim::Device::Get().Forget(p);
    madvise(p, size, MADV_DONTNEED);
    return mprotect(p, size, PROT_NONE) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  cuMemSetAccess_params params{ptr, size, desc, count};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemSetAccess), "cuMemSetAccess", &params, [&]() -> CUresult {
    return (desc && count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// ---- per-thread default stream flavours.

SIM_DRIVER_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  cuMemAllocAsync_ptsz_params params{dptr, bytesize, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocAsync_ptsz), "cuMemAllocAsync_ptsz", &params, [&] {
    return sim::AllocateInto(sim::AsPtr(dptr), bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, sim::PerThread(hStream),
                             true);
  });
}

// The per-thread-stream flavour: the same wrapper with its own exported symbol and cbid.
SIM_DRIVER_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                        CUstream hStream) {
  cuMemAllocFromPoolAsync_ptsz_params params{dptr, bytesize, pool, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAllocFromPoolAsync_ptsz), "cuMemAllocFromPoolAsync_ptsz", &params,
                               [&]() -> CUresult {
                                 if (!sim::IsPool(pool)) return CUDA_ERROR_INVALID_VALUE;
                                 return sim::AllocateInto(sim::AsPtr(dptr), bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                                          sim::PerThread(hStream), true, pool);
                               });
}

SIM_DRIVER_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  cuMemFreeAsync_ptsz_params params{dptr, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemFreeAsync_ptsz), "cuMemFreeAsync_ptsz", &params, [&] {
    return sim::ReleaseFrom(reinterpret_cast<void*>(dptr), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, sim::PerThread(hStream),
                            true);
  });
}
