// Runtime: CUDA arrays, texture and surface objects, and 2D/3D copies to,
// from and between them (../driver/driver_array.cpp). cudaArray_t is the
// driver's CUarray. Array positions and extents follow the runtime's
// documented units: bytes for the 2D calls, elements of the array for
// cudaMemcpy3D when an array takes part.
#include "runtime_state.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::RuntimeCall;
using simrt::S;

namespace {

CUarray A(cudaArray_const_t array) { return reinterpret_cast<CUarray>(const_cast<cudaArray*>(array)); }
CUdeviceptr D(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

bool ValidKind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

// A channel description as the driver's format and channel count.
cudaError_t Format(const cudaChannelFormatDesc& d, CUarray_format* format, unsigned* channels) {
  const int bits[4] = {d.x, d.y, d.z, d.w};
  unsigned n = 0;
  for (int b : bits) {
    if (b == 0) break;
    if (b != d.x) return cudaErrorInvalidChannelDescriptor;  // channels share one width
    ++n;
  }
  if (n == 0 || n == 3) return cudaErrorInvalidChannelDescriptor;
  *channels = n;
  switch (d.f) {
    case cudaChannelFormatKindUnsigned:
      *format = d.x == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : d.x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT32;
      break;
    case cudaChannelFormatKindSigned:
      *format = d.x == 8 ? CU_AD_FORMAT_SIGNED_INT8 : d.x == 16 ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_SIGNED_INT32;
      break;
    case cudaChannelFormatKindFloat:
      if (d.x != 16 && d.x != 32) return cudaErrorInvalidChannelDescriptor;
      *format = d.x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
      break;
    default: return cudaErrorInvalidChannelDescriptor;
  }
  if (d.x != 8 && d.x != 16 && d.x != 32) return cudaErrorInvalidChannelDescriptor;
  return cudaSuccess;
}

cudaChannelFormatDesc Describe(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  int bits = 0;
  cudaChannelFormatKind kind = cudaChannelFormatKindUnsigned;
  switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: bits = 8; break;
    case CU_AD_FORMAT_SIGNED_INT8: bits = 8; kind = cudaChannelFormatKindSigned; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: bits = 16; break;
    case CU_AD_FORMAT_SIGNED_INT16: bits = 16; kind = cudaChannelFormatKindSigned; break;
    case CU_AD_FORMAT_HALF: bits = 16; kind = cudaChannelFormatKindFloat; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: bits = 32; break;
    case CU_AD_FORMAT_SIGNED_INT32: bits = 32; kind = cudaChannelFormatKindSigned; break;
    default: bits = 32; kind = cudaChannelFormatKindFloat; break;
  }
  cudaChannelFormatDesc out{};
  out.x = bits;
  out.y = d.NumChannels > 1 ? bits : 0;
  out.z = d.NumChannels > 2 ? bits : 0;
  out.w = d.NumChannels > 3 ? bits : 0;
  out.f = kind;
  return out;
}

cudaError_t Malloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned flags) {
  if (!array || !desc) return cudaErrorInvalidValue;
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (cudaError_t e = Format(*desc, &d.Format, &d.NumChannels); e != cudaSuccess) return e;
  d.Width = extent.width;
  d.Height = extent.height;
  d.Depth = extent.depth;
  d.Flags = flags;  // cudaArraySurfaceLoadStore == CUDA_ARRAY3D_SURFACE_LDST, and so on
  return FromDriver(Driver().cuArray3DCreate(reinterpret_cast<CUarray*>(array), &d));
}

size_t ElementBytes(CUarray array) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (Driver().cuArray3DGetDescriptor(&d, array) != CUDA_SUCCESS) return 0;
  const size_t format = d.Format == CU_AD_FORMAT_UNSIGNED_INT8 || d.Format == CU_AD_FORMAT_SIGNED_INT8 ? 1
                        : d.Format == CU_AD_FORMAT_UNSIGNED_INT16 || d.Format == CU_AD_FORMAT_SIGNED_INT16 ||
                                  d.Format == CU_AD_FORMAT_HALF
                            ? 2
                            : 4;
  return format * d.NumChannels;
}

