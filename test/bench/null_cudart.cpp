// Do-nothing stand-ins for the CUDA runtime, in a shared library of their own
// so a call crosses a library boundary as it does into libcudart. The wrapper
// benchmark hands them to the wrappers as their "real" functions
// (SetRealFunctionForTest), so what is timed is the wrapper alone.
// cudaGetDevice keeps its real name: the allocator wrappers look it up by
// name (dlsym(RTLD_NEXT)) to learn the device of an allocation.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#define BENCH_EXPORT extern "C" __attribute__((visibility("default"), noinline))

namespace {
uintptr_t g_next_ptr = 0x100000000ull;  // distinct fake device pointers
}

BENCH_EXPORT cudaError_t bench_null_launch(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  return cudaSuccess;
}

BENCH_EXPORT cudaError_t bench_null_malloc(void** ptr, size_t size) {
  *ptr = reinterpret_cast<void*>(g_next_ptr);
  g_next_ptr += (size + 255) & ~size_t{255};
  return cudaSuccess;
}

BENCH_EXPORT cudaError_t bench_null_free(void*) { return cudaSuccess; }

BENCH_EXPORT cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
