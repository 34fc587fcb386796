// Runtime: host functions and stream callbacks, on the driver's
// (../driver/host_funcs.h): each runs on CUDA's own thread after the work
// before it on its stream, and later work on the stream waits for it.
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

// cudaStreamCallback_t and CUstreamCallback have the same ABI (stream handle,
// error code with the same numbering, user data).
cudaError_t AddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData, unsigned int flags,
                        bool per_thread) {
  if (!callback) return cudaErrorInvalidValue;
  return FromDriver(Driver(per_thread).cuStreamAddCallback(S(stream), reinterpret_cast<CUstreamCallback>(callback),
                                                           userData, flags));
}

cudaError_t LaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData, bool per_thread) {
  if (!fn) return cudaErrorInvalidValue;
  return FromDriver(Driver(per_thread).cuLaunchHostFunc(S(stream), fn, userData));
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                                     void* userData, unsigned int flags) {
  cudaStreamAddCallback_v5000_params params{stream, callback, userData, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamAddCallback_v5000), "cudaStreamAddCallback", &params,
                          [&] { return AddCallback(stream, callback, userData, flags, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                                          void* userData, unsigned int flags) {
  cudaStreamAddCallback_ptsz_v7000_params params{stream, callback, userData, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamAddCallback_ptsz_v7000), "cudaStreamAddCallback_ptsz", &params,
                          [&] { return AddCallback(stream, callback, userData, flags, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  cudaLaunchHostFunc_v10000_params params{stream, fn, userData};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaLaunchHostFunc_v10000), "cudaLaunchHostFunc", &params,
                          [&] { return LaunchHostFunc(stream, fn, userData, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  cudaLaunchHostFunc_ptsz_v10000_params params{stream, fn, userData};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaLaunchHostFunc_ptsz_v10000), "cudaLaunchHostFunc_ptsz", &params,
                          [&] { return LaunchHostFunc(stream, fn, userData, true); });
}
