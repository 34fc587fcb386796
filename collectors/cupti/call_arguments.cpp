#include "collectors/cupti/call_arguments.h"

#include <cupti.h>  // with the toolkit's generated_cuda*_meta.h parameter structs

#include "collectors/cupti/api_classes.h"

namespace prof::cupti {

ApiId HostApiOf(bool runtime, uint32_t cbid) {
  const char* name = CallbackName(runtime ? ApiDomain::kRuntime : ApiDomain::kDriver, cbid);
  ApiId id = ApiId::kCount;
  if (name == nullptr || !ApiFromName(name, &id)) return ApiId::kCount;
  // Registration: its wrapper records it without timing the call for the
  // callbacks, and CUPTI publishes no parameter struct for it; it stays an
  // API record when no wrapper saw it.
  if (ApiKindOf(id) == ApiKind::kRegister) return ApiId::kCount;
  // A runtime id names a runtime function and a driver id a driver one
  // (cu*): the table holds both.
  bool driver_name = name[0] == 'c' && name[1] == 'u' && name[2] != 'd';
  return driver_name == !runtime ? id : ApiId::kCount;
}

namespace {

uint64_t U64(const void* p) { return reinterpret_cast<uint64_t>(p); }

// The per-thread-stream flavours (_ptsz, _ptds) of a function take the same
// parameters as the function, and their generated structs hold the same
// fields in the same order: one struct serves each family.
template <typename P>
const P& As(const void* params) {
  return *static_cast<const P*>(params);
}

template <typename P>
void Copy(const void* params, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.dst);
  e->bytes = p.count;
  e->copy_kind = static_cast<uint8_t>(p.kind);
}

template <typename P>
void Copy2D(const void* params, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.dst);
  e->bytes = static_cast<uint64_t>(p.width) * p.height;
  e->copy_kind = static_cast<uint8_t>(p.kind);
}

template <typename P>
void CopyPeer(const void* params, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.dst);
  e->bytes = p.count;
  e->device = static_cast<int16_t>(p.dstDevice);
  e->copy_kind = static_cast<uint8_t>(cudaMemcpyDeviceToDevice);
}

// An allocator's out-parameter, read once the call succeeded.
template <typename T>
uint64_t Out(T* const* where, bool ok) {
  return ok && where != nullptr ? U64(*where) : 0;
}
template <typename T>
uint64_t OutValue(T* where, bool ok) {
  return ok && where != nullptr ? static_cast<uint64_t>(*where) : 0;
}

}  // namespace

