// Driver allocator wrappers, reached two ways:
//  - directly (a program or library linked against libcuda calls
//    cuMemAlloc_v2 and binds to our exported symbol), and
//  - through cuGetProcAddress / cudaGetDriverEntryPoint, which is how the
//    runtime and frameworks reach the driver since CUDA 11.3: we hand back
//    our own wrapper and keep the pointer the driver returned, one slot per
//    (function, per-thread-stream flavour), in ProcSlot.
// When the runtime itself calls the driver from inside a wrapped runtime
// call, the nesting guard in intercept.h keeps it from being counted twice.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <utility>

#include "base/export.h"
#include "collectors/interpose/intercept.h"
#include "collectors/interpose/real_functions.h"

namespace prof::interpose {
namespace {

constexpr CUresult kMissing = CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;

// Functions handed out through cuGetProcAddress, and their base names there.
struct ProcEntry {
  const char* symbol;  // as passed to cuGetProcAddress ("cuMemAlloc")
  ApiId id;
  int min_version;     // below it the driver returns an older ABI: not wrapped
};
constexpr ProcEntry kProcEntries[] = {
    {"cuMemAlloc", ApiId::cuMemAlloc_v2, 3020},   {"cuMemFree", ApiId::cuMemFree_v2, 3020},
    {"cuMemAllocAsync", ApiId::cuMemAllocAsync, 0}, {"cuMemFreeAsync", ApiId::cuMemFreeAsync, 0},
    {"cuMemCreate", ApiId::cuMemCreate, 0},       {"cuMemRelease", ApiId::cuMemRelease, 0},
    {"cuMemMap", ApiId::cuMemMap, 0},             {"cuMemUnmap", ApiId::cuMemUnmap, 0},
};
constexpr int kProcCount = sizeof(kProcEntries) / sizeof(kProcEntries[0]);

// Source of the real pointer: kDirect = our symbol's RTLD_NEXT/loaded-lib
// lookup; 0..2*kProcCount-1 = what cuGetProcAddress returned (2 per entry:
// legacy and per-thread default stream).
constexpr int kDirect = -1;
std::atomic<void*> g_proc_real[kProcCount * 2];

template <ApiId kId, int kSource, typename Fn>
Fn RealFor() {
  if constexpr (kSource == kDirect) {
    return Loaded<Fn>(kId);
  } else {
    return reinterpret_cast<Fn>(g_proc_real[kSource].load(std::memory_order_acquire));
  }
}

template <int kSource>
constexpr uint8_t FlagsFor() {
  return kSource == kDirect ? kHostEventDriver : (kHostEventDriver | kHostEventViaProcAddr);
}

int16_t CurrentDriverDevice() {
  using Fn = CUresult (*)(CUdevice*);
  auto get = Real<Fn>(Extra::kCuCtxGetDevice);
  CUdevice device = -1;
  OwnCudaCall own;  // libprof's call, not the application's: never shown
  if (get == nullptr || get(&device) != CUDA_SUCCESS) return -1;
  return static_cast<int16_t>(device);
}

template <int kSource>
CUresult MemAlloc(CUdeviceptr* ptr, size_t bytes) {
  using Fn = CUresult (*)(CUdeviceptr*, size_t);
  return Intercept<ApiId::cuMemAlloc_v2, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemAlloc_v2, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult r) {
        e.ptr = (r == CUDA_SUCCESS && ptr != nullptr) ? *ptr : 0;
        e.bytes = bytes;
        e.device = CurrentDriverDevice();
      },
      ptr, bytes);
}

template <int kSource>
CUresult MemFree(CUdeviceptr ptr) {
  using Fn = CUresult (*)(CUdeviceptr);
  return Intercept<ApiId::cuMemFree_v2, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemFree_v2, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult) { e.ptr = ptr; }, ptr);
}

template <int kSource>
CUresult MemAllocAsync(CUdeviceptr* ptr, size_t bytes, CUstream stream) {
  using Fn = CUresult (*)(CUdeviceptr*, size_t, CUstream);
  return Intercept<ApiId::cuMemAllocAsync, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemAllocAsync, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult r) {
        e.ptr = (r == CUDA_SUCCESS && ptr != nullptr) ? *ptr : 0;
        e.bytes = bytes;
        e.stream = reinterpret_cast<uint64_t>(stream);
        e.device = CurrentDriverDevice();
      },
      ptr, bytes, stream);
}

template <int kSource>
CUresult MemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  using Fn = CUresult (*)(CUdeviceptr, CUstream);
  return Intercept<ApiId::cuMemFreeAsync, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemFreeAsync, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult) {
        e.ptr = ptr;
        e.stream = reinterpret_cast<uint64_t>(stream);
      },
      ptr, stream);
}

