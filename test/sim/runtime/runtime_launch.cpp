// Runtime: kernel launches. nvcc 13 host code pushes a call configuration
// (<<<...>>>), pops it in the stub, resolves the stub with __cudaGetKernel
// and launches with __cudaLaunchKernel; CUDA-12-style code and libraries call
// cudaLaunchKernel / cudaLaunchKernelExC with the stub address.
#include <vector>

#include "registry.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::RuntimeCall;
using simrt::S;

namespace {

struct CallConfiguration {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;
};
thread_local std::vector<CallConfiguration> t_configurations;  // <<<>>> may nest via argument evaluation

cudaError_t LaunchResolved(CUkernel kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                           cudaStream_t stream, bool per_thread, bool cooperative) {
  auto f = reinterpret_cast<CUfunction>(kernel);  // a CUkernel may be used where a CUfunction is expected
  const CUstream s = S(stream);
  const auto shm = static_cast<unsigned>(shared_bytes);
  const auto& driver = Driver(per_thread);
  CUresult r = cooperative
                   ? driver.cuLaunchCooperativeKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shm, s, args)
                   : driver.cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shm, s, args, nullptr);
  if (r == CUDA_ERROR_INVALID_VALUE) return cudaErrorInvalidConfiguration;  // bad grid/block
  return FromDriver(r);
}

cudaError_t Launch(const void* func, dim3 grid, dim3 block, void** args, size_t shared_bytes, cudaStream_t stream,
                   bool per_thread, bool cooperative) {
  CUkernel kernel = nullptr;
  if (cudaError_t e = simrt::ResolveKernel(func, &kernel); e != cudaSuccess) return e;
  return LaunchResolved(kernel, grid, block, args, shared_bytes, stream, per_thread, cooperative);
}

cudaError_t LaunchEx(const cudaLaunchConfig_t* config, const void* func, void** args, bool per_thread) {
  if (!config) return cudaErrorInvalidValue;
  CUkernel kernel = nullptr;
  if (cudaError_t e = simrt::ResolveKernel(func, &kernel); e != cudaSuccess) return e;
  CUlaunchConfig c{};
  // The geometry field by field into the driver's struct: assignments, not logic.
  c.gridDimX = config->gridDim.x;
  c.gridDimY = config->gridDim.y;
  c.gridDimZ = config->gridDim.z;
  c.blockDimX = config->blockDim.x;
  c.blockDimY = config->blockDim.y;
  c.blockDimZ = config->blockDim.z;
  c.sharedMemBytes = static_cast<unsigned>(config->dynamicSmemBytes);
  c.hStream = S(config->stream);
  // Attributes (clusters, priorities...) do not change the timing model.
  CUresult r = Driver(per_thread).cuLaunchKernelEx(&c, reinterpret_cast<CUfunction>(kernel), args, nullptr);
  if (r == CUDA_ERROR_INVALID_VALUE) return cudaErrorInvalidConfiguration;
  return FromDriver(r);
}

}  // namespace

SIM_RUNTIME_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                        struct CUstream_st* stream) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaPushCallConfiguration_v13000), "__cudaPushCallConfiguration", nullptr, [&] {
    t_configurations.push_back({gridDim, blockDim, sharedMem, stream});
    return cudaSuccess;
  });
  return 0;
}

