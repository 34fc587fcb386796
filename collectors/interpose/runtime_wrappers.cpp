// CUDA runtime wrappers: launches, copies, memsets, synchronization and the
// kernel-name registration. Each forwards its arguments unchanged and
// returns the real result unchanged. The _ptsz/_ptds variants (per-thread
// default stream) share the body of their base function.
#include <cuda_runtime_api.h>

#include <type_traits>

#include "base/export.h"
#include "base/kernel_registry.h"
#include "base/strings.h"
#include "collectors/interpose/intercept.h"
#include "collectors/interpose/real_functions.h"

namespace prof::interpose {
namespace {

constexpr cudaError_t kMissing = cudaErrorSharedObjectSymbolNotFound;

uint64_t U64(const void* p) { return reinterpret_cast<uint64_t>(p); }

// A copy's detail for the step markers: its cudaMemcpyKind + 1.
template <typename T>
uint32_t KindOrZero(T v) {
  if constexpr (std::is_same_v<T, cudaMemcpyKind>) {
    return static_cast<uint32_t>(v) + 1;
  } else {
    return 0;
  }
}
constexpr auto KindDetail = [](auto... a) -> uint32_t { return (KindOrZero(a) + ...); };

// ---- launches ----

template <ApiId kId>
cudaError_t LaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  using Fn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), [](const void* f, auto...) { return f; },
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(func);
        e.stream = U64(stream);
      },
      func, grid, block, args, shared, stream);
}

template <ApiId kId>
cudaError_t LaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  using Fn = cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), [](const cudaLaunchConfig_t*, const void* f, void**) { return f; },
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(func);
        e.stream = config != nullptr ? U64(config->stream) : 0;
      },
      config, func, args);
}

// nvcc 13: kernels are launched by cudaKernel_t handle from __cudaGetKernel.
template <ApiId kId>
cudaError_t LaunchByHandle(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  using Fn = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), [](cudaKernel_t k, auto...) -> const void* { return k; },
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(kernel);
        e.stream = U64(stream);
      },
      kernel, grid, block, args, shared, stream);
}

// One interposed symbol per entry point, each with its own fields: the wrapper's shape, not shared logic.
template <ApiId kId>
cudaError_t GraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  using Fn = cudaError_t (*)(cudaGraphExec_t, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(exec);
        e.stream = U64(stream);
      },
      exec, stream);
}

// ---- copies ----

// What every copy's event holds: destination, bytes, kind (the stream is
// added by the asynchronous ones).
inline void FillCopy(HostEvent& e, void* dst, uint64_t bytes, cudaMemcpyKind kind) {
  e.ptr = U64(dst);
  e.bytes = bytes;
  e.copy_kind = static_cast<uint8_t>(kind);
}

template <ApiId kId>
cudaError_t Memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  using Fn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), KindDetail,
      [=](HostEvent& e, cudaError_t) { FillCopy(e, dst, count, kind); }, dst, src, count, kind);
}

template <ApiId kId>
cudaError_t MemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), KindDetail,
      [=](HostEvent& e, cudaError_t) {
        FillCopy(e, dst, count, kind);
        e.stream = U64(stream);
      },
      dst, src, count, kind, stream);
}

template <ApiId kId>
cudaError_t Memcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind) {
  using Fn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), KindDetail,
      [=](HostEvent& e, cudaError_t) { FillCopy(e, dst, static_cast<uint64_t>(width) * height, kind); },
      dst, dpitch, src, spitch, width, height, kind);
}

template <ApiId kId>
cudaError_t Memcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                          cudaMemcpyKind kind, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), KindDetail,
      [=](HostEvent& e, cudaError_t) {
        FillCopy(e, dst, static_cast<uint64_t>(width) * height, kind);
        e.stream = U64(stream);
      },
      dst, dpitch, src, spitch, width, height, kind, stream);
}

