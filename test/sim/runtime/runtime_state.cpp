#include "runtime_state.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace simrt {
namespace {

DriverApi g_driver;
std::once_flag g_init_once;
cudaError_t g_init_error = cudaSuccess;  // written once under g_init_once
std::atomic<bool> g_context_ready{false};
thread_local cudaError_t t_last_error = cudaSuccess;

template <typename Fn>
bool Resolve(decltype(&::cuGetProcAddress) get_proc, const char* symbol, Fn* slot) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc(symbol, &fn, CUDART_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || !fn) return false;
  *slot = reinterpret_cast<Fn>(fn);
  return true;
}

cudaError_t Initialise() {
  // Like the real runtime: find the driver by its SONAME at run time.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!driver) return cudaErrorInsufficientDriver;
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(driver, "cuGetProcAddress_v2"));
  if (!get_proc) return cudaErrorInsufficientDriver;
  bool ok = true;
  DriverApi& d = g_driver;
  d.cuGetProcAddress = get_proc;
  // #name is the base name cuGetProcAddress expects; d.name expands cuda.h's
  // macro to the versioned member (cuMemAlloc -> cuMemAlloc_v2).
#define SIMRT_RESOLVE(name) ok = Resolve(get_proc, #name, &d.name) && ok;
  SIMRT_RESOLVE(cuInit)
  SIMRT_RESOLVE(cuDriverGetVersion)
  SIMRT_RESOLVE(cuDeviceGetCount)
  SIMRT_RESOLVE(cuDeviceGetName)
  SIMRT_RESOLVE(cuDeviceGetAttribute)
  SIMRT_RESOLVE(cuDeviceTotalMem)
  SIMRT_RESOLVE(cuDevicePrimaryCtxRetain)
  SIMRT_RESOLVE(cuDevicePrimaryCtxReset)
  SIMRT_RESOLVE(cuCtxSynchronize)
  SIMRT_RESOLVE(cuDeviceGetDefaultMemPool)
  SIMRT_RESOLVE(cuMemGetInfo)
  SIMRT_RESOLVE(cuMemAlloc)
  SIMRT_RESOLVE(cuMemAllocPitch)
  SIMRT_RESOLVE(cuMemFree)
  SIMRT_RESOLVE(cuMemAllocHost)
  SIMRT_RESOLVE(cuMemHostAlloc)
  SIMRT_RESOLVE(cuMemFreeHost)
  SIMRT_RESOLVE(cuMemAllocManaged)
  SIMRT_RESOLVE(cuMemAllocAsync)
  SIMRT_RESOLVE(cuMemAllocFromPoolAsync)
  SIMRT_RESOLVE(cuMemFreeAsync)
  SIMRT_RESOLVE(cuMemcpy)
  SIMRT_RESOLVE(cuMemcpyAsync)
  SIMRT_RESOLVE(cuMemcpy2D)
  SIMRT_RESOLVE(cuMemcpy2DAsync)
  SIMRT_RESOLVE(cuMemcpyPeer)
  SIMRT_RESOLVE(cuMemcpyPeerAsync)
  SIMRT_RESOLVE(cuMemsetD8)
  SIMRT_RESOLVE(cuMemsetD8Async)
  SIMRT_RESOLVE(cuMemsetD2D8)
  SIMRT_RESOLVE(cuMemsetD2D8Async)
  SIMRT_RESOLVE(cuStreamCreate)
  SIMRT_RESOLVE(cuStreamCreateWithPriority)
  SIMRT_RESOLVE(cuStreamDestroy)
  SIMRT_RESOLVE(cuStreamQuery)
  SIMRT_RESOLVE(cuStreamSynchronize)
  SIMRT_RESOLVE(cuStreamWaitEvent)
  SIMRT_RESOLVE(cuEventCreate)
  SIMRT_RESOLVE(cuEventRecord)
  SIMRT_RESOLVE(cuEventQuery)
  SIMRT_RESOLVE(cuEventSynchronize)
  SIMRT_RESOLVE(cuEventElapsedTime)
  SIMRT_RESOLVE(cuEventDestroy)
  SIMRT_RESOLVE(cuLibraryLoadData)
  SIMRT_RESOLVE(cuLibraryGetKernel)
  SIMRT_RESOLVE(cuKernelGetName)
  SIMRT_RESOLVE(cuLaunchKernel)
  SIMRT_RESOLVE(cuLaunchKernelEx)
  SIMRT_RESOLVE(cuLaunchCooperativeKernel)
#undef SIMRT_RESOLVE
  if (!ok) return cudaErrorInsufficientDriver;
  // A driver that cannot initialise is, to the runtime, no usable driver.
  if (d.cuInit(0) != CUDA_SUCCESS) return cudaErrorInsufficientDriver;
  return cudaSuccess;
}

}  // namespace

const DriverApi& Driver() { return g_driver; }

cudaError_t Ready() {
  std::call_once(g_init_once, [] { g_init_error = Initialise(); });
  if (g_init_error != cudaSuccess) return g_init_error;
  if (!g_context_ready.load(std::memory_order_acquire)) {
    CUcontext context = nullptr;
    if (CUresult r = g_driver.cuDevicePrimaryCtxRetain(&context, 0); r != CUDA_SUCCESS) return FromDriver(r);
    g_context_ready.store(true, std::memory_order_release);
  }
  return cudaSuccess;
}

void ForgetContext() { g_context_ready.store(false, std::memory_order_release); }

cudaError_t FromDriver(CUresult result) {
  // The runtime's codes equal the driver's for every code the sim returns.
  return static_cast<cudaError_t>(result);
}

void SetLastError(cudaError_t error) { t_last_error = error; }

cudaError_t TakeLastError() {
  std::call_once(g_init_once, [] { g_init_error = Initialise(); });
  if (g_init_error != cudaSuccess) return g_init_error;  // sticky
  cudaError_t error = t_last_error;
  t_last_error = cudaSuccess;
  return error;
}

cudaError_t PeekLastError() {
  std::call_once(g_init_once, [] { g_init_error = Initialise(); });
  return g_init_error != cudaSuccess ? g_init_error : t_last_error;
}

}  // namespace simrt
