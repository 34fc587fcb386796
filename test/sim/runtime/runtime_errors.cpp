// Runtime: last error and error strings.
#include "runtime_state.h"

namespace simrt {
namespace {

// Data, not logic: each simulated library answers from its own table of its own enum.
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidChannelDescriptor, "cudaErrorInvalidChannelDescriptor", "invalid channel descriptor"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {cudaErrorUnsupportedLimit, "cudaErrorUnsupportedLimit", "limit is not supported on this architecture"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* Find(cudaError_t code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

constexpr char kUnrecognized[] = "unrecognized error code";  // what the real runtime answers

}  // namespace
}  // namespace simrt

using simrt::RuntimeCall;

SIM_RUNTIME_EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t last = cudaSuccess;
  RuntimeCall(SIM_RUNTIME_CBID(cudaGetLastError_v3020), "cudaGetLastError", nullptr, [&] {
    last = simrt::TakeLastError();
    return last;
  });
  // The call itself must not become the next "last error": restore what Take cleared.
  simrt::SetLastError(cudaSuccess);
  return last;
}

SIM_RUNTIME_EXPORT cudaError_t cudaPeekAtLastError(void) {
  cudaError_t last = cudaSuccess;
  RuntimeCall(SIM_RUNTIME_CBID(cudaPeekAtLastError_v3020), "cudaPeekAtLastError", nullptr, [&] {
    last = simrt::PeekLastError();
    return last;  // recording it again as the last error changes nothing
  });
  return last;
}

SIM_RUNTIME_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  cudaGetErrorString_v3020_params params{error};
  const char* text = simrt::kUnrecognized;
  RuntimeCall(SIM_RUNTIME_CBID(cudaGetErrorString_v3020), "cudaGetErrorString", &params, [&] {
    if (const simrt::ErrorText* e = simrt::Find(error)) text = e->text;
    return cudaSuccess;
  });
  return text;
}

SIM_RUNTIME_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  cudaGetErrorName_v6050_params params{error};
  const char* name = simrt::kUnrecognized;
  RuntimeCall(SIM_RUNTIME_CBID(cudaGetErrorName_v6050), "cudaGetErrorName", &params, [&] {
    if (const simrt::ErrorText* e = simrt::Find(error)) name = e->name;
    return cudaSuccess;
  });
  return name;
}
