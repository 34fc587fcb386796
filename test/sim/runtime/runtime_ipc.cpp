// Runtime: interprocess memory and event handles, on the driver's
// (../driver/driver_ipc.cpp: exporting works, opening is an error in the
// sim). The handle types share the driver's layout.
#include <cstring>

#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;

namespace {

cudaError_t Result(CUresult r) {
  if (r == CUDA_ERROR_INVALID_HANDLE) return cudaErrorInvalidResourceHandle;
  return FromDriver(r);  // 201 is cudaErrorDeviceUninitialized ("invalid device context")
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  cudaIpcGetMemHandle_v4010_params params{handle, devPtr};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaIpcGetMemHandle_v4010), "cudaIpcGetMemHandle", &params, [&] {
    return Result(Driver().cuIpcGetMemHandle(reinterpret_cast<CUipcMemHandle*>(handle),
                                             reinterpret_cast<CUdeviceptr>(devPtr)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  cudaIpcOpenMemHandle_v4010_params params{devPtr, handle, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaIpcOpenMemHandle_v4010), "cudaIpcOpenMemHandle", &params, [&] {
    CUipcMemHandle h;
    memcpy(&h, &handle, sizeof h);
    return Result(Driver().cuIpcOpenMemHandle(reinterpret_cast<CUdeviceptr*>(devPtr), h, flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  cudaIpcCloseMemHandle_v4010_params params{devPtr};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaIpcCloseMemHandle_v4010), "cudaIpcCloseMemHandle", &params,
                          [&] { return Result(Driver().cuIpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(devPtr))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  cudaIpcGetEventHandle_v4010_params params{handle, event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaIpcGetEventHandle_v4010), "cudaIpcGetEventHandle", &params, [&] {
    return Result(Driver().cuIpcGetEventHandle(reinterpret_cast<CUipcEventHandle*>(handle),
                                               reinterpret_cast<CUevent>(event)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  cudaIpcOpenEventHandle_v4010_params params{event, handle};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaIpcOpenEventHandle_v4010), "cudaIpcOpenEventHandle", &params, [&] {
    CUipcEventHandle h;
    memcpy(&h, &handle, sizeof h);
    return Result(Driver().cuIpcOpenEventHandle(reinterpret_cast<CUevent*>(event), h));
  });
}
