// The CUDA runtime and driver functions libprof intercepts, as one X-macro
// list so that the interposer, the event model and the exporters agree on ids,
// names and what kind of call each is.
#pragma once

#include <cstdint>
#include <string_view>

namespace prof {

// What an intercepted call does; exporters and findings key off this.
enum class ApiKind : uint8_t {
  kOther,
  kLaunch,    // kernel launch (incl. cooperative, graph launch)
  kMemcpy,
  kMemset,
  kSync,      // device/stream/event synchronize, stream wait event
  kAlloc,     // allocates memory (device, host, managed, async, pool, VMM)
  kFree,      // releases memory
  kRegister,  // __cudaRegisterFunction and friends
};

// X(name, kind). Driver functions keep their exported names (cuMemAlloc_v2).
// The driver's launches and synchronizes at the end have no wrapper: CUPTI's
// callbacks record them (collectors/cupti/call_arguments.h).
#define FOR_EACH_CUDA_API(X)                  \
  X(cudaLaunchKernel, kLaunch)                \
  X(cudaLaunchKernel_ptsz, kLaunch)           \
  X(cudaLaunchKernelExC, kLaunch)             \
  X(cudaLaunchKernelExC_ptsz, kLaunch)        \
  X(cudaLaunchCooperativeKernel, kLaunch)     \
  X(cudaLaunchCooperativeKernel_ptsz, kLaunch)\
  X(cudaGraphLaunch, kLaunch)                 \
  X(cudaGraphLaunch_ptsz, kLaunch)            \
  X(__cudaLaunchKernel, kLaunch)              \
  X(__cudaLaunchKernel_ptsz, kLaunch)         \
  X(cudaMemcpy, kMemcpy)                      \
  X(cudaMemcpy_ptds, kMemcpy)                 \
  X(cudaMemcpyAsync, kMemcpy)                 \
  X(cudaMemcpyAsync_ptsz, kMemcpy)            \
  X(cudaMemcpy2D, kMemcpy)                    \
  X(cudaMemcpy2D_ptds, kMemcpy)               \
  X(cudaMemcpy2DAsync, kMemcpy)               \
  X(cudaMemcpy2DAsync_ptsz, kMemcpy)          \
  X(cudaMemcpyPeer, kMemcpy)                  \
  X(cudaMemcpyPeerAsync, kMemcpy)             \
  X(cudaMemset, kMemset)                      \
  X(cudaMemset_ptds, kMemset)                 \
  X(cudaMemsetAsync, kMemset)                 \
  X(cudaMemsetAsync_ptsz, kMemset)            \
  X(cudaMemset2D, kMemset)                    \
  X(cudaMemset2DAsync, kMemset)               \
  X(cudaDeviceSynchronize, kSync)             \
  X(cudaStreamSynchronize, kSync)             \
  X(cudaStreamSynchronize_ptsz, kSync)        \
  X(cudaEventSynchronize, kSync)              \
  X(cudaStreamWaitEvent, kSync)               \
  X(cudaStreamWaitEvent_ptsz, kSync)          \
  X(cudaMalloc, kAlloc)                       \
  X(cudaFree, kFree)                          \
  X(cudaMallocAsync, kAlloc)                  \
  X(cudaMallocAsync_ptsz, kAlloc)             \
  X(cudaFreeAsync, kFree)                     \
  X(cudaFreeAsync_ptsz, kFree)                \
  X(cudaMallocFromPoolAsync, kAlloc)          \
  X(cudaMallocFromPoolAsync_ptsz, kAlloc)     \
  X(cudaMallocHost, kAlloc)                   \
  X(cudaHostAlloc, kAlloc)                    \
  X(cudaFreeHost, kFree)                      \
  X(cudaMallocManaged, kAlloc)                \
  X(cudaMallocPitch, kAlloc)                  \
  X(__cudaRegisterFunction, kRegister)        \
  X(cuMemAlloc_v2, kAlloc)                    \
  X(cuMemFree_v2, kFree)                      \
  X(cuMemAllocAsync, kAlloc)                  \
  X(cuMemFreeAsync, kFree)                    \
  X(cuMemCreate, kAlloc)                      \
  X(cuMemRelease, kFree)                      \
  X(cuMemMap, kOther)                         \
  X(cuMemUnmap, kOther)                       \
  X(cudaProfilerStart, kOther)                \
  X(cudaProfilerStop, kOther)                 \
  X(cuProfilerStart, kOther)                  \
  X(cuProfilerStop, kOther)                   \
  X(cuLaunchKernel, kLaunch)                  \
  X(cuLaunchKernel_ptsz, kLaunch)             \
  X(cuLaunchKernelEx, kLaunch)                \
  X(cuLaunchKernelEx_ptsz, kLaunch)           \
  X(cuLaunchCooperativeKernel, kLaunch)       \
  X(cuLaunchCooperativeKernel_ptsz, kLaunch)  \
  X(cuStreamSynchronize, kSync)               \
  X(cuStreamSynchronize_ptsz, kSync)          \
  X(cuCtxSynchronize, kSync)

enum class ApiId : uint16_t {
#define API_ENUM_ENTRY(name, kind) name,
  FOR_EACH_CUDA_API(API_ENUM_ENTRY)
#undef API_ENUM_ENTRY
  kCount
};

inline constexpr std::size_t kApiCount = static_cast<std::size_t>(ApiId::kCount);

// Name as the user knows it ("cudaMemcpyAsync"); "unknown" for bad ids.
std::string_view ApiName(ApiId id);
ApiKind ApiKindOf(ApiId id);
// Inverse of ApiName; returns false if the name is not an intercepted call.
bool ApiFromName(std::string_view name, ApiId* out);

}  // namespace prof
