// A CUDA library loaded the way PyTorch loads its CUDA code: by Python's
// ctypes with RTLD_LOCAL, so libcudart.so.13 is only a dependency of an
// RTLD_LOCAL library (invisible to dlsym(RTLD_NEXT, ...)).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void ctypes_step_kernel(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] += 1.0f;
}

// Runs `steps` steps (H2D, kernel, D2H, synchronize) and returns the sum of
// the data copied back over all steps, or -(cudaError_t) on failure.
extern "C" __attribute__((visibility("default"))) long long run_steps(int steps) {
  constexpr int kN = 4096;
  float host[kN];
  float* in = nullptr;
  float* scratch = nullptr;
  cudaStream_t stream = nullptr;
  cudaError_t e = cudaMalloc(&in, sizeof host);
  if (e == cudaSuccess) e = cudaMalloc(&scratch, sizeof host);
  if (e == cudaSuccess) e = cudaStreamCreate(&stream);
  long long total = 0;
  for (int s = 0; e == cudaSuccess && s < steps; ++s) {
    for (int i = 0; i < kN; ++i) host[i] = static_cast<float>((i + s) % 10);
    e = cudaMemcpyAsync(in, host, sizeof host, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) break;
    ctypes_step_kernel<<<kN / 256, 256, 0, stream>>>(scratch, kN);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(host, in, sizeof host, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    for (int i = 0; e == cudaSuccess && i < kN; ++i) total += static_cast<long long>(host[i]);
  }
  if (stream) cudaStreamDestroy(stream);
  cudaFree(in);
  cudaFree(scratch);
  return e == cudaSuccess ? total : -static_cast<long long>(e);
}
