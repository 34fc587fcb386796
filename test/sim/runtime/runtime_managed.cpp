// Runtime: managed-memory hints (prefetch, advise), on the driver's
// (../driver/driver_managed.cpp for what they do in the sim).
#include "runtime_state.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

CUdeviceptr D(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// cudaMemLocation and CUmemLocation share layout and type values.
CUmemLocation L(cudaMemLocation location) {
  CUmemLocation l{};
  l.type = static_cast<CUmemLocationType>(location.type);
  l.id = location.id;
  return l;
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, struct cudaMemLocation location,
                                                    unsigned int flags, cudaStream_t stream) {
  cudaMemPrefetchAsync_v12020_params params{devPtr, count, location, flags, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPrefetchAsync_v12020), "cudaMemPrefetchAsync", &params, [&] {
    return FromDriver(Driver().cuMemPrefetchAsync(D(devPtr), count, L(location), flags, S(stream)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count,
                                                         struct cudaMemLocation location, unsigned int flags,
                                                         cudaStream_t stream) {
  cudaMemPrefetchAsync_ptsz_v12020_params params{devPtr, count, location, flags, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPrefetchAsync_ptsz_v12020), "cudaMemPrefetchAsync_ptsz", &params,
                          [&] {
    return FromDriver(Driver(true).cuMemPrefetchAsync(D(devPtr), count, L(location), flags, S(stream)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemAdvise(const void* devPtr, size_t count, enum cudaMemoryAdvise advice,
                                             struct cudaMemLocation location) {
  cudaMemAdvise_v12020_params params{devPtr, count, advice, location};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemAdvise_v12020), "cudaMemAdvise", &params, [&] {
    return FromDriver(Driver().cuMemAdvise(D(devPtr), count, static_cast<CUmem_advise>(advice), L(location)));
  });
}
