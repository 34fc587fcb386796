// Runtime: what a stream tells about itself (priority, capture state), the
// thread's capture mode, and event records with flags, each on the driver's.
#include "personality.h"
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

SIM_RUNTIME_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  cudaStreamGetPriority_v5050_params params{hStream, priority};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamGetPriority_v5050), "cudaStreamGetPriority", &params,
                          [&] { return FromDriver(Driver().cuStreamGetPriority(S(hStream), priority)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                                        enum cudaStreamCaptureStatus* captureStatus_out,
                                                        unsigned long long* id_out, cudaGraph_t* graph_out,
                                                        const cudaGraphNode_t** dependencies_out,
                                                        const cudaGraphEdgeData** edgeData_out,
                                                        size_t* numDependencies_out) {
  cudaStreamGetCaptureInfo_v12030_params params{stream, captureStatus_out, id_out, graph_out,
                                                dependencies_out, edgeData_out, numDependencies_out};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamGetCaptureInfo_v12030), "cudaStreamGetCaptureInfo", &params, [&] {
    // The runtime's types are the driver's under other names (same layout).
    return FromDriver(Driver().cuStreamGetCaptureInfo(
        S(stream), reinterpret_cast<CUstreamCaptureStatus*>(captureStatus_out), reinterpret_cast<cuuint64_t*>(id_out),
        reinterpret_cast<CUgraph*>(graph_out), reinterpret_cast<const CUgraphNode**>(dependencies_out),
        reinterpret_cast<const CUgraphEdgeData**>(edgeData_out), numDependencies_out));
  });
}

// The per-thread-stream flavour: the same wrapper with its own exported symbol and cbid.
SIM_RUNTIME_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                                             enum cudaStreamCaptureStatus* captureStatus_out,
                                                             unsigned long long* id_out, cudaGraph_t* graph_out,
                                                             const cudaGraphNode_t** dependencies_out,
                                                             const cudaGraphEdgeData** edgeData_out,
                                                             size_t* numDependencies_out) {
  cudaStreamGetCaptureInfo_ptsz_v12030_params params{stream, captureStatus_out, id_out, graph_out,
                                                     dependencies_out, edgeData_out, numDependencies_out};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamGetCaptureInfo_ptsz_v12030), "cudaStreamGetCaptureInfo_ptsz",
                          &params, [&] {
    return FromDriver(Driver(true).cuStreamGetCaptureInfo(
        S(stream), reinterpret_cast<CUstreamCaptureStatus*>(captureStatus_out), reinterpret_cast<cuuint64_t*>(id_out),
        reinterpret_cast<CUgraph*>(graph_out), reinterpret_cast<const CUgraphNode**>(dependencies_out),
        reinterpret_cast<const CUgraphEdgeData**>(edgeData_out), numDependencies_out));
  });
}

#if SIM_CUDA_MAJOR == 12
// CUDA 12's form without edge data (CUDA 13 removed it); its parameters as
// CUDA 12's generated_cuda_runtime_api_meta.h lays them out.
struct SimStreamGetCaptureInfoV2Params {
  cudaStream_t stream;
  enum cudaStreamCaptureStatus* captureStatus_out;
  unsigned long long* id_out;
  cudaGraph_t* graph_out;
  const cudaGraphNode_t** dependencies_out;
  size_t* numDependencies_out;
};

SIM_RUNTIME_EXPORT cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream,
                                                           enum cudaStreamCaptureStatus* captureStatus_out,
                                                           unsigned long long* id_out, cudaGraph_t* graph_out,
                                                           const cudaGraphNode_t** dependencies_out,
                                                           size_t* numDependencies_out) {
  SimStreamGetCaptureInfoV2Params params{stream, captureStatus_out, id_out, graph_out, dependencies_out,
                                         numDependencies_out};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamGetCaptureInfo_v2_v11030), "cudaStreamGetCaptureInfo_v2",
                          &params, [&] {
    return FromDriver(Driver().cuStreamGetCaptureInfo(
        S(stream), reinterpret_cast<CUstreamCaptureStatus*>(captureStatus_out), reinterpret_cast<cuuint64_t*>(id_out),
        reinterpret_cast<CUgraph*>(graph_out), reinterpret_cast<const CUgraphNode**>(dependencies_out), nullptr,
        numDependencies_out));
  });
}
#endif

SIM_RUNTIME_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  cudaThreadExchangeStreamCaptureMode_v10010_params params{mode};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaThreadExchangeStreamCaptureMode_v10010),
                          "cudaThreadExchangeStreamCaptureMode", &params, [&] {
                            return FromDriver(Driver().cuThreadExchangeStreamCaptureMode(
                                reinterpret_cast<CUstreamCaptureMode*>(mode)));
                          });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  cudaEventRecordWithFlags_v11010_params params{event, stream, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventRecordWithFlags_v11010), "cudaEventRecordWithFlags", &params, [&] {
    return FromDriver(Driver().cuEventRecordWithFlags(reinterpret_cast<CUevent>(event), S(stream), flags));
  });
}