cudaError_t Run2D(const CUDA_MEMCPY2D& c, cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread) {
  if (!ValidKind(kind)) return cudaErrorInvalidMemcpyDirection;
  const auto& driver = Driver(per_thread);
  const CUresult r = async ? driver.cuMemcpy2DAsync(&c, S(stream)) : driver.cuMemcpy2D(&c);
  return r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : FromDriver(r);
}

// One end of a 2D copy: an array at (x bytes, y), or linear memory.
void ArrayEnd(CUarray array, size_t x, size_t y, CUmemorytype* type, CUarray* slot, size_t* xb, size_t* yo) {
  *type = CU_MEMORYTYPE_ARRAY;
  *slot = array;
  *xb = x;
  *yo = y;
}

cudaError_t ToArray2D(cudaArray_t dst, size_t w, size_t h, const void* src, size_t spitch, size_t width, size_t height,
                      cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread) {
  CUDA_MEMCPY2D c{};
  ArrayEnd(A(dst), w, h, &c.dstMemoryType, &c.dstArray, &c.dstXInBytes, &c.dstY);
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = D(src);
  c.srcPitch = spitch;
  c.WidthInBytes = width;
  c.Height = height;
  if (height > 1 && width > spitch) return cudaErrorInvalidPitchValue;
  return Run2D(c, kind, stream, async, per_thread);
}

// ToArray2D's mirror: the array is the source here, so the fields are the other end's.
cudaError_t FromArray2D(void* dst, size_t dpitch, cudaArray_const_t src, size_t w, size_t h, size_t width,
                        size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async, bool per_thread) {
  CUDA_MEMCPY2D c{};
  ArrayEnd(A(src), w, h, &c.srcMemoryType, &c.srcArray, &c.srcXInBytes, &c.srcY);
  c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.dstDevice = D(dst);
  c.dstPitch = dpitch;
  c.WidthInBytes = width;
  c.Height = height;
  if (height > 1 && width > dpitch) return cudaErrorInvalidPitchValue;
  return Run2D(c, kind, stream, async, per_thread);
}

// One end of a cudaMemcpy3D as the driver describes it.
void End3D(cudaArray_t array, cudaPos pos, cudaPitchedPtr ptr, size_t element, CUmemorytype* type, const void** host,
           CUdeviceptr* device, CUarray* arr, size_t* pitch, size_t* height, size_t* x, size_t* y, size_t* z) {
  if (array) {
    *type = CU_MEMORYTYPE_ARRAY;
    *arr = A(array);
    *x = pos.x * element;
  } else {
    *type = CU_MEMORYTYPE_UNIFIED;
    *host = ptr.ptr;
    *device = D(ptr.ptr);
    *pitch = ptr.pitch;
    *height = ptr.ysize;
    *x = pos.x;
  }
  *y = pos.y;
  *z = pos.z;
}

cudaError_t Memcpy3D(const cudaMemcpy3DParms* p, cudaStream_t stream, bool async, bool per_thread) {
  if (!p) return cudaErrorInvalidValue;
  if (!ValidKind(p->kind)) return cudaErrorInvalidMemcpyDirection;
  if ((p->srcArray && p->srcPtr.ptr) || (p->dstArray && p->dstPtr.ptr)) return cudaErrorInvalidValue;
  // Extents count the array's elements when an array takes part, else bytes.
  const cudaArray_t array = p->srcArray ? p->srcArray : p->dstArray;
  const size_t element = array ? ElementBytes(A(array)) : 1;
  if (element == 0) return cudaErrorInvalidResourceHandle;
  CUDA_MEMCPY3D c{};
  const void* ignored_host = nullptr;
  End3D(p->srcArray, p->srcPos, p->srcPtr, element, &c.srcMemoryType, &c.srcHost, &c.srcDevice, &c.srcArray,
        &c.srcPitch, &c.srcHeight, &c.srcXInBytes, &c.srcY, &c.srcZ);
  End3D(p->dstArray, p->dstPos, p->dstPtr, element, &c.dstMemoryType, &ignored_host, &c.dstDevice, &c.dstArray,
        &c.dstPitch, &c.dstHeight, &c.dstXInBytes, &c.dstY, &c.dstZ);
  c.WidthInBytes = p->extent.width * element;
  c.Height = p->extent.height;
  c.Depth = p->extent.depth;
  const auto& driver = Driver(per_thread);
  const CUresult r = async ? driver.cuMemcpy3DAsync(&c, S(stream)) : driver.cuMemcpy3D(&c);
  return r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : FromDriver(r);
}

