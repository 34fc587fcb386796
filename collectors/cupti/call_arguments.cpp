#include "collectors/cupti/call_arguments.h"

#include <cupti.h>  // with the toolkit's generated_cuda*_meta.h parameter structs

#include <array>
#include <cstddef>

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

// An allocator's out-parameter, read once the call succeeded.
template <typename T>
uint64_t Out(T* const* where, bool ok) {
  return ok && where != nullptr ? U64(*where) : 0;
}
template <typename T>
uint64_t OutValue(T* where, bool ok) {
  return ok && where != nullptr ? static_cast<uint64_t>(*where) : 0;
}

// What a wrapper fills, by the shape of a call's parameters: one filler per
// shape, and a table (kRules below) naming each call's filler.
using Filler = void (*)(const void* params, bool ok, HostEvent* e);

// A filler, then the stream the struct names as `stream` or `hStream`.
template <Filler F, typename P>
void WithStream(const void* params, bool ok, HostEvent* e) {
  F(params, ok, e);
  e->stream = U64(As<P>(params).stream);
}
template <Filler F, typename P>
void WithHStream(const void* params, bool ok, HostEvent* e) {
  F(params, ok, e);
  e->stream = U64(As<P>(params).hStream);
}

// Launches: the function (or graph) launched and its stream.
template <typename P>
void Launch(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.func);
  e->stream = U64(p.stream);
}
void LaunchExC(const void* params, bool, HostEvent* e) {
  const auto& p = As<cudaLaunchKernelExC_v11060_params>(params);
  e->ptr = U64(p.func);
  e->stream = p.config != nullptr ? U64(p.config->stream) : 0;
}
void GraphLaunch(const void* params, bool, HostEvent* e) {
  const auto& p = As<cudaGraphLaunch_v10000_params>(params);
  e->ptr = U64(p.graphExec);
  e->stream = U64(p.stream);
}
// One reader per params struct: the fields' names differ (f, hStream, config).
// cuLaunchCooperativeKernel's struct is cuLaunchKernel's without `extra`.
void DriverLaunch(const void* params, bool, HostEvent* e) {
  const auto& p = As<cuLaunchCooperativeKernel_params>(params);
  e->ptr = U64(p.f);
  e->stream = U64(p.hStream);
}
void DriverLaunchEx(const void* params, bool, HostEvent* e) {
  const auto& p = As<cuLaunchKernelEx_params>(params);
  e->ptr = U64(p.f);
  e->stream = p.config != nullptr ? U64(p.config->hStream) : 0;
}

// Copies and memsets: destination, bytes, cudaMemcpyKind.
template <typename P>
void Copy(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.dst);
  e->bytes = p.count;
  e->copy_kind = static_cast<uint8_t>(p.kind);
}
template <typename P>
void Copy2D(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.dst);
  e->bytes = static_cast<uint64_t>(p.width) * p.height;
  e->copy_kind = static_cast<uint8_t>(p.kind);
}
template <typename P>
void CopyPeer(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.dst);
  e->bytes = p.count;
  e->device = static_cast<int16_t>(p.dstDevice);
  e->copy_kind = static_cast<uint8_t>(cudaMemcpyDeviceToDevice);
}
template <typename P>
void Set(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.devPtr);
  e->bytes = p.count;
}
template <typename P>
void Set2D(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = U64(p.devPtr);
  e->bytes = static_cast<uint64_t>(p.width) * p.height;
}

// Synchronizes: what is waited on.
void Nothing(const void*, bool, HostEvent*) {}
void EventSync(const void* params, bool, HostEvent* e) {
  e->ptr = U64(As<cudaEventSynchronize_v3020_params>(params).event);
}
void StreamWaitEvent(const void* params, bool, HostEvent* e) {
  const auto& p = As<cudaStreamWaitEvent_v3020_params>(params);
  e->stream = U64(p.stream);
  e->ptr = U64(p.event);
}

