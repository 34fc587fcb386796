// Where each CUDA graph node's work comes from: the Python stack of the call
// that created the node (a launch, copy or memset captured from a stream, or
// a node added by hand), carried to the nodes instantiation clones from it.
// A replayed kernel's record names its executable graph's node (graphNodeId);
// its launching call is the graph launch, so without this its Python line
// would be `graph.replay()` rather than the line that captured it.
//
// Filled from CUPTI's resource callbacks GRAPHNODE_CREATED (inside the
// creating call, on its thread) and GRAPHNODE_CLONED (node and originalNode),
// the pairing NVIDIA's cuda_graphs_trace sample documents; read on the
// writer thread as records are decoded. Thread-safe; bounded (kMaxNodes
// nodes, past which new ones go unnamed and are counted).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace prof::cupti {

class GraphSites {
 public:
  static constexpr size_t kMaxNodes = 1u << 20;

  // A node created on this thread, whose stack id is `stack` (0: none).
  // Keeps what is already known of the node: CUPTI may also report the
  // nodes an instantiation makes as created, before or after their clone.
  // False when the node was not kept: the table is full.
  bool Created(uint64_t node_id, uint32_t stack);
  // `node_id` was cloned from `original_id` (instantiation): the original's
  // stack, replacing anything noted for the clone.
  bool Cloned(uint64_t node_id, uint64_t original_id);
  // The stack of the call that created `node_id`'s original; 0 when unknown.
  uint32_t StackOf(uint64_t node_id) const;
  uint64_t dropped() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, uint32_t> stack_of_;
  uint64_t dropped_ = 0;
};

}  // namespace prof::cupti