cudaError_t Resource(const cudaResourceDesc* r, CUDA_RESOURCE_DESC* out) {
  if (!r) return cudaErrorInvalidValue;
  *out = CUDA_RESOURCE_DESC{};
  out->resType = static_cast<CUresourcetype>(r->resType);  // same numbering
  switch (r->resType) {
    case cudaResourceTypeArray: out->res.array.hArray = A(r->res.array.array); break;
    case cudaResourceTypeLinear:
      out->res.linear.devPtr = D(r->res.linear.devPtr);
      out->res.linear.sizeInBytes = r->res.linear.sizeInBytes;
      break;
    case cudaResourceTypePitch2D:
      out->res.pitch2D.devPtr = D(r->res.pitch2D.devPtr);
      out->res.pitch2D.width = r->res.pitch2D.width;
      out->res.pitch2D.height = r->res.pitch2D.height;
      out->res.pitch2D.pitchInBytes = r->res.pitch2D.pitchInBytes;
      break;
    default: return cudaErrorInvalidValue;  // mipmapped arrays are not simulated
  }
  return cudaSuccess;
}

}  // namespace

SIM_RUNTIME_EXPORT struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                                      enum cudaChannelFormatKind f) {
  cudaCreateChannelDesc_v3020_params params{x, y, z, w, f};
  cudaChannelFormatDesc desc{x, y, z, w, f};
  RuntimeCall(SIM_RUNTIME_CBID(cudaCreateChannelDesc_v3020), "cudaCreateChannelDesc", &params,
              [&] { return cudaSuccess; });
  return desc;
}

