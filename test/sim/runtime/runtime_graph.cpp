// Runtime: stream capture and graphs, on the driver's (see
// ../driver/graph.h for what is modelled).
#include "runtime_state.h"

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

SIM_RUNTIME_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  cudaStreamEndCapture_v10000_params params{stream, pGraph};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamEndCapture_v10000), "cudaStreamEndCapture", &params, [&] {
    return FromDriver(Driver().cuStreamEndCapture(S(stream), reinterpret_cast<CUgraph*>(pGraph)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pCaptureStatus) {
  cudaStreamIsCapturing_v10000_params params{stream, pCaptureStatus};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamIsCapturing_v10000), "cudaStreamIsCapturing", &params, [&] {
    return FromDriver(
        Driver().cuStreamIsCapturing(S(stream), reinterpret_cast<CUstreamCaptureStatus*>(pCaptureStatus)));
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
