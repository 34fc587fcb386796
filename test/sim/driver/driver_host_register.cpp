// Driver: page-locking memory the program allocated itself
// (cuMemHostRegister) and the device view of pinned memory. With unified
// addressing the device pointer of pinned host memory is the host pointer.
// Registered memory counts as pinned for copy kinds and timing.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include <map>
#include <mutex>

#include "device.h"
#include "driver_call.h"

namespace sim {
namespace {

struct Registered {
  std::mutex mutex;  // leaf lock
  std::map<void*, unsigned> flags;  // registered range start -> flags
};
// A never-destroyed singleton, as each sim file keeps its own state.
Registered& State() {
  static Registered* registered = new Registered();
  return *registered;
}

}  // namespace
}  // namespace sim

using sim::Device;
using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  cuMemHostRegister_v2_params params{p, bytesize, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemHostRegister_v2), "cuMemHostRegister_v2", &params, [&]() -> CUresult {
    if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (Flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
    if (Device::Get().KindOf(p) != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    Device::Get().RetainPrimaryContext();
    Device::Get().Register(p, bytesize, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    std::lock_guard<std::mutex> lock(sim::State().mutex);
    sim::State().flags[p] = Flags;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemHostUnregister(void* p) {
  cuMemHostUnregister_params params{p};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemHostUnregister), "cuMemHostUnregister", &params, [&]() -> CUresult {
    {
      std::lock_guard<std::mutex> lock(sim::State().mutex);
      if (!sim::State().flags.erase(p)) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    Device::Get().Forget(p);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  cuMemHostGetDevicePointer_v2_params params{pdptr, p, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemHostGetDevicePointer_v2), "cuMemHostGetDevicePointer_v2", &params,
                               [&]() -> CUresult {
                                 if (!pdptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
                                 if (Device::Get().KindOf(p) != CUPTI_ACTIVITY_MEMORY_KIND_PINNED) {
                                   return CUDA_ERROR_INVALID_VALUE;  // not page-locked memory
                                 }
                                 *pdptr = reinterpret_cast<CUdeviceptr>(p);
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  cuMemHostGetFlags_params params{pFlags, p};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemHostGetFlags), "cuMemHostGetFlags", &params, [&]() -> CUresult {
    if (!pFlags) return CUDA_ERROR_INVALID_VALUE;
    if (Device::Get().KindOf(p) != CUPTI_ACTIVITY_MEMORY_KIND_PINNED) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(sim::State().mutex);
    auto it = sim::State().flags.find(p);
    // Allocated pinned memory is mapped (unified addressing); registered keeps its flags.
    *pFlags = it != sim::State().flags.end() ? it->second : CU_MEMHOSTALLOC_DEVICEMAP;
    return CUDA_SUCCESS;
  });
}
