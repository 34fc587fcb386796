// Driver: what a graph tells about itself (cuGraphGetNodes,
// cuGraphGetRootNodes, cuGraphNodeGetType, cuGraphNodeGetDependencies,
// cuGraphExecGetFlags). Lists follow cuda.h: a NULL array asks for the
// count; otherwise up to *count entries are written, the rest of a longer
// array set to NULL, and *count becomes the number written.
#define __CUDA_API_VERSION_INTERNAL 1
#include <mutex>
#include <vector>

#include "driver_call.h"
#include "graph_internal.h"

namespace sim {
namespace {

CUresult List(const std::vector<CUgraphNode>& found, CUgraphNode* out, CUgraphEdgeData* edges, size_t* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!out) {
    *count = found.size();
    return CUDA_SUCCESS;
  }
  const size_t room = *count;
  const size_t written = room < found.size() ? room : found.size();
  for (size_t i = 0; i < room; ++i) {
    out[i] = i < written ? found[i] : nullptr;
    if (edges) edges[i] = CUgraphEdgeData{};  // every edge is a default one
  }
  *count = written;
  return CUDA_SUCCESS;
}

// The graph holding `node` (the graph state's mutex held), or nullptr.
CUgraph_st* GraphOf(Graphs& g, CUgraphNode node) {
  for (CUgraph_st* graph : g.graphs) {
    if (graph->index_of.count(node)) return graph;
  }
  return nullptr;
}

CUresult Nodes(CUgraph graph, CUgraphNode* nodes, size_t* count, bool roots_only) {
  Graphs& g = GraphState();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> found;
  for (const auto& node : graph->nodes) {
    if (!roots_only || node->deps.empty()) found.push_back(node.get());
  }
  return List(found, nodes, nullptr, count);
}

CUresult Dependencies(CUgraphNode node, CUgraphNode* deps, CUgraphEdgeData* edges, size_t* count) {
  Graphs& g = GraphState();
  std::lock_guard<std::mutex> lock(g.mutex);
  CUgraph_st* graph = GraphOf(g, node);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> found;
  for (size_t d : node->deps) found.push_back(graph->nodes[d].get());
  return List(found, deps, edges, count);
}

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  cuGraphGetNodes_params params{hGraph, nodes, numNodes};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphGetNodes), "cuGraphGetNodes", &params,
                               [&] { return sim::Nodes(hGraph, nodes, numNodes, /*roots_only=*/false); });
}

SIM_DRIVER_EXPORT CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  cuGraphGetRootNodes_params params{hGraph, rootNodes, numRootNodes};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphGetRootNodes), "cuGraphGetRootNodes", &params,
                               [&] { return sim::Nodes(hGraph, rootNodes, numRootNodes, /*roots_only=*/true); });
}

SIM_DRIVER_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  cuGraphNodeGetType_params params{hNode, type};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphNodeGetType), "cuGraphNodeGetType", &params, [&]() -> CUresult {
    if (!type) return CUDA_ERROR_INVALID_VALUE;
    sim::Graphs& g = sim::GraphState();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!sim::GraphOf(g, hNode)) return CUDA_ERROR_INVALID_VALUE;
    *type = hNode->type;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies,
                                                      size_t* numDependencies) {
  cuGraphNodeGetDependencies_params params{hNode, dependencies, numDependencies};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphNodeGetDependencies), "cuGraphNodeGetDependencies", &params,
                               [&] { return sim::Dependencies(hNode, dependencies, nullptr, numDependencies); });
}

SIM_DRIVER_EXPORT CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies,
                                                         CUgraphEdgeData* edgeData, size_t* numDependencies) {
  cuGraphNodeGetDependencies_v2_params params{hNode, dependencies, edgeData, numDependencies};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphNodeGetDependencies_v2), "cuGraphNodeGetDependencies_v2",
                               &params, [&]() -> CUresult {
                                 if (edgeData && !dependencies) return CUDA_ERROR_INVALID_VALUE;
                                 return sim::Dependencies(hNode, dependencies, edgeData, numDependencies);
                               });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  cuGraphExecGetFlags_params params{hGraphExec, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphExecGetFlags), "cuGraphExecGetFlags", &params, [&]() -> CUresult {
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    sim::Graphs& g = sim::GraphState();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.execs.count(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
    *flags = hGraphExec->flags;
    return CUDA_SUCCESS;
  });
}
