// Driver: stream capture and graph launch (see graph.h for what is
// modelled).
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

bool IsLegacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }

CUresult BeginCapture(CUstream stream) {
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (IsLegacy(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
  const uint32_t stream_id = device.StreamId(stream);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (g.capturing.count(stream_id)) return CUDA_ERROR_ILLEGAL_STATE;
  auto* graph = new CUgraph_st{g.next_graph_id++, {}};
  g.graphs.insert(graph);
  g.capturing[stream_id] = graph;
  return CUDA_SUCCESS;
}

CUresult EndCapture(CUstream stream, CUgraph* graph_out) {
  if (!graph_out) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto it = g.capturing.find(device.StreamId(stream));
  if (it == g.capturing.end()) return CUDA_ERROR_ILLEGAL_STATE;
  *graph_out = it->second;
  g.capturing.erase(it);
  return CUDA_SUCCESS;
}

CUresult Instantiate(CUgraphExec* exec_out, CUgraph graph) {
  if (!exec_out) return CUDA_ERROR_INVALID_VALUE;
  Graphs& g = State();
  CUgraphExec_st* exec = nullptr;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
    exec = new CUgraphExec_st{g.next_graph_id++, {}};
    for (const auto& node : graph->nodes) {
      exec->nodes.push_back(*node);
      exec->nodes.back().id = g.next_node_id++;
    }
    g.execs.insert(exec);
  }
  *exec_out = exec;
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
  if (IsCapturing(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // child graphs: not modelled
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
  Device& device = Device::Of(stream);
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
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD: device.RecordEvent(node.event, stream); break;
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT: device.WaitEvent(stream, node.event); break;
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

template <typename T>
CUresult Destroy(std::set<T*> Graphs::*set, T* object) {
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!(g.*set).erase(object)) return CUDA_ERROR_INVALID_VALUE;
  delete object;
  return CUDA_SUCCESS;
}

}  // namespace

bool IsCapturing(CUstream stream) {
  if (IsLegacy(stream)) return false;
  const uint32_t stream_id = Device::Of(stream).StreamId(stream);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.capturing.count(stream_id) != 0;
}

bool CaptureKernel(CUstream stream, const SimOp& op, uint64_t duration_ns) {
  if (IsLegacy(stream)) return false;
  const uint32_t stream_id = Device::Of(stream).StreamId(stream);
  SimGraphEvent event{};
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto it = g.capturing.find(stream_id);
    if (it == g.capturing.end()) return false;
    CUgraph_st* graph = it->second;
    auto node = std::make_unique<CUgraphNode_st>();
    node->id = g.next_node_id++;
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    node->op = op;
    node->duration_ns = duration_ns;
    // A single-stream capture is a chain: each node depends on the one before.
    if (!graph->nodes.empty()) node->deps.push_back(graph->nodes.size() - 1);
    graph->nodes.push_back(std::move(node));
    event.kind = SIM_GRAPH_NODE_CREATED;
    event.graph = graph;
    event.node = graph->nodes.back().get();
    event.node_type = CU_GRAPH_NODE_TYPE_KERNEL;
    event.graph_id = graph->id;
    event.node_id = graph->nodes.back()->id;
  }
  FireGraphHook(event);  // inside the launching call, as CUPTI issues it
  return true;
}

namespace {

// Adds a node to the graph a capturing stream feeds, after its last node.
bool Capture(CUstream stream, CUgraphNode_st node) {
  if (IsLegacy(stream)) return false;
  const uint32_t stream_id = Device::Of(stream).StreamId(stream);
  CUgraph graph = nullptr;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto it = g.capturing.find(stream_id);
    if (it == g.capturing.end()) return false;
    graph = it->second;
  }
  CUgraphNode last = nullptr;
  {
    std::lock_guard<std::mutex> lock(State().mutex);
    if (!graph->nodes.empty()) last = graph->nodes.back().get();
  }
  CUgraphNode added = nullptr;
  return AddNode(graph, last ? &last : nullptr, last ? 1 : 0, std::move(node), &added) == CUDA_SUCCESS;
}

}  // namespace

bool CaptureCopy(CUstream stream, const CopyRegion& src, const CopyRegion& dst, size_t width, size_t rows,
                 size_t depth) {
  CUgraphNode_st node{};
  node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  node.src = src;
  node.dst = dst;
  node.width = width;
  node.rows = rows;
  node.depth = depth;
  return Capture(stream, std::move(node));
}

bool CaptureMemset(CUstream stream, void* dst, size_t pitch, unsigned char value, size_t width, size_t rows) {
  CUgraphNode_st node{};
  node.type = CU_GRAPH_NODE_TYPE_MEMSET;
  node.set_dst = dst;
  node.set_pitch = pitch;
  node.set_value = value;
  node.width = width;
  node.rows = rows;
  return Capture(stream, std::move(node));
}

