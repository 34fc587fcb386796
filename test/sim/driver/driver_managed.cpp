// Driver: managed-memory hints. cuMemPrefetchAsync and cuMemAdvise apply to
// memory from cuMemAllocManaged (no system-allocated memory here: the
// device reports pageableMemoryAccess 0). Data never migrates in the sim, so
// both only validate and order: a prefetch occupies no time on its stream.
// CUPTI makes no MEMCPY record for them (migrations show only as
// unified-memory counter records, which are not simulated).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include "device.h"
#include "driver_call.h"

namespace sim {
namespace {

bool IsManagedRange(CUdeviceptr ptr, size_t count) {
  if (!ptr || count == 0) return false;
  Device& device = Device::Get();
  const auto* first = reinterpret_cast<const char*>(ptr);
  return device.KindOf(first) == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED &&
         device.KindOf(first + count - 1) == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
}

bool ValidLocation(const CUmemLocation& location) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return Device::At(location.id) != nullptr;
    case CU_MEM_LOCATION_TYPE_HOST: return true;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return location.id == 0;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return true;
    default: return false;
  }
}

CUresult Prefetch(CUdeviceptr ptr, size_t count, CUmemLocation location, unsigned flags, CUstream stream) {
  if (flags != 0 || !IsManagedRange(ptr, count)) return CUDA_ERROR_INVALID_VALUE;
  if (location.type == CU_MEM_LOCATION_TYPE_DEVICE && !Device::At(location.id)) return CUDA_ERROR_INVALID_DEVICE;
  if (!ValidLocation(location)) return CUDA_ERROR_INVALID_VALUE;
  return Device::Of(stream).IsValid(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Advise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation location) {
  if (!IsManagedRange(ptr, count)) return CUDA_ERROR_INVALID_VALUE;
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // READ_MOSTLY ignores the location; the others need a valid one.
  const bool needs_location = advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY;
  if (needs_location && location.type == CU_MEM_LOCATION_TYPE_DEVICE && location.id != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  if (needs_location && !ValidLocation(location)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                                 unsigned int flags, CUstream hStream) {
  cuMemPrefetchAsync_v2_params params{devPtr, count, location, flags, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPrefetchAsync_v2), "cuMemPrefetchAsync_v2", &params,
                               [&] { return sim::Prefetch(devPtr, count, location, flags, hStream); });
}

SIM_DRIVER_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                                      unsigned int flags, CUstream hStream) {
  cuMemPrefetchAsync_v2_ptsz_params params{devPtr, count, location, flags, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPrefetchAsync_v2_ptsz), "cuMemPrefetchAsync_v2_ptsz", &params,
                               [&] { return sim::Prefetch(devPtr, count, location, flags, sim::PerThread(hStream)); });
}

SIM_DRIVER_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                          CUmemLocation location) {
  cuMemAdvise_v2_params params{devPtr, count, advice, location};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemAdvise_v2), "cuMemAdvise_v2", &params,
                               [&] { return sim::Advise(devPtr, count, advice, location); });
}
