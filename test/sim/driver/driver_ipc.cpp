// Driver: interprocess handles. Exporting works as documented (a handle for
// the start of a cuMemAlloc allocation, or for an event created with
// CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING). Opening one cannot: the
// sim's device memory and events are private memory of the exporting
// process, so opening a handle from another process is
// CUDA_ERROR_NOT_SUPPORTED (a clear error, never a mapping that does not
// share), and from the exporting process itself CUDA_ERROR_INVALID_CONTEXT,
// as a context cannot import its own allocations.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>
#include <unistd.h>

#include <cstring>

#include "device.h"
#include "driver_call.h"

namespace sim {
namespace {

constexpr uint32_t kMemMagic = 0x53494d4d;    // "SIMM"
constexpr uint32_t kEventMagic = 0x53494d45;  // "SIME"

struct HandleData {
  uint32_t magic;
  uint32_t pid;
  uint64_t object;  // address or event id
};
static_assert(sizeof(HandleData) <= CU_IPC_HANDLE_SIZE, "fits an IPC handle");

template <typename Handle>
void Encode(Handle* handle, uint32_t magic, uint64_t object) {
  memset(handle, 0, sizeof *handle);
  const HandleData data{magic, static_cast<uint32_t>(getpid()), object};
  memcpy(handle->reserved, &data, sizeof data);
}

template <typename Handle>
CUresult Open(const Handle& handle, uint32_t magic) {
  HandleData data{};
  memcpy(&data, handle.reserved, sizeof data);
  if (data.magic != magic) return CUDA_ERROR_INVALID_VALUE;
  if (data.pid == static_cast<uint32_t>(getpid())) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_ERROR_NOT_SUPPORTED;  // another process's memory: cannot be shared here
}

}  // namespace
}  // namespace sim

using sim::Device;
using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  cuIpcGetMemHandle_params params{pHandle, dptr};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuIpcGetMemHandle), "cuIpcGetMemHandle", &params, [&]() -> CUresult {
    if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
    if (!Device::IsAllocationStart(reinterpret_cast<void*>(dptr), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)) {
      return CUDA_ERROR_INVALID_VALUE;  // only the base of a device allocation can be exported
    }
    sim::Encode(reinterpret_cast<CUipcMemHandle*>(pHandle), sim::kMemMagic, dptr);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  cuIpcOpenMemHandle_v2_params params{pdptr, handle, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuIpcOpenMemHandle_v2), "cuIpcOpenMemHandle_v2", &params,
                               [&]() -> CUresult {
                                 if (!pdptr || Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
                                 return sim::Open(handle, sim::kMemMagic);
                               });
}

SIM_DRIVER_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  cuIpcCloseMemHandle_params params{dptr};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuIpcCloseMemHandle), "cuIpcCloseMemHandle", &params,
                               [&] { return CUDA_ERROR_INVALID_VALUE; });  // nothing can have been opened
}

SIM_DRIVER_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  cuIpcGetEventHandle_params params{pHandle, event};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuIpcGetEventHandle), "cuIpcGetEventHandle", &params, [&]() -> CUresult {
    if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
    const Device::EventState state = Device::Of(event).StateOf(event);
    if (!state.valid) return CUDA_ERROR_INVALID_HANDLE;
    constexpr unsigned kNeeded = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    if ((state.flags & kNeeded) != kNeeded) return CUDA_ERROR_INVALID_HANDLE;
    sim::Encode(pHandle, sim::kEventMagic, state.id);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  cuIpcOpenEventHandle_params params{phEvent, handle};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuIpcOpenEventHandle), "cuIpcOpenEventHandle", &params,
                               [&]() -> CUresult {
                                 if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
                                 return sim::Open(handle, sim::kEventMagic);
                               });
}
