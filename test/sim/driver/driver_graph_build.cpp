// Driver: building graphs node by node (cuGraphCreate, cuGraphAdd*Node,
// cuGraphAddDependencies), uploading and updating executable graphs. See
// graph.h for how a graph runs.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cstring>

#include "device.h"
#include "driver_call.h"
#include "graph_internal.h"

namespace sim {
namespace {

bool ValidNodeArgs(CUgraphNode* out, const CUgraphNode* deps, size_t count) { return out && (count == 0 || deps); }

// Event record and wait nodes: the same checks, the event their one field.
CUresult AddEventNode(CUgraphNodeType type, CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count,
                      CUevent event) {
  if (!ValidNodeArgs(out, deps, count)) return CUDA_ERROR_INVALID_VALUE;
  if (!Device::Of(event).IsValid(event)) return CUDA_ERROR_INVALID_HANDLE;
  CUgraphNode_st node{};
  node.type = type;
  node.event = event;
  return AddNode(graph, deps, count, std::move(node), out);
}

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  cuGraphCreate_params params{phGraph, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphCreate), "cuGraphCreate", &params, [&]() -> CUresult {
    if (!phGraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim::Graphs& g = sim::GraphState();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto* graph = new CUgraph_st{g.next_graph_id++, {}, {}};
    g.graphs.insert(graph);
    *phGraph = graph;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode* dependencies, size_t numDependencies,
                                                   const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  cuGraphAddKernelNode_v2_params params{phGraphNode, hGraph, dependencies, numDependencies, nodeParams};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddKernelNode_v2), "cuGraphAddKernelNode_v2", &params,
                               [&]() -> CUresult {
    if (!nodeParams || !sim::ValidNodeArgs(phGraphNode, dependencies, numDependencies)) return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = nodeParams->func ? nodeParams->func : reinterpret_cast<CUfunction>(nodeParams->kern);
    CUgraphNode_st node{};
    node.type = CU_GRAPH_NODE_TYPE_KERNEL;
    if (CUresult r = sim::KernelOp(f, nodeParams->gridDimX, nodeParams->gridDimY, nodeParams->gridDimZ,
                                   nodeParams->blockDimX, nodeParams->blockDimY, nodeParams->blockDimZ,
                                   nodeParams->sharedMemBytes, &node.op, &node.duration_ns);
        r != CUDA_SUCCESS) {
      return r;
    }
    return sim::AddNode(hGraph, dependencies, numDependencies, std::move(node), phGraphNode);
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  cuGraphAddMemcpyNode_params params{phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddMemcpyNode), "cuGraphAddMemcpyNode", &params,
                               [&]() -> CUresult {
    if (!sim::ValidNodeArgs(phGraphNode, dependencies, numDependencies)) return CUDA_ERROR_INVALID_VALUE;
    CUgraphNode_st node{};
    node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    if (CUresult r = sim::ResolveCopy3D(copyParams, &node.src, &node.dst, &node.width, &node.rows, &node.depth);
        r != CUDA_SUCCESS) {
      return r;
    }
    return sim::AddNode(hGraph, dependencies, numDependencies, std::move(node), phGraphNode);
  });
}

// Byte memsets (elementSize 1) and 2- and 4-byte patterns of one byte value;
// the sim's memset writes bytes, so wider patterns must repeat one byte.
SIM_DRIVER_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  cuGraphAddMemsetNode_params params{phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddMemsetNode), "cuGraphAddMemsetNode", &params,
                               [&]() -> CUresult {
    if (!memsetParams || !sim::ValidNodeArgs(phGraphNode, dependencies, numDependencies)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const unsigned size = memsetParams->elementSize;
    if (size != 1 && size != 2 && size != 4) return CUDA_ERROR_INVALID_VALUE;
    const unsigned value = memsetParams->value;
    const unsigned char byte = static_cast<unsigned char>(value & 0xff);
    for (unsigned i = 1; i < size; ++i) {
      if (((value >> (8 * i)) & 0xff) != byte) return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUgraphNode_st node{};
    node.type = CU_GRAPH_NODE_TYPE_MEMSET;
    node.set_dst = reinterpret_cast<void*>(memsetParams->dst);
    node.set_pitch = memsetParams->pitch;
    node.set_value = byte;
    node.width = static_cast<size_t>(memsetParams->width) * size;
    node.rows = memsetParams->height ? memsetParams->height : 1;
    if (node.rows > 1 && node.set_pitch < node.width) return CUDA_ERROR_INVALID_VALUE;
    return sim::AddNode(hGraph, dependencies, numDependencies, std::move(node), phGraphNode);
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies, size_t numDependencies,
                                              const CUDA_HOST_NODE_PARAMS* nodeParams) {
  cuGraphAddHostNode_params params{phGraphNode, hGraph, dependencies, numDependencies, nodeParams};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddHostNode), "cuGraphAddHostNode", &params, [&]() -> CUresult {
    if (!nodeParams || !nodeParams->fn || !sim::ValidNodeArgs(phGraphNode, dependencies, numDependencies)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    CUgraphNode_st node{};
    node.type = CU_GRAPH_NODE_TYPE_HOST;
    node.host_fn = nodeParams->fn;
    node.host_data = nodeParams->userData;
    return sim::AddNode(hGraph, dependencies, numDependencies, std::move(node), phGraphNode);
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                               const CUgraphNode* dependencies, size_t numDependencies) {
  cuGraphAddEmptyNode_params params{phGraphNode, hGraph, dependencies, numDependencies};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddEmptyNode), "cuGraphAddEmptyNode", &params, [&]() -> CUresult {
    if (!sim::ValidNodeArgs(phGraphNode, dependencies, numDependencies)) return CUDA_ERROR_INVALID_VALUE;
    CUgraphNode_st node{};
    node.type = CU_GRAPH_NODE_TYPE_EMPTY;
    return sim::AddNode(hGraph, dependencies, numDependencies, std::move(node), phGraphNode);
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                     const CUgraphNode* dependencies, size_t numDependencies,
                                                     CUevent event) {
  cuGraphAddEventRecordNode_params params{phGraphNode, hGraph, dependencies, numDependencies, event};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddEventRecordNode), "cuGraphAddEventRecordNode", &params,
                               [&]() -> CUresult {
    return sim::AddEventNode(CU_GRAPH_NODE_TYPE_EVENT_RECORD, phGraphNode, hGraph, dependencies, numDependencies,
                             event);
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode* dependencies, size_t numDependencies,
                                                   CUevent event) {
  cuGraphAddEventWaitNode_params params{phGraphNode, hGraph, dependencies, numDependencies, event};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddEventWaitNode), "cuGraphAddEventWaitNode", &params,
                               [&]() -> CUresult {
    return sim::AddEventNode(CU_GRAPH_NODE_TYPE_WAIT_EVENT, phGraphNode, hGraph, dependencies, numDependencies,
                             event);
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                                     const CUgraphEdgeData* edgeData, size_t numDependencies) {
  cuGraphAddDependencies_v2_params params{hGraph, from, to, edgeData, numDependencies};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddDependencies_v2), "cuGraphAddDependencies_v2", &params,
                               [&]() -> CUresult {
    if (numDependencies && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
    sim::Graphs& g = sim::GraphState();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.graphs.count(hGraph)) return CUDA_ERROR_INVALID_VALUE;
    auto index = [&](CUgraphNode node) {
      auto it = hGraph->index_of.find(node);
      return it == hGraph->index_of.end() ? hGraph->nodes.size() : it->second;
    };
    for (size_t i = 0; i < numDependencies; ++i) {
      const size_t a = index(from[i]), b = index(to[i]);
      if (a == hGraph->nodes.size() || b == hGraph->nodes.size() || a == b) return CUDA_ERROR_INVALID_VALUE;
      hGraph->nodes[b]->deps.push_back(a);
    }
    return CUDA_SUCCESS;
  });
}

namespace {
// Uploading prepares the graph's device resources ahead of its first launch:
// no device work here, and none is recorded.
CUresult Upload(CUgraphExec exec, CUstream stream) {
  if (!sim::Device::Of(stream).IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  sim::Graphs& g = sim::GraphState();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
  exec->uploaded = true;
  return CUDA_SUCCESS;
}
}  // namespace

SIM_DRIVER_EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  cuGraphUpload_params params{hGraphExec, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphUpload), "cuGraphUpload", &params,
                               [&] { return Upload(hGraphExec, hStream); });
}

SIM_DRIVER_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  cuGraphUpload_ptsz_params params{hGraphExec, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphUpload_ptsz), "cuGraphUpload_ptsz", &params,
                               [&] { return Upload(hGraphExec, sim::PerThread(hStream)); });
}