// A peer copy's event (cudaMemcpyPeer, cudaMemcpyPeerAsync): no kind in
// its arguments, device to device by definition.
inline void FillPeerCopy(HostEvent& e, void* dst, int dst_device, size_t count) {
  e.ptr = U64(dst);
  e.bytes = count;
  e.device = static_cast<int16_t>(dst_device);
  e.copy_kind = static_cast<uint8_t>(cudaMemcpyDeviceToDevice);
}

// ---- memsets ----

template <ApiId kId>
cudaError_t Memset(void* ptr, int value, size_t count) {
  using Fn = cudaError_t (*)(void*, int, size_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(ptr);
        e.bytes = count;
      },
      ptr, value, count);
}

template <ApiId kId>
cudaError_t MemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, int, size_t, cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t) {
        e.ptr = U64(ptr);
        e.bytes = count;
        e.stream = U64(stream);
      },
      ptr, value, count, stream);
}

// ---- synchronization ----

template <ApiId kId>
cudaError_t StreamSynchronize(cudaStream_t stream) {
  using Fn = cudaError_t (*)(cudaStream_t);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName, [=](HostEvent& e, cudaError_t) { e.stream = U64(stream); }, stream);
}

template <ApiId kId>
cudaError_t StreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  using Fn = cudaError_t (*)(cudaStream_t, cudaEvent_t, unsigned int);
  return Intercept<kId, cudaError_t>(
      kMissing, kHostEventNone, Loaded<Fn>(kId), kNoName,
      [=](HostEvent& e, cudaError_t) {
        e.stream = U64(stream);
        e.ptr = U64(event);
      },
      stream, event, flags);
}

}  // namespace
}  // namespace prof::interpose

using prof::ApiId;
namespace ip = prof::interpose;

extern "C" {

// Launches.
EXPORT_SYMBOL cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return ip::LaunchKernel<ApiId::cudaLaunchKernel>(func, grid, block, args, shared, stream);
}
EXPORT_SYMBOL cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return ip::LaunchKernel<ApiId::cudaLaunchKernel_ptsz>(func, grid, block, args, shared, stream);
}
EXPORT_SYMBOL cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return ip::LaunchKernel<ApiId::cudaLaunchCooperativeKernel>(func, grid, block, args, shared, stream);
}
EXPORT_SYMBOL cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                                          cudaStream_t stream) {
  return ip::LaunchKernel<ApiId::cudaLaunchCooperativeKernel_ptsz>(func, grid, block, args, shared, stream);
}
EXPORT_SYMBOL cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return ip::LaunchKernelExC<ApiId::cudaLaunchKernelExC>(config, func, args);
}
EXPORT_SYMBOL cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return ip::LaunchKernelExC<ApiId::cudaLaunchKernelExC_ptsz>(config, func, args);
}
EXPORT_SYMBOL cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return ip::LaunchByHandle<ApiId::__cudaLaunchKernel>(kernel, grid, block, args, shared, stream);
}
EXPORT_SYMBOL cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                                 cudaStream_t stream) {
  return ip::LaunchByHandle<ApiId::__cudaLaunchKernel_ptsz>(kernel, grid, block, args, shared, stream);
}
EXPORT_SYMBOL cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  return ip::GraphLaunch<ApiId::cudaGraphLaunch>(exec, stream);
}
EXPORT_SYMBOL cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return ip::GraphLaunch<ApiId::cudaGraphLaunch_ptsz>(exec, stream);
}

// nvcc 13 host stubs map their address to a cudaKernel_t once; remember the
// pair so launches by handle get the stub's kernel name. Not an event.
EXPORT_SYMBOL cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* entry) {
  using Fn = cudaError_t (*)(cudaKernel_t*, const void*);
  auto real = ip::Real<Fn>(ip::Extra::kCudaGetKernel);
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  cudaError_t r = real(kernel, entry);
  if (r == cudaSuccess && kernel != nullptr && *kernel != nullptr) {
    uint32_t name = prof::Kernels().Find(entry);
    try {
      if (name != 0) prof::Kernels().Insert(*kernel, name);
    } catch (...) {
      // The launch stays unnamed; the host never sees our failure.
    }
  }
  return r;
}

