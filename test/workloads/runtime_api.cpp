// A plain C++ program (g++, not nvcc) calling the CUDA runtime API directly:
// cudaMalloc, cudaMemcpyAsync, cudaLaunchKernel, cudaLaunchKernelExC,
// cudaStreamSynchronize. Each call's result code is printed, and the
// program goes on after a failure, so on a machine without a driver it
// shows every call failing fast with cudaErrorInsufficientDriver (35) and
// exits 0. With a working runtime it also checks the data round trip.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

extern "C" const void* runtime_api_saxpy();
extern "C" const void* runtime_api_fill();

namespace {

int g_failures = 0;

cudaError_t Report(const char* what, cudaError_t e) {
  printf("%s -> %d\n", what, static_cast<int>(e));
  if (e != cudaSuccess) ++g_failures;
  return e;
}

}  // namespace

int main() {
  constexpr int kN = 1024;
  std::vector<float> host(kN), back(kN, -1.0f);
  for (int i = 0; i < kN; ++i) host[i] = static_cast<float>(i);

  float* x = nullptr;
  float* y = nullptr;
  cudaStream_t stream = nullptr;
  Report("cudaStreamCreate", cudaStreamCreate(&stream));
  Report("cudaMalloc(x)", cudaMalloc(reinterpret_cast<void**>(&x), kN * sizeof(float)));
  Report("cudaMalloc(y)", cudaMalloc(reinterpret_cast<void**>(&y), kN * sizeof(float)));
  Report("cudaMemcpyAsync(H2D)", cudaMemcpyAsync(x, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice, stream));

  float value = 1.0f;
  int n = kN;
  void* fill_args[] = {&y, &value, &n};
  Report("cudaLaunchKernel(ops::fill)", cudaLaunchKernel(runtime_api_fill(), dim3(kN / 256), dim3(256), fill_args, 0, stream));

  float a = 2.0f;
  void* saxpy_args[] = {&a, &x, &y, &n};
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kN / 128);
  config.blockDim = dim3(128);
  config.stream = stream;
  Report("cudaLaunchKernelExC(saxpy)", cudaLaunchKernelExC(&config, runtime_api_saxpy(), saxpy_args));

  Report("cudaMemcpyAsync(D2H)", cudaMemcpyAsync(back.data(), x, kN * sizeof(float), cudaMemcpyDeviceToHost, stream));
  Report("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  const cudaError_t last = cudaGetLastError();
  printf("cudaGetLastError -> %d (%s)\n", static_cast<int>(last), cudaGetErrorName(last));

  if (g_failures == 0) {
    // x went to the device and back unchanged (kernels only write y).
    for (int i = 0; i < kN; ++i) {
      if (back[i] != host[i]) {
        printf("round trip mismatch at %d: %f != %f\n", i, back[i], host[i]);
        return 1;
      }
    }
    printf("round trip ok\n");
  }
  Report("cudaFree(x)", cudaFree(x));
  Report("cudaFree(y)", cudaFree(y));
  if (stream) Report("cudaStreamDestroy", cudaStreamDestroy(stream));
  printf("failures=%d\n", g_failures);
  return 0;
}