CUresult AddNode(CUgraph graph, const CUgraphNode* deps, size_t count, CUgraphNode_st node, CUgraphNode* out) {
  if (!out || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  SimGraphEvent event{};
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (!g.graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
    node.deps.clear();
    for (size_t i = 0; i < count; ++i) {
      size_t index = graph->nodes.size();
      for (size_t j = 0; j < graph->nodes.size(); ++j) {
        if (graph->nodes[j].get() == deps[i]) index = j;
      }
      if (index == graph->nodes.size()) return CUDA_ERROR_INVALID_VALUE;  // not a node of this graph
      node.deps.push_back(index);
    }
    node.id = g.next_node_id++;
    graph->nodes.push_back(std::make_unique<CUgraphNode_st>(std::move(node)));
    *out = graph->nodes.back().get();
    event.kind = SIM_GRAPH_NODE_CREATED;
    event.graph = graph;
    event.node = *out;
    event.node_type = (*out)->type;
    event.graph_id = graph->id;
    event.node_id = (*out)->id;
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
    for (const auto& n : graph->nodes) {
      if (n.get() == node) {
        *id = n->id;
        return 1;
      }
    }
  }
  return 0;
}

SIM_DRIVER_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  cuStreamBeginCapture_v2_params params{hStream, mode};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamBeginCapture_v2), "cuStreamBeginCapture_v2", &params,
                               [&] { return sim::BeginCapture(hStream); });
}

SIM_DRIVER_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  cuStreamEndCapture_params params{hStream, phGraph};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamEndCapture), "cuStreamEndCapture", &params,
                               [&] { return sim::EndCapture(hStream, phGraph); });
}

SIM_DRIVER_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  cuStreamIsCapturing_params params{hStream, captureStatus};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamIsCapturing), "cuStreamIsCapturing", &params,
                               [&]() -> CUresult {
                                 if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
                                 if (!sim::Device::Of(hStream).IsValid(hStream)) return CUDA_ERROR_INVALID_HANDLE;
                                 *captureStatus = sim::IsCapturing(hStream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                                            : CU_STREAM_CAPTURE_STATUS_NONE;
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                       unsigned long long flags) {
  cuGraphInstantiateWithFlags_params params{phGraphExec, hGraph, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphInstantiateWithFlags), "cuGraphInstantiateWithFlags", &params,
                               [&] { return sim::Instantiate(phGraphExec, hGraph); });
}

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
                               [&] { return sim::Destroy(&sim::Graphs::execs, hGraphExec); });
}

SIM_DRIVER_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  cuGraphDestroy_params params{hGraph};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuGraphDestroy), "cuGraphDestroy", &params,
                               [&] { return sim::Destroy(&sim::Graphs::graphs, hGraph); });
}

// ---- what a capture looks like from outside (cuStreamGetCaptureInfo), and
// the calling thread's capture mode.

namespace {

// The dependency set a capture hands out stays valid until the thread's
// next call on the stream: one slot per thread is enough.
thread_local CUgraphNode t_capture_tail = nullptr;
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

// The sim captures in one sequence (graph.h): the open dependency set is the
// last node captured, or empty before the first.
CUresult CaptureInfo(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                     const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num_deps) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  sim::Device& device = sim::Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  sim::Graphs& g = sim::GraphState();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto it = g.capturing.find(device.StreamId(stream));
  if (it == g.capturing.end()) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;  // the other outputs are left as they were, as documented
    return CUDA_SUCCESS;
  }
  CUgraph_st* captured = it->second;
  *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = captured->id;  // each capture makes a graph of its own
  if (graph) *graph = captured;
  t_capture_tail = captured->nodes.empty() ? nullptr : captured->nodes.back().get();
  if (deps) *deps = t_capture_tail ? &t_capture_tail : nullptr;
  if (edges) *edges = nullptr;  // all default edges
  if (num_deps) *num_deps = t_capture_tail ? 1 : 0;
  return CUDA_SUCCESS;
}

}  // namespace

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out,
                                                     const CUgraphEdgeData** edgeData_out,
                                                     size_t* numDependencies_out) {
  cuStreamGetCaptureInfo_v3_params params{hStream, captureStatus_out, id_out, graph_out,
                                          dependencies_out, edgeData_out, numDependencies_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_v3), "cuStreamGetCaptureInfo_v3", &params, [&] {
    return CaptureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                       numDependencies_out);
  });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                          cuuint64_t* id_out, CUgraph* graph_out,
                                                          const CUgraphNode** dependencies_out,
                                                          const CUgraphEdgeData** edgeData_out,
                                                          size_t* numDependencies_out) {
  cuStreamGetCaptureInfo_v3_ptsz_params params{hStream, captureStatus_out, id_out, graph_out,
                                               dependencies_out, edgeData_out, numDependencies_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_v3_ptsz), "cuStreamGetCaptureInfo_v3_ptsz",
                               &params, [&] {
                                 return CaptureInfo(sim::PerThread(hStream), captureStatus_out, id_out, graph_out,
                                                    dependencies_out, edgeData_out, numDependencies_out);
                               });
}

// The mode is kept per thread and handed back; the sim does not refuse the
// calls a stricter mode forbids during a capture.
SIM_DRIVER_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  cuThreadExchangeStreamCaptureMode_params params{mode};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuThreadExchangeStreamCaptureMode),
                               "cuThreadExchangeStreamCaptureMode", &params, [&]() -> CUresult {
                                 if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
                                 std::swap(*mode, t_capture_mode);
                                 return CUDA_SUCCESS;
                               });
}