void FillArguments(ApiId id, const void* params, bool ok, HostEvent* e) {
  if (params == nullptr) return;
  switch (id) {
    case ApiId::cudaLaunchKernel:
    case ApiId::cudaLaunchKernel_ptsz:
    case ApiId::cudaLaunchCooperativeKernel:
    case ApiId::cudaLaunchCooperativeKernel_ptsz: {
      const auto& p = As<cudaLaunchKernel_v7000_params>(params);
      e->ptr = U64(p.func);
      e->stream = U64(p.stream);
      return;
    }
    case ApiId::cudaLaunchKernelExC:
    case ApiId::cudaLaunchKernelExC_ptsz: {
      const auto& p = As<cudaLaunchKernelExC_v11060_params>(params);
      e->ptr = U64(p.func);
      e->stream = p.config != nullptr ? U64(p.config->stream) : 0;
      return;
    }
    case ApiId::cudaGraphLaunch:
    case ApiId::cudaGraphLaunch_ptsz: {
      const auto& p = As<cudaGraphLaunch_v10000_params>(params);
      e->ptr = U64(p.graphExec);
      e->stream = U64(p.stream);
      return;
    }
    case ApiId::cuLaunchKernel:
    case ApiId::cuLaunchKernel_ptsz:
    case ApiId::cuLaunchCooperativeKernel:
    case ApiId::cuLaunchCooperativeKernel_ptsz: {
      // cuLaunchCooperativeKernel's struct is cuLaunchKernel's without `extra`.
      const auto& p = As<cuLaunchCooperativeKernel_params>(params);
      e->ptr = U64(p.f);
      e->stream = U64(p.hStream);
      return;
    }
    case ApiId::cuLaunchKernelEx:
    case ApiId::cuLaunchKernelEx_ptsz: {
      const auto& p = As<cuLaunchKernelEx_params>(params);
      e->ptr = U64(p.f);
      e->stream = p.config != nullptr ? U64(p.config->hStream) : 0;
      return;
    }
    case ApiId::cudaMemcpy:
    case ApiId::cudaMemcpy_ptds:
      Copy<cudaMemcpy_v3020_params>(params, e);
      return;
    case ApiId::cudaMemcpyAsync:
    case ApiId::cudaMemcpyAsync_ptsz:
      Copy<cudaMemcpyAsync_v3020_params>(params, e);
      e->stream = U64(As<cudaMemcpyAsync_v3020_params>(params).stream);
      return;
    case ApiId::cudaMemcpy2D:
    case ApiId::cudaMemcpy2D_ptds:
      Copy2D<cudaMemcpy2D_v3020_params>(params, e);
      return;
    case ApiId::cudaMemcpy2DAsync:
    case ApiId::cudaMemcpy2DAsync_ptsz:
      Copy2D<cudaMemcpy2DAsync_v3020_params>(params, e);
      e->stream = U64(As<cudaMemcpy2DAsync_v3020_params>(params).stream);
      return;
    case ApiId::cudaMemcpyPeer:
      CopyPeer<cudaMemcpyPeer_v4000_params>(params, e);
      return;
    case ApiId::cudaMemcpyPeerAsync:
      CopyPeer<cudaMemcpyPeerAsync_v4000_params>(params, e);
      e->stream = U64(As<cudaMemcpyPeerAsync_v4000_params>(params).stream);
      return;
    case ApiId::cudaMemset:
    case ApiId::cudaMemset_ptds: {
      const auto& p = As<cudaMemset_v3020_params>(params);
      e->ptr = U64(p.devPtr);
      e->bytes = p.count;
      return;
    }
    case ApiId::cudaMemsetAsync:
    case ApiId::cudaMemsetAsync_ptsz: {
      const auto& p = As<cudaMemsetAsync_v3020_params>(params);
      e->ptr = U64(p.devPtr);
      e->bytes = p.count;
      e->stream = U64(p.stream);
      return;
    }
    case ApiId::cudaMemset2D: {
      const auto& p = As<cudaMemset2D_v3020_params>(params);
      e->ptr = U64(p.devPtr);
      e->bytes = static_cast<uint64_t>(p.width) * p.height;
      return;
    }
    case ApiId::cudaMemset2DAsync: {
      const auto& p = As<cudaMemset2DAsync_v3020_params>(params);
      e->ptr = U64(p.devPtr);
      e->bytes = static_cast<uint64_t>(p.width) * p.height;
      e->stream = U64(p.stream);
      return;
    }
    case ApiId::cudaStreamSynchronize:
    case ApiId::cudaStreamSynchronize_ptsz:
      e->stream = U64(As<cudaStreamSynchronize_v3020_params>(params).stream);
      return;
    case ApiId::cuStreamSynchronize:
    case ApiId::cuStreamSynchronize_ptsz:
      e->stream = U64(As<cuStreamSynchronize_params>(params).hStream);
      return;
    case ApiId::cudaEventSynchronize:
      e->ptr = U64(As<cudaEventSynchronize_v3020_params>(params).event);
      return;
    case ApiId::cudaStreamWaitEvent:
    case ApiId::cudaStreamWaitEvent_ptsz: {
      const auto& p = As<cudaStreamWaitEvent_v3020_params>(params);
      e->stream = U64(p.stream);
      e->ptr = U64(p.event);
      return;
    }
    case ApiId::cudaMalloc: {
      const auto& p = As<cudaMalloc_v3020_params>(params);
      e->ptr = Out(p.devPtr, ok);
      e->bytes = p.size;
      return;
    }
    case ApiId::cudaMallocAsync:
    case ApiId::cudaMallocAsync_ptsz: {
      const auto& p = As<cudaMallocAsync_v11020_params>(params);
      e->ptr = Out(p.devPtr, ok);
      e->bytes = p.size;
      e->stream = U64(p.hStream);
      return;
    }
    case ApiId::cudaMallocFromPoolAsync:
    case ApiId::cudaMallocFromPoolAsync_ptsz: {
      const auto& p = As<cudaMallocFromPoolAsync_v11020_params>(params);
      e->ptr = Out(p.ptr, ok);
      e->bytes = p.size;
      e->stream = U64(p.stream);
      return;
    }
    case ApiId::cudaMallocHost: {
      const auto& p = As<cudaMallocHost_v3020_params>(params);
      e->ptr = Out(p.ptr, ok);
      e->bytes = p.size;
      return;
    }
    case ApiId::cudaHostAlloc: {
      const auto& p = As<cudaHostAlloc_v3020_params>(params);
      e->ptr = Out(p.pHost, ok);
      e->bytes = p.size;
      return;
    }
    case ApiId::cudaMallocManaged: {
      const auto& p = As<cudaMallocManaged_v6000_params>(params);
      e->ptr = Out(p.devPtr, ok);
      e->bytes = p.size;
      return;
    }
    case ApiId::cudaMallocPitch: {
      const auto& p = As<cudaMallocPitch_v3020_params>(params);
      bool known = ok && p.devPtr != nullptr && p.pitch != nullptr;
      e->ptr = known ? U64(*p.devPtr) : 0;
      e->bytes = known ? static_cast<uint64_t>(*p.pitch) * p.height : static_cast<uint64_t>(p.width) * p.height;
      return;
    }
    case ApiId::cudaFree:
      e->ptr = U64(As<cudaFree_v3020_params>(params).devPtr);
      return;
    case ApiId::cudaFreeHost:
      e->ptr = U64(As<cudaFreeHost_v3020_params>(params).ptr);
      return;
    case ApiId::cudaFreeAsync:
    case ApiId::cudaFreeAsync_ptsz: {
      const auto& p = As<cudaFreeAsync_v11020_params>(params);
      e->ptr = U64(p.devPtr);
      e->stream = U64(p.hStream);
      return;
    }
    case ApiId::cuMemAlloc_v2: {
      const auto& p = As<cuMemAlloc_v2_params>(params);
      e->ptr = OutValue(p.dptr, ok);
      e->bytes = p.bytesize;
      return;
    }
    case ApiId::cuMemAllocAsync: {
      const auto& p = As<cuMemAllocAsync_params>(params);
      e->ptr = OutValue(p.dptr, ok);
      e->bytes = p.bytesize;
      e->stream = U64(p.hStream);
      return;
    }
    case ApiId::cuMemFree_v2:
      e->ptr = As<cuMemFree_v2_params>(params).dptr;
      return;
    case ApiId::cuMemFreeAsync: {
      const auto& p = As<cuMemFreeAsync_params>(params);
      e->ptr = p.dptr;
      e->stream = U64(p.hStream);
      return;
    }
    case ApiId::cuMemCreate: {
      const auto& p = As<cuMemCreate_params>(params);
      e->ptr = OutValue(p.handle, ok);
      e->bytes = p.size;
      e->device = p.prop != nullptr && p.prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                      ? static_cast<int16_t>(p.prop->location.id)
                      : -1;
      return;
    }
    case ApiId::cuMemRelease:
      e->ptr = As<cuMemRelease_params>(params).handle;
      return;
    case ApiId::cuMemMap: {
      const auto& p = As<cuMemMap_params>(params);
      e->ptr = p.ptr;
      e->bytes = p.size;
      return;
    }
    case ApiId::cuMemUnmap: {
      const auto& p = As<cuMemUnmap_params>(params);
      e->ptr = p.ptr;
      e->bytes = p.size;
      return;
    }
    default:
      return;  // launches by handle (no published struct), synchronizes of the device, the profiler switch
  }
}

bool NamesCurrentDevice(ApiId id) {
  switch (id) {
    case ApiId::cudaMalloc:
    case ApiId::cudaMallocAsync:
    case ApiId::cudaMallocAsync_ptsz:
    case ApiId::cudaMallocFromPoolAsync:
    case ApiId::cudaMallocFromPoolAsync_ptsz:
    case ApiId::cudaMallocManaged:
    case ApiId::cudaMallocPitch:
    case ApiId::cuMemAlloc_v2:
    case ApiId::cuMemAllocAsync:
      return true;
    default:
      return false;
  }
}

uint32_t CopyDetail(ApiId id, const void* params) {
  if (params == nullptr || ApiKindOf(id) != ApiKind::kMemcpy) return 0;
  HostEvent e{};
  FillArguments(id, params, /*ok=*/false, &e);
  // Peer copies: a wrapper feeds no kind (its arguments have none).
  if (id == ApiId::cudaMemcpyPeer || id == ApiId::cudaMemcpyPeerAsync) return 0;
  return static_cast<uint32_t>(e.copy_kind) + 1;
}

}  // namespace prof::cupti
