// Runtime: building graphs node by node, uploading and updating executable
// graphs, on the driver's (../driver/driver_graph_build.cpp). Kernel nodes
// name a host stub, resolved like a launch; memcpy nodes take the runtime's
// cudaMemcpy3DParms (extents in array elements when an array takes part).
#include "registry.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

CUgraph G(cudaGraph_t graph) { return reinterpret_cast<CUgraph>(graph); }
CUgraphNode* N(cudaGraphNode_t* node) { return reinterpret_cast<CUgraphNode*>(node); }
const CUgraphNode* Deps(const cudaGraphNode_t* deps) { return reinterpret_cast<const CUgraphNode*>(deps); }
CUdeviceptr D(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

cudaError_t Result(CUresult r) {
  if (r == CUDA_ERROR_INVALID_HANDLE) return cudaErrorInvalidResourceHandle;
  return FromDriver(r);
}

// runtime_copy.cpp's Describe2D for CUDA_MEMCPY3D: another struct, the same unified fields.
// A 1D copy as the driver's 3D description (unified addressing).
CUDA_MEMCPY3D Linear(void* dst, const void* src, size_t count) {
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = D(src);
  c.srcPitch = count;
  c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.dstDevice = D(dst);
  c.dstPitch = count;
  c.WidthInBytes = count;
  c.Height = 1;
  c.Depth = 1;
  return c;
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  cudaGraphCreate_v10000_params params{pGraph, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphCreate_v10000), "cudaGraphCreate", &params,
                          [&] { return Result(Driver().cuGraphCreate(reinterpret_cast<CUgraph*>(pGraph), flags)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                      const struct cudaKernelNodeParams* pNodeParams) {
  cudaGraphAddKernelNode_v10000_params params{pGraphNode, graph, pDependencies, numDependencies, pNodeParams};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddKernelNode_v10000), "cudaGraphAddKernelNode", &params,
                          [&]() -> cudaError_t {
    if (!pNodeParams) return cudaErrorInvalidValue;
    CUkernel kernel = nullptr;
    if (cudaError_t e = simrt::ResolveKernel(pNodeParams->func, &kernel); e != cudaSuccess) return e;
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = reinterpret_cast<CUfunction>(kernel);
    p.gridDimX = pNodeParams->gridDim.x;
    p.gridDimY = pNodeParams->gridDim.y;
    p.gridDimZ = pNodeParams->gridDim.z;
    p.blockDimX = pNodeParams->blockDim.x;
    p.blockDimY = pNodeParams->blockDim.y;
    p.blockDimZ = pNodeParams->blockDim.z;
    p.sharedMemBytes = pNodeParams->sharedMemBytes;
    p.kernelParams = pNodeParams->kernelParams;
    p.extra = pNodeParams->extra;
    const CUresult r = Driver().cuGraphAddKernelNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies, &p);
    return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : Result(r);
  }, simrt::RegisteredName(pNodeParams ? pNodeParams->func : nullptr));
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                        const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                        void* dst, const void* src, size_t count,
                                                        enum cudaMemcpyKind kind) {
  cudaGraphAddMemcpyNode1D_v11010_params params{pGraphNode, graph, pDependencies, numDependencies, dst, src, count, kind};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddMemcpyNode1D_v11010), "cudaGraphAddMemcpyNode1D", &params,
                          [&]() -> cudaError_t {
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
    const CUDA_MEMCPY3D c = Linear(dst, src, count);
    return Result(Driver().cuGraphAddMemcpyNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies, &c,
                                                nullptr));
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                      const struct cudaMemcpy3DParms* pCopyParams) {
  cudaGraphAddMemcpyNode_v10000_params params{pGraphNode, graph, pDependencies, numDependencies, pCopyParams};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddMemcpyNode_v10000), "cudaGraphAddMemcpyNode", &params,
                          [&]() -> cudaError_t {
    if (!pCopyParams) return cudaErrorInvalidValue;
    if (pCopyParams->srcArray || pCopyParams->dstArray) return cudaErrorNotSupported;  // array nodes: see README
    const cudaMemcpy3DParms& p = *pCopyParams;
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.srcDevice = D(p.srcPtr.ptr);
    c.srcPitch = p.srcPtr.pitch;
    c.srcHeight = p.srcPtr.ysize;
    c.srcXInBytes = p.srcPos.x;
    c.srcY = p.srcPos.y;
    c.srcZ = p.srcPos.z;
    c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.dstDevice = D(p.dstPtr.ptr);
    c.dstPitch = p.dstPtr.pitch;
    c.dstHeight = p.dstPtr.ysize;
    c.dstXInBytes = p.dstPos.x;
    c.dstY = p.dstPos.y;
    c.dstZ = p.dstPos.z;
    c.WidthInBytes = p.extent.width;
    c.Height = p.extent.height;
    c.Depth = p.extent.depth;
    return Result(Driver().cuGraphAddMemcpyNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies, &c,
                                                nullptr));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                      const struct cudaMemsetParams* pMemsetParams) {
  cudaGraphAddMemsetNode_v10000_params params{pGraphNode, graph, pDependencies, numDependencies, pMemsetParams};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddMemsetNode_v10000), "cudaGraphAddMemsetNode", &params,
                          [&]() -> cudaError_t {
    if (!pMemsetParams) return cudaErrorInvalidValue;
    CUDA_MEMSET_NODE_PARAMS p{};
    p.dst = D(pMemsetParams->dst);
    p.pitch = pMemsetParams->pitch;
    p.value = pMemsetParams->value;
    p.elementSize = pMemsetParams->elementSize;
    p.width = pMemsetParams->width;
    p.height = pMemsetParams->height;
    return Result(Driver().cuGraphAddMemsetNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies, &p,
                                                nullptr));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                    const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                    const struct cudaHostNodeParams* pNodeParams) {
  cudaGraphAddHostNode_v10000_params params{pGraphNode, graph, pDependencies, numDependencies, pNodeParams};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddHostNode_v10000), "cudaGraphAddHostNode", &params,
                          [&]() -> cudaError_t {
    if (!pNodeParams) return cudaErrorInvalidValue;
    CUDA_HOST_NODE_PARAMS p{pNodeParams->fn, pNodeParams->userData};
    return Result(Driver().cuGraphAddHostNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies, &p));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                     const cudaGraphNode_t* pDependencies, size_t numDependencies) {
  cudaGraphAddEmptyNode_v10000_params params{pGraphNode, graph, pDependencies, numDependencies};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddEmptyNode_v10000), "cudaGraphAddEmptyNode", &params, [&] {
    return Result(Driver().cuGraphAddEmptyNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                           const cudaGraphNode_t* pDependencies,
                                                           size_t numDependencies, cudaEvent_t event) {
  cudaGraphAddEventRecordNode_v11010_params params{pGraphNode, graph, pDependencies, numDependencies, event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddEventRecordNode_v11010), "cudaGraphAddEventRecordNode", &params,
                          [&] {
    return Result(Driver().cuGraphAddEventRecordNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies,
                                                     reinterpret_cast<CUevent>(event)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                         const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                                         cudaEvent_t event) {
  cudaGraphAddEventWaitNode_v11010_params params{pGraphNode, graph, pDependencies, numDependencies, event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddEventWaitNode_v11010), "cudaGraphAddEventWaitNode", &params,
                          [&] {
    return Result(Driver().cuGraphAddEventWaitNode(N(pGraphNode), G(graph), Deps(pDependencies), numDependencies,
                                                   reinterpret_cast<CUevent>(event)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                        const cudaGraphNode_t* to, const cudaGraphEdgeData* edgeData,
                                                        size_t numDependencies) {
  cudaGraphAddDependencies_v12030_params params{graph, from, to, edgeData, numDependencies};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddDependencies_v12030), "cudaGraphAddDependencies", &params, [&] {
    return Result(Driver().cuGraphAddDependencies(G(graph), Deps(from), Deps(to),
                                                  reinterpret_cast<const CUgraphEdgeData*>(edgeData), numDependencies));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  cudaGraphUpload_v10000_params params{graphExec, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphUpload_v10000), "cudaGraphUpload", &params, [&] {
    return Result(Driver().cuGraphUpload(reinterpret_cast<CUgraphExec>(graphExec), S(stream)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  cudaGraphUpload_ptsz_v10000_params params{graphExec, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphUpload_ptsz_v10000), "cudaGraphUpload_ptsz", &params, [&] {
    return Result(Driver(true).cuGraphUpload(reinterpret_cast<CUgraphExec>(graphExec), S(stream)));
  });
}

// The runtime's face of driver_graph_build.cpp's cuGraphExecUpdate_v2: the driver's checks, runtime errors.
SIM_RUNTIME_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                                   cudaGraphExecUpdateResultInfo* resultInfo) {
  cudaGraphExecUpdate_v10020_params params{hGraphExec, hGraph, resultInfo};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphExecUpdate_v10020), "cudaGraphExecUpdate", &params,
                          [&]() -> cudaError_t {
    if (!resultInfo) return cudaErrorInvalidValue;
    CUgraphExecUpdateResultInfo info{};
    const CUresult r = Driver().cuGraphExecUpdate(reinterpret_cast<CUgraphExec>(hGraphExec), G(hGraph), &info);
    resultInfo->result = static_cast<cudaGraphExecUpdateResult>(info.result);
    resultInfo->errorNode = reinterpret_cast<cudaGraphNode_t>(info.errorNode);
    resultInfo->errorFromNode = reinterpret_cast<cudaGraphNode_t>(info.errorFromNode);
    return FromDriver(r);
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out,
                                                                cudaGraph_t graph, unsigned int defaultLaunchValue,
                                                                unsigned int flags) {
  cudaGraphConditionalHandleCreate_v12030_params params{pHandle_out, graph, defaultLaunchValue, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphConditionalHandleCreate_v12030), "cudaGraphConditionalHandleCreate",
                          &params, [&] {
    return Result(Driver().cuGraphConditionalHandleCreate(reinterpret_cast<CUgraphConditionalHandle*>(pHandle_out),
                                                          G(graph), nullptr, defaultLaunchValue, flags));
  });
}

// cudaGraphNodeParams and CUgraphNodeParams share their layout for the
// conditional member (handle, type, size, body graph array).
SIM_RUNTIME_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                                const cudaGraphNode_t* pDependencies,
                                                const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                                struct cudaGraphNodeParams* nodeParams) {
  cudaGraphAddNode_v12030_params params{pGraphNode, graph, pDependencies, dependencyData, numDependencies, nodeParams};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphAddNode_v12030), "cudaGraphAddNode", &params,
                          [&]() -> cudaError_t {
    if (!nodeParams) return cudaErrorInvalidValue;
    if (nodeParams->type != cudaGraphNodeTypeConditional) return cudaErrorNotSupported;
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = nodeParams->conditional.handle;
    p.conditional.type = static_cast<CUgraphConditionalNodeType>(nodeParams->conditional.type);
    p.conditional.size = nodeParams->conditional.size;
    const CUresult r = Driver().cuGraphAddNode(N(pGraphNode), G(graph), Deps(pDependencies),
                                               reinterpret_cast<const CUgraphEdgeData*>(dependencyData),
                                               numDependencies, &p);
    if (r == CUDA_SUCCESS) nodeParams->conditional.phGraph_out = reinterpret_cast<cudaGraph_t*>(p.conditional.phGraph_out);
    return Result(r);
  });
}