// Allocations: the pointer written (member kOut) once the call succeeded,
// the size; frees: the pointer.
template <typename P, auto kOut>
void Alloc(const void* params, bool ok, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = Out(p.*kOut, ok);
  e->bytes = p.size;
}
void MallocPitch(const void* params, bool ok, HostEvent* e) {
  const auto& p = As<cudaMallocPitch_v3020_params>(params);
  bool known = ok && p.devPtr != nullptr && p.pitch != nullptr;
  e->ptr = known ? U64(*p.devPtr) : 0;
  e->bytes = known ? static_cast<uint64_t>(*p.pitch) * p.height : static_cast<uint64_t>(p.width) * p.height;
}
template <typename P, auto kPtr>
void Free(const void* params, bool, HostEvent* e) {
  e->ptr = U64(As<P>(params).*kPtr);
}
template <typename P>
void DriverAlloc(const void* params, bool ok, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = OutValue(p.dptr, ok);
  e->bytes = p.bytesize;
}
template <typename P>
void DriverFree(const void* params, bool, HostEvent* e) {
  e->ptr = As<P>(params).dptr;
}
void MemCreate(const void* params, bool ok, HostEvent* e) {
  const auto& p = As<cuMemCreate_params>(params);
  e->ptr = OutValue(p.handle, ok);
  e->bytes = p.size;
  e->device = p.prop != nullptr && p.prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                  ? static_cast<int16_t>(p.prop->location.id)
                  : -1;
}
void MemRelease(const void* params, bool, HostEvent* e) { e->ptr = As<cuMemRelease_params>(params).handle; }
template <typename P>
void MapRange(const void* params, bool, HostEvent* e) {
  const auto& p = As<P>(params);
  e->ptr = p.ptr;
  e->bytes = p.size;
}

struct Rule {
  ApiId id;
  Filler fill;
};

// Short names for the params structs the table below reads: aliases, not logic.
using LaunchP = cudaLaunchKernel_v7000_params;
using CopyAsyncP = cudaMemcpyAsync_v3020_params;
using Copy2DAsyncP = cudaMemcpy2DAsync_v3020_params;
using PeerAsyncP = cudaMemcpyPeerAsync_v4000_params;
using SetAsyncP = cudaMemsetAsync_v3020_params;
using Set2DAsyncP = cudaMemset2DAsync_v3020_params;
using MallocAsyncP = cudaMallocAsync_v11020_params;
using PoolAsyncP = cudaMallocFromPoolAsync_v11020_params;
using FreeAsyncP = cudaFreeAsync_v11020_params;

