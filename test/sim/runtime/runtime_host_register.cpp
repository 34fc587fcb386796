// Runtime: page-locking program memory and the device view of pinned
// memory, on the driver's (../driver/driver_host_register.cpp).
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;

SIM_RUNTIME_EXPORT cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  cudaHostRegister_v4000_params params{ptr, size, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaHostRegister_v4000), "cudaHostRegister", &params,
                          [&] { return FromDriver(Driver().cuMemHostRegister(ptr, size, flags)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaHostUnregister(void* ptr) {
  cudaHostUnregister_v4000_params params{ptr};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaHostUnregister_v4000), "cudaHostUnregister", &params,
                          [&] { return FromDriver(Driver().cuMemHostUnregister(ptr)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  cudaHostGetDevicePointer_v3020_params params{pDevice, pHost, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaHostGetDevicePointer_v3020), "cudaHostGetDevicePointer", &params,
                          [&]() -> cudaError_t {
    if (!pDevice) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuMemHostGetDevicePointer(reinterpret_cast<CUdeviceptr*>(pDevice), pHost, flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  cudaHostGetFlags_v3020_params params{pFlags, pHost};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaHostGetFlags_v3020), "cudaHostGetFlags", &params,
                          [&] { return FromDriver(Driver().cuMemHostGetFlags(pFlags, pHost)); });
}
