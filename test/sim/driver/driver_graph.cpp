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

// The opaque graph handle types of cuda.h, defined here.
struct CUgraphNode_st {
  uint64_t id;           // unique over the process, as cuptiGetGraphNodeId reports
  SimOp op;              // the captured launch, without timing or correlation
  uint64_t duration_ns;  // from the timing model at capture
};
struct CUgraph_st {
  uint32_t id;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in capture order
};
struct CUgraphExec_st {
  uint32_t id;  // its own id: CUPTI's kernel records carry the executable graph's
  std::vector<CUgraphNode_st> nodes;  // instantiation clones the nodes (new ids)
};

namespace sim {
namespace {

// Graph state; leaf mutex, never held while a hook runs.
struct Graphs {
  std::mutex mutex;
  std::map<uint32_t, CUgraph_st*> capturing;  // by stream id
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  uint32_t next_graph_id = 1;
  uint64_t next_node_id = 1;
};
Graphs& State() {
  static Graphs* graphs = new Graphs();  // never destroyed: atexit handlers may still launch
  return *graphs;
}

bool IsLegacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }

CUresult BeginCapture(CUstream stream) {
  Device& device = Device::Get();
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
  Device& device = Device::Get();
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
    for (const auto& node : graph->nodes) exec->nodes.push_back({g.next_node_id++, node->op, node->duration_ns});
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

CUresult LaunchGraph(CUgraphExec exec, CUstream stream) {
  Device& device = Device::Get();
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
  // Nodes run in capture order on the launch stream (a captured single
  // stream is a chain); every one belongs to this cuGraphLaunch call.
  for (const CUgraphNode_st& node : nodes) {
    const Placement at = device.Enqueue(stream, node.duration_ns);
    SimOp op = node.op;
    Place(&op, at);
    op.graph_id = graph_id;
    op.graph_node_id = node.id;
    EmitOp(op);
  }
  return CUDA_SUCCESS;
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
  const uint32_t stream_id = Device::Get().StreamId(stream);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.capturing.count(stream_id) != 0;
}

bool CaptureKernel(CUstream stream, const SimOp& op, uint64_t duration_ns) {
  if (IsLegacy(stream)) return false;
  const uint32_t stream_id = Device::Get().StreamId(stream);
  SimGraphEvent event{};
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto it = g.capturing.find(stream_id);
    if (it == g.capturing.end()) return false;
    CUgraph_st* graph = it->second;
    graph->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{g.next_node_id++, op, duration_ns}));
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
                                 if (!sim::Device::Get().IsValid(hStream)) return CUDA_ERROR_INVALID_HANDLE;
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
