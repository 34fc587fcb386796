// Runtime: the profiler switch, device flags, resource limits and peer
// access, over the driver's context calls.
#include <cuda_profiler_api.h>

#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;

SIM_RUNTIME_EXPORT cudaError_t cudaProfilerStart(void) {
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaProfilerStart_v4000), "cudaProfilerStart", nullptr,
                          [&] { return FromDriver(Driver().cuProfilerStart()); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaProfilerStop(void) {
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaProfilerStop_v4000), "cudaProfilerStop", nullptr,
                          [&] { return FromDriver(Driver().cuProfilerStop()); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  cudaSetDeviceFlags_v3020_params params{flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaSetDeviceFlags_v3020), "cudaSetDeviceFlags", &params,
                          [&]() -> cudaError_t {
    constexpr unsigned kKnown = cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax |
                                cudaDeviceSyncMemops;
    if (flags & ~kKnown) return cudaErrorInvalidValue;
    // cudaDeviceMapHost is always on (unified addressing); the driver keeps the rest.
    const CUresult r = Driver().cuDevicePrimaryCtxSetFlags(simhub_current_device(), flags & ~cudaDeviceMapHost);
    return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : FromDriver(r);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  cudaGetDeviceFlags_v7000_params params{flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDeviceFlags_v7000), "cudaGetDeviceFlags", &params,
                          [&]() -> cudaError_t {
    if (!flags) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuCtxGetFlags(flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  cudaDeviceSetLimit_v3020_params params{limit, value};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceSetLimit_v3020), "cudaDeviceSetLimit", &params, [&] {
    // cudaLimit and CUlimit share their values, as do the unsupported-limit codes (215).
    return FromDriver(Driver().cuCtxSetLimit(static_cast<CUlimit>(limit), value));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetLimit(size_t* pValue, enum cudaLimit limit) {
  cudaDeviceGetLimit_v3020_params params{pValue, limit};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceGetLimit_v3020), "cudaDeviceGetLimit", &params,
                          [&] { return FromDriver(Driver().cuCtxGetLimit(pValue, static_cast<CUlimit>(limit))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  cudaDeviceCanAccessPeer_v4000_params params{canAccessPeer, device, peerDevice};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceCanAccessPeer_v4000), "cudaDeviceCanAccessPeer", &params, [&] {
    return FromDriver(Driver().cuDeviceCanAccessPeer(canAccessPeer, device, peerDevice));
  });
}

// Documented: access from the current device to peerDevice's memory;
// cudaErrorInvalidDevice when peerDevice is the current device or does not
// exist, cudaErrorPeerAccessAlreadyEnabled (704) the second time. The peer's
// primary context is retained, as the driver call needs it.
SIM_RUNTIME_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  cudaDeviceEnablePeerAccess_v4000_params params{peerDevice, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceEnablePeerAccess_v4000), "cudaDeviceEnablePeerAccess", &params,
                          [&]() -> cudaError_t {
    if (flags != 0) return cudaErrorInvalidValue;
    if (peerDevice < 0 || peerDevice >= simhub_device_count()) return cudaErrorInvalidDevice;
    CUcontext context = nullptr;
    if (CUresult r = Driver().cuDevicePrimaryCtxRetain(&context, peerDevice); r != CUDA_SUCCESS) return FromDriver(r);
    const CUresult r = Driver().cuCtxEnablePeerAccess(context, 0);
    return r == CUDA_ERROR_INVALID_DEVICE ? cudaErrorInvalidDevice : FromDriver(r);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  cudaDeviceDisablePeerAccess_v4000_params params{peerDevice};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceDisablePeerAccess_v4000), "cudaDeviceDisablePeerAccess", &params,
                          [&]() -> cudaError_t {
    if (peerDevice < 0 || peerDevice >= simhub_device_count()) return cudaErrorInvalidDevice;
    CUcontext context = nullptr;
    if (CUresult r = Driver().cuDevicePrimaryCtxRetain(&context, peerDevice); r != CUDA_SUCCESS) return FromDriver(r);
    return FromDriver(Driver().cuCtxDisablePeerAccess(context));  // 705: cudaErrorPeerAccessNotEnabled
  });
}
