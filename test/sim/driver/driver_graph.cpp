// Driver: graphs' nodes, instantiation and launch (see graph.h for what is
// modelled; stream capture is driver_capture.cpp).
#define __CUDA_API_VERSION_INTERNAL 1
#include "graph.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph_internal.h"
#include "host_funcs.h"

namespace sim {

Graphs& GraphState() {
  static Graphs* graphs = new Graphs();  // never destroyed: atexit handlers may still launch
  return *graphs;
}

namespace {

Graphs& State() { return GraphState(); }

constexpr unsigned long long kInstantiateFlags =
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

// Documented flags only; device launch excludes auto-free. Neither changes a
// host launch here (the sim has no graph memory nodes or device launches).
CUresult Instantiate(CUgraphExec* exec_out, CUgraph graph, unsigned long long flags) {
  if (!exec_out) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~kInstantiateFlags) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Graphs& g = State();
  CUgraphExec_st* exec = nullptr;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
    for (const auto& [id, seq] : g.captures) {
      if (seq->graph == graph) return CUDA_ERROR_INVALID_VALUE;  // still being captured into
    }
    exec = new CUgraphExec_st{g.next_graph_id++, {}};
    exec->flags = flags;
    for (const auto& node : graph->nodes) {
      exec->nodes.push_back(*node);
      exec->nodes.back().id = g.next_node_id++;
    }
    exec->uploaded = (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0;
    g.execs.insert(exec);
  }
  *exec_out = exec;
  // CUPTI reports each node instantiation clones (GRAPHNODE_CLONED: node and
  // originalNode), as its cuda_graphs_trace sample relies on to tie a
  // replayed node's records to the call that created the original. The
  // executable graph's node vector is not resized after this.
  for (size_t i = 0; i < exec->nodes.size(); ++i) {
    SimGraphEvent clone{};
    clone.kind = SIM_GRAPH_NODE_CLONED;
    clone.graph = graph;
    clone.node = &exec->nodes[i];
    clone.node_type = exec->nodes[i].type;
    clone.graph_exec = exec;
    clone.graph_id = exec->id;
    clone.node_id = exec->nodes[i].id;
    clone.original_node = graph->nodes[i].get();
    clone.original_node_id = graph->nodes[i]->id;
    FireGraphHook(clone);
  }
  SimGraphEvent event{};
  event.kind = SIM_GRAPH_EXEC_CREATED;
  event.graph = graph;
  event.graph_exec = exec;
  event.graph_id = exec->id;
  FireGraphHook(event);
  return CUDA_SUCCESS;
}

CUresult RunNodes(const std::vector<CUgraphNode_st>& nodes, uint32_t graph_id, CUstream stream);
CUresult RunConditional(const CUgraphNode_st& node, uint32_t graph_id, CUstream stream);

CUresult LaunchGraph(CUgraphExec exec, CUstream stream) {
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  // Into a capturing stream CUDA makes a child graph node: not modelled, refused.
  if (CUresult r = CUDA_SUCCESS; CaptureUnsupported(stream, &r)) return r;
  std::vector<CUgraphNode_st> nodes;
  uint32_t graph_id = 0;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.execs.count(exec)) return CUDA_ERROR_INVALID_HANDLE;
    nodes = exec->nodes;
    graph_id = exec->id;
  }
  return RunNodes(nodes, graph_id, stream);
}

