// Whether a copy or memset call moves zero bytes. Such a call enqueues no
// device operation, so CUPTI writes no MEMCPY/MEMSET record for it and the
// window must not wait for one nor count it missing (the runtime and
// driver references define these calls by their byte count: "Copies count
// bytes", "Fills the first count bytes", "Sets the memory range of N 8-bit
// values"). Plain (1D), 2D and 3D copies and memsets of both APIs: a 2D/3D
// one moves width x height (x depth) bytes or elements, none when any of
// them is 0 (the simulated stack, following the same definitions, enqueues
// nothing then).
//
// Table-driven: one rule per callback id, a test of the id's parameter
// struct (the toolkit's generated_cuda_runtime_api_meta.h and
// generated_cuda_meta.h); a per-domain index built at compile time finds an
// id's rule with one load. The API-enter callback asks for the ids whose
// traits say they count bytes (collector_callbacks.cpp), on application
// threads: the tables are constants, so nothing here is shared state.
#pragma once

#include <cupti.h>  // with the toolkit's generated parameter structs

#include <array>
#include <cstddef>
#include <cstdint>

namespace prof::cupti {

namespace zero_bytes {

using Test = bool (*)(const void* params);
struct Rule {
  uint32_t cbid;
  Test zero;
};

// 1D: the byte or element count. The driver's 1D copies and memsets
// (cuMemcpy_params, cuMemcpyHtoD_v2_params, cuMemsetD8_v2_params, ...) all
// hold two 8-byte fields (pointers, or a pointer and a value padded to 8)
// and then the size_t count. generated_cuda_meta.h's legacy _v1 structs do
// not compile beside cupti.h's cuda.h, so the shared prefix is spelled here.
template <typename P>
bool ZeroCount(const void* params) {
  return static_cast<const P*>(params)->count == 0;
}
struct DriverBytesParams {
  uint64_t first;
  uint64_t second;
  size_t bytes;
};
inline bool ZeroDriverBytes(const void* params) { return static_cast<const DriverBytesParams*>(params)->bytes == 0; }

// 2D and 3D: a box with no row, no byte per row or no slice holds no byte.
template <typename P>
bool ZeroRect(const void* params) {
  const auto* p = static_cast<const P*>(params);
  return p->width == 0 || p->height == 0;
}
template <typename P>
bool ZeroBox3D(const void* params) {  // cudaMemcpy3D*(const cudaMemcpy3DParms* p) and the Peer form
  const auto* p = static_cast<const P*>(params)->p;
  return p != nullptr && (p->extent.width == 0 || p->extent.height == 0 || p->extent.depth == 0);
}
template <typename P>
bool ZeroExtent(const void* params) {  // cudaMemset3D*(..., cudaExtent extent)
  const cudaExtent& e = static_cast<const P*>(params)->extent;
  return e.width == 0 || e.height == 0 || e.depth == 0;
}
// Driver 2D/3D copies take one descriptor (CUDA_MEMCPY2D/3D) as their
// first parameter; the 2D memsets (cuMemsetD2D8_v2_params, ...) hold the
// pointer, the pitch and the value (padded to 8) before Width and Height.
inline bool ZeroDriverCopy2D(const void* params) {
  const CUDA_MEMCPY2D* d = *static_cast<const CUDA_MEMCPY2D* const*>(params);
  return d != nullptr && (d->WidthInBytes == 0 || d->Height == 0);
}
inline bool ZeroDriverCopy3D(const void* params) {
  const CUDA_MEMCPY3D* d = *static_cast<const CUDA_MEMCPY3D* const*>(params);
  return d != nullptr && (d->WidthInBytes == 0 || d->Height == 0 || d->Depth == 0);
}
struct DriverSet2DParams {
  uint64_t dst;
  size_t pitch;
  uint64_t value;
  size_t width;
  size_t height;
};
inline bool ZeroDriverSet2D(const void* params) {
  const auto* s = static_cast<const DriverSet2DParams*>(params);
  return s->width == 0 || s->height == 0;
}

// The per-thread-stream flavours (_ptsz, _ptds) take the same parameters.
#define ZERO_BYTES_RT(name, test, params) Rule{CUPTI_RUNTIME_TRACE_CBID_##name, test<params>}
// Data, not logic: one rule per runtime call that may move zero bytes.
inline constexpr Rule kRuntimeRules[] = {
    ZERO_BYTES_RT(cudaMemcpy_v3020, ZeroCount, cudaMemcpy_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy_ptds_v7000, ZeroCount, cudaMemcpy_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemcpyAsync_v3020, ZeroCount, cudaMemcpyAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemcpyAsync_ptsz_v7000, ZeroCount, cudaMemcpyAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpyPeer_v4000, ZeroCount, cudaMemcpyPeer_v4000_params),
    ZERO_BYTES_RT(cudaMemcpyPeerAsync_v4000, ZeroCount, cudaMemcpyPeerAsync_v4000_params),
    ZERO_BYTES_RT(cudaMemset_v3020, ZeroCount, cudaMemset_v3020_params),
    ZERO_BYTES_RT(cudaMemset_ptds_v7000, ZeroCount, cudaMemset_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemsetAsync_v3020, ZeroCount, cudaMemsetAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemsetAsync_ptsz_v7000, ZeroCount, cudaMemsetAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2D_v3020, ZeroRect, cudaMemcpy2D_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2D_ptds_v7000, ZeroRect, cudaMemcpy2D_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2DAsync_v3020, ZeroRect, cudaMemcpy2DAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2DAsync_ptsz_v7000, ZeroRect, cudaMemcpy2DAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2DToArray_v3020, ZeroRect, cudaMemcpy2DToArray_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2DToArray_ptds_v7000, ZeroRect, cudaMemcpy2DToArray_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2DToArrayAsync_v3020, ZeroRect, cudaMemcpy2DToArrayAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2DToArrayAsync_ptsz_v7000, ZeroRect, cudaMemcpy2DToArrayAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2DFromArray_v3020, ZeroRect, cudaMemcpy2DFromArray_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2DFromArray_ptds_v7000, ZeroRect, cudaMemcpy2DFromArray_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2DFromArrayAsync_v3020, ZeroRect, cudaMemcpy2DFromArrayAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2DFromArrayAsync_ptsz_v7000, ZeroRect, cudaMemcpy2DFromArrayAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy2DArrayToArray_v3020, ZeroRect, cudaMemcpy2DArrayToArray_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy2DArrayToArray_ptds_v7000, ZeroRect, cudaMemcpy2DArrayToArray_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemset2D_v3020, ZeroRect, cudaMemset2D_v3020_params),
    ZERO_BYTES_RT(cudaMemset2D_ptds_v7000, ZeroRect, cudaMemset2D_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemset2DAsync_v3020, ZeroRect, cudaMemset2DAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemset2DAsync_ptsz_v7000, ZeroRect, cudaMemset2DAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy3D_v3020, ZeroBox3D, cudaMemcpy3D_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy3D_ptds_v7000, ZeroBox3D, cudaMemcpy3D_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy3DAsync_v3020, ZeroBox3D, cudaMemcpy3DAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemcpy3DAsync_ptsz_v7000, ZeroBox3D, cudaMemcpy3DAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy3DPeer_v4000, ZeroBox3D, cudaMemcpy3DPeer_v4000_params),
    ZERO_BYTES_RT(cudaMemcpy3DPeer_ptds_v7000, ZeroBox3D, cudaMemcpy3DPeer_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemcpy3DPeerAsync_v4000, ZeroBox3D, cudaMemcpy3DPeerAsync_v4000_params),
    ZERO_BYTES_RT(cudaMemcpy3DPeerAsync_ptsz_v7000, ZeroBox3D, cudaMemcpy3DPeerAsync_ptsz_v7000_params),
    ZERO_BYTES_RT(cudaMemset3D_v3020, ZeroExtent, cudaMemset3D_v3020_params),
    ZERO_BYTES_RT(cudaMemset3D_ptds_v7000, ZeroExtent, cudaMemset3D_ptds_v7000_params),
    ZERO_BYTES_RT(cudaMemset3DAsync_v3020, ZeroExtent, cudaMemset3DAsync_v3020_params),
    ZERO_BYTES_RT(cudaMemset3DAsync_ptsz_v7000, ZeroExtent, cudaMemset3DAsync_ptsz_v7000_params),
};
#undef ZERO_BYTES_RT

#define ZERO_BYTES_DRV(name, test) Rule{CUPTI_DRIVER_TRACE_CBID_##name, test}
inline constexpr Rule kDriverRules[] = {
    ZERO_BYTES_DRV(cuMemcpy, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyAsync, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyHtoD_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyDtoH_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyDtoD_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyHtoDAsync_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyDtoHAsync_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpyDtoDAsync_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemsetD8_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemsetD16_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemsetD32_v2, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemsetD8Async, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemsetD16Async, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemsetD32Async, ZeroDriverBytes),
    ZERO_BYTES_DRV(cuMemcpy2D_v2, ZeroDriverCopy2D),
    ZERO_BYTES_DRV(cuMemcpy2DUnaligned_v2, ZeroDriverCopy2D),
    ZERO_BYTES_DRV(cuMemcpy2DAsync_v2, ZeroDriverCopy2D),
    ZERO_BYTES_DRV(cuMemcpy3D_v2, ZeroDriverCopy3D),
    ZERO_BYTES_DRV(cuMemcpy3DAsync_v2, ZeroDriverCopy3D),
    ZERO_BYTES_DRV(cuMemsetD2D8_v2, ZeroDriverSet2D),
    ZERO_BYTES_DRV(cuMemsetD2D16_v2, ZeroDriverSet2D),
    ZERO_BYTES_DRV(cuMemsetD2D32_v2, ZeroDriverSet2D),
    ZERO_BYTES_DRV(cuMemsetD2D8Async, ZeroDriverSet2D),
    ZERO_BYTES_DRV(cuMemsetD2D16Async, ZeroDriverSet2D),
    ZERO_BYTES_DRV(cuMemsetD2D32Async, ZeroDriverSet2D),
};
#undef ZERO_BYTES_DRV

// cbid -> 1 + the index of its rule (0: none), for every id below
// kIndexSize (both domains' ids with a rule are far below it).
inline constexpr uint32_t kIndexSize = 1024;
template <size_t N>
constexpr std::array<uint8_t, kIndexSize> IndexOf(const Rule (&rules)[N]) {
  static_assert(N < 255, "a rule's index fits the index's bytes");
  std::array<uint8_t, kIndexSize> index{};
  for (size_t i = 0; i < N; ++i) index[rules[i].cbid] = static_cast<uint8_t>(i + 1);
  return index;
}
template <size_t N>
constexpr bool OneRulePerId(const Rule (&rules)[N]) {
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = i + 1; j < N; ++j) {
      if (rules[i].cbid == rules[j].cbid) return false;
    }
  }
  return true;
}
static_assert(OneRulePerId(kRuntimeRules) && OneRulePerId(kDriverRules), "one rule per callback id");
inline constexpr std::array<uint8_t, kIndexSize> kRuntimeIndex = IndexOf(kRuntimeRules);
inline constexpr std::array<uint8_t, kIndexSize> kDriverIndex = IndexOf(kDriverRules);

}  // namespace zero_bytes

// runtime: the id is of the runtime domain (else the driver's); params: the
// call's functionParams at its enter (nullptr: not known, so false).
inline bool MovesZeroBytes(bool runtime, uint32_t cbid, const void* params) {
  if (params == nullptr || cbid >= zero_bytes::kIndexSize) return false;
  uint8_t rule = (runtime ? zero_bytes::kRuntimeIndex : zero_bytes::kDriverIndex)[cbid];
  if (rule == 0) return false;
  return (runtime ? zero_bytes::kRuntimeRules : zero_bytes::kDriverRules)[rule - 1].zero(params);
}

}  // namespace prof::cupti