// Documented: the update succeeds when the graph has the executable graph's
// topology (same nodes, of the same types, with the same dependencies); the
// executable graph then takes the graph's parameters and keeps its node ids.
SIM_DRIVER_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                                CUgraphExecUpdateResultInfo* resultInfo) {
  cuGraphExecUpdate_v2_params params{hGraphExec, hGraph, resultInfo};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphExecUpdate_v2), "cuGraphExecUpdate_v2", &params,
                               [&]() -> CUresult {
    if (!resultInfo) return CUDA_ERROR_INVALID_VALUE;
    sim::Graphs& g = sim::GraphState();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.execs.count(hGraphExec) || !g.graphs.count(hGraph)) return CUDA_ERROR_INVALID_VALUE;
    *resultInfo = CUgraphExecUpdateResultInfo{};
    if (hGraph->nodes.size() != hGraphExec->nodes.size()) {
      resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
      return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    for (size_t i = 0; i < hGraph->nodes.size(); ++i) {
      const CUgraphNode_st& from = *hGraph->nodes[i];
      const CUgraphNode_st& to = hGraphExec->nodes[i];
      if (from.type != to.type || from.deps != to.deps) {
        resultInfo->result = from.type != to.type ? CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
                                                  : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        resultInfo->errorNode = hGraph->nodes[i].get();
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
      }
    }
    for (size_t i = 0; i < hGraph->nodes.size(); ++i) {
      const uint64_t id = hGraphExec->nodes[i].id;
      hGraphExec->nodes[i] = *hGraph->nodes[i];
      hGraphExec->nodes[i].id = id;
    }
    resultInfo->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph,
                                                          CUcontext ctx, unsigned int defaultLaunchValue,
                                                          unsigned int flags) {
  cuGraphConditionalHandleCreate_params params{pHandle_out, hGraph, ctx, defaultLaunchValue, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphConditionalHandleCreate), "cuGraphConditionalHandleCreate",
                               &params, [&]() -> CUresult {
    if (!pHandle_out || (flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT)) return CUDA_ERROR_INVALID_VALUE;
    sim::Graphs& g = sim::GraphState();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.graphs.count(hGraph)) return CUDA_ERROR_INVALID_VALUE;
    *pHandle_out = g.next_condition++;
    g.conditions[*pHandle_out] = sim::Graphs::Condition{hGraph, defaultLaunchValue, flags};
    return CUDA_SUCCESS;
  });
}