SIM_RUNTIME_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                                          void* stream) {
  return RuntimeCall(SIM_RUNTIME_CBID(__cudaPopCallConfiguration_v13000), "__cudaPopCallConfiguration", nullptr, [&] {
    if (t_configurations.empty()) return cudaErrorMissingConfiguration;
    const CallConfiguration c = t_configurations.back();
    t_configurations.pop_back();
    *gridDim = c.grid;
    *blockDim = c.block;
    *sharedMem = c.shared_bytes;
    *static_cast<cudaStream_t*>(stream) = c.stream;
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  return DriverBackedCall(
      SIM_RUNTIME_CBID(__cudaGetKernel_v13000), "__cudaGetKernel", nullptr,
      [&] {
        if (!kernel) return cudaErrorInvalidValue;
        return simrt::ResolveKernel(hostFun, reinterpret_cast<CUkernel*>(kernel));
      },
      simrt::RegisteredName(hostFun));
}

SIM_RUNTIME_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                                  size_t sharedMem, cudaStream_t stream) {
  return DriverBackedCall(
      SIM_RUNTIME_CBID(__cudaLaunchKernel_v13000), "__cudaLaunchKernel", nullptr,
      [&] {
        if (!kernel) return cudaErrorInvalidDeviceFunction;
        return LaunchResolved(reinterpret_cast<CUkernel>(kernel), gridDim, blockDim, args, sharedMem, stream, false,
                              false);
      },
      simrt::KernelName(reinterpret_cast<CUkernel>(kernel)));
}

SIM_RUNTIME_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                                       size_t sharedMem, cudaStream_t stream) {
  return DriverBackedCall(
      SIM_RUNTIME_CBID(__cudaLaunchKernel_ptsz_v13000), "__cudaLaunchKernel_ptsz", nullptr,
      [&] {
        if (!kernel) return cudaErrorInvalidDeviceFunction;
        return LaunchResolved(reinterpret_cast<CUkernel>(kernel), gridDim, blockDim, args, sharedMem, stream, true,
                              false);
      },
      simrt::KernelName(reinterpret_cast<CUkernel>(kernel)));
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                size_t sharedMem, cudaStream_t stream) {
  cudaLaunchKernel_v7000_params params{func, gridDim, blockDim, args, sharedMem, stream};
  return DriverBackedCall(
      SIM_RUNTIME_CBID(cudaLaunchKernel_v7000), "cudaLaunchKernel", &params,
      [&] { return Launch(func, gridDim, blockDim, args, sharedMem, stream, false, false); },
      simrt::RegisteredName(func));
}

// The per-thread-stream flavour: the same wrapper with its own exported symbol and cbid.
SIM_RUNTIME_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                     size_t sharedMem, cudaStream_t stream) {
  cudaLaunchKernel_ptsz_v7000_params params{func, gridDim, blockDim, args, sharedMem, stream};
  return DriverBackedCall(
      SIM_RUNTIME_CBID(cudaLaunchKernel_ptsz_v7000), "cudaLaunchKernel_ptsz", &params,
      [&] { return Launch(func, gridDim, blockDim, args, sharedMem, stream, true, false); },
      simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                           size_t sharedMem, cudaStream_t stream) {
  cudaLaunchCooperativeKernel_v9000_params params{func, gridDim, blockDim, args, sharedMem, stream};
  return DriverBackedCall(
      SIM_RUNTIME_CBID(cudaLaunchCooperativeKernel_v9000), "cudaLaunchCooperativeKernel", &params,
      [&] { return Launch(func, gridDim, blockDim, args, sharedMem, stream, false, true); },
      simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                                                void** args, size_t sharedMem, cudaStream_t stream) {
  cudaLaunchCooperativeKernel_ptsz_v9000_params params{func, gridDim, blockDim, args, sharedMem, stream};
  return DriverBackedCall(
      SIM_RUNTIME_CBID(cudaLaunchCooperativeKernel_ptsz_v9000), "cudaLaunchCooperativeKernel_ptsz", &params,
      [&] { return Launch(func, gridDim, blockDim, args, sharedMem, stream, true, true); },
      simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  cudaLaunchKernelExC_v11060_params params{config, func, args};
  return DriverBackedCall(
      SIM_RUNTIME_CBID(cudaLaunchKernelExC_v11060), "cudaLaunchKernelExC", &params,
      [&] { return LaunchEx(config, func, args, false); }, simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                                        void** args) {
  cudaLaunchKernelExC_ptsz_v11060_params params{config, func, args};
  return DriverBackedCall(
      SIM_RUNTIME_CBID(cudaLaunchKernelExC_ptsz_v11060), "cudaLaunchKernelExC_ptsz", &params,
      [&] { return LaunchEx(config, func, args, true); }, simrt::RegisteredName(func));
}

SIM_RUNTIME_EXPORT cudaError_t cudaFuncGetName(const char** name, const void* func) {
  cudaFuncGetName_v12030_params params{name, func};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaFuncGetName_v12030), "cudaFuncGetName", &params, [&] {
    if (!name) return cudaErrorInvalidValue;
    const char* registered = simrt::RegisteredName(func);
    if (!registered) return cudaErrorInvalidDeviceFunction;
    *name = registered;
    return cudaSuccess;
  });
}
