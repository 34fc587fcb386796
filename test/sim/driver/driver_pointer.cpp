// Driver: what a pointer is (cuPointerGetAttribute), from the allocations
// the simulated device keeps. Memory the sim did not allocate or register
// is unknown to the driver, which answers CUDA_ERROR_INVALID_VALUE, as
// NVIDIA's does for ordinary host memory.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include <cstring>

#include "device.h"
#include "driver_call.h"

using sim::InitializedDriverCall;

namespace {

template <typename T>
CUresult Put(void* data, T value) {
  std::memcpy(data, &value, sizeof(value));
  return CUDA_SUCCESS;
}

CUresult PointerAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  // The device whose memory it is (host memory: the current device's context).
  const int owner = sim::Device::DeviceOf(reinterpret_cast<const void*>(ptr));
  sim::Device& device = owner >= 0 ? *sim::Device::At(owner) : sim::Device::Get();
  const int kind = device.KindOf(reinterpret_cast<const void*>(ptr));
  if (kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) return CUDA_ERROR_INVALID_VALUE;
  const bool managed = kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  const bool host = kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return Put(data, device.RetainPrimaryContext());
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return Put(data, static_cast<unsigned>(host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE));
    // One address space (UVA): the same address on both sides, where it is mapped there.
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return Put(data, ptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      return Put(data, host || managed ? reinterpret_cast<void*>(ptr) : static_cast<void*>(nullptr));
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: return Put(data, static_cast<unsigned>(managed));
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return Put(data, device.ordinal());
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: return Put(data, 1);
    case CU_POINTER_ATTRIBUTE_MAPPED: return Put(data, 1);
    default: return CUDA_ERROR_NOT_SUPPORTED;  // an attribute the model does not keep
  }
}

}  // namespace

SIM_DRIVER_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  cuPointerGetAttribute_params params{data, attribute, ptr};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuPointerGetAttribute), "cuPointerGetAttribute", &params,
                               [&] { return PointerAttribute(data, attribute, ptr); });
}
