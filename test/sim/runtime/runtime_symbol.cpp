// Runtime: __device__/__constant__ variables by their host shadow
// (cudaMemcpyToSymbol, cudaMemcpyFromSymbol, cudaGetSymbolAddress,
// cudaGetSymbolSize). The storage is the driver's (cuLibraryGetGlobal on the
// binary's library: static device memory, initialised from the image); the
// copies are ordinary copies, so CUPTI reports them as HtoD/DtoH/DtoD
// records whose device side is CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC.
#include "registry.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

CUdeviceptr D(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

bool ValidKind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

// The symbol's storage from `offset` for `count` bytes.
cudaError_t Locate(const void* symbol, size_t count, size_t offset, CUdeviceptr* at) {
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (cudaError_t e = simrt::ResolveSymbol(symbol, &base, &bytes); e != cudaSuccess) return e;
  if (offset > bytes || count > bytes - offset) return cudaErrorInvalidValue;
  *at = base + offset;
  return cudaSuccess;
}

cudaError_t ToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind,
                     cudaStream_t stream, bool async, bool per_thread) {
  // Documented kinds: host-to-device, device-to-device or default.
  if (!ValidKind(kind) || kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost) {
    return cudaErrorInvalidMemcpyDirection;
  }
  CUdeviceptr at = 0;
  if (cudaError_t e = Locate(symbol, count, offset, &at); e != cudaSuccess) return e;
  const auto& driver = Driver(per_thread);
  return FromDriver(async ? driver.cuMemcpyAsync(at, D(src), count, S(stream)) : driver.cuMemcpy(at, D(src), count));
}

// ToSymbol's mirror: the symbol is the source.
cudaError_t FromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                       cudaStream_t stream, bool async, bool per_thread) {
  if (!ValidKind(kind) || kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice) {
    return cudaErrorInvalidMemcpyDirection;
  }
  CUdeviceptr at = 0;
  if (cudaError_t e = Locate(symbol, count, offset, &at); e != cudaSuccess) return e;
  const auto& driver = Driver(per_thread);
  return FromDriver(async ? driver.cuMemcpyAsync(D(dst), at, count, S(stream)) : driver.cuMemcpy(D(dst), at, count));
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                                  cudaMemcpyKind kind) {
  cudaMemcpyToSymbol_v3020_params params{symbol, src, count, offset, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyToSymbol_v3020), "cudaMemcpyToSymbol", &params,
                          [&] { return ToSymbol(symbol, src, count, offset, kind, nullptr, false, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                                       size_t offset, cudaMemcpyKind kind) {
  cudaMemcpyToSymbol_ptds_v7000_params params{symbol, src, count, offset, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyToSymbol_ptds_v7000), "cudaMemcpyToSymbol_ptds", &params,
                          [&] { return ToSymbol(symbol, src, count, offset, kind, nullptr, false, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                                    cudaMemcpyKind kind) {
  cudaMemcpyFromSymbol_v3020_params params{dst, symbol, count, offset, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyFromSymbol_v3020), "cudaMemcpyFromSymbol", &params,
                          [&] { return FromSymbol(dst, symbol, count, offset, kind, nullptr, false, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                                         cudaMemcpyKind kind) {
  cudaMemcpyFromSymbol_ptds_v7000_params params{dst, symbol, count, offset, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyFromSymbol_ptds_v7000), "cudaMemcpyFromSymbol_ptds", &params,
                          [&] { return FromSymbol(dst, symbol, count, offset, kind, nullptr, false, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                                       size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpyToSymbolAsync_v3020_params params{symbol, src, count, offset, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyToSymbolAsync_v3020), "cudaMemcpyToSymbolAsync", &params,
                          [&] { return ToSymbol(symbol, src, count, offset, kind, stream, true, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                                            size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpyToSymbolAsync_ptsz_v7000_params params{symbol, src, count, offset, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyToSymbolAsync_ptsz_v7000), "cudaMemcpyToSymbolAsync_ptsz",
                          &params, [&] { return ToSymbol(symbol, src, count, offset, kind, stream, true, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                                         cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpyFromSymbolAsync_v3020_params params{dst, symbol, count, offset, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyFromSymbolAsync_v3020), "cudaMemcpyFromSymbolAsync", &params,
                          [&] { return FromSymbol(dst, symbol, count, offset, kind, stream, true, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                                              size_t offset, cudaMemcpyKind kind,
                                                              cudaStream_t stream) {
  cudaMemcpyFromSymbolAsync_ptsz_v7000_params params{dst, symbol, count, offset, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyFromSymbolAsync_ptsz_v7000), "cudaMemcpyFromSymbolAsync_ptsz",
                          &params, [&] { return FromSymbol(dst, symbol, count, offset, kind, stream, true, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  cudaGetSymbolAddress_v3020_params params{devPtr, symbol};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetSymbolAddress_v3020), "cudaGetSymbolAddress", &params,
                          [&]() -> cudaError_t {
    if (!devPtr) return cudaErrorInvalidValue;
    return simrt::ResolveSymbol(symbol, reinterpret_cast<CUdeviceptr*>(devPtr), nullptr);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  cudaGetSymbolSize_v3020_params params{size, symbol};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetSymbolSize_v3020), "cudaGetSymbolSize", &params,
                          [&]() -> cudaError_t {
    if (!size) return cudaErrorInvalidValue;
    CUdeviceptr ignored = 0;
    return simrt::ResolveSymbol(symbol, &ignored, size);
  });
}
