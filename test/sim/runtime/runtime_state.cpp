#include "runtime_state.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace simrt {
namespace {

DriverApi g_driver;
DriverApi g_driver_per_thread;
std::once_flag g_init_once;
cudaError_t g_init_error = cudaSuccess;  // written once under g_init_once
// Per device: its primary context retained by the runtime (cudaDeviceReset clears it).
std::atomic<bool> g_context_ready[64] = {};
thread_local cudaError_t t_last_error = cudaSuccess;

template <typename Fn>
bool Resolve(decltype(&::cuGetProcAddress) get_proc, const char* symbol, int cuda_version, Fn* slot,
             cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc(symbol, &fn, cuda_version, flags, &status) != CUDA_SUCCESS || !fn) return false;
  *slot = reinterpret_cast<Fn>(fn);
  return true;
}

cudaError_t Initialise() {
  // Like the real runtime: find the driver by its SONAME at run time.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!driver) return cudaErrorInsufficientDriver;
  auto bootstrap = reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(driver, "cuGetProcAddress_v2"));
  if (!bootstrap) return cudaErrorInsufficientDriver;
  // As NVIDIA's runtime does: ask the driver for its own cuGetProcAddress
  // (12.0 ABI), then resolve everything through what it returned.
  DriverApi& d = g_driver;
  if (!Resolve(bootstrap, "cuGetProcAddress", 12000, &d.cuGetProcAddress)) return cudaErrorInsufficientDriver;
  const auto get_proc = d.cuGetProcAddress;
  bool ok = true;
  // #name is the base name cuGetProcAddress expects, with the CUDA version
  // that introduced the ABI the runtime wants (the versions NVIDIA's 13.0
  // runtime asks for); d.name expands cuda.h's macro to the versioned member
  // (cuMemAlloc -> cuMemAlloc_v2).