SIM_RUNTIME_EXPORT cudaError_t cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                                               size_t width, size_t height, unsigned int flags) {
  cudaMallocArray_v3020_params params{array, desc, width, height, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMallocArray_v3020), "cudaMallocArray", &params,
                          [&] { return Malloc3DArray(array, desc, cudaExtent{width, height, 0}, flags); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                                                 struct cudaExtent extent, unsigned int flags) {
  cudaMalloc3DArray_v3020_params params{array, desc, extent, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMalloc3DArray_v3020), "cudaMalloc3DArray", &params,
                          [&] { return Malloc3DArray(array, desc, extent, flags); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaFreeArray(cudaArray_t array) {
  cudaFreeArray_v3020_params params{array};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaFreeArray_v3020), "cudaFreeArray", &params, [&]() -> cudaError_t {
    if (!array) return cudaSuccess;  // documented: a null array is a no-op
    const CUresult r = Driver().cuArrayDestroy(A(array));
    return r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : FromDriver(r);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  cudaGetChannelDesc_v3020_params params{desc, array};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetChannelDesc_v3020), "cudaGetChannelDesc", &params,
                          [&]() -> cudaError_t {
    if (!desc) return cudaErrorInvalidValue;
    CUDA_ARRAY3D_DESCRIPTOR d{};
    if (Driver().cuArray3DGetDescriptor(&d, A(array)) != CUDA_SUCCESS) return cudaErrorInvalidResourceHandle;
    *desc = Describe(d);
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc* desc, struct cudaExtent* extent,
                                                unsigned int* flags, cudaArray_t array) {
  cudaArrayGetInfo_v4010_params params{desc, extent, flags, array};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaArrayGetInfo_v4010), "cudaArrayGetInfo", &params,
                          [&]() -> cudaError_t {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    if (Driver().cuArray3DGetDescriptor(&d, A(array)) != CUDA_SUCCESS) return cudaErrorInvalidResourceHandle;
    if (desc) *desc = Describe(d);
    if (extent) *extent = cudaExtent{d.Width, d.Height, d.Depth};
    if (flags) *flags = d.Flags;
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                   size_t spitch, size_t width, size_t height, cudaMemcpyKind kind) {
  cudaMemcpy2DToArray_v3020_params params{dst, wOffset, hOffset, src, spitch, width, height, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DToArray_v3020), "cudaMemcpy2DToArray", &params, [&] {
    return ToArray2D(dst, wOffset, hOffset, src, spitch, width, height, kind, nullptr, false, false);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                        const void* src, size_t spitch, size_t width, size_t height,
                                                        cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpy2DToArrayAsync_v3020_params params{dst, wOffset, hOffset, src, spitch, width, height, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DToArrayAsync_v3020), "cudaMemcpy2DToArrayAsync", &params, [&] {
    return ToArray2D(dst, wOffset, hOffset, src, spitch, width, height, kind, stream, true, false);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                     size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind) {
  cudaMemcpy2DFromArray_v3020_params params{dst, dpitch, src, wOffset, hOffset, width, height, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DFromArray_v3020), "cudaMemcpy2DFromArray", &params, [&] {
    return FromArray2D(dst, dpitch, src, wOffset, hOffset, width, height, kind, nullptr, false, false);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src,
                                                          size_t wOffset, size_t hOffset, size_t width, size_t height,
                                                          cudaMemcpyKind kind, cudaStream_t stream) {
  cudaMemcpy2DFromArrayAsync_v3020_params params{dst, dpitch, src, wOffset, hOffset, width, height, kind, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DFromArrayAsync_v3020), "cudaMemcpy2DFromArrayAsync", &params,
                          [&] {
    return FromArray2D(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream, true, false);
  });
}

// Deprecated 1D forms: `count` bytes from (wOffset bytes, hOffset) on,
// row after row through the array (the driver's cuMemcpyHtoA/AtoH offsets;
// the pointer decides host or device, as everywhere under unified addressing).
namespace {
cudaError_t LinearOffset(cudaArray_const_t array, size_t w, size_t h, size_t* offset) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (Driver().cuArray3DGetDescriptor(&d, A(array)) != CUDA_SUCCESS) return cudaErrorInvalidResourceHandle;
  *offset = h * d.Width * ElementBytes(A(array)) + w;
  return cudaSuccess;
}
}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                                 size_t count, cudaMemcpyKind kind) {
  cudaMemcpyToArray_v3020_params params{dst, wOffset, hOffset, src, count, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyToArray_v3020), "cudaMemcpyToArray", &params,
                          [&]() -> cudaError_t {
    if (!ValidKind(kind)) return cudaErrorInvalidMemcpyDirection;
    size_t offset = 0;
    if (cudaError_t e = LinearOffset(dst, wOffset, hOffset, &offset); e != cudaSuccess) return e;
    return FromDriver(Driver().cuMemcpyHtoA(A(dst), offset, src, count));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                                   size_t count, cudaMemcpyKind kind) {
  cudaMemcpyFromArray_v3020_params params{dst, src, wOffset, hOffset, count, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpyFromArray_v3020), "cudaMemcpyFromArray", &params,
                          [&]() -> cudaError_t {
    if (!ValidKind(kind)) return cudaErrorInvalidMemcpyDirection;
    size_t offset = 0;
    if (cudaError_t e = LinearOffset(src, wOffset, hOffset, &offset); e != cudaSuccess) return e;
    return FromDriver(Driver().cuMemcpyAtoH(dst, A(src), offset, count));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                                        cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                                        size_t width, size_t height, cudaMemcpyKind kind) {
  cudaMemcpy2DArrayToArray_v3020_params params{dst,        wOffsetDst, hOffsetDst, src, wOffsetSrc,
                                               hOffsetSrc, width,      height,     kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy2DArrayToArray_v3020), "cudaMemcpy2DArrayToArray", &params,
                          [&] {
    CUDA_MEMCPY2D c{};
    ArrayEnd(A(src), wOffsetSrc, hOffsetSrc, &c.srcMemoryType, &c.srcArray, &c.srcXInBytes, &c.srcY);
    ArrayEnd(A(dst), wOffsetDst, hOffsetDst, &c.dstMemoryType, &c.dstArray, &c.dstXInBytes, &c.dstY);
    c.WidthInBytes = width;
    c.Height = height;
    return Run2D(c, kind, nullptr, false, false);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  cudaMemcpy3D_v3020_params params{p};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy3D_v3020), "cudaMemcpy3D", &params,
                          [&] { return Memcpy3D(p, nullptr, false, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms* p) {
  cudaMemcpy3D_ptds_v7000_params params{p};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy3D_ptds_v7000), "cudaMemcpy3D_ptds", &params,
                          [&] { return Memcpy3D(p, nullptr, false, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  cudaMemcpy3DAsync_v3020_params params{p, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy3DAsync_v3020), "cudaMemcpy3DAsync", &params,
                          [&] { return Memcpy3D(p, stream, true, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  cudaMemcpy3DAsync_ptsz_v7000_params params{p, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemcpy3DAsync_ptsz_v7000), "cudaMemcpy3DAsync_ptsz", &params,
                          [&] { return Memcpy3D(p, stream, true, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  cudaMalloc3D_v3020_params params{pitchedDevPtr, extent};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMalloc3D_v3020), "cudaMalloc3D", &params, [&]() -> cudaError_t {
    if (!pitchedDevPtr) return cudaErrorInvalidValue;
    const size_t rows = (extent.height ? extent.height : 1) * (extent.depth ? extent.depth : 1);
    CUdeviceptr p = 0;
    size_t pitch = 0;
    if (CUresult r = Driver().cuMemAllocPitch(&p, &pitch, extent.width, rows, 4); r != CUDA_SUCCESS) {
      return FromDriver(r);
    }
    *pitchedDevPtr = cudaPitchedPtr{reinterpret_cast<void*>(p), pitch, extent.width, extent.height};
    return cudaSuccess;
  });
}

// One memset over every row of every slice (slices of a cudaMalloc3D
// allocation are pitch * ysize apart).
SIM_RUNTIME_EXPORT cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent) {
  cudaMemset3D_v3020_params params{pitchedDevPtr, value, extent};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemset3D_v3020), "cudaMemset3D", &params, [&]() -> cudaError_t {
    if (extent.width > pitchedDevPtr.pitch) return cudaErrorInvalidValue;
    const size_t depth = extent.depth ? extent.depth : 1;
    const auto byte = static_cast<unsigned char>(value);
    if (extent.height == pitchedDevPtr.ysize || depth == 1) {
      return FromDriver(Driver().cuMemsetD2D8(D(pitchedDevPtr.ptr), pitchedDevPtr.pitch, byte, extent.width,
                                              extent.height * depth));
    }
    for (size_t z = 0; z < depth; ++z) {
      const CUdeviceptr slice = D(pitchedDevPtr.ptr) + z * pitchedDevPtr.pitch * pitchedDevPtr.ysize;
      if (CUresult r = Driver().cuMemsetD2D8(slice, pitchedDevPtr.pitch, byte, extent.width, extent.height);
          r != CUDA_SUCCESS) {
        return FromDriver(r);
      }
    }
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject,
                                                       const struct cudaResourceDesc* pResDesc,
                                                       const struct cudaTextureDesc* pTexDesc,
                                                       const struct cudaResourceViewDesc* pResViewDesc) {
  cudaCreateTextureObject_v5000_params params{pTexObject, pResDesc, pTexDesc, pResViewDesc};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaCreateTextureObject_v5000), "cudaCreateTextureObject", &params,
                          [&]() -> cudaError_t {
    if (!pTexObject || !pTexDesc) return cudaErrorInvalidValue;
    CUDA_RESOURCE_DESC resource{};
    if (cudaError_t e = Resource(pResDesc, &resource); e != cudaSuccess) return e;
    CUDA_TEXTURE_DESC texture{};  // sampling modes do not change the model
    const CUresult r = Driver().cuTexObjectCreate(pTexObject, &resource, &texture, nullptr);
    return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : FromDriver(r);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
  cudaDestroyTextureObject_v5000_params params{texObject};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDestroyTextureObject_v5000), "cudaDestroyTextureObject", &params,
                          [&] { return FromDriver(Driver().cuTexObjectDestroy(texObject)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject,
                                                       const struct cudaResourceDesc* pResDesc) {
  cudaCreateSurfaceObject_v5000_params params{pSurfObject, pResDesc};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaCreateSurfaceObject_v5000), "cudaCreateSurfaceObject", &params,
                          [&]() -> cudaError_t {
    if (!pSurfObject) return cudaErrorInvalidValue;
    CUDA_RESOURCE_DESC resource{};
    if (cudaError_t e = Resource(pResDesc, &resource); e != cudaSuccess) return e;
    const CUresult r = Driver().cuSurfObjectCreate(pSurfObject, &resource);
    return r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : FromDriver(r);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
  cudaDestroySurfaceObject_v5000_params params{surfObject};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDestroySurfaceObject_v5000), "cudaDestroySurfaceObject", &params,
                          [&] { return FromDriver(Driver().cuSurfObjectDestroy(surfObject)); });
}
