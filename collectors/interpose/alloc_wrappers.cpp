// CUDA runtime allocator wrappers. Allocation tracking is always on (the
// live table must be complete when a window opens), so these leave the fast
// path whenever the agent runs; the cost is one table update per call,
// small next to what the runtime does in an allocation.
#include <cuda_runtime_api.h>

#include "base/export.h"
#include "collectors/interpose/intercept.h"
#include "collectors/interpose/real_functions.h"

namespace prof::interpose {
namespace {

constexpr cudaError_t kMissing = cudaErrorSharedObjectSymbolNotFound;

uint64_t U64(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Device of an allocation made by the calling thread just now. A process
// that sees one device allocates on device 0, the only ordinal there is, so
// then nothing is asked; with more, the runtime is asked every time (the
// current device may change by paths no wrapper sees: a context switched
// through a driver entry point, another library's cudaSetDevice).
int16_t CurrentDevice() {
  int count = internal::g_device_count.load(std::memory_order_relaxed);
  if (count == 1) return 0;
  using Fn = cudaError_t (*)(int*);
  auto get = Real<Fn>(Extra::kCudaGetDevice);
  int device = -1;
  OwnCudaCall own;  // libprof's calls, not the application's: never shown
  if (get == nullptr || get(&device) != cudaSuccess) return -1;
  // The count, once: after the program's own allocation (CUDA initialised,
  // CUDA_VISIBLE_DEVICES read by the program's first call, not ours), and
  // outside windows (CUPTI's callbacks hide cudaGetDevice, not this call,
  // from a window's RUNTIME records).
  if (count == 0 && (LoadHotBits() & kHotRecording) == 0) {
    auto get_count = Real<Fn>(Extra::kCudaGetDeviceCount);
    int n = 0;
    bool known = get_count != nullptr && get_count(&n) == cudaSuccess && n > 0;
    internal::g_device_count.store(known ? n : -1, std::memory_order_relaxed);
  }
  return static_cast<int16_t>(device);
}

// A stream-ordered allocation's event (cudaMallocAsync, cudaMallocFromPoolAsync).
inline void FillStreamAllocation(HostEvent& e, cudaError_t r, void** ptr, size_t size, cudaStream_t stream) {
  e.ptr = (r == cudaSuccess && ptr != nullptr) ? U64(*ptr) : 0;
  e.bytes = size;
  e.stream = U64(stream);
  e.device = CurrentDevice();
}

template <ApiId kId>
cudaError_t MallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void**, size_t, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t r) { FillStreamAllocation(e, r, ptr, size, stream); },
      ptr, size, stream);
}

template <ApiId kId>
cudaError_t FreeAsync(void* ptr, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(ptr);
        e.stream = U64(stream);
      },
      ptr, stream);
}

template <ApiId kId>
cudaError_t MallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void**, size_t, cudaMemPool_t, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t r) { FillStreamAllocation(e, r, ptr, size, stream); },
      ptr, size, pool, stream);
}

// Free of one pointer (cudaFree, cudaFreeHost).
template <ApiId kId>
cudaError_t Free(void* ptr) {
  using Fn = cudaError_t (*)(void*);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName, [=](HostEvent& e, cudaError_t) { e.ptr = U64(ptr); }, ptr);
}

}  // namespace
}  // namespace prof::interpose

using prof::ApiId;
namespace ip = prof::interpose;

extern "C" {

EXPORT_SYMBOL cudaError_t cudaMalloc(void** ptr, size_t size) {
  using Fn = cudaError_t (*)(void**, size_t);
  return ip::Intercept<ApiId::cudaMalloc, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMalloc), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t r) {
        e.ptr = (r == cudaSuccess && ptr != nullptr) ? reinterpret_cast<uint64_t>(*ptr) : 0;
        e.bytes = size;
        e.device = ip::CurrentDevice();
      },
      ptr, size);
}

EXPORT_SYMBOL cudaError_t cudaFree(void* ptr) { return ip::Free<ApiId::cudaFree>(ptr); }
EXPORT_SYMBOL cudaError_t cudaFreeHost(void* ptr) { return ip::Free<ApiId::cudaFreeHost>(ptr); }

EXPORT_SYMBOL cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  return ip::MallocAsync<ApiId::cudaMallocAsync>(ptr, size, stream);
}
EXPORT_SYMBOL cudaError_t cudaMallocAsync_ptsz(void** ptr, size_t size, cudaStream_t stream) {
  return ip::MallocAsync<ApiId::cudaMallocAsync_ptsz>(ptr, size, stream);
}
EXPORT_SYMBOL cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) { return ip::FreeAsync<ApiId::cudaFreeAsync>(ptr, stream); }
EXPORT_SYMBOL cudaError_t cudaFreeAsync_ptsz(void* ptr, cudaStream_t stream) {
  return ip::FreeAsync<ApiId::cudaFreeAsync_ptsz>(ptr, stream);
}
EXPORT_SYMBOL cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  return ip::MallocFromPoolAsync<ApiId::cudaMallocFromPoolAsync>(ptr, size, pool, stream);
}
EXPORT_SYMBOL cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  return ip::MallocFromPoolAsync<ApiId::cudaMallocFromPoolAsync_ptsz>(ptr, size, pool, stream);
}

// One interposed symbol per entry point, each with its own fields: the wrapper's shape, not shared logic.
EXPORT_SYMBOL cudaError_t cudaMallocHost(void** ptr, size_t size) {
  using Fn = cudaError_t (*)(void**, size_t);
  return ip::Intercept<ApiId::cudaMallocHost, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMallocHost), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t r) {
        e.ptr = (r == cudaSuccess && ptr != nullptr) ? reinterpret_cast<uint64_t>(*ptr) : 0;
        e.bytes = size;
      },
      ptr, size);
}

EXPORT_SYMBOL cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  using Fn = cudaError_t (*)(void**, size_t, unsigned int);
  return ip::Intercept<ApiId::cudaHostAlloc, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaHostAlloc), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t r) {
        e.ptr = (r == cudaSuccess && ptr != nullptr) ? reinterpret_cast<uint64_t>(*ptr) : 0;
        e.bytes = size;
      },
      ptr, size, flags);
}

EXPORT_SYMBOL cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  using Fn = cudaError_t (*)(void**, size_t, unsigned int);
  return ip::Intercept<ApiId::cudaMallocManaged, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMallocManaged), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t r) {
        e.ptr = (r == cudaSuccess && ptr != nullptr) ? reinterpret_cast<uint64_t>(*ptr) : 0;
        e.bytes = size;
        e.device = ip::CurrentDevice();
      },
      ptr, size, flags);
}

EXPORT_SYMBOL cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  using Fn = cudaError_t (*)(void**, size_t*, size_t, size_t);
  return ip::Intercept<ApiId::cudaMallocPitch, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMallocPitch), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t r) {
        bool ok = r == cudaSuccess && ptr != nullptr && pitch != nullptr;
        e.ptr = ok ? reinterpret_cast<uint64_t>(*ptr) : 0;
        e.bytes = ok ? static_cast<uint64_t>(*pitch) * height : static_cast<uint64_t>(width) * height;
        e.device = ip::CurrentDevice();
      },
      ptr, pitch, width, height);
}

}  // extern "C"
