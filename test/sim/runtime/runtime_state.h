// The simulated runtime's plumbing: how it reaches the driver (dlopen
// libcuda.so.1, then cuGetProcAddress for every function, as the real
// runtime does since CUDA 11.3), lazy initialisation, per-thread last
// error, and the bracket every runtime entry point is wrapped in.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_runtime_api.h>
#include <cupti_runtime_cbid.h>
#include <generated_cuda_runtime_api_meta.h>

#include "api_call.h"
#include "hub.h"

#define SIM_RUNTIME_EXPORT extern "C" __attribute__((visibility("default")))
#define SIM_RUNTIME_CBID(name) CUPTI_RUNTIME_TRACE_CBID_##name

namespace simrt {

// Driver entry points, filled through cuGetProcAddress. Members are named by
// cuda.h's macros, so Driver().cuMemAlloc(...) calls cuMemAlloc_v2.
struct DriverApi {
#define SIMRT_DRIVER_FN(name) decltype(&::name) name = nullptr;
  SIMRT_DRIVER_FN(cuGetProcAddress)  // the driver's own, from dlsym on its handle
  SIMRT_DRIVER_FN(cuInit)
  SIMRT_DRIVER_FN(cuDriverGetVersion)
  SIMRT_DRIVER_FN(cuDeviceGetCount)
  SIMRT_DRIVER_FN(cuDeviceGetName)
  SIMRT_DRIVER_FN(cuDeviceGetAttribute)
  SIMRT_DRIVER_FN(cuDeviceTotalMem)
  SIMRT_DRIVER_FN(cuDevicePrimaryCtxRetain)
  SIMRT_DRIVER_FN(cuDevicePrimaryCtxReset)
  SIMRT_DRIVER_FN(cuCtxSynchronize)
  SIMRT_DRIVER_FN(cuCtxSetCurrent)
  SIMRT_DRIVER_FN(cuCtxGetDevice)
  SIMRT_DRIVER_FN(cuDeviceGetDefaultMemPool)
  SIMRT_DRIVER_FN(cuMemGetInfo)
  SIMRT_DRIVER_FN(cuMemAlloc)
  SIMRT_DRIVER_FN(cuMemAllocPitch)
  SIMRT_DRIVER_FN(cuMemFree)
  SIMRT_DRIVER_FN(cuMemHostAlloc)
  SIMRT_DRIVER_FN(cuMemFreeHost)
  SIMRT_DRIVER_FN(cuMemAllocManaged)
  SIMRT_DRIVER_FN(cuMemAllocAsync)
  SIMRT_DRIVER_FN(cuMemAllocFromPoolAsync)
  SIMRT_DRIVER_FN(cuMemFreeAsync)
  SIMRT_DRIVER_FN(cuMemcpy)
  SIMRT_DRIVER_FN(cuMemcpyAsync)
  SIMRT_DRIVER_FN(cuMemcpy2D)
  SIMRT_DRIVER_FN(cuMemcpy2DAsync)
  SIMRT_DRIVER_FN(cuMemcpyPeer)
  SIMRT_DRIVER_FN(cuMemcpyPeerAsync)
  SIMRT_DRIVER_FN(cuMemsetD8)
  SIMRT_DRIVER_FN(cuMemsetD8Async)
  SIMRT_DRIVER_FN(cuMemsetD2D8)
  SIMRT_DRIVER_FN(cuMemsetD2D8Async)
  SIMRT_DRIVER_FN(cuStreamCreate)
  SIMRT_DRIVER_FN(cuStreamCreateWithPriority)
  SIMRT_DRIVER_FN(cuStreamDestroy)
  SIMRT_DRIVER_FN(cuStreamQuery)
  SIMRT_DRIVER_FN(cuStreamSynchronize)
  SIMRT_DRIVER_FN(cuStreamWaitEvent)
  SIMRT_DRIVER_FN(cuEventCreate)
  SIMRT_DRIVER_FN(cuEventRecord)
  SIMRT_DRIVER_FN(cuEventQuery)
  SIMRT_DRIVER_FN(cuEventSynchronize)
  SIMRT_DRIVER_FN(cuEventElapsedTime)
  SIMRT_DRIVER_FN(cuEventDestroy)
  SIMRT_DRIVER_FN(cuLibraryLoadData)
  SIMRT_DRIVER_FN(cuLibraryGetKernel)
  SIMRT_DRIVER_FN(cuLibraryUnload)
  SIMRT_DRIVER_FN(cuKernelGetName)
  SIMRT_DRIVER_FN(cuLaunchKernel)
  SIMRT_DRIVER_FN(cuLaunchKernelEx)
  SIMRT_DRIVER_FN(cuLaunchCooperativeKernel)
  SIMRT_DRIVER_FN(cuStreamBeginCapture)
  SIMRT_DRIVER_FN(cuStreamEndCapture)
  SIMRT_DRIVER_FN(cuStreamIsCapturing)
  SIMRT_DRIVER_FN(cuStreamGetCaptureInfo)
  SIMRT_DRIVER_FN(cuThreadExchangeStreamCaptureMode)
  SIMRT_DRIVER_FN(cuStreamGetPriority)
  SIMRT_DRIVER_FN(cuEventRecordWithFlags)
  SIMRT_DRIVER_FN(cuDeviceGetPCIBusId)
  SIMRT_DRIVER_FN(cuPointerGetAttribute)
  SIMRT_DRIVER_FN(cuGraphInstantiateWithFlags)
  SIMRT_DRIVER_FN(cuGraphLaunch)
  SIMRT_DRIVER_FN(cuGraphExecDestroy)
  SIMRT_DRIVER_FN(cuGraphDestroy)
  SIMRT_DRIVER_FN(cuGraphGetNodes)
  SIMRT_DRIVER_FN(cuGraphGetRootNodes)
  SIMRT_DRIVER_FN(cuGraphNodeGetType)
  SIMRT_DRIVER_FN(cuGraphNodeGetDependencies)
  SIMRT_DRIVER_FN(cuGraphExecGetFlags)
  // Context settings, host functions, managed hints, pools (driver_context,
  // driver_host_func, driver_managed, driver_pool).
  SIMRT_DRIVER_FN(cuProfilerStart)
  SIMRT_DRIVER_FN(cuProfilerStop)
  SIMRT_DRIVER_FN(cuDevicePrimaryCtxSetFlags)
  SIMRT_DRIVER_FN(cuCtxGetFlags)
  SIMRT_DRIVER_FN(cuCtxSetLimit)
  SIMRT_DRIVER_FN(cuCtxGetLimit)
  SIMRT_DRIVER_FN(cuDeviceCanAccessPeer)
  SIMRT_DRIVER_FN(cuCtxEnablePeerAccess)
  SIMRT_DRIVER_FN(cuCtxDisablePeerAccess)
  SIMRT_DRIVER_FN(cuStreamAddCallback)
  SIMRT_DRIVER_FN(cuLaunchHostFunc)
  SIMRT_DRIVER_FN(cuMemPrefetchAsync)
  SIMRT_DRIVER_FN(cuMemAdvise)
  SIMRT_DRIVER_FN(cuMemPoolCreate)
  SIMRT_DRIVER_FN(cuMemPoolDestroy)
  SIMRT_DRIVER_FN(cuMemPoolTrimTo)
  SIMRT_DRIVER_FN(cuMemPoolSetAttribute)
  SIMRT_DRIVER_FN(cuMemPoolGetAttribute)
  SIMRT_DRIVER_FN(cuMemPoolSetAccess)
  SIMRT_DRIVER_FN(cuMemPoolGetAccess)
  SIMRT_DRIVER_FN(cuDeviceGetMemPool)
  SIMRT_DRIVER_FN(cuDeviceSetMemPool)
  // Symbols, arrays, textures and surfaces (driver_module, driver_array).
  SIMRT_DRIVER_FN(cuLibraryGetGlobal)
  SIMRT_DRIVER_FN(cuArray3DCreate)
  SIMRT_DRIVER_FN(cuArrayDestroy)
  SIMRT_DRIVER_FN(cuArray3DGetDescriptor)
  SIMRT_DRIVER_FN(cuMemcpy3D)
  SIMRT_DRIVER_FN(cuMemcpy3DAsync)
  SIMRT_DRIVER_FN(cuTexObjectCreate)
  SIMRT_DRIVER_FN(cuTexObjectDestroy)
  SIMRT_DRIVER_FN(cuSurfObjectCreate)
  SIMRT_DRIVER_FN(cuSurfObjectDestroy)
  SIMRT_DRIVER_FN(cuMemcpyHtoA)
  SIMRT_DRIVER_FN(cuMemcpyAtoH)
  SIMRT_DRIVER_FN(cuMemHostRegister)
  SIMRT_DRIVER_FN(cuMemHostUnregister)
  SIMRT_DRIVER_FN(cuMemHostGetDevicePointer)
  SIMRT_DRIVER_FN(cuMemHostGetFlags)
  SIMRT_DRIVER_FN(cuGraphCreate)
  SIMRT_DRIVER_FN(cuGraphAddKernelNode)
  SIMRT_DRIVER_FN(cuGraphAddMemcpyNode)
  SIMRT_DRIVER_FN(cuGraphAddMemsetNode)
  SIMRT_DRIVER_FN(cuGraphAddHostNode)
  SIMRT_DRIVER_FN(cuGraphAddEmptyNode)
  SIMRT_DRIVER_FN(cuGraphAddEventRecordNode)
  SIMRT_DRIVER_FN(cuGraphAddEventWaitNode)
  SIMRT_DRIVER_FN(cuGraphAddDependencies)
  SIMRT_DRIVER_FN(cuGraphUpload)
  SIMRT_DRIVER_FN(cuGraphExecUpdate)
  SIMRT_DRIVER_FN(cuGraphConditionalHandleCreate)
  SIMRT_DRIVER_FN(cuGraphAddNode)
  SIMRT_DRIVER_FN(cuIpcGetMemHandle)
  SIMRT_DRIVER_FN(cuIpcOpenMemHandle)
  SIMRT_DRIVER_FN(cuIpcCloseMemHandle)
  SIMRT_DRIVER_FN(cuIpcGetEventHandle)
  SIMRT_DRIVER_FN(cuIpcOpenEventHandle)
#undef SIMRT_DRIVER_FN
};

// The driver table, valid only after Ready() returned cudaSuccess. With
// per_thread, stream functions are the driver's per-thread-default-stream
// flavours (_ptsz/_ptds, where stream 0 is the calling thread's default
// stream), as NVIDIA's runtime uses for its own _ptsz/_ptds entry points;
// the other members equal the legacy table's.
const DriverApi& Driver(bool per_thread = false);

// Initialises on first use (find the driver, resolve it, cuInit) and makes
// sure the primary context of the calling thread's device exists. A failure is permanent and sticky, as
// with the real runtime: cudaErrorInsufficientDriver when there is no usable
// driver.
cudaError_t Ready();

// After cudaDeviceReset: the next call on that device re-creates its primary context.
void ForgetContext(int device);
// cudaSetDevice retained the device's primary context itself.
void RememberContext(int device);

cudaError_t FromDriver(CUresult result);

// Per-thread last error (cudaGetLastError resets it; an initialisation
// failure stays).
void SetLastError(cudaError_t error);
cudaError_t TakeLastError();
cudaError_t PeekLastError();

inline CUstream S(cudaStream_t stream) { return reinterpret_cast<CUstream>(stream); }

inline constexpr int kRuntimeDomain = 2;  // CUPTI_CB_DOMAIN_RUNTIME_API

// Brackets one runtime call (CUPTI runtime domain, cbid, params struct) and
// records a failure as the thread's last error.
template <typename Body>
cudaError_t RuntimeCall(uint32_t cbid, const char* name, const void* params, Body&& body,
                        const char* symbol_name = nullptr) {
  return sim::BracketApiCall<cudaError_t>(kRuntimeDomain, cbid, name, params, symbol_name, std::forward<Body>(body),
                                          [](cudaError_t result) {
                                            if (result != cudaSuccess) SetLastError(result);
                                          });
}

// The same for calls that need the driver (almost all).
template <typename Body>
cudaError_t DriverBackedCall(uint32_t cbid, const char* name, const void* params, Body&& body,
                             const char* symbol_name = nullptr) {
  return RuntimeCall(
      cbid, name, params,
      [&]() -> cudaError_t {
        if (cudaError_t error = Ready(); error != cudaSuccess) return error;
        return body();
      },
      symbol_name);
}

}  // namespace simrt
