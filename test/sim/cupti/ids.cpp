// Ids CUPTI hands out for driver objects (streams, graphs, graph nodes,
// executable graphs) as its records carry them, and cubin CRCs.
#include <cupti_pcsampling.h>

#include <atomic>

#include "internal.h"

using simcupti::Status;

namespace {

std::atomic<CUpti_ComputeCrcCallbackFunc> g_crc_callback{nullptr};

// CRC-32 (IEEE, reflected), the checksum CUPTI documents for cubins.
uint64_t Crc32(const void* data, size_t size) {
  uint32_t crc = 0xffffffffu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

}  // namespace

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t perThreadStream,
                                        uint32_t* streamId) {
  (void)context;  // one context holds every stream
  if (streamId == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return simhub_stream_id(stream, perThreadStream, streamId) ? CUPTI_SUCCESS : Status(CUPTI_ERROR_INVALID_STREAM);
}

CUptiResult CUPTIAPI cuptiGetStreamId(CUcontext context, CUstream stream, uint32_t* streamId) {
  return cuptiGetStreamIdEx(context, stream, 0, streamId);
}

CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t* pId) {
  if (graph == nullptr || pId == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return simhub_graph_id(graph, pId) ? CUPTI_SUCCESS : Status(CUPTI_ERROR_INVALID_PARAMETER);
}

CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graphExec, uint32_t* pId) {
  if (graphExec == nullptr || pId == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return simhub_graph_exec_id(graphExec, pId) ? CUPTI_SUCCESS : Status(CUPTI_ERROR_INVALID_PARAMETER);
}

CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t* nodeId) {
  if (node == nullptr || nodeId == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return simhub_graph_node_id(node, nodeId) ? CUPTI_SUCCESS : Status(CUPTI_ERROR_INVALID_PARAMETER);
}

CUptiResult CUPTIAPI cuptiGetCubinCrc(CUpti_GetCubinCrcParams* pParams) {
  if (pParams == nullptr || pParams->size == 0 || pParams->cubin == nullptr || pParams->cubinSize == 0) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  pParams->cubinCrc = Crc32(pParams->cubin, pParams->cubinSize);
  return CUPTI_SUCCESS;
}

// The callback is used by PC sampling (not simulated) to checksum cubins.
CUptiResult CUPTIAPI cuptiRegisterComputeCrcCallback(CUpti_ComputeCrcCallbackFunc funcComputeCubinCrc) {
  if (funcComputeCubinCrc == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  g_crc_callback.store(funcComputeCubinCrc);
  return CUPTI_SUCCESS;
}
