// Where each wrapper finds the function it stands in for.
//
// Lookup order (first hit wins, cached per function):
//  1. dlsym(RTLD_NEXT): the library after us in the global scope (a program
//     linked against libcudart/libcuda).
//  2. Every loaded object whose file name is libcudart.so* (runtime calls)
//     or libcuda.so* (driver calls), found with dl_iterate_phdr and reopened
//     with dlopen(path, RTLD_NOLOAD): this is how calls are found when
//     libcudart came in as a dependency of a Python extension opened with
//     RTLD_LOCAL, where RTLD_NEXT sees nothing.
// Misses are not cached: the library may be loaded later.
//
// Internal header: tests and benchmarks may replace a function with
// SetRealFunctionForTest (e.g. a do-nothing function, to time a wrapper).
#pragma once

#include <atomic>
#include <cstddef>

#include "model/api_ids.h"

namespace prof::interpose {

// Functions we call or wrap that are not events of their own.
enum class Extra : uint16_t {
  kCudaGetKernel,                     // __cudaGetKernel (nvcc 13 launch path)
  kCuGetProcAddress,                  // cuGetProcAddress (CUDA 11.3-11.x ABI)
  kCuGetProcAddress_v2,               // cuGetProcAddress_v2
  kCudaGetDriverEntryPoint,           // cudaGetDriverEntryPoint
  kCudaGetDriverEntryPointByVersion,  // cudaGetDriverEntryPointByVersion
  kCudaGetDevice,                     // device of runtime allocations
  kCudaGetDeviceCount,                // ... not asked when the process sees one device
  kCuCtxGetDevice,                    // device of driver allocations
  kCudaRuntimeGetVersion,
  kCuDriverGetVersion,
  kCuInit,                            // wrapped: a driver-API program's calls are watched from here
  kCount
};

inline constexpr size_t kSlotCount = kApiCount + static_cast<size_t>(Extra::kCount);

namespace internal {
extern std::atomic<void*> g_real[kSlotCount];
void* Resolve(size_t slot);
}  // namespace internal

// The real function; nullptr when it cannot be found (yet).
inline void* RealFunction(size_t slot) {
  void* fn = internal::g_real[slot].load(std::memory_order_acquire);
  return fn != nullptr ? fn : internal::Resolve(slot);
}
inline void* RealFunction(ApiId id) { return RealFunction(static_cast<size_t>(id)); }
inline void* RealFunction(Extra id) { return RealFunction(kApiCount + static_cast<size_t>(id)); }

// Only what is already resolved (nullptr otherwise): the wrappers' fast
// path, which must not contain a call.
template <typename Fn>
inline Fn Loaded(ApiId id) {
  return reinterpret_cast<Fn>(internal::g_real[static_cast<size_t>(id)].load(std::memory_order_acquire));
}

template <typename Fn>
inline Fn Real(ApiId id) {
  return reinterpret_cast<Fn>(RealFunction(id));
}
template <typename Fn>
inline Fn Real(Extra id) {
  return reinterpret_cast<Fn>(RealFunction(id));
}

// Test/benchmark hook: from now on the wrapper for id calls fn.
void SetRealFunctionForTest(ApiId id, void* fn);
void SetRealFunctionForTest(Extra id, void* fn);

// Symbol name of a slot ("cudaMalloc", "__cudaGetKernel", ...).
const char* SlotSymbol(size_t slot);

}  // namespace prof::interpose