// Registration runs at module load, often before the agent starts: the
// stub -> name pair is always kept; an event only while recording.
EXPORT_SYMBOL void __cudaRegisterFunction(void** fatbin, const char* host_fun, char* device_fun, const char* device_name,
                                          int thread_limit, uint3* tid, uint3* bid, dim3* block, dim3* grid, int* wsize) {
  using Fn = void (*)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
  auto real = ip::Real<Fn>(ApiId::__cudaRegisterFunction);
  uint64_t start = prof::NowNs();
  // The CUPTI collector's enter callback leaves the call's correlation id
  // here (it subscribes to this call), so the call is shown once: this
  // event, with CUPTI's RUNTIME record of the same id hidden behind it.
  prof::tls_correlation_id = 0;
  if (real != nullptr) real(fatbin, host_fun, device_fun, device_name, thread_limit, tid, bid, block, grid, wsize);
  // The call ends here: remembering the name below is libprof's work.
  uint64_t end = prof::NowNs();
  uint32_t correlation = prof::tls_correlation_id;
  uint32_t name = 0;
  try {
    name = prof::Strings().Intern(device_name != nullptr ? device_name : (device_fun != nullptr ? device_fun : ""));
    prof::Kernels().Insert(host_fun, name);
  } catch (...) {
    // The kernel stays unnamed; the host never sees our failure.
  }
  if ((prof::LoadHotBits() & prof::kHotRecording) && ip::internal::t_depth == 0) {
    prof::HostEvent e{};
    e.start_ns = start;
    e.end_ns = end;
    e.api = static_cast<uint16_t>(ApiId::__cudaRegisterFunction);
    e.correlation_id = correlation;
    e.ptr = reinterpret_cast<uint64_t>(host_fun);
    e.name_id = name;
    e.device = -1;
    prof::hooks::RecordEvent(e);
  }
}

// Copies.
EXPORT_SYMBOL cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return ip::Memcpy<ApiId::cudaMemcpy>(dst, src, count, kind);
}
EXPORT_SYMBOL cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return ip::Memcpy<ApiId::cudaMemcpy_ptds>(dst, src, count, kind);
}
EXPORT_SYMBOL cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return ip::MemcpyAsync<ApiId::cudaMemcpyAsync>(dst, src, count, kind, stream);
}
EXPORT_SYMBOL cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return ip::MemcpyAsync<ApiId::cudaMemcpyAsync_ptsz>(dst, src, count, kind, stream);
}
EXPORT_SYMBOL cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                       cudaMemcpyKind kind) {
  return ip::Memcpy2D<ApiId::cudaMemcpy2D>(dst, dpitch, src, spitch, width, height, kind);
}
EXPORT_SYMBOL cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                            cudaMemcpyKind kind) {
  return ip::Memcpy2D<ApiId::cudaMemcpy2D_ptds>(dst, dpitch, src, spitch, width, height, kind);
}
EXPORT_SYMBOL cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                            cudaMemcpyKind kind, cudaStream_t stream) {
  return ip::Memcpy2DAsync<ApiId::cudaMemcpy2DAsync>(dst, dpitch, src, spitch, width, height, kind, stream);
}
EXPORT_SYMBOL cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                                 size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  return ip::Memcpy2DAsync<ApiId::cudaMemcpy2DAsync_ptsz>(dst, dpitch, src, spitch, width, height, kind, stream);
}
EXPORT_SYMBOL cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  using Fn = cudaError_t (*)(void*, int, const void*, int, size_t);
  return ip::Intercept<ApiId::cudaMemcpyPeer, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMemcpyPeer), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t) { ip::FillPeerCopy(e, dst, dst_device, count); },
      dst, dst_device, src, src_device, count);
}
EXPORT_SYMBOL cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                              cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, int, const void*, int, size_t, cudaStream_t);
  return ip::Intercept<ApiId::cudaMemcpyPeerAsync, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMemcpyPeerAsync), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t) {
        ip::FillPeerCopy(e, dst, dst_device, count);
        e.stream = reinterpret_cast<uint64_t>(stream);
      },
      dst, dst_device, src, src_device, count, stream);
}