// VMM: the physical allocation handle is what is "allocated"; it is the key
// of the live table until cuMemRelease.
template <int kSource>
CUresult MemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                   unsigned long long flags) {
  using Fn = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
  return Intercept<ApiId::cuMemCreate, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemCreate, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult r) {
        e.ptr = (r == CUDA_SUCCESS && handle != nullptr) ? static_cast<uint64_t>(*handle) : 0;
        e.bytes = size;
        e.device = (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
                       ? static_cast<int16_t>(prop->location.id)
                       : -1;
      },
      handle, size, prop, flags);
}

template <int kSource>
CUresult MemRelease(CUmemGenericAllocationHandle handle) {
  using Fn = CUresult (*)(CUmemGenericAllocationHandle);
  return Intercept<ApiId::cuMemRelease, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemRelease, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult) { e.ptr = static_cast<uint64_t>(handle); }, handle);
}

template <int kSource>
CUresult MemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags) {
  using Fn = CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  return Intercept<ApiId::cuMemMap, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemMap, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult) {
        e.ptr = ptr;
        e.bytes = size;
      },
      ptr, size, offset, handle, flags);
}

// One interposed symbol per entry point, each with its own fields: the wrapper's shape, not shared logic.
template <int kSource>
CUresult MemUnmap(CUdeviceptr ptr, size_t size) {
  using Fn = CUresult (*)(CUdeviceptr, size_t);
  return Intercept<ApiId::cuMemUnmap, CUresult>(
      kMissing, FlagsFor<kSource>(), RealFor<ApiId::cuMemUnmap, kSource, Fn>(), kNoName,
      [=](HostEvent& e, CUresult) {
        e.ptr = ptr;
        e.bytes = size;
      },
      ptr, size);
}

// Our wrapper for proc entry i, flavour f (source 2*i+f).
template <int kSource>
void* ProcWrapper() {
  constexpr int entry = kSource / 2;
  switch (kProcEntries[entry].id) {
    case ApiId::cuMemAlloc_v2: return reinterpret_cast<void*>(&MemAlloc<kSource>);
    case ApiId::cuMemFree_v2: return reinterpret_cast<void*>(&MemFree<kSource>);
    case ApiId::cuMemAllocAsync: return reinterpret_cast<void*>(&MemAllocAsync<kSource>);
    case ApiId::cuMemFreeAsync: return reinterpret_cast<void*>(&MemFreeAsync<kSource>);
    case ApiId::cuMemCreate: return reinterpret_cast<void*>(&MemCreate<kSource>);
    case ApiId::cuMemRelease: return reinterpret_cast<void*>(&MemRelease<kSource>);
    case ApiId::cuMemMap: return reinterpret_cast<void*>(&MemMap<kSource>);
    case ApiId::cuMemUnmap: return reinterpret_cast<void*>(&MemUnmap<kSource>);
    default: return nullptr;
  }
}

template <int... kSources>
constexpr auto MakeWrapperTable(std::integer_sequence<int, kSources...>) {
  return std::array<void* (*)(), sizeof...(kSources)>{&ProcWrapper<kSources>...};
}
const auto kProcWrappers = MakeWrapperTable(std::make_integer_sequence<int, kProcCount * 2>{});

}  // namespace

// If symbol is one we wrap and the lookup succeeded, swap *pfn for our
// wrapper, remembering the driver's pointer for it.
void SubstituteProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  if (symbol == nullptr || pfn == nullptr || *pfn == nullptr) return;
  for (int i = 0; i < kProcCount; ++i) {
    if (std::strcmp(symbol, kProcEntries[i].symbol) != 0) continue;
    if (version < kProcEntries[i].min_version) return;
    int flavour = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? 1 : 0;
    int source = 2 * i + flavour;
    void* ours = kProcWrappers[source]();
    if (*pfn == ours) return;  // asked twice: keep the driver's pointer
    g_proc_real[source].store(*pfn, std::memory_order_release);
    *pfn = ours;
    return;
  }
}

}  // namespace prof::interpose

namespace ip = prof::interpose;