// The generic form; the sim takes conditional nodes through it (the other
// node types have their own cuGraphAdd*Node and answer NOT_SUPPORTED here).
SIM_DRIVER_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                             const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                             CUgraphNodeParams* nodeParams) {
  cuGraphAddNode_v2_params params{phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphAddNode_v2), "cuGraphAddNode_v2", &params, [&]() -> CUresult {
    if (!nodeParams || !sim::ValidNodeArgs(phGraphNode, dependencies, numDependencies)) return CUDA_ERROR_INVALID_VALUE;
    if (nodeParams->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) return CUDA_ERROR_NOT_SUPPORTED;
    CUDA_CONDITIONAL_NODE_PARAMS& c = nodeParams->conditional;
    const bool size_ok = (c.type == CU_GRAPH_COND_TYPE_WHILE && c.size == 1) ||
                         (c.type == CU_GRAPH_COND_TYPE_IF && (c.size == 1 || c.size == 2)) ||
                         (c.type == CU_GRAPH_COND_TYPE_SWITCH && c.size >= 1);
    if (!size_ok) return CUDA_ERROR_INVALID_VALUE;
    CUgraphNode_st node{};
    node.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    node.condition = c.handle;
    node.condition_type = c.type;
    {
      sim::Graphs& g = sim::GraphState();
      std::lock_guard<std::mutex> lock(g.mutex);
      auto it = g.conditions.find(c.handle);
      if (it == g.conditions.end() || it->second.graph != hGraph) return CUDA_ERROR_INVALID_VALUE;
      // CUDA creates the (empty) body graphs and owns the array naming
      // them; the program fills the bodies.
      auto* out = new CUgraph[c.size];  // lives as long as the process, like the node's graph
      for (unsigned i = 0; i < c.size; ++i) {
        auto* body = new CUgraph_st{g.next_graph_id++, {}, {}};
        g.graphs.insert(body);
        node.bodies.push_back(body);
        out[i] = body;
      }
      c.phGraph_out = out;
    }
    return sim::AddNode(hGraph, dependencies, numDependencies, std::move(node), phGraphNode);
  });
}