// Memsets.
EXPORT_SYMBOL cudaError_t cudaMemset(void* ptr, int value, size_t count) { return ip::Memset<ApiId::cudaMemset>(ptr, value, count); }
EXPORT_SYMBOL cudaError_t cudaMemset_ptds(void* ptr, int value, size_t count) {
  return ip::Memset<ApiId::cudaMemset_ptds>(ptr, value, count);
}
EXPORT_SYMBOL cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  return ip::MemsetAsync<ApiId::cudaMemsetAsync>(ptr, value, count, stream);
}
EXPORT_SYMBOL cudaError_t cudaMemsetAsync_ptsz(void* ptr, int value, size_t count, cudaStream_t stream) {
  return ip::MemsetAsync<ApiId::cudaMemsetAsync_ptsz>(ptr, value, count, stream);
}
EXPORT_SYMBOL cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height) {
  using Fn = cudaError_t (*)(void*, size_t, int, size_t, size_t);
  return ip::Intercept<ApiId::cudaMemset2D, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMemset2D), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t) {
        e.ptr = reinterpret_cast<uint64_t>(ptr);
        e.bytes = static_cast<uint64_t>(width) * height;
      },
      ptr, pitch, value, width, height);
}
EXPORT_SYMBOL cudaError_t cudaMemset2DAsync(void* ptr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, size_t, int, size_t, size_t, cudaStream_t);
  return ip::Intercept<ApiId::cudaMemset2DAsync, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaMemset2DAsync), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t) {
        e.ptr = reinterpret_cast<uint64_t>(ptr);
        e.bytes = static_cast<uint64_t>(width) * height;
        e.stream = reinterpret_cast<uint64_t>(stream);
      },
      ptr, pitch, value, width, height, stream);
}

// Synchronization.
EXPORT_SYMBOL cudaError_t cudaDeviceSynchronize(void) {
  using Fn = cudaError_t (*)();
  return ip::Intercept<ApiId::cudaDeviceSynchronize, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaDeviceSynchronize), ip::kNoName,
      [](prof::HostEvent&, cudaError_t) {});
}
EXPORT_SYMBOL cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return ip::StreamSynchronize<ApiId::cudaStreamSynchronize>(stream);
}
EXPORT_SYMBOL cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return ip::StreamSynchronize<ApiId::cudaStreamSynchronize_ptsz>(stream);
}
EXPORT_SYMBOL cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  using Fn = cudaError_t (*)(cudaEvent_t);
  return ip::Intercept<ApiId::cudaEventSynchronize, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaEventSynchronize), ip::kNoName,
      [=](prof::HostEvent& e, cudaError_t) { e.ptr = reinterpret_cast<uint64_t>(event); }, event);
}
EXPORT_SYMBOL cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return ip::StreamWaitEvent<ApiId::cudaStreamWaitEvent>(stream, event, flags);
}
EXPORT_SYMBOL cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return ip::StreamWaitEvent<ApiId::cudaStreamWaitEvent_ptsz>(stream, event, flags);
}

// The profiler switch: PROF_RANGE=cudaProfilerApi's range edges (a window
// opens when the start returns, closes when the stop is entered).
EXPORT_SYMBOL cudaError_t cudaProfilerStart(void) {
  using Fn = cudaError_t (*)();
  return ip::Intercept<ApiId::cudaProfilerStart, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaProfilerStart), ip::kNoName,
      [](prof::HostEvent&, cudaError_t) {});
}
EXPORT_SYMBOL cudaError_t cudaProfilerStop(void) {
  using Fn = cudaError_t (*)();
  return ip::Intercept<ApiId::cudaProfilerStop, cudaError_t>(
      ip::kMissing, prof::kHostEventNone, ip::Loaded<Fn>(ApiId::cudaProfilerStop), ip::kNoName,
      [](prof::HostEvent&, cudaError_t) {});
}

}  // extern "C"
