// Driver: CUDA arrays, texture and surface objects, and the general 2D/3D
// copy (cuMemcpy2D/3D with host, device, unified or array ends, and the
// array copies cuMemcpyHtoA/AtoH/AtoD/DtoA). An array is plain memory here,
// laid out row after row; its copies are reported with memory kind ARRAY and
// the array copy kinds (HTOA, ATOH, ATOA, ATOD, DTOA), as CUPTI documents.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "copies.h"
#include "device.h"
#include "driver_call.h"

struct CUarray_st {
  CUDA_ARRAY3D_DESCRIPTOR desc;
  size_t element_bytes;
  size_t row_bytes;  // Width * element bytes
  size_t rows;       // max(Height, 1)
  size_t slices;     // max(Depth, 1)
  char* data;
};

namespace sim {
namespace {

struct Arrays {
  std::mutex mutex;  // leaf lock
  std::set<CUarray> arrays;
  std::set<unsigned long long> textures, surfaces;
  std::atomic<unsigned long long> next_object{1};
};
Arrays& State() {
  static Arrays* arrays = new Arrays();
  return *arrays;
}

size_t FormatBytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

bool IsArray(CUarray array) {
  std::lock_guard<std::mutex> lock(State().mutex);
  return State().arrays.count(array) != 0;
}

CUresult Create(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR& desc) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const size_t element = FormatBytes(desc.Format);
  if (element == 0 || (desc.NumChannels != 1 && desc.NumChannels != 2 && desc.NumChannels != 4)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (desc.Width == 0 || (desc.Height == 0 && desc.Depth != 0)) return CUDA_ERROR_INVALID_VALUE;
  if (desc.Width > 131072 || desc.Height > 65536 || desc.Depth > 16384) return CUDA_ERROR_INVALID_VALUE;
  Device::Get().RetainPrimaryContext();
  auto* array = new CUarray_st{desc, element * desc.NumChannels, 0, desc.Height ? desc.Height : 1,
                               desc.Depth ? desc.Depth : 1, nullptr};
  array->row_bytes = desc.Width * array->element_bytes;
  array->data = static_cast<char*>(calloc(array->row_bytes * array->rows * array->slices, 1));
  if (!array->data) {
    delete array;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard<std::mutex> lock(State().mutex);
  State().arrays.insert(array);
  *out = array;
  return CUDA_SUCCESS;
}

CUresult Destroy(CUarray array) {
  {
    std::lock_guard<std::mutex> lock(State().mutex);
    if (!State().arrays.erase(array)) return CUDA_ERROR_INVALID_HANDLE;
  }
  WaitUntilNs(Device::Get().DeviceDoneNs());  // like cuMemFree: after the work using it
  free(array->data);
  delete array;
  return CUDA_SUCCESS;
}

// One end of a copy: where its box starts, how rows and slices advance.
CUresult Resolve(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, size_t pitch, size_t height,
                 size_t x_bytes, size_t y, size_t z, size_t width, size_t rows, size_t depth, CopyRegion* out) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: {
      char* base = static_cast<char*>(type == CU_MEMORYTYPE_HOST ? const_cast<void*>(host)
                                                                  : reinterpret_cast<void*>(device));
      if (!base || (rows > 1 && pitch < width)) return CUDA_ERROR_INVALID_VALUE;
      const size_t slice = pitch * (height ? height : rows);
      *out = CopyRegion{base + z * slice + y * pitch + x_bytes, pitch, slice, 0};
      return CUDA_SUCCESS;
    }
    case CU_MEMORYTYPE_ARRAY: {
      if (!IsArray(array)) return CUDA_ERROR_INVALID_HANDLE;
      if (x_bytes + width > array->row_bytes || y + rows > array->rows || z + depth > array->slices) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      const size_t slice = array->row_bytes * array->rows;
      *out = CopyRegion{array->data + z * slice + y * array->row_bytes + x_bytes, array->row_bytes, slice,
                        CUPTI_ACTIVITY_MEMORY_KIND_ARRAY};
      return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

CUresult ResolveCopy3D(const CUDA_MEMCPY3D* c, CopyRegion* src, CopyRegion* dst, size_t* width, size_t* rows,
                       size_t* depth) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *depth = c->Depth ? c->Depth : 1;
  *rows = c->Height ? c->Height : 1;
  *width = c->WidthInBytes;
  if (CUresult r = Resolve(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcPitch, c->srcHeight,
                           c->srcXInBytes, c->srcY, c->srcZ, *width, *rows, *depth, src);
      r != CUDA_SUCCESS) {
    return r;
  }
  return Resolve(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstPitch, c->dstHeight, c->dstXInBytes,
                 c->dstY, c->dstZ, *width, *rows, *depth, dst);
}

namespace {

CUresult Copy3D(const CUDA_MEMCPY3D* c, CUstream stream, bool synchronous) {
  CopyRegion src, dst;
  size_t width = 0, rows = 0, depth = 0;
  if (CUresult r = ResolveCopy3D(c, &src, &dst, &width, &rows, &depth); r != CUDA_SUCCESS) return r;
  return CopyBox(src, dst, width, rows, depth, stream, synchronous);
}

// A linear stretch of an array (cuMemcpyHtoA and friends): bytes from an
// offset, row-major through the array.
CUresult ArrayLinear(CUarray array, size_t offset, size_t bytes, CopyRegion* out) {
  if (!IsArray(array)) return CUDA_ERROR_INVALID_HANDLE;
  if (offset + bytes > array->row_bytes * array->rows * array->slices) return CUDA_ERROR_INVALID_VALUE;
  *out = CopyRegion{array->data + offset, bytes, bytes, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY};
  return CUDA_SUCCESS;
}

CUresult HostOrDevice(const void* p, size_t bytes, CopyRegion* out) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *out = CopyRegion{static_cast<char*>(const_cast<void*>(p)), bytes, bytes, 0};
  return CUDA_SUCCESS;
}

CUresult ToArray(CUarray array, size_t offset, const void* src, size_t bytes, CUstream stream, bool synchronous) {
  CopyRegion from, to;
  if (CUresult r = ArrayLinear(array, offset, bytes, &to); r != CUDA_SUCCESS) return r;
  if (CUresult r = HostOrDevice(src, bytes, &from); r != CUDA_SUCCESS) return r;
  return CopyBox(from, to, bytes, 1, 1, stream, synchronous);
}

CUresult FromArray(void* dst, CUarray array, size_t offset, size_t bytes, CUstream stream, bool synchronous) {
  CopyRegion from, to;
  if (CUresult r = ArrayLinear(array, offset, bytes, &from); r != CUDA_SUCCESS) return r;
  if (CUresult r = HostOrDevice(dst, bytes, &to); r != CUDA_SUCCESS) return r;
  return CopyBox(from, to, bytes, 1, 1, stream, synchronous);
}

bool ValidResource(const CUDA_RESOURCE_DESC* r) {
  if (!r) return false;
  switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY: return IsArray(r->res.array.hArray);
    case CU_RESOURCE_TYPE_LINEAR: return r->res.linear.devPtr != 0 && r->res.linear.sizeInBytes != 0;
    case CU_RESOURCE_TYPE_PITCH2D:
      return r->res.pitch2D.devPtr != 0 && r->res.pitch2D.pitchInBytes != 0 && r->res.pitch2D.width != 0;
    default: return false;  // mipmapped arrays are not simulated
  }
}

}  // namespace

CUresult Copy2DDescribed(const CUDA_MEMCPY2D* c, CUstream stream, bool synchronous) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = c->srcXInBytes;
  d.srcY = c->srcY;
  d.srcMemoryType = c->srcMemoryType;
  d.srcHost = c->srcHost;
  d.srcDevice = c->srcDevice;
  d.srcArray = c->srcArray;
  d.srcPitch = c->srcPitch;
  d.dstXInBytes = c->dstXInBytes;
  d.dstY = c->dstY;
  d.dstMemoryType = c->dstMemoryType;
  d.dstHost = c->dstHost;
  d.dstDevice = c->dstDevice;
  d.dstArray = c->dstArray;
  d.dstPitch = c->dstPitch;
  d.WidthInBytes = c->WidthInBytes;
  d.Height = c->Height;
  d.Depth = 1;
  return Copy3D(&d, stream, synchronous);
}

}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  cuArray3DCreate_v2_params params{pHandle, pAllocateArray};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuArray3DCreate_v2), "cuArray3DCreate_v2", &params, [&]() -> CUresult {
    if (!pAllocateArray) return CUDA_ERROR_INVALID_VALUE;
    return sim::Create(pHandle, *pAllocateArray);
  });
}

