// The do-nothing runtime of null_cudart.cpp (see there).
#pragma once

#include <cuda_runtime_api.h>

extern "C" {
cudaError_t bench_null_launch(const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream);
cudaError_t bench_null_malloc(void** ptr, size_t size);
cudaError_t bench_null_free(void* ptr);
}