// One after another on the launch stream, dependencies first (Kahn's
// order, ties in creation order); every op belongs to the launch call.
CUresult RunNodes(const std::vector<CUgraphNode_st>& nodes, uint32_t graph_id, CUstream stream) {
  std::vector<size_t> order;
  std::vector<bool> done(nodes.size(), false);
  while (order.size() < nodes.size()) {
    bool progressed = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (size_t d : nodes[i].deps) ready = ready && d < nodes.size() && done[d];
      if (!ready) continue;
      done[i] = true;
      order.push_back(i);
      progressed = true;
    }
    if (!progressed) return CUDA_ERROR_INVALID_VALUE;  // a cycle (cuGraphAddDependencies allowed it)
  }
  Device& device = Device::Of(stream);
  for (size_t i : order) {
    const CUgraphNode_st& node = nodes[i];
    SetGraphContext(graph_id, node.id);
    CUresult r = CUDA_SUCCESS;
    switch (node.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL: {
        const Placement at = device.Enqueue(stream, node.duration_ns);
        SimOp op = node.op;
        Place(&op, at);
        EmitOp(op);
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        r = CopyBox(node.src, node.dst, node.width, node.rows, node.depth, stream, /*synchronous=*/false);
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        r = SetBox(node.set_dst, node.set_pitch, node.set_value, node.width, node.rows, stream);
        break;
      case CU_GRAPH_NODE_TYPE_HOST:
        r = EnqueueHostFunc(
            stream, [](void* fn, void* data, CUstream) { reinterpret_cast<CUhostFn>(fn)(data); },
            reinterpret_cast<void*>(node.host_fn), node.host_data);
        break;
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        // An event of another device than the launch stream's is not recorded (CUDA refuses that pair).
        if (&Device::Of(node.event) == &device) device.RecordEvent(node.event, stream);
        break;
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT: WaitOnEvent(stream, node.event); break;
      case CU_GRAPH_NODE_TYPE_CONDITIONAL: r = RunConditional(node, graph_id, stream); break;
      default: break;  // empty nodes only order
    }
    SetGraphContext(0, 0);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// The condition's value at launch is its default (kernels compute nothing
// here, so none calls cudaGraphSetConditional). IF runs body 0 for a
// nonzero value (body 1, if given, for zero); SWITCH runs body[value] if
// there is one; WHILE runs its body once for a nonzero value, as if the
// body's last kernel cleared the condition (it never could in the sim).
CUresult RunConditional(const CUgraphNode_st& node, uint32_t graph_id, CUstream stream) {
  unsigned value = 0;
  std::vector<std::vector<CUgraphNode_st>> bodies;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto it = g.conditions.find(node.condition);
    if (it == g.conditions.end()) return CUDA_ERROR_INVALID_VALUE;
    value = it->second.default_value;
    for (CUgraph_st* body : node.bodies) {
      bodies.emplace_back();
      if (!g.graphs.count(body)) continue;
      for (const auto& n : body->nodes) bodies.back().push_back(*n);
    }
  }
  int chosen = -1;
  switch (node.condition_type) {
    case CU_GRAPH_COND_TYPE_IF: chosen = value ? 0 : (bodies.size() > 1 ? 1 : -1); break;
    case CU_GRAPH_COND_TYPE_WHILE: chosen = value ? 0 : -1; break;
    case CU_GRAPH_COND_TYPE_SWITCH: chosen = value < bodies.size() ? static_cast<int>(value) : -1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  if (chosen < 0) return CUDA_SUCCESS;
  return RunNodes(bodies[static_cast<size_t>(chosen)], graph_id, stream);
}

CUresult DestroyExec(CUgraphExec exec) {
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.execs.erase(exec)) return CUDA_ERROR_INVALID_VALUE;
  delete exec;
  return CUDA_SUCCESS;
}

// A graph being captured into is not the program's to destroy yet.
CUresult DestroyGraph(CUgraph graph) {
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [id, seq] : g.captures) {
    if (seq->graph == graph) return CUDA_ERROR_INVALID_VALUE;
  }
  DestroyGraphLocked(g, graph);
  return CUDA_SUCCESS;
}

}  // namespace

void DestroyGraphLocked(Graphs& g, CUgraph_st* graph) {
  g.graphs.erase(graph);
  delete graph;
}