// (The per-thread table gets the legacy entry too, overridden below for stream functions.)
#define SIMRT_RESOLVE(name, version) \
  ok = Resolve(get_proc, #name, version, &d.name) && ok; \
  pt.name = d.name;
  // Stream functions also in their per-thread flavour, asked for at 7.0 (when
  // per-thread default streams appeared) or the function's own version.
// (Spelled out, not via SIMRT_RESOLVE: an argument passed on is macro-expanded.)
#define SIMRT_RESOLVE_PT(name, version)                                                             \
  ok = Resolve(get_proc, #name, version, &d.name) && ok;                                            \
  ok = Resolve(get_proc, #name, (version) > 7000 ? (version) : 7000, &pt.name,                      \
               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && ok;
  DriverApi& pt = g_driver_per_thread;
  pt.cuGetProcAddress = d.cuGetProcAddress;
  SIMRT_RESOLVE(cuInit, 2000)
  SIMRT_RESOLVE(cuDriverGetVersion, 2020)
  SIMRT_RESOLVE(cuDeviceGetCount, 2000)
  SIMRT_RESOLVE(cuDeviceGetName, 2000)
  SIMRT_RESOLVE(cuDeviceGetAttribute, 2000)
  SIMRT_RESOLVE(cuDeviceTotalMem, 3020)
  SIMRT_RESOLVE(cuDevicePrimaryCtxRetain, 7000)
  SIMRT_RESOLVE(cuDevicePrimaryCtxReset, 7000)
  SIMRT_RESOLVE(cuCtxSynchronize, 2000)
  SIMRT_RESOLVE(cuCtxSetCurrent, 4000)
  SIMRT_RESOLVE(cuCtxGetDevice, 2000)
  SIMRT_RESOLVE(cuDeviceGetDefaultMemPool, 11020)
  SIMRT_RESOLVE(cuMemGetInfo, 3020)
  SIMRT_RESOLVE(cuMemAlloc, 3020)
  SIMRT_RESOLVE(cuMemAllocPitch, 3020)
  SIMRT_RESOLVE(cuMemFree, 3020)
  SIMRT_RESOLVE(cuMemHostAlloc, 2020)
  SIMRT_RESOLVE(cuMemFreeHost, 2000)
  SIMRT_RESOLVE(cuMemAllocManaged, 6000)
  SIMRT_RESOLVE_PT(cuMemAllocAsync, 11020)
  SIMRT_RESOLVE_PT(cuMemAllocFromPoolAsync, 11020)
  SIMRT_RESOLVE_PT(cuMemFreeAsync, 11020)
  SIMRT_RESOLVE_PT(cuMemcpy, 4000)
  SIMRT_RESOLVE_PT(cuMemcpyAsync, 4000)
  SIMRT_RESOLVE_PT(cuMemcpy2D, 3020)
  SIMRT_RESOLVE_PT(cuMemcpy2DAsync, 3020)
  SIMRT_RESOLVE_PT(cuMemcpyPeer, 4000)
  SIMRT_RESOLVE_PT(cuMemcpyPeerAsync, 4000)
  SIMRT_RESOLVE_PT(cuMemsetD8, 3020)
  SIMRT_RESOLVE_PT(cuMemsetD8Async, 3020)
  SIMRT_RESOLVE_PT(cuMemsetD2D8, 3020)
  SIMRT_RESOLVE_PT(cuMemsetD2D8Async, 3020)
  SIMRT_RESOLVE(cuStreamCreate, 2000)
  SIMRT_RESOLVE(cuStreamCreateWithPriority, 5050)
  SIMRT_RESOLVE(cuStreamDestroy, 4000)
  SIMRT_RESOLVE_PT(cuStreamQuery, 2000)
  SIMRT_RESOLVE_PT(cuStreamSynchronize, 2000)
  SIMRT_RESOLVE_PT(cuStreamWaitEvent, 3020)
  SIMRT_RESOLVE(cuEventCreate, 2000)
  SIMRT_RESOLVE_PT(cuEventRecord, 2000)
  SIMRT_RESOLVE(cuEventQuery, 2000)
  SIMRT_RESOLVE(cuEventSynchronize, 2000)
  SIMRT_RESOLVE(cuEventElapsedTime, 12080)
  SIMRT_RESOLVE(cuEventDestroy, 4000)
  SIMRT_RESOLVE(cuLibraryLoadData, 12000)
  SIMRT_RESOLVE(cuLibraryGetKernel, 12000)
  SIMRT_RESOLVE(cuLibraryUnload, 12000)
  SIMRT_RESOLVE(cuKernelGetName, 12030)
  SIMRT_RESOLVE_PT(cuLaunchKernel, 4000)
  SIMRT_RESOLVE_PT(cuLaunchKernelEx, 11060)
  SIMRT_RESOLVE_PT(cuLaunchCooperativeKernel, 9000)
  SIMRT_RESOLVE_PT(cuStreamBeginCapture, 10010)
  SIMRT_RESOLVE_PT(cuStreamEndCapture, 10000)
  SIMRT_RESOLVE_PT(cuStreamIsCapturing, 10000)
  SIMRT_RESOLVE_PT(cuStreamGetCaptureInfo, 12030)
  SIMRT_RESOLVE(cuThreadExchangeStreamCaptureMode, 10010)
  SIMRT_RESOLVE_PT(cuStreamGetPriority, 5050)
  SIMRT_RESOLVE_PT(cuEventRecordWithFlags, 11010)
  SIMRT_RESOLVE(cuDeviceGetPCIBusId, 4010)
  SIMRT_RESOLVE(cuPointerGetAttribute, 4000)
  SIMRT_RESOLVE(cuGraphInstantiateWithFlags, 11040)
  SIMRT_RESOLVE_PT(cuGraphLaunch, 10000)
  SIMRT_RESOLVE(cuGraphExecDestroy, 10000)
  SIMRT_RESOLVE(cuGraphDestroy, 10000)
  SIMRT_RESOLVE(cuGraphGetNodes, 10000)
  SIMRT_RESOLVE(cuGraphGetRootNodes, 10000)
  SIMRT_RESOLVE(cuGraphNodeGetType, 10000)
  SIMRT_RESOLVE(cuGraphNodeGetDependencies, 12030)
  SIMRT_RESOLVE(cuGraphExecGetFlags, 12000)
  SIMRT_RESOLVE(cuProfilerStart, 4000)
  SIMRT_RESOLVE(cuProfilerStop, 4000)
  SIMRT_RESOLVE(cuDevicePrimaryCtxSetFlags, 11000)
  SIMRT_RESOLVE(cuCtxGetFlags, 7000)
  SIMRT_RESOLVE(cuCtxSetLimit, 3010)
  SIMRT_RESOLVE(cuCtxGetLimit, 3010)
  SIMRT_RESOLVE(cuDeviceCanAccessPeer, 4000)
  SIMRT_RESOLVE(cuCtxEnablePeerAccess, 4000)
  SIMRT_RESOLVE(cuCtxDisablePeerAccess, 4000)
  SIMRT_RESOLVE_PT(cuStreamAddCallback, 5000)
  SIMRT_RESOLVE_PT(cuLaunchHostFunc, 10000)
  SIMRT_RESOLVE_PT(cuMemPrefetchAsync, 12020)
  SIMRT_RESOLVE(cuMemAdvise, 12020)
  SIMRT_RESOLVE(cuMemPoolCreate, 11020)
  SIMRT_RESOLVE(cuMemPoolDestroy, 11020)
  SIMRT_RESOLVE(cuMemPoolTrimTo, 11020)
  SIMRT_RESOLVE(cuMemPoolSetAttribute, 11020)
  SIMRT_RESOLVE(cuMemPoolGetAttribute, 11020)
  SIMRT_RESOLVE(cuMemPoolSetAccess, 11020)
  SIMRT_RESOLVE(cuMemPoolGetAccess, 11020)
  SIMRT_RESOLVE(cuDeviceGetMemPool, 11020)
  SIMRT_RESOLVE(cuDeviceSetMemPool, 11020)
  SIMRT_RESOLVE(cuLibraryGetGlobal, 12000)
  SIMRT_RESOLVE(cuArray3DCreate, 3020)
  SIMRT_RESOLVE(cuArrayDestroy, 2000)
  SIMRT_RESOLVE(cuArray3DGetDescriptor, 3020)
  SIMRT_RESOLVE_PT(cuMemcpy3D, 3020)
  SIMRT_RESOLVE_PT(cuMemcpy3DAsync, 3020)
  SIMRT_RESOLVE(cuTexObjectCreate, 5000)
  SIMRT_RESOLVE(cuTexObjectDestroy, 5000)
  SIMRT_RESOLVE(cuSurfObjectCreate, 5000)
  SIMRT_RESOLVE(cuSurfObjectDestroy, 5000)
  SIMRT_RESOLVE(cuMemcpyHtoA, 3020)
  SIMRT_RESOLVE(cuMemcpyAtoH, 3020)
  SIMRT_RESOLVE(cuMemHostRegister, 6050)
  SIMRT_RESOLVE(cuMemHostUnregister, 4000)
  SIMRT_RESOLVE(cuMemHostGetDevicePointer, 3020)
  SIMRT_RESOLVE(cuMemHostGetFlags, 2030)
  SIMRT_RESOLVE(cuGraphCreate, 10000)
  SIMRT_RESOLVE(cuGraphAddKernelNode, 12000)
  SIMRT_RESOLVE(cuGraphAddMemcpyNode, 10000)
  SIMRT_RESOLVE(cuGraphAddMemsetNode, 10000)
  SIMRT_RESOLVE(cuGraphAddHostNode, 10000)
  SIMRT_RESOLVE(cuGraphAddEmptyNode, 10000)
  SIMRT_RESOLVE(cuGraphAddEventRecordNode, 11010)
  SIMRT_RESOLVE(cuGraphAddEventWaitNode, 11010)
  SIMRT_RESOLVE(cuGraphAddDependencies, 12030)
  SIMRT_RESOLVE_PT(cuGraphUpload, 11010)
  SIMRT_RESOLVE(cuGraphExecUpdate, 12000)
  SIMRT_RESOLVE(cuGraphConditionalHandleCreate, 12030)
  SIMRT_RESOLVE(cuGraphAddNode, 12030)
  SIMRT_RESOLVE(cuIpcGetMemHandle, 4010)
  SIMRT_RESOLVE(cuIpcOpenMemHandle, 11000)
  SIMRT_RESOLVE(cuIpcCloseMemHandle, 4010)
  SIMRT_RESOLVE(cuIpcGetEventHandle, 4010)
  SIMRT_RESOLVE(cuIpcOpenEventHandle, 4010)
#undef SIMRT_RESOLVE_PT
#undef SIMRT_RESOLVE
  if (!ok) return cudaErrorInsufficientDriver;

  // A driver that cannot initialise is, to the runtime, no usable driver.
  if (d.cuInit(0) != CUDA_SUCCESS) return cudaErrorInsufficientDriver;
  return cudaSuccess;
}

}  // namespace

const DriverApi& Driver(bool per_thread) { return per_thread ? g_driver_per_thread : g_driver; }

cudaError_t Ready() {
  std::call_once(g_init_once, [] { g_init_error = Initialise(); });
  if (g_init_error != cudaSuccess) return g_init_error;
  // The calling thread's device (cudaSetDevice; 0 for a thread that chose
  // none), asked of the driver's state without an API call, as the real
  // runtime keeps its own per-thread device.
  const int device = simhub_current_device();
  std::atomic<bool>& ready = g_context_ready[device & 63];
  if (!ready.load(std::memory_order_acquire)) {
    CUcontext context = nullptr;
    if (CUresult r = g_driver.cuDevicePrimaryCtxRetain(&context, device); r != CUDA_SUCCESS) return FromDriver(r);
    ready.store(true, std::memory_order_release);
  }
  return cudaSuccess;
}

void ForgetContext(int device) { g_context_ready[device & 63].store(false, std::memory_order_release); }
void RememberContext(int device) { g_context_ready[device & 63].store(true, std::memory_order_release); }

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