// Calls not listed fill nothing: launches by handle (no published struct),
// synchronizes of the device or context, the profiler switch.
constexpr Rule kRules[] = {
    {ApiId::cudaLaunchKernel, Launch<LaunchP>},
    {ApiId::cudaLaunchKernel_ptsz, Launch<LaunchP>},
    {ApiId::cudaLaunchCooperativeKernel, Launch<LaunchP>},
    {ApiId::cudaLaunchCooperativeKernel_ptsz, Launch<LaunchP>},
    {ApiId::cudaLaunchKernelExC, LaunchExC},
    {ApiId::cudaLaunchKernelExC_ptsz, LaunchExC},
    {ApiId::cudaGraphLaunch, GraphLaunch},
    {ApiId::cudaGraphLaunch_ptsz, GraphLaunch},
    {ApiId::cuLaunchKernel, DriverLaunch},
    {ApiId::cuLaunchKernel_ptsz, DriverLaunch},
    {ApiId::cuLaunchCooperativeKernel, DriverLaunch},
    {ApiId::cuLaunchCooperativeKernel_ptsz, DriverLaunch},
    {ApiId::cuLaunchKernelEx, DriverLaunchEx},
    {ApiId::cuLaunchKernelEx_ptsz, DriverLaunchEx},
    {ApiId::cudaMemcpy, Copy<cudaMemcpy_v3020_params>},
    {ApiId::cudaMemcpy_ptds, Copy<cudaMemcpy_v3020_params>},
    {ApiId::cudaMemcpyAsync, WithStream<Copy<CopyAsyncP>, CopyAsyncP>},
    {ApiId::cudaMemcpyAsync_ptsz, WithStream<Copy<CopyAsyncP>, CopyAsyncP>},
    {ApiId::cudaMemcpy2D, Copy2D<cudaMemcpy2D_v3020_params>},
    {ApiId::cudaMemcpy2D_ptds, Copy2D<cudaMemcpy2D_v3020_params>},
    {ApiId::cudaMemcpy2DAsync, WithStream<Copy2D<Copy2DAsyncP>, Copy2DAsyncP>},
    {ApiId::cudaMemcpy2DAsync_ptsz, WithStream<Copy2D<Copy2DAsyncP>, Copy2DAsyncP>},
    {ApiId::cudaMemcpyPeer, CopyPeer<cudaMemcpyPeer_v4000_params>},
    {ApiId::cudaMemcpyPeerAsync, WithStream<CopyPeer<PeerAsyncP>, PeerAsyncP>},
    {ApiId::cudaMemset, Set<cudaMemset_v3020_params>},
    {ApiId::cudaMemset_ptds, Set<cudaMemset_v3020_params>},
    {ApiId::cudaMemsetAsync, WithStream<Set<SetAsyncP>, SetAsyncP>},
    {ApiId::cudaMemsetAsync_ptsz, WithStream<Set<SetAsyncP>, SetAsyncP>},
    {ApiId::cudaMemset2D, Set2D<cudaMemset2D_v3020_params>},
    {ApiId::cudaMemset2DAsync, WithStream<Set2D<Set2DAsyncP>, Set2DAsyncP>},
    {ApiId::cudaStreamSynchronize, WithStream<Nothing, cudaStreamSynchronize_v3020_params>},
    {ApiId::cudaStreamSynchronize_ptsz, WithStream<Nothing, cudaStreamSynchronize_v3020_params>},
    {ApiId::cuStreamSynchronize, WithHStream<Nothing, cuStreamSynchronize_params>},
    {ApiId::cuStreamSynchronize_ptsz, WithHStream<Nothing, cuStreamSynchronize_params>},
    {ApiId::cudaEventSynchronize, EventSync},
    {ApiId::cudaStreamWaitEvent, StreamWaitEvent},
    {ApiId::cudaStreamWaitEvent_ptsz, StreamWaitEvent},
    {ApiId::cudaMalloc, Alloc<cudaMalloc_v3020_params, &cudaMalloc_v3020_params::devPtr>},
    {ApiId::cudaMallocAsync, WithHStream<Alloc<MallocAsyncP, &MallocAsyncP::devPtr>, MallocAsyncP>},
    {ApiId::cudaMallocAsync_ptsz, WithHStream<Alloc<MallocAsyncP, &MallocAsyncP::devPtr>, MallocAsyncP>},
    {ApiId::cudaMallocFromPoolAsync, WithStream<Alloc<PoolAsyncP, &PoolAsyncP::ptr>, PoolAsyncP>},
    {ApiId::cudaMallocFromPoolAsync_ptsz, WithStream<Alloc<PoolAsyncP, &PoolAsyncP::ptr>, PoolAsyncP>},
    {ApiId::cudaMallocHost, Alloc<cudaMallocHost_v3020_params, &cudaMallocHost_v3020_params::ptr>},
    {ApiId::cudaHostAlloc, Alloc<cudaHostAlloc_v3020_params, &cudaHostAlloc_v3020_params::pHost>},
    {ApiId::cudaMallocManaged, Alloc<cudaMallocManaged_v6000_params, &cudaMallocManaged_v6000_params::devPtr>},
    {ApiId::cudaMallocPitch, MallocPitch},
    {ApiId::cudaFree, Free<cudaFree_v3020_params, &cudaFree_v3020_params::devPtr>},
    {ApiId::cudaFreeHost, Free<cudaFreeHost_v3020_params, &cudaFreeHost_v3020_params::ptr>},
    {ApiId::cudaFreeAsync, WithHStream<Free<FreeAsyncP, &FreeAsyncP::devPtr>, FreeAsyncP>},
    {ApiId::cudaFreeAsync_ptsz, WithHStream<Free<FreeAsyncP, &FreeAsyncP::devPtr>, FreeAsyncP>},
    {ApiId::cuMemAlloc_v2, DriverAlloc<cuMemAlloc_v2_params>},
    {ApiId::cuMemAllocAsync, WithHStream<DriverAlloc<cuMemAllocAsync_params>, cuMemAllocAsync_params>},
    {ApiId::cuMemFree_v2, DriverFree<cuMemFree_v2_params>},
    {ApiId::cuMemFreeAsync, WithHStream<DriverFree<cuMemFreeAsync_params>, cuMemFreeAsync_params>},
    {ApiId::cuMemCreate, MemCreate},
    {ApiId::cuMemRelease, MemRelease},
    {ApiId::cuMemMap, MapRange<cuMemMap_params>},
    {ApiId::cuMemUnmap, MapRange<cuMemUnmap_params>},
};

// ApiId -> its filler (nullptr: none), built at compile time.
template <size_t N>
constexpr std::array<Filler, kApiCount> FillersOf(const Rule (&rules)[N]) {
  std::array<Filler, kApiCount> fillers{};
  for (const Rule& rule : rules) fillers[static_cast<size_t>(rule.id)] = rule.fill;
  return fillers;
}
constexpr std::array<Filler, kApiCount> kFillers = FillersOf(kRules);

}  // namespace

void FillArguments(ApiId id, const void* params, bool ok, HostEvent* e) {
  if (params == nullptr || static_cast<size_t>(id) >= kApiCount) return;
  if (Filler fill = kFillers[static_cast<size_t>(id)]) fill(params, ok, e);
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
