// Graph objects shared by driver_graph.cpp (capture, instantiate, launch)
// and driver_graph_build.cpp (explicit construction). Not exported.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include <memory>
#include <mutex>
#include <map>
#include <set>
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
};
struct CUgraph_st;
struct CUgraph_st {
  uint32_t id;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in creation order
};
struct CUgraphExec_st {
  uint32_t id;  // its own id: CUPTI's records carry the executable graph's
  std::vector<CUgraphNode_st> nodes;  // instantiation clones the nodes (new ids), same order
  bool uploaded = false;
};

namespace sim {

// Graph state; leaf mutex, never held while a hook runs.
struct Graphs {
  std::mutex mutex;
  std::map<uint32_t, CUgraph_st*> capturing;  // by stream id
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

// A kernel node's op and duration, as a launch of f would have them.
CUresult KernelOp(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned shared_bytes, SimOp* op, uint64_t* duration_ns);

}  // namespace sim
