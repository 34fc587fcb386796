// Driver: the typed linear copies driver-API programs call
// (cuMemcpyHtoD/DtoH/DtoD and their Async, _ptds and _ptsz flavours). With
// unified addressing they are plain copies; the record's kinds come from the
// pointers, as for cuMemcpy.
#define __CUDA_API_VERSION_INTERNAL 1
#include "copies.h"
#include "driver_call.h"

namespace {
void* P(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
}  // namespace

using sim::CopyBytes;
using sim::InitializedDriverCall;
using sim::PerThread;

#define SIM_TYPED_COPY(name, dst_decl, src_decl, dst_expr, src_expr, stream_expr, sync)                       \
  SIM_DRIVER_EXPORT CUresult name(dst_decl, src_decl, size_t ByteCount) {                                     \
    name##_params params{dst, src, ByteCount};                                                                 \
    return InitializedDriverCall(SIM_DRIVER_CBID(name), #name, &params,                                        \
                                 [&] { return CopyBytes(dst_expr, src_expr, ByteCount, stream_expr, sync); }); \
  }
#define SIM_TYPED_COPY_ASYNC(name, dst_decl, src_decl, dst_expr, src_expr, stream_expr)                        \
  SIM_DRIVER_EXPORT CUresult name(dst_decl, src_decl, size_t ByteCount, CUstream hStream) {                    \
    name##_params params{dst, src, ByteCount, hStream};                                                        \
    return InitializedDriverCall(SIM_DRIVER_CBID(name), #name, &params,                                        \
                                 [&] { return CopyBytes(dst_expr, src_expr, ByteCount, stream_expr, false); }); \
  }

SIM_TYPED_COPY(cuMemcpyHtoD_v2, CUdeviceptr dst, const void* src, P(dst), src, nullptr, true)
SIM_TYPED_COPY(cuMemcpyDtoH_v2, void* dst, CUdeviceptr src, dst, P(src), nullptr, true)
SIM_TYPED_COPY(cuMemcpyDtoD_v2, CUdeviceptr dst, CUdeviceptr src, P(dst), P(src), nullptr, true)
SIM_TYPED_COPY(cuMemcpyHtoD_v2_ptds, CUdeviceptr dst, const void* src, P(dst), src, CU_STREAM_PER_THREAD, true)
SIM_TYPED_COPY(cuMemcpyDtoH_v2_ptds, void* dst, CUdeviceptr src, dst, P(src), CU_STREAM_PER_THREAD, true)
SIM_TYPED_COPY(cuMemcpyDtoD_v2_ptds, CUdeviceptr dst, CUdeviceptr src, P(dst), P(src), CU_STREAM_PER_THREAD, true)
SIM_TYPED_COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr dst, const void* src, P(dst), src, hStream)
SIM_TYPED_COPY_ASYNC(cuMemcpyDtoHAsync_v2, void* dst, CUdeviceptr src, dst, P(src), hStream)
SIM_TYPED_COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr dst, CUdeviceptr src, P(dst), P(src), hStream)
SIM_TYPED_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr dst, const void* src, P(dst), src, PerThread(hStream))
SIM_TYPED_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void* dst, CUdeviceptr src, dst, P(src), PerThread(hStream))
SIM_TYPED_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr dst, CUdeviceptr src, P(dst), P(src), PerThread(hStream))
