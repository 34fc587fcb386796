// Graph objects shared by driver_graph.cpp (instantiate, launch),
// driver_capture.cpp (stream capture), driver_graph_build.cpp (explicit
// construction) and driver_graph_query.cpp. Not exported.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "../hub.h"
#include "copies.h"

struct CUgraph_st;

// One node: what runs when the graph is launched.
struct CUgraphNode_st {
  uint64_t id;           // unique over the process, as cuptiGetGraphNodeId reports
  CUgraphNodeType type;  // CU_GRAPH_NODE_TYPE_*
  std::vector<size_t> deps;  // indices of the nodes it depends on, in its graph
  SimOp op;              // kernel: the launch, without timing or correlation
  uint64_t duration_ns;  // kernel: from the timing model
  sim::CopyRegion src, dst;  // memcpy
  size_t width = 0, rows = 0, depth = 0;  // memcpy and memset boxes (bytes x rows x slices)
  void* set_dst = nullptr;   // memset
  size_t set_pitch = 0;
  unsigned char set_value = 0;
  CUhostFn host_fn = nullptr;  // host
  void* host_data = nullptr;
  CUevent event = nullptr;     // event record / wait
  CUgraphConditionalHandle condition = 0;  // conditional: its handle, kind and body graphs
  CUgraphConditionalNodeType condition_type = CU_GRAPH_COND_TYPE_IF;
  std::vector<CUgraph_st*> bodies;
  bool captured = false;  // made by stream capture (cuStreamEndCapture's join check covers it)
};
struct CUgraph_st {
  uint32_t id;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in creation order
  std::unordered_map<const CUgraphNode_st*, size_t> index_of;  // node -> its index in nodes
};
struct CUgraphExec_st {
  uint32_t id;  // its own id: CUPTI's records carry the executable graph's
  std::vector<CUgraphNode_st> nodes;  // instantiation clones the nodes (new ids), same order
  bool uploaded = false;
  unsigned long long flags = 0;  // as instantiated (cuGraphExecGetFlags)
};

namespace sim {

// One capture sequence (cuStreamBeginCapture to cuStreamEndCapture): its
// graph, the streams taking part (the origin and those that joined it by
// waiting on an event recorded in it) and how it interacts with other calls.
struct CaptureSeq {
  uint64_t id;                // unique over the process (cuStreamGetCaptureInfo)
  CUgraph_st* graph;
  CUstreamCaptureMode mode;   // as begun
  CUstream_st* origin;
  uint32_t thread;            // the beginning thread (ThreadId)
  int device;                 // the origin's device
  bool invalidated = false;   // a rule of capture was broken: EndCapture returns no graph
  std::set<CUstream_st*> members;
};
// A stream taking part in a capture: its dependency set, which the next
// node captured on it depends on.
struct StreamCapture {
  CaptureSeq* seq = nullptr;
  std::vector<CUgraphNode_st*> deps;
  // What cuStreamGetCaptureInfo handed out (valid until the next call on the stream).
  std::vector<CUgraphNode> deps_out;
  std::vector<CUgraphEdgeData> edges_out;
};
// An event whose last record was inside a capture: the dependency set it
// stands for in that capture.
struct EventCapture {
  uint64_t seq_id;
  std::vector<CUgraphNode_st*> deps;
};

// Graph state; leaf mutex, never held while a hook runs or a device's mutex is taken.
struct Graphs {
  std::mutex mutex;
  std::map<uint64_t, CaptureSeq*> captures;               // active capture sequences by id
  std::map<CUstream_st*, StreamCapture> capturing;         // streams in an active capture
  std::map<CUevent_st*, EventCapture> captured_events;     // events last recorded inside a capture
  uint64_t next_capture_id = 1;
  // Whether captures or captured events exist (written under the mutex):
  // while not, operations skip capture's checks without taking any lock.
  std::atomic<bool> busy{false};
  void UpdateBusyLocked() { busy.store(!captures.empty() || !captured_events.empty(), std::memory_order_release); }
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  uint32_t next_graph_id = 1;
  uint64_t next_node_id = 1;
  // Conditional handles: default value, flags (CU_GRAPH_COND_ASSIGN_DEFAULT).
  struct Condition {
    CUgraph graph;
    unsigned default_value;
    unsigned flags;
  };
  std::map<CUgraphConditionalHandle, Condition> conditions;
  CUgraphConditionalHandle next_condition = 1;
};
Graphs& GraphState();

// Adds `node` to `graph` after the given dependencies (handles of nodes of
// that graph), reports it (GRAPHNODE_CREATED) and returns its handle in
// *out; CUDA_ERROR_INVALID_VALUE for an unknown graph or dependency.
CUresult AddNode(CUgraph graph, const CUgraphNode* deps, size_t count, CUgraphNode_st node, CUgraphNode* out);
// The same with the graph state's mutex held and dependencies known to be
// the graph's; *event is to be fired (FireGraphHook) once the mutex is released.
CUgraphNode_st* AddNodeLocked(Graphs& g, CUgraph_st* graph, const std::vector<CUgraphNode_st*>& deps,
                              CUgraphNode_st node, SimGraphEvent* event);
// Deletes a graph (the graph state's mutex held).
void DestroyGraphLocked(Graphs& g, CUgraph_st* graph);

// A kernel node's op and duration, as a launch of f would have them.
CUresult KernelOp(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned shared_bytes, SimOp* op, uint64_t* duration_ns);

}  // namespace sim
