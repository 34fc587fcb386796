// Kernels for driver_api, compiled to a cubin and a fat binary that the
// program loads with the driver's module API (no runtime registration).
__device__ float factor = 2.0f;

extern "C" __global__ void scale(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

extern "C" __global__ void fill(float* data, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}
