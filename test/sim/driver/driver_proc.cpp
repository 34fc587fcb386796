// Driver: cuGetProcAddress, the way the runtime (since CUDA 11.3) reaches
// every driver function. Symbols are base names ("cuMemAlloc"); the entry
// returned is the newest version not newer than the requested CUDA version,
// as the real driver does (here: the one version each function has).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cstring>

#include <cudaProfiler.h>

#include "driver_call.h"

namespace sim {
namespace {

struct ProcEntry {
  const char* name;    // base name
  void* function;
  int since_version;   // first CUDA version with this entry's ABI
  int before_version;  // first CUDA version with a newer ABI (0: none)
  bool per_thread;     // the _ptsz/_ptds flavour (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
};

#define SIM_PROC(base, fn, since) {base, reinterpret_cast<void*>(&fn), since, 0, false}
#define SIM_PROC_UNTIL(base, fn, since, before) {base, reinterpret_cast<void*>(&fn), since, before, false}
#define SIM_PROC_PT(base, fn, since) {base, reinterpret_cast<void*>(&fn), since, 0, true}

// Data, not logic: one row per cuGetProcAddress symbol and the versions that serve it.
const ProcEntry kProcs[] = {
    SIM_PROC("cuInit", cuInit, 2000),
    SIM_PROC("cuDriverGetVersion", cuDriverGetVersion, 2020),
    // NVIDIA's runtime bootstraps with cuGetProcAddress("cuGetProcAddress", 12000).
    SIM_PROC_UNTIL("cuGetProcAddress", cuGetProcAddress, 11030, 12000),
    SIM_PROC("cuGetProcAddress", cuGetProcAddress_v2, 12000),
    SIM_PROC("cuGetErrorString", cuGetErrorString, 6000),
    SIM_PROC("cuGetExportTable", cuGetExportTable, 3000),
    SIM_PROC("cuGetErrorName", cuGetErrorName, 6000),
    SIM_PROC("cuDeviceGet", cuDeviceGet, 2000),
    SIM_PROC("cuDeviceGetCount", cuDeviceGetCount, 2000),
    SIM_PROC("cuDeviceGetName", cuDeviceGetName, 2000),
    SIM_PROC("cuDeviceGetAttribute", cuDeviceGetAttribute, 2000),
    SIM_PROC("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020),
    SIM_PROC("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000),
    // _v2 differs from the 7.0 entry only in not releasing a context it never
    // retained; the sim has no such state, so one function serves both.
    SIM_PROC("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset_v2, 7000),
    SIM_PROC("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 7000),
    SIM_PROC("cuCtxGetCurrent", cuCtxGetCurrent, 4000),
    SIM_PROC("cuCtxSetCurrent", cuCtxSetCurrent, 4000),
    SIM_PROC("cuCtxGetDevice", cuCtxGetDevice, 2000),
    SIM_PROC_UNTIL("cuCtxSynchronize", cuCtxSynchronize, 2000, 13000),
    SIM_PROC("cuCtxSynchronize", cuCtxSynchronize_v2, 13000),
    SIM_PROC("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool, 11020),
    SIM_PROC("cuMemGetInfo", cuMemGetInfo_v2, 3020),
    SIM_PROC("cuMemAlloc", cuMemAlloc_v2, 3020),
    SIM_PROC("cuMemAllocPitch", cuMemAllocPitch_v2, 3020),
    SIM_PROC("cuMemFree", cuMemFree_v2, 3020),
    SIM_PROC("cuMemAllocHost", cuMemAllocHost_v2, 3020),
    SIM_PROC("cuMemHostAlloc", cuMemHostAlloc, 2020),
    SIM_PROC("cuMemFreeHost", cuMemFreeHost, 2000),
    SIM_PROC("cuMemAllocManaged", cuMemAllocManaged, 6000),
    SIM_PROC("cuMemAllocAsync", cuMemAllocAsync, 11020),
    SIM_PROC("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020),
    SIM_PROC("cuMemFreeAsync", cuMemFreeAsync, 11020),
    SIM_PROC("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity, 10020),
    SIM_PROC("cuMemAddressReserve", cuMemAddressReserve, 10020),
    SIM_PROC("cuMemAddressFree", cuMemAddressFree, 10020),
    SIM_PROC("cuMemCreate", cuMemCreate, 10020),
    SIM_PROC("cuMemRelease", cuMemRelease, 10020),
    SIM_PROC("cuMemMap", cuMemMap, 10020),
    SIM_PROC("cuMemUnmap", cuMemUnmap, 10020),
    SIM_PROC("cuMemSetAccess", cuMemSetAccess, 10020),
    SIM_PROC("cuMemcpy", cuMemcpy, 4000),
    SIM_PROC("cuMemcpyAsync", cuMemcpyAsync, 4000),
    SIM_PROC("cuMemcpy2D", cuMemcpy2D_v2, 3020),
    SIM_PROC("cuMemcpy2DAsync", cuMemcpy2DAsync_v2, 3020),
    SIM_PROC("cuMemcpyPeer", cuMemcpyPeer, 4000),
    SIM_PROC("cuMemcpyPeerAsync", cuMemcpyPeerAsync, 4000),
    SIM_PROC("cuMemsetD8", cuMemsetD8_v2, 3020),
    SIM_PROC("cuMemsetD8Async", cuMemsetD8Async, 3020),
    SIM_PROC("cuMemsetD2D8", cuMemsetD2D8_v2, 3020),
    SIM_PROC("cuMemsetD2D8Async", cuMemsetD2D8Async, 3020),
    SIM_PROC("cuStreamCreate", cuStreamCreate, 2000),
    SIM_PROC("cuStreamCreateWithPriority", cuStreamCreateWithPriority, 5050),
    SIM_PROC("cuStreamDestroy", cuStreamDestroy_v2, 4000),
    SIM_PROC("cuStreamQuery", cuStreamQuery, 2000),
    SIM_PROC("cuStreamSynchronize", cuStreamSynchronize, 2000),
    SIM_PROC("cuStreamWaitEvent", cuStreamWaitEvent, 3020),
    SIM_PROC("cuEventCreate", cuEventCreate, 2000),
    SIM_PROC("cuEventRecord", cuEventRecord, 2000),
    SIM_PROC("cuEventQuery", cuEventQuery, 2000),
    SIM_PROC("cuEventSynchronize", cuEventSynchronize, 2000),
    SIM_PROC("cuEventElapsedTime", cuEventElapsedTime_v2, 12080),
    SIM_PROC("cuEventDestroy", cuEventDestroy_v2, 4000),
    SIM_PROC("cuLibraryLoadData", cuLibraryLoadData, 12000),
    SIM_PROC("cuLibraryUnload", cuLibraryUnload, 12000),
    SIM_PROC("cuLibraryGetKernel", cuLibraryGetKernel, 12000),
    SIM_PROC("cuKernelGetName", cuKernelGetName, 12030),
    SIM_PROC("cuFuncGetName", cuFuncGetName, 12030),
    SIM_PROC("cuLaunchKernel", cuLaunchKernel, 4000),
    SIM_PROC("cuLaunchKernelEx", cuLaunchKernelEx, 11060),
    SIM_PROC("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, 9000),
    SIM_PROC_UNTIL("cuStreamBeginCapture", cuStreamBeginCapture, 10000, 10010),
    SIM_PROC("cuStreamBeginCapture", cuStreamBeginCapture_v2, 10010),
    SIM_PROC("cuStreamEndCapture", cuStreamEndCapture, 10000),
    SIM_PROC("cuStreamIsCapturing", cuStreamIsCapturing, 10000),
    SIM_PROC_UNTIL("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo, 10010, 11030),
    SIM_PROC_UNTIL("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v2, 11030, 12030),
    SIM_PROC("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3, 12030),
    SIM_PROC("cuGraphGetNodes", cuGraphGetNodes, 10000),
    SIM_PROC("cuGraphGetRootNodes", cuGraphGetRootNodes, 10000),
    SIM_PROC("cuGraphNodeGetType", cuGraphNodeGetType, 10000),
    SIM_PROC_UNTIL("cuGraphNodeGetDependencies", cuGraphNodeGetDependencies, 10000, 12030),
    SIM_PROC("cuGraphNodeGetDependencies", cuGraphNodeGetDependencies_v2, 12030),
    SIM_PROC("cuGraphExecGetFlags", cuGraphExecGetFlags, 12000),
    SIM_PROC("cuThreadExchangeStreamCaptureMode", cuThreadExchangeStreamCaptureMode, 10010),
    SIM_PROC("cuStreamGetPriority", cuStreamGetPriority, 5050),
    SIM_PROC("cuEventRecordWithFlags", cuEventRecordWithFlags, 11010),
    SIM_PROC("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId, 4010),
    SIM_PROC("cuPointerGetAttribute", cuPointerGetAttribute, 4000),
    SIM_PROC("cuFuncGetAttribute", cuFuncGetAttribute, 2020),
    SIM_PROC("cuFuncSetAttribute", cuFuncSetAttribute, 9000),
    SIM_PROC("cuFuncSetCacheConfig", cuFuncSetCacheConfig, 3000),
    SIM_PROC("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050),
    SIM_PROC("cuTensorMapEncodeTiled", cuTensorMapEncodeTiled, 12000),
    SIM_PROC("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, 11040),
    SIM_PROC("cuGraphLaunch", cuGraphLaunch, 10000),
    SIM_PROC("cuGraphExecDestroy", cuGraphExecDestroy, 10000),
    SIM_PROC("cuGraphDestroy", cuGraphDestroy, 10000),
    SIM_PROC("cuProfilerStart", cuProfilerStart, 4000),
    SIM_PROC("cuProfilerStop", cuProfilerStop, 4000),
    SIM_PROC("cuDevicePrimaryCtxSetFlags", cuDevicePrimaryCtxSetFlags_v2, 11000),
    SIM_PROC("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState, 7000),
    SIM_PROC("cuCtxGetFlags", cuCtxGetFlags, 7000),
    SIM_PROC("cuCtxSetLimit", cuCtxSetLimit, 3010),
    SIM_PROC("cuCtxGetLimit", cuCtxGetLimit, 3010),
    SIM_PROC("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer, 4000),
    SIM_PROC("cuCtxEnablePeerAccess", cuCtxEnablePeerAccess, 4000),
    SIM_PROC("cuCtxDisablePeerAccess", cuCtxDisablePeerAccess, 4000),
    SIM_PROC("cuStreamAddCallback", cuStreamAddCallback, 5000),
    SIM_PROC("cuLaunchHostFunc", cuLaunchHostFunc, 10000),
    SIM_PROC("cuMemPrefetchAsync", cuMemPrefetchAsync_v2, 12020),
    SIM_PROC("cuMemAdvise", cuMemAdvise_v2, 12020),
    SIM_PROC("cuMemPoolCreate", cuMemPoolCreate, 11020),
    SIM_PROC("cuMemPoolDestroy", cuMemPoolDestroy, 11020),
    SIM_PROC("cuMemPoolTrimTo", cuMemPoolTrimTo, 11020),
    SIM_PROC("cuMemPoolSetAttribute", cuMemPoolSetAttribute, 11020),
    SIM_PROC("cuMemPoolGetAttribute", cuMemPoolGetAttribute, 11020),
    SIM_PROC("cuMemPoolSetAccess", cuMemPoolSetAccess, 11020),
    SIM_PROC("cuMemPoolGetAccess", cuMemPoolGetAccess, 11020),
    SIM_PROC("cuDeviceGetMemPool", cuDeviceGetMemPool, 11020),
    SIM_PROC("cuDeviceSetMemPool", cuDeviceSetMemPool, 11020),
    SIM_PROC("cuModuleLoad", cuModuleLoad, 2000),
    SIM_PROC("cuModuleLoadData", cuModuleLoadData, 2000),
    SIM_PROC("cuModuleLoadDataEx", cuModuleLoadDataEx, 2010),
    SIM_PROC("cuModuleLoadFatBinary", cuModuleLoadFatBinary, 2000),
    SIM_PROC("cuModuleUnload", cuModuleUnload, 2000),
    SIM_PROC("cuModuleGetFunction", cuModuleGetFunction, 2000),
    SIM_PROC("cuModuleGetGlobal", cuModuleGetGlobal_v2, 3020),
    SIM_PROC("cuLibraryGetGlobal", cuLibraryGetGlobal, 12000),
    SIM_PROC("cuLinkCreate", cuLinkCreate_v2, 6050),
    SIM_PROC("cuLinkAddData", cuLinkAddData_v2, 6050),
    SIM_PROC("cuLinkAddFile", cuLinkAddFile_v2, 6050),
    SIM_PROC("cuLinkComplete", cuLinkComplete, 5050),
    SIM_PROC("cuLinkDestroy", cuLinkDestroy, 5050),
    SIM_PROC("cuCtxCreate", cuCtxCreate_v4, 12050),
    SIM_PROC("cuCtxDestroy", cuCtxDestroy_v2, 4000),
    SIM_PROC("cuCtxPushCurrent", cuCtxPushCurrent_v2, 4000),
    SIM_PROC("cuCtxPopCurrent", cuCtxPopCurrent_v2, 4000),
    SIM_PROC("cuArrayCreate", cuArrayCreate_v2, 3020),
    SIM_PROC("cuArray3DCreate", cuArray3DCreate_v2, 3020),
    SIM_PROC("cuArrayDestroy", cuArrayDestroy, 2000),
    SIM_PROC("cuArray3DGetDescriptor", cuArray3DGetDescriptor_v2, 3020),
    SIM_PROC("cuMemcpy3D", cuMemcpy3D_v2, 3020),
    SIM_PROC("cuMemcpy3DAsync", cuMemcpy3DAsync_v2, 3020),
    SIM_PROC("cuMemcpyHtoA", cuMemcpyHtoA_v2, 3020),
    SIM_PROC("cuMemcpyAtoH", cuMemcpyAtoH_v2, 3020),
    SIM_PROC("cuMemcpyDtoA", cuMemcpyDtoA_v2, 3020),
    SIM_PROC("cuMemcpyAtoD", cuMemcpyAtoD_v2, 3020),
    SIM_PROC("cuMemcpyHtoAAsync", cuMemcpyHtoAAsync_v2, 3020),
    SIM_PROC("cuMemcpyAtoHAsync", cuMemcpyAtoHAsync_v2, 3020),
    SIM_PROC("cuMemcpyHtoD", cuMemcpyHtoD_v2, 3020),
    SIM_PROC("cuMemcpyDtoH", cuMemcpyDtoH_v2, 3020),
    SIM_PROC("cuMemcpyDtoD", cuMemcpyDtoD_v2, 3020),
    SIM_PROC("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2, 3020),
    SIM_PROC("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2, 3020),
    SIM_PROC("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync_v2, 3020),
    SIM_PROC("cuIpcGetMemHandle", cuIpcGetMemHandle, 4010),
    SIM_PROC("cuIpcOpenMemHandle", cuIpcOpenMemHandle_v2, 11000),
    SIM_PROC("cuIpcCloseMemHandle", cuIpcCloseMemHandle, 4010),
    SIM_PROC("cuIpcGetEventHandle", cuIpcGetEventHandle, 4010),
    SIM_PROC("cuIpcOpenEventHandle", cuIpcOpenEventHandle, 4010),
    SIM_PROC("cuGraphCreate", cuGraphCreate, 10000),
    SIM_PROC("cuGraphConditionalHandleCreate", cuGraphConditionalHandleCreate, 12030),
    SIM_PROC("cuGraphAddNode", cuGraphAddNode_v2, 12030),
    SIM_PROC("cuGraphAddKernelNode", cuGraphAddKernelNode_v2, 12000),
    SIM_PROC("cuGraphAddMemcpyNode", cuGraphAddMemcpyNode, 10000),
    SIM_PROC("cuGraphAddMemsetNode", cuGraphAddMemsetNode, 10000),
    SIM_PROC("cuGraphAddHostNode", cuGraphAddHostNode, 10000),
    SIM_PROC("cuGraphAddEmptyNode", cuGraphAddEmptyNode, 10000),
    SIM_PROC("cuGraphAddEventRecordNode", cuGraphAddEventRecordNode, 11010),
    SIM_PROC("cuGraphAddEventWaitNode", cuGraphAddEventWaitNode, 11010),
    SIM_PROC("cuGraphAddDependencies", cuGraphAddDependencies_v2, 12030),
    SIM_PROC("cuGraphUpload", cuGraphUpload, 11010),
    SIM_PROC("cuGraphExecUpdate", cuGraphExecUpdate_v2, 12000),
    SIM_PROC("cuMemHostRegister", cuMemHostRegister_v2, 6050),
    SIM_PROC("cuMemHostUnregister", cuMemHostUnregister, 4000),
    SIM_PROC("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2, 3020),
    SIM_PROC("cuMemHostGetFlags", cuMemHostGetFlags, 2030),
    SIM_PROC("cuTexObjectCreate", cuTexObjectCreate, 5000),
    SIM_PROC("cuTexObjectDestroy", cuTexObjectDestroy, 5000),
    SIM_PROC("cuSurfObjectCreate", cuSurfObjectCreate, 5000),
    SIM_PROC("cuSurfObjectDestroy", cuSurfObjectDestroy, 5000),
    SIM_PROC_PT("cuMemcpy3D", cuMemcpy3D_v2_ptds, 7000),
    SIM_PROC_PT("cuMemcpy3DAsync", cuMemcpy3DAsync_v2_ptsz, 7000),
    SIM_PROC_PT("cuMemcpyHtoD", cuMemcpyHtoD_v2_ptds, 7000),
    SIM_PROC_PT("cuMemcpyDtoH", cuMemcpyDtoH_v2_ptds, 7000),
    SIM_PROC_PT("cuMemcpyDtoD", cuMemcpyDtoD_v2_ptds, 7000),
    SIM_PROC_PT("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2_ptsz, 7000),
    SIM_PROC_PT("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2_ptsz, 7000),
    SIM_PROC_PT("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync_v2_ptsz, 7000),
    SIM_PROC_PT("cuStreamAddCallback", cuStreamAddCallback_ptsz, 7000),
    SIM_PROC_PT("cuLaunchHostFunc", cuLaunchHostFunc_ptsz, 10000),
    SIM_PROC_PT("cuMemPrefetchAsync", cuMemPrefetchAsync_v2_ptsz, 12020),
    // Per-thread default stream flavours (NVIDIA's runtime asks for these at 7.0
    // or at the function's own version).
    SIM_PROC_PT("cuMemcpy", cuMemcpy_ptds, 7000),
    SIM_PROC_PT("cuMemcpyAsync", cuMemcpyAsync_ptsz, 7000),
    SIM_PROC_PT("cuMemcpy2D", cuMemcpy2D_v2_ptds, 7000),
    SIM_PROC_PT("cuMemcpy2DAsync", cuMemcpy2DAsync_v2_ptsz, 7000),
    SIM_PROC_PT("cuMemcpyPeer", cuMemcpyPeer_ptds, 7000),
    SIM_PROC_PT("cuMemcpyPeerAsync", cuMemcpyPeerAsync_ptsz, 7000),
    SIM_PROC_PT("cuMemsetD8", cuMemsetD8_v2_ptds, 7000),
    SIM_PROC_PT("cuMemsetD8Async", cuMemsetD8Async_ptsz, 7000),
    SIM_PROC_PT("cuMemsetD2D8", cuMemsetD2D8_v2_ptds, 7000),
    SIM_PROC_PT("cuMemsetD2D8Async", cuMemsetD2D8Async_ptsz, 7000),
    SIM_PROC_PT("cuStreamQuery", cuStreamQuery_ptsz, 7000),
    SIM_PROC_PT("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3_ptsz, 12030),
    SIM_PROC_PT("cuStreamGetPriority", cuStreamGetPriority_ptsz, 7000),
    SIM_PROC_PT("cuEventRecordWithFlags", cuEventRecordWithFlags_ptsz, 11010),
    SIM_PROC_PT("cuStreamSynchronize", cuStreamSynchronize_ptsz, 7000),
    SIM_PROC_PT("cuStreamWaitEvent", cuStreamWaitEvent_ptsz, 7000),
    SIM_PROC_PT("cuEventRecord", cuEventRecord_ptsz, 7000),
    SIM_PROC_PT("cuLaunchKernel", cuLaunchKernel_ptsz, 7000),
    SIM_PROC_PT("cuLaunchKernelEx", cuLaunchKernelEx_ptsz, 11060),
    SIM_PROC_PT("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel_ptsz, 9000),
    SIM_PROC_PT("cuGraphLaunch", cuGraphLaunch_ptsz, 10000),
    SIM_PROC_PT("cuGraphUpload", cuGraphUpload_ptsz, 11010),
    SIM_PROC_PT("cuStreamBeginCapture", cuStreamBeginCapture_v2_ptsz, 10010),
    SIM_PROC_PT("cuStreamEndCapture", cuStreamEndCapture_ptsz, 10000),
    SIM_PROC_PT("cuStreamIsCapturing", cuStreamIsCapturing_ptsz, 10000),
    SIM_PROC_PT("cuMemAllocAsync", cuMemAllocAsync_ptsz, 11020),
    SIM_PROC_PT("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync_ptsz, 11020),
    SIM_PROC_PT("cuMemFreeAsync", cuMemFreeAsync_ptsz, 11020),
};

#undef SIM_PROC
#undef SIM_PROC_UNTIL
#undef SIM_PROC_PT

// The entry for (symbol, version, flavour), or nullptr; *known: the name exists.
const ProcEntry* Find(const char* symbol, int cuda_version, bool per_thread, bool* known) {
  for (const ProcEntry& entry : kProcs) {
    if (entry.per_thread != per_thread || strcmp(entry.name, symbol) != 0) continue;
    *known = true;
    if (cuda_version < entry.since_version) continue;
    if (entry.before_version != 0 && cuda_version >= entry.before_version) continue;
    return &entry;
  }
  return nullptr;
}

// With the per-thread flag, the per-thread flavour when there is one, else the
// legacy entry (as documented for cuGetProcAddress).
CUresult Lookup(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  bool known = false;
  const ProcEntry* entry = nullptr;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) entry = Find(symbol, cuda_version, true, &known);
  if (!entry) entry = Find(symbol, cuda_version, false, &known);
  if (entry) {
    *pfn = entry->function;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  if (status) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace
}  // namespace sim

// The driver's private function tables (cuda.h declares the entry point
// and documents nothing of it): the sim has none, and says so for every
// table id, as a driver without the table would. NVRTC asks for one at compile time and goes on
// without it; a library that cannot (NVIDIA's cuBLAS) fails to start.
SIM_DRIVER_EXPORT CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  cuGetExportTable_params params{ppExportTable, pExportTableId};
  return sim::DriverCall(SIM_DRIVER_CBID(cuGetExportTable), "cuGetExportTable", &params, [&]() -> CUresult {
    if (!ppExportTable || !pExportTableId) return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = nullptr;
    return CUDA_ERROR_NOT_FOUND;
  });
}

SIM_DRIVER_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult* symbolStatus) {
  cuGetProcAddress_v2_params params{symbol, pfn, cudaVersion, flags, symbolStatus};
  return sim::DriverCall(SIM_DRIVER_CBID(cuGetProcAddress_v2), "cuGetProcAddress_v2", &params,
                         [&] { return sim::Lookup(symbol, pfn, cudaVersion, flags, symbolStatus); });
}

// The CUDA 11/12 signature, still exported for binaries built against it.
SIM_DRIVER_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  cuGetProcAddress_params params{symbol, pfn, cudaVersion, flags};
  return sim::DriverCall(SIM_DRIVER_CBID(cuGetProcAddress), "cuGetProcAddress", &params,
                         [&] { return sim::Lookup(symbol, pfn, cudaVersion, flags, nullptr); });
}
