// Runtime: stream capture and graphs, on the driver's (see
// ../driver/graph.h for what is modelled).
#include "runtime_state.h"

// The runtime's helpers by short name, as in every runtime_*.cpp.
using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

CUgraph G(cudaGraph_t graph) { return reinterpret_cast<CUgraph>(graph); }
CUgraphExec X(cudaGraphExec_t exec) { return reinterpret_cast<CUgraphExec>(exec); }

cudaError_t Instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec) return cudaErrorInvalidValue;
  return FromDriver(Driver().cuGraphInstantiateWithFlags(reinterpret_cast<CUgraphExec*>(exec), G(graph), flags));
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  cudaStreamBeginCapture_v10000_params params{stream, mode};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamBeginCapture_v10000), "cudaStreamBeginCapture", &params, [&] {
    return FromDriver(Driver().cuStreamBeginCapture(S(stream), static_cast<CUstreamCaptureMode>(mode)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  cudaStreamBeginCapture_ptsz_v10000_params params{stream, mode};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamBeginCapture_ptsz_v10000), "cudaStreamBeginCapture_ptsz", &params,
                          [&] {
    return FromDriver(Driver(true).cuStreamBeginCapture(S(stream), static_cast<CUstreamCaptureMode>(mode)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  cudaStreamEndCapture_v10000_params params{stream, pGraph};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamEndCapture_v10000), "cudaStreamEndCapture", &params, [&] {
    return FromDriver(Driver().cuStreamEndCapture(S(stream), reinterpret_cast<CUgraph*>(pGraph)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  cudaStreamEndCapture_ptsz_v10000_params params{stream, pGraph};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamEndCapture_ptsz_v10000), "cudaStreamEndCapture_ptsz", &params,
                          [&] {
    return FromDriver(Driver(true).cuStreamEndCapture(S(stream), reinterpret_cast<CUgraph*>(pGraph)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pCaptureStatus) {
  cudaStreamIsCapturing_v10000_params params{stream, pCaptureStatus};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamIsCapturing_v10000), "cudaStreamIsCapturing", &params, [&] {
    return FromDriver(
        Driver().cuStreamIsCapturing(S(stream), reinterpret_cast<CUstreamCaptureStatus*>(pCaptureStatus)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                                          enum cudaStreamCaptureStatus* pCaptureStatus) {
  cudaStreamIsCapturing_ptsz_v10000_params params{stream, pCaptureStatus};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamIsCapturing_ptsz_v10000), "cudaStreamIsCapturing_ptsz", &params,
                          [&] {
    return FromDriver(
        Driver(true).cuStreamIsCapturing(S(stream), reinterpret_cast<CUstreamCaptureStatus*>(pCaptureStatus)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags) {
  cudaGraphInstantiate_v12000_params params{pGraphExec, graph, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphInstantiate_v12000), "cudaGraphInstantiate", &params,
                          [&] { return Instantiate(pGraphExec, graph, flags); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                             unsigned long long flags) {
  cudaGraphInstantiateWithFlags_v11040_params params{pGraphExec, graph, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphInstantiateWithFlags_v11040), "cudaGraphInstantiateWithFlags",
                          &params, [&] { return Instantiate(pGraphExec, graph, flags); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  cudaGraphLaunch_v10000_params params{graphExec, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphLaunch_v10000), "cudaGraphLaunch", &params,
                          [&] { return FromDriver(Driver().cuGraphLaunch(X(graphExec), S(stream))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  cudaGraphLaunch_ptsz_v10000_params params{graphExec, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphLaunch_ptsz_v10000), "cudaGraphLaunch_ptsz", &params,
                          [&] { return FromDriver(Driver(true).cuGraphLaunch(X(graphExec), S(stream))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  cudaGraphExecDestroy_v10000_params params{graphExec};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphExecDestroy_v10000), "cudaGraphExecDestroy", &params,
                          [&] { return FromDriver(Driver().cuGraphExecDestroy(X(graphExec))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  cudaGraphDestroy_v10000_params params{graph};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphDestroy_v10000), "cudaGraphDestroy", &params,
                          [&] { return FromDriver(Driver().cuGraphDestroy(G(graph))); });
}

// ---- what a graph tells about itself (the runtime's types are the driver's).

SIM_RUNTIME_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  cudaGraphGetNodes_v10000_params params{graph, nodes, numNodes};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphGetNodes_v10000), "cudaGraphGetNodes", &params, [&] {
    return FromDriver(Driver().cuGraphGetNodes(G(graph), reinterpret_cast<CUgraphNode*>(nodes), numNodes));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes,
                                                     size_t* pNumRootNodes) {
  cudaGraphGetRootNodes_v10000_params params{graph, pRootNodes, pNumRootNodes};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphGetRootNodes_v10000), "cudaGraphGetRootNodes", &params, [&] {
    return FromDriver(
        Driver().cuGraphGetRootNodes(G(graph), reinterpret_cast<CUgraphNode*>(pRootNodes), pNumRootNodes));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* pType) {
  cudaGraphNodeGetType_v10000_params params{node, pType};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphNodeGetType_v10000), "cudaGraphNodeGetType", &params, [&] {
    // cudaGraphNodeType and CUgraphNodeType share their values.
    return FromDriver(Driver().cuGraphNodeGetType(reinterpret_cast<CUgraphNode>(node),
                                                  reinterpret_cast<CUgraphNodeType*>(pType)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                                            cudaGraphEdgeData* edgeData,
                                                            size_t* pNumDependencies) {
  cudaGraphNodeGetDependencies_v12030_params params{node, pDependencies, edgeData, pNumDependencies};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphNodeGetDependencies_v12030), "cudaGraphNodeGetDependencies",
                          &params, [&] {
    return FromDriver(Driver().cuGraphNodeGetDependencies(
        reinterpret_cast<CUgraphNode>(node), reinterpret_cast<CUgraphNode*>(pDependencies),
        reinterpret_cast<CUgraphEdgeData*>(edgeData), pNumDependencies));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long* flags) {
  cudaGraphExecGetFlags_v12000_params params{graphExec, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGraphExecGetFlags_v12000), "cudaGraphExecGetFlags", &params, [&] {
    return FromDriver(Driver().cuGraphExecGetFlags(X(graphExec), reinterpret_cast<cuuint64_t*>(flags)));
  });
}