SIM_DRIVER_EXPORT CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  cuArrayCreate_v2_params params{pHandle, pAllocateArray};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuArrayCreate_v2), "cuArrayCreate_v2", &params, [&]() -> CUresult {
    if (!pAllocateArray) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    desc.Width = pAllocateArray->Width;
    desc.Height = pAllocateArray->Height;
    desc.Format = pAllocateArray->Format;
    desc.NumChannels = pAllocateArray->NumChannels;
    return sim::Create(pHandle, desc);
  });
}

SIM_DRIVER_EXPORT CUresult cuArrayDestroy(CUarray hArray) {
  cuArrayDestroy_params params{hArray};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuArrayDestroy), "cuArrayDestroy", &params,
                               [&] { return sim::Destroy(hArray); });
}

SIM_DRIVER_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  cuArray3DGetDescriptor_v2_params params{pArrayDescriptor, hArray};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuArray3DGetDescriptor_v2), "cuArray3DGetDescriptor_v2", &params,
                               [&]() -> CUresult {
                                 if (!pArrayDescriptor) return CUDA_ERROR_INVALID_VALUE;
                                 if (!sim::IsArray(hArray)) return CUDA_ERROR_INVALID_HANDLE;
                                 *pArrayDescriptor = hArray->desc;
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) {
  cuMemcpy3D_v2_params params{pCopy};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy3D_v2), "cuMemcpy3D_v2", &params,
                               [&] { return sim::Copy3D(pCopy, nullptr, /*synchronous=*/true); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  cuMemcpy3DAsync_v2_params params{pCopy, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy3DAsync_v2), "cuMemcpy3DAsync_v2", &params,
                               [&] { return sim::Copy3D(pCopy, hStream, /*synchronous=*/false); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) {
  cuMemcpy3D_v2_ptds_params params{pCopy};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy3D_v2_ptds), "cuMemcpy3D_v2_ptds", &params,
                               [&] { return sim::Copy3D(pCopy, CU_STREAM_PER_THREAD, /*synchronous=*/true); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  cuMemcpy3DAsync_v2_ptsz_params params{pCopy, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpy3DAsync_v2_ptsz), "cuMemcpy3DAsync_v2_ptsz", &params,
                               [&] { return sim::Copy3D(pCopy, sim::PerThread(hStream), /*synchronous=*/false); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount) {
  cuMemcpyHtoA_v2_params params{dstArray, dstOffset, srcHost, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyHtoA_v2), "cuMemcpyHtoA_v2", &params,
                               [&] { return sim::ToArray(dstArray, dstOffset, srcHost, ByteCount, nullptr, true); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyAtoH_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  cuMemcpyAtoH_v2_params params{dstHost, srcArray, srcOffset, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyAtoH_v2), "cuMemcpyAtoH_v2", &params,
                               [&] { return sim::FromArray(dstHost, srcArray, srcOffset, ByteCount, nullptr, true); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) {
  cuMemcpyDtoA_v2_params params{dstArray, dstOffset, srcDevice, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyDtoA_v2), "cuMemcpyDtoA_v2", &params, [&] {
    return sim::ToArray(dstArray, dstOffset, reinterpret_cast<void*>(srcDevice), ByteCount, nullptr, true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  cuMemcpyAtoD_v2_params params{dstDevice, srcArray, srcOffset, ByteCount};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyAtoD_v2), "cuMemcpyAtoD_v2", &params, [&] {
    return sim::FromArray(reinterpret_cast<void*>(dstDevice), srcArray, srcOffset, ByteCount, nullptr, true);
  });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void* srcHost,
                                                size_t ByteCount, CUstream hStream) {
  cuMemcpyHtoAAsync_v2_params params{dstArray, dstOffset, srcHost, ByteCount, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyHtoAAsync_v2), "cuMemcpyHtoAAsync_v2", &params,
                               [&] { return sim::ToArray(dstArray, dstOffset, srcHost, ByteCount, hStream, false); });
}

SIM_DRIVER_EXPORT CUresult cuMemcpyAtoHAsync_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                                CUstream hStream) {
  cuMemcpyAtoHAsync_v2_params params{dstHost, srcArray, srcOffset, ByteCount, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemcpyAtoHAsync_v2), "cuMemcpyAtoHAsync_v2", &params,
                               [&] { return sim::FromArray(dstHost, srcArray, srcOffset, ByteCount, hStream, false); });
}

SIM_DRIVER_EXPORT CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                                             const CUDA_TEXTURE_DESC* pTexDesc,
                                             const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  cuTexObjectCreate_params params{pTexObject, pResDesc, pTexDesc, pResViewDesc};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuTexObjectCreate), "cuTexObjectCreate", &params, [&]() -> CUresult {
    if (!pTexObject || !pTexDesc || !sim::ValidResource(pResDesc)) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(sim::State().mutex);
    *pTexObject = sim::State().next_object++;
    sim::State().textures.insert(*pTexObject);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuTexObjectDestroy(CUtexObject texObject) {
  cuTexObjectDestroy_params params{texObject};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuTexObjectDestroy), "cuTexObjectDestroy", &params, [&]() -> CUresult {
    std::lock_guard<std::mutex> lock(sim::State().mutex);
    return sim::State().textures.erase(texObject) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// cuTexObjectCreate's shape for surfaces: their own set and check.
// Documented: surfaces need an array created with CUDA_ARRAY3D_SURFACE_LDST.
SIM_DRIVER_EXPORT CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  cuSurfObjectCreate_params params{pSurfObject, pResDesc};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuSurfObjectCreate), "cuSurfObjectCreate", &params, [&]() -> CUresult {
    if (!pSurfObject || !pResDesc || pResDesc->resType != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::IsArray(pResDesc->res.array.hArray)) return CUDA_ERROR_INVALID_HANDLE;
    if (!(pResDesc->res.array.hArray->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST)) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(sim::State().mutex);
    *pSurfObject = sim::State().next_object++;
    sim::State().surfaces.insert(*pSurfObject);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  cuSurfObjectDestroy_params params{surfObject};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuSurfObjectDestroy), "cuSurfObjectDestroy", &params, [&]() -> CUresult {
    std::lock_guard<std::mutex> lock(sim::State().mutex);
    return sim::State().surfaces.erase(surfObject) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}