CUgraphNode_st* AddNodeLocked(Graphs& g, CUgraph_st* graph, const std::vector<CUgraphNode_st*>& deps,
                              CUgraphNode_st node, SimGraphEvent* event) {
  node.deps.clear();
  for (const CUgraphNode_st* dep : deps) node.deps.push_back(graph->index_of.at(dep));
  node.id = g.next_node_id++;
  graph->nodes.push_back(std::make_unique<CUgraphNode_st>(std::move(node)));
  CUgraphNode_st* added = graph->nodes.back().get();
  graph->index_of[added] = graph->nodes.size() - 1;
  *event = SimGraphEvent{};
  event->kind = SIM_GRAPH_NODE_CREATED;
  event->graph = graph;
  event->node = added;
  event->node_type = added->type;
  event->graph_id = graph->id;
  event->node_id = added->id;
  return added;
}

CUresult AddNode(CUgraph graph, const CUgraphNode* deps, size_t count, CUgraphNode_st node, CUgraphNode* out) {
  if (!out || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  SimGraphEvent event{};
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
    std::vector<CUgraphNode_st*> after;
    for (size_t i = 0; i < count; ++i) {
      if (!graph->index_of.count(deps[i])) return CUDA_ERROR_INVALID_VALUE;  // not a node of this graph
      after.push_back(deps[i]);
    }
    *out = AddNodeLocked(g, graph, after, std::move(node), &event);
  }
  FireGraphHook(event);  // inside the adding call, as CUPTI issues it
  return CUDA_SUCCESS;
}

}  // namespace sim

using sim::InitializedDriverCall;

#define SIMHUB_EXPORT extern "C" __attribute__((visibility("default")))

SIMHUB_EXPORT int simhub_graph_id(void* graph, uint32_t* id) {
  sim::Graphs& g = sim::State();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto* object = static_cast<CUgraph_st*>(graph);
  if (!id || !g.graphs.count(object)) return 0;
  *id = object->id;
  return 1;
}

// simhub_graph_id's shape for executable graphs: their own set.
SIMHUB_EXPORT int simhub_graph_exec_id(void* graph_exec, uint32_t* id) {
  sim::Graphs& g = sim::State();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto* object = static_cast<CUgraphExec_st*>(graph_exec);
  if (!id || !g.execs.count(object)) return 0;
  *id = object->id;
  return 1;
}

SIMHUB_EXPORT int simhub_graph_node_id(void* node, uint64_t* id) {
  sim::Graphs& g = sim::State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!id) return 0;
  for (CUgraph_st* graph : g.graphs) {
    auto it = graph->index_of.find(static_cast<const CUgraphNode_st*>(node));
    if (it != graph->index_of.end()) {
      *id = graph->nodes[it->second]->id;
      return 1;
    }
  }
  for (CUgraphExec_st* exec : g.execs) {  // an executable graph's (cloned) node
    for (const CUgraphNode_st& n : exec->nodes) {
      if (&n == node) {
        *id = n.id;
        return 1;
      }
    }
  }
  return 0;
}

SIM_DRIVER_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                       unsigned long long flags) {
  cuGraphInstantiateWithFlags_params params{phGraphExec, hGraph, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphInstantiateWithFlags), "cuGraphInstantiateWithFlags", &params,
                               [&] { return sim::Instantiate(phGraphExec, hGraph, flags); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  cuGraphLaunch_params params{hGraphExec, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphLaunch), "cuGraphLaunch", &params,
                               [&] { return sim::LaunchGraph(hGraphExec, hStream); });
}

SIM_DRIVER_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  cuGraphLaunch_ptsz_params params{hGraphExec, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphLaunch_ptsz), "cuGraphLaunch_ptsz", &params,
                               [&] { return sim::LaunchGraph(hGraphExec, sim::PerThread(hStream)); });
}

SIM_DRIVER_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  cuGraphExecDestroy_params params{hGraphExec};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphExecDestroy), "cuGraphExecDestroy", &params,
                               [&] { return sim::DestroyExec(hGraphExec); });
}

SIM_DRIVER_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  cuGraphDestroy_params params{hGraph};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphDestroy), "cuGraphDestroy", &params,
                               [&] { return sim::DestroyGraph(hGraph); });
}
