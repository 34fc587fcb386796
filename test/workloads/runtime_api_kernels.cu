// Kernels for runtime_api.cpp. nvcc registers them with the runtime; the
// g++-built main launches them by stub address through cudaLaunchKernel and
// cudaLaunchKernelExC, the CUDA-12-style path libraries use.
__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

namespace ops {
__global__ void fill(float* y, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = value;
}
}  // namespace ops

extern "C" const void* runtime_api_saxpy() { return reinterpret_cast<const void*>(&saxpy); }
extern "C" const void* runtime_api_fill() { return reinterpret_cast<const void*>(&ops::fill); }
