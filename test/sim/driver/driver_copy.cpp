// Driver: copies and memsets. Bytes move at enqueue time (kernels compute
// nothing, so no later work can observe the difference); the device
// timeline gets the modelled duration.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include <cstring>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph.h"
#include "timing.h"
#include "copies.h"

namespace sim {
namespace {

int CopyKind(int src_kind, int dst_kind) {
  const bool src_array = src_kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  const bool dst_array = dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  if (src_array) {
    if (dst_array) return CUPTI_ACTIVITY_MEMCPY_KIND_ATOA;
    return OnDevice(dst_kind) ? CUPTI_ACTIVITY_MEMCPY_KIND_ATOD : CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
  }
  if (dst_array) return OnDevice(src_kind) ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOA : CUPTI_ACTIVITY_MEMCPY_KIND_HTOA;
  if (OnDevice(src_kind)) return OnDevice(dst_kind) ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  return OnDevice(dst_kind) ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

// Whether the calling thread waits for the copy to finish. Synchronous
// copies wait unless both ends are on the device; asynchronous ones wait
// when pageable host memory is involved (the driver stages through a pinned
// buffer).
bool HostWaits(bool synchronous, int copy_kind, int src_kind, int dst_kind) {
  const bool pageable = src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE || dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  const bool device_only = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ||
                           copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOA ||
                           copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOD || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOA;
  if (synchronous) return !device_only;
  return pageable && copy_kind != CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

}  // namespace

bool OnDevice(int memory_kind) {
  return memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED ||
         memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC ||
         memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC || memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
}

CUresult CopyBox(const CopyRegion& src, const CopyRegion& dst, size_t width, size_t height, size_t depth,
                 CUstream stream, bool synchronous) {
  // Zero bytes: nothing to move, so no device operation and no MEMCPY
  // record. NVIDIA's references define a copy by its byte count ("Copies
  // count bytes from the memory area pointed to by src..." for cudaMemcpy,
  // "ByteCount - Size of memory copy in bytes" for cuMemcpy); a copy of none
  // has no device work to time.
  if (width * height * depth == 0) return CUDA_SUCCESS;
  if (!dst.base || !src.base) return CUDA_ERROR_INVALID_VALUE;
  // A copy may go to a stream of a device other than the current one (CUDA:
  // "a memory copy will succeed even if it is issued to a stream that is not
  // associated to the current device"); it runs on the stream's device.
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  // Into a capturing stream: a graph node, whose bytes move when the graph runs.
  if (CUresult r = CUDA_SUCCESS; CaptureCopy(stream, src, dst, width, height, depth, &r)) return r;
  device.RetainPrimaryContext();
  const int src_kind = src.memory_kind ? src.memory_kind : device.KindOf(src.base);
  const int dst_kind = dst.memory_kind ? dst.memory_kind : device.KindOf(dst.base);
  // The bytes move when the copy takes its place on the stream: at once,
  // unless it waits behind a collective whose result is not written yet.
  auto move = [src, dst, width, height, depth] {
    for (size_t z = 0; z < depth; ++z) {
      for (size_t row = 0; row < height; ++row) {
        memmove(dst.base + z * dst.slice_pitch + row * dst.pitch, src.base + z * src.slice_pitch + row * src.pitch,
                width);
      }
    }
  };
  SimOp op{};
  op.kind = SIM_OP_MEMCPY;
  op.copy_kind = CopyKind(src_kind, dst_kind);
  op.src_kind = src_kind;
  op.dst_kind = dst_kind;
  // Device memory of two devices: a peer-to-peer copy (CUPTI's PTOP kind).
  const int src_device = Device::DeviceOf(src.base), dst_device = Device::DeviceOf(dst.base);
  op.src_device_id = static_cast<uint32_t>(src_device >= 0 ? src_device : device.ordinal());
  op.dst_device_id = static_cast<uint32_t>(dst_device >= 0 ? dst_device : device.ordinal());
  if (op.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD && src_device >= 0 && dst_device >= 0 && src_device != dst_device) {
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  }
  op.bytes = width * height * depth;
  const uint64_t duration_ns = CopyDurationNs(op.bytes, op.copy_kind, src_kind, dst_kind);
  if (!HostWaits(synchronous, op.copy_kind, src_kind, dst_kind)) {
    // Queued like a kernel behind a collective waiting for its peers.
    Place(&op, Placement{});
    device.EnqueueOp(stream, duration_ns, op, OuterFunctionName(), nullptr, move);
    return CUDA_SUCCESS;
  }
  const Placement at = device.Enqueue(stream, duration_ns);  // waits for deferred work ahead
  move();
  Place(&op, at);
  EmitOp(op);
  WaitUntilNs(at.end_ns);
  return CUDA_SUCCESS;
}

CUresult CopyBytes(void* dst, const void* src, size_t bytes, CUstream stream, bool synchronous) {
  CopyRegion from{static_cast<char*>(const_cast<void*>(src)), bytes, bytes, 0};
  CopyRegion to{static_cast<char*>(dst), bytes, bytes, 0};
  return CopyBox(from, to, bytes, 1, 1, stream, synchronous);
}

namespace {

// rows x width bytes, each row at its own pitch (a plain copy is one row).
CUresult Copy(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows,
              CUstream stream, bool synchronous) {
  CopyRegion from{static_cast<char*>(const_cast<void*>(src)), src_pitch, 0, 0};
  CopyRegion to{static_cast<char*>(dst), dst_pitch, 0, 0};
  return CopyBox(from, to, width, rows, 1, stream, synchronous);
}

}  // namespace

CUresult SetBox(void* dst, size_t pitch, unsigned char value, size_t width, size_t rows, CUstream stream) {
  // Zero bytes: no device operation, no MEMSET record (cudaMemset "fills
  // the first count bytes"; none to fill is no work).
  if (width * rows == 0) return CUDA_SUCCESS;
  Device& device = Device::Of(stream);
  if (!dst || !OnDevice(device.KindOf(dst))) return CUDA_ERROR_INVALID_VALUE;
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CUDA_SUCCESS; CaptureMemset(stream, dst, pitch, value, width, rows, &r)) return r;
  auto fill = [dst, pitch, value, width, rows] {
    for (size_t row = 0; row < rows; ++row) memset(static_cast<char*>(dst) + row * pitch, value, width);
  };
  SimOp op{};
  op.kind = SIM_OP_MEMSET;
  op.bytes = width * rows;
  op.address = reinterpret_cast<uint64_t>(dst);
  op.dst_kind = device.KindOf(dst);
  Place(&op, Placement{});
  device.EnqueueOp(stream, MemsetDurationNs(op.bytes), op, OuterFunctionName(), nullptr, fill);
  return CUDA_SUCCESS;
}

namespace {

CUresult Set(void* dst, size_t pitch, unsigned char value, size_t width, size_t rows, CUstream stream) {
  return SetBox(dst, pitch, value, width, rows, stream);
}

void* P(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

CUresult Copy2D(const CUDA_MEMCPY2D* c, CUstream stream, bool synchronous) {
  return Copy2DDescribed(c, stream, synchronous);
}

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  cuMemcpy_params params{dst, src, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy), "cuMemcpy", &params, [&] {
    return sim::Copy(sim::P(dst), 0, sim::P(src), 0, ByteCount, 1, nullptr, /*synchronous=*/true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  cuMemcpyAsync_params params{dst, src, ByteCount, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyAsync), "cuMemcpyAsync", &params, [&] {
    return sim::Copy(sim::P(dst), 0, sim::P(src), 0, ByteCount, 1, hStream, /*synchronous=*/false);
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) {
  cuMemcpy2D_v2_params params{pCopy};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy2D_v2), "cuMemcpy2D_v2", &params,
                               [&] { return sim::Copy2D(pCopy, nullptr, /*synchronous=*/true); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  cuMemcpy2DAsync_v2_params params{pCopy, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy2DAsync_v2), "cuMemcpy2DAsync_v2", &params,
                               [&] { return sim::Copy2D(pCopy, hStream, /*synchronous=*/false); });
}

// A peer copy is a device-to-device copy on the stream (the legacy stream:
// the current device's), timed as one; the contexts only name the devices.
SIM_DRIVER_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                        CUcontext srcContext, size_t ByteCount) {
  cuMemcpyPeer_params params{dstDevice, dstContext, srcDevice, srcContext, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyPeer), "cuMemcpyPeer", &params, [&] {
    return sim::Copy(sim::P(dstDevice), 0, sim::P(srcDevice), 0, ByteCount, 1, nullptr, /*synchronous=*/true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                             CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  cuMemcpyPeerAsync_params params{dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyPeerAsync), "cuMemcpyPeerAsync", &params, [&] {
    return sim::Copy(sim::P(dstDevice), 0, sim::P(srcDevice), 0, ByteCount, 1, hStream, /*synchronous=*/false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  cuMemsetD8_v2_params params{dstDevice, uc, N};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD8_v2), "cuMemsetD8_v2", &params,
                               [&] { return sim::Set(sim::P(dstDevice), 0, uc, N, 1, nullptr); });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  cuMemsetD8Async_params params{dstDevice, uc, N, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD8Async), "cuMemsetD8Async", &params,
                               [&] { return sim::Set(sim::P(dstDevice), 0, uc, N, 1, hStream); });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                           size_t Height) {
  cuMemsetD2D8_v2_params params{dstDevice, dstPitch, uc, Width, Height};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD2D8_v2), "cuMemsetD2D8_v2", &params,
                               [&] { return sim::Set(sim::P(dstDevice), dstPitch, uc, Width, Height, nullptr); });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                             size_t Height, CUstream hStream) {
  cuMemsetD2D8Async_params params{dstDevice, dstPitch, uc, Width, Height, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD2D8Async), "cuMemsetD2D8Async", &params,
                               [&] { return sim::Set(sim::P(dstDevice), dstPitch, uc, Width, Height, hStream); });
}

// ---- per-thread default stream flavours.

// The per-thread-stream flavour: the same wrapper with its own exported symbol and cbid.
SIM_DRIVER_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  cuMemcpy_ptds_params params{dst, src, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy_ptds), "cuMemcpy_ptds", &params, [&] {
    return sim::Copy(sim::P(dst), 0, sim::P(src), 0, ByteCount, 1, CU_STREAM_PER_THREAD, /*synchronous=*/true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  cuMemcpyAsync_ptsz_params params{dst, src, ByteCount, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyAsync_ptsz), "cuMemcpyAsync_ptsz", &params, [&] {
    return sim::Copy(sim::P(dst), 0, sim::P(src), 0, ByteCount, 1, sim::PerThread(hStream), /*synchronous=*/false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  cuMemcpy2D_v2_ptds_params params{pCopy};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy2D_v2_ptds), "cuMemcpy2D_v2_ptds", &params,
                               [&] { return sim::Copy2D(pCopy, CU_STREAM_PER_THREAD, /*synchronous=*/true); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  cuMemcpy2DAsync_v2_ptsz_params params{pCopy, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy2DAsync_v2_ptsz), "cuMemcpy2DAsync_v2_ptsz", &params,
                               [&] { return sim::Copy2D(pCopy, sim::PerThread(hStream), /*synchronous=*/false); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                             CUcontext srcContext, size_t ByteCount) {
  cuMemcpyPeer_ptds_params params{dstDevice, dstContext, srcDevice, srcContext, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyPeer_ptds), "cuMemcpyPeer_ptds", &params, [&] {
    return sim::Copy(sim::P(dstDevice), 0, sim::P(srcDevice), 0, ByteCount, 1, CU_STREAM_PER_THREAD,
                     /*synchronous=*/true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                                  CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  cuMemcpyPeerAsync_ptsz_params params{dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyPeerAsync_ptsz), "cuMemcpyPeerAsync_ptsz", &params, [&] {
    return sim::Copy(sim::P(dstDevice), 0, sim::P(srcDevice), 0, ByteCount, 1, sim::PerThread(hStream),
                     /*synchronous=*/false);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  cuMemsetD8_v2_ptds_params params{dstDevice, uc, N};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD8_v2_ptds), "cuMemsetD8_v2_ptds", &params,
                               [&] { return sim::Set(sim::P(dstDevice), 0, uc, N, 1, CU_STREAM_PER_THREAD); });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  cuMemsetD8Async_ptsz_params params{dstDevice, uc, N, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD8Async_ptsz), "cuMemsetD8Async_ptsz", &params,
                               [&] { return sim::Set(sim::P(dstDevice), 0, uc, N, 1, sim::PerThread(hStream)); });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                                size_t Height) {
  cuMemsetD2D8_v2_ptds_params params{dstDevice, dstPitch, uc, Width, Height};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD2D8_v2_ptds), "cuMemsetD2D8_v2_ptds", &params, [&] {
    return sim::Set(sim::P(dstDevice), dstPitch, uc, Width, Height, CU_STREAM_PER_THREAD);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                                  size_t Width, size_t Height, CUstream hStream) {
  cuMemsetD2D8Async_ptsz_params params{dstDevice, dstPitch, uc, Width, Height, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemsetD2D8Async_ptsz), "cuMemsetD2D8Async_ptsz", &params, [&] {
    return sim::Set(sim::P(dstDevice), dstPitch, uc, Width, Height, sim::PerThread(hStream));
  });
}