extern "C" {

EXPORT_SYMBOL CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) { return ip::MemAlloc<ip::kDirect>(ptr, bytes); }
EXPORT_SYMBOL CUresult cuMemFree_v2(CUdeviceptr ptr) { return ip::MemFree<ip::kDirect>(ptr); }
EXPORT_SYMBOL CUresult cuMemAllocAsync(CUdeviceptr* ptr, size_t bytes, CUstream stream) {
  return ip::MemAllocAsync<ip::kDirect>(ptr, bytes, stream);
}
EXPORT_SYMBOL CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) { return ip::MemFreeAsync<ip::kDirect>(ptr, stream); }
EXPORT_SYMBOL CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                   unsigned long long flags) {
  return ip::MemCreate<ip::kDirect>(handle, size, prop, flags);
}
EXPORT_SYMBOL CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { return ip::MemRelease<ip::kDirect>(handle); }
EXPORT_SYMBOL CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                unsigned long long flags) {
  return ip::MemMap<ip::kDirect>(ptr, size, offset, handle, flags);
}
EXPORT_SYMBOL CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) { return ip::MemUnmap<ip::kDirect>(ptr, size); }

// The profiler switch called directly by a driver-API program
// (PROF_RANGE=cudaProfilerApi). The runtime's cudaProfilerStart reaches the
// driver's through cuGetProcAddress, unwrapped: its own wrapper observed it.
EXPORT_SYMBOL CUresult cuProfilerStart(void) {
  using Fn = CUresult (*)();
  return ip::Intercept<prof::ApiId::cuProfilerStart, CUresult>(ip::kMissing, prof::kHostEventDriver,
                                                         ip::Loaded<Fn>(prof::ApiId::cuProfilerStart), ip::kNoName,
                                                         [](prof::HostEvent&, CUresult) {});
}
EXPORT_SYMBOL CUresult cuProfilerStop(void) {
  using Fn = CUresult (*)();
  return ip::Intercept<prof::ApiId::cuProfilerStop, CUresult>(ip::kMissing, prof::kHostEventDriver,
                                                        ip::Loaded<Fn>(prof::ApiId::cuProfilerStop), ip::kNoName,
                                                        [](prof::HostEvent&, CUresult) {});
}

// The driver's initialization, called by a driver-API program through the
// global scope: a step source that counts calls watches them through CUPTI
// from here on (no wrapper sees cuLaunchKernel or cuStreamSynchronize), as
// under CUDA_INJECTION64_PATH, where the driver calls InitializeInjection
// from cuInit. Not an event.
EXPORT_SYMBOL CUresult cuInit(unsigned int flags) {
  using Fn = CUresult (*)(unsigned int);
  auto real = ip::Real<Fn>(ip::Extra::kCuInit);
  if (real == nullptr) return ip::kMissing;
  CUresult r = real(flags);
  if (r == CUDA_SUCCESS) prof::hooks::NoteCudaInitialized();
  return r;
}

// CUDA 12+ ABI (cuda.h maps cuGetProcAddress to this).
EXPORT_SYMBOL CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* status) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto real = ip::Real<Fn>(ip::Extra::kCuGetProcAddress_v2);
  if (real == nullptr) return ip::kMissing;
  CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS) ip::SubstituteProcAddress(symbol, pfn, version, flags);
  return r;
}

// CUDA 11.3-11.x ABI, still exported by the driver (cuda.h maps the name
// to _v2, so the macro goes first).
#undef cuGetProcAddress
EXPORT_SYMBOL CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto real = ip::Real<Fn>(ip::Extra::kCuGetProcAddress);
  if (real == nullptr) return ip::kMissing;
  CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS) ip::SubstituteProcAddress(symbol, pfn, version, flags);
  return r;
}

// The runtime's door to the same table (PyTorch and others use it).
EXPORT_SYMBOL cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** pfn, unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* status) {
  using Fn = cudaError_t (*)(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*);
  auto real = ip::Real<Fn>(ip::Extra::kCudaGetDriverEntryPoint);
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  cudaError_t r = real(symbol, pfn, flags, status);
  // Without a version the runtime hands out the newest ABI it knows.
  if (r == cudaSuccess) ip::SubstituteProcAddress(symbol, pfn, CUDA_VERSION, flags);
  return r;
}

EXPORT_SYMBOL cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** pfn, unsigned int version,
                                                           unsigned long long flags,
                                                           cudaDriverEntryPointQueryResult* status) {
  using Fn = cudaError_t (*)(const char*, void**, unsigned int, unsigned long long, cudaDriverEntryPointQueryResult*);
  auto real = ip::Real<Fn>(ip::Extra::kCudaGetDriverEntryPointByVersion);
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  cudaError_t r = real(symbol, pfn, version, flags, status);
  if (r == cudaSuccess) ip::SubstituteProcAddress(symbol, pfn, static_cast<int>(version), flags);
  return r;
}

}  // extern "C"
