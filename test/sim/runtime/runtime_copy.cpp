// Runtime: memcpy and memset, synchronous and asynchronous, plain and 2D.
// The copy direction comes from the pointers (unified addressing); `kind`
// is only validated. The _ptsz/_ptds variants call the driver's per-thread
// flavours.
#include "runtime_state.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

CUdeviceptr D(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

bool ValidDevice(int device) { return device >= 0 && device < simhub_device_count(); }

bool ValidKind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

cudaError_t Memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, bool per_thread) {
  if (!ValidKind(kind)) return cudaErrorInvalidMemcpyDirection;
  return FromDriver(Driver(per_thread).cuMemcpy(D(dst), D(src), count));
}

cudaError_t MemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                        bool per_thread) {
  if (!ValidKind(kind)) return cudaErrorInvalidMemcpyDirection;
  return FromDriver(Driver(per_thread).cuMemcpyAsync(D(dst), D(src), count, S(stream)));
}

CUDA_MEMCPY2D Describe2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height) {
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = D(src);
  c.srcPitch = spitch;
  c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.dstDevice = D(dst);
  c.dstPitch = dpitch;
  c.WidthInBytes = width;
  c.Height = height;
  return c;
}

cudaError_t Memcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread) {
  if (!ValidKind(kind)) return cudaErrorInvalidMemcpyDirection;
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  const CUDA_MEMCPY2D c = Describe2D(dst, dpitch, src, spitch, width, height);
  const auto& driver = Driver(per_thread);
  return FromDriver(async ? driver.cuMemcpy2DAsync(&c, S(stream)) : driver.cuMemcpy2D(&c));
}

cudaError_t Memset(void* devPtr, int value, size_t count, cudaStream_t stream, bool async, bool per_thread) {
  const auto byte = static_cast<unsigned char>(value);
  const auto& driver = Driver(per_thread);
  return FromDriver(async ? driver.cuMemsetD8Async(D(devPtr), byte, count, S(stream))
                          : driver.cuMemsetD8(D(devPtr), byte, count));
}

cudaError_t Memset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream,
                     bool async, bool per_thread) {
  if (width > pitch) return cudaErrorInvalidPitchValue;
  const auto byte = static_cast<unsigned char>(value);
  const auto& driver = Driver(per_thread);
  return FromDriver(async ? driver.cuMemsetD2D8Async(D(devPtr), pitch, byte, width, height, S(stream))
                          : driver.cuMemsetD2D8(D(devPtr), pitch, byte, width, height));
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpy_v3020_params params{dst, src, count, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy_v3020), "cudaMemcpy", &params,
                          [&] { return Memcpy(dst, src, count, kind, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpy_ptds_v7000_params params{dst, src, count, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy_ptds_v7000), "cudaMemcpy_ptds", &params,
                          [&] { return Memcpy(dst, src, count, kind, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  cudaMemcpyAsync_v3020_params params{dst, src, count, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyAsync_v3020), "cudaMemcpyAsync", &params,
                          [&] { return MemcpyAsync(dst, src, count, kind, stream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                                    cudaStream_t stream) {
  cudaMemcpyAsync_ptsz_v7000_params params{dst, src, count, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyAsync_ptsz_v7000), "cudaMemcpyAsync_ptsz", &params,
                          [&] { return MemcpyAsync(dst, src, count, kind, stream, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind) {
  cudaMemcpy2D_v3020_params params{dst, dpitch, src, spitch, width, height, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2D_v3020), "cudaMemcpy2D", &params, [&] {
    return Memcpy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false, false);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                 size_t width, size_t height, cudaMemcpyKind kind) {
  cudaMemcpy2D_ptds_v7000_params params{dst, dpitch, src, spitch, width, height, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2D_ptds_v7000), "cudaMemcpy2D_ptds", &params, [&] {
    return Memcpy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false, true);
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                 size_t width, size_t height, cudaMemcpyKind kind,
                                                 cudaStream_t stream) {
  cudaMemcpy2DAsync_v3020_params params{dst, dpitch, src, spitch, width, height, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DAsync_v3020), "cudaMemcpy2DAsync", &params, [&] {
    return Memcpy2D(dst, dpitch, src, spitch, width, height, kind, stream, true, false);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                      size_t width, size_t height, cudaMemcpyKind kind,
                                                      cudaStream_t stream) {
  cudaMemcpy2DAsync_ptsz_v7000_params params{dst, dpitch, src, spitch, width, height, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DAsync_ptsz_v7000), "cudaMemcpy2DAsync_ptsz", &params, [&] {
    return Memcpy2D(dst, dpitch, src, spitch, width, height, kind, stream, true, true);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  cudaMemcpyPeer_v4000_params params{dst, dstDevice, src, srcDevice, count};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyPeer_v4000), "cudaMemcpyPeer", &params, [&]() -> cudaError_t {
    if (!ValidDevice(dstDevice) || !ValidDevice(srcDevice)) return cudaErrorInvalidDevice;
    return FromDriver(Driver().cuMemcpyPeer(D(dst), nullptr, D(src), nullptr, count));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                                   size_t count, cudaStream_t stream) {
  cudaMemcpyPeerAsync_v4000_params params{dst, dstDevice, src, srcDevice, count, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyPeerAsync_v4000), "cudaMemcpyPeerAsync", &params,
                          [&]() -> cudaError_t {
    if (!ValidDevice(dstDevice) || !ValidDevice(srcDevice)) return cudaErrorInvalidDevice;
    return FromDriver(Driver().cuMemcpyPeerAsync(D(dst), nullptr, D(src), nullptr, count, S(stream)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  cudaMemset_v3020_params params{devPtr, value, count};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset_v3020), "cudaMemset", &params,
                          [&] { return Memset(devPtr, value, count, nullptr, false, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  cudaMemset_ptds_v7000_params params{devPtr, value, count};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset_ptds_v7000), "cudaMemset_ptds", &params,
                          [&] { return Memset(devPtr, value, count, nullptr, false, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  cudaMemsetAsync_v3020_params params{devPtr, value, count, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemsetAsync_v3020), "cudaMemsetAsync", &params,
                          [&] { return Memset(devPtr, value, count, stream, true, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  cudaMemsetAsync_ptsz_v7000_params params{devPtr, value, count, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemsetAsync_ptsz_v7000), "cudaMemsetAsync_ptsz", &params,
                          [&] { return Memset(devPtr, value, count, stream, true, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  cudaMemset2D_v3020_params params{devPtr, pitch, value, width, height};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset2D_v3020), "cudaMemset2D", &params,
                          [&] { return Memset2D(devPtr, pitch, value, width, height, nullptr, false, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  cudaMemset2D_ptds_v7000_params params{devPtr, pitch, value, width, height};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset2D_ptds_v7000), "cudaMemset2D_ptds", &params,
                          [&] { return Memset2D(devPtr, pitch, value, width, height, nullptr, false, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                                                 cudaStream_t stream) {
  cudaMemset2DAsync_v3020_params params{devPtr, pitch, value, width, height, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset2DAsync_v3020), "cudaMemset2DAsync", &params,
                          [&] { return Memset2D(devPtr, pitch, value, width, height, stream, true, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width,
                                                      size_t height, cudaStream_t stream) {
  cudaMemset2DAsync_ptsz_v7000_params params{devPtr, pitch, value, width, height, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset2DAsync_ptsz_v7000), "cudaMemset2DAsync_ptsz", &params,
                          [&] { return Memset2D(devPtr, pitch, value, width, height, stream, true, true); });
}
