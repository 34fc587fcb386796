// CUDA graphs in the simulated driver, as far as stream capture and graph
// launch go: work launched into a capturing stream becomes a node of the
// capture's graph instead of running (CUPTI reports no activity for it, and
// issues GRAPHNODE_CREATED inside the launching call); cuGraphLaunch runs
// an executable graph's nodes in order on one stream, each attributed to
// the cuGraphLaunch call's correlation id and carrying the executable
// graph's id and node id, as CUPTI's kernel records do.
//
// Only kernel nodes are modelled. Copies, memsets, event records and
// synchronisation on a capturing stream fail with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (real CUDA captures async copies,
// memsets and event record/wait too; nothing here needs them yet).
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../hub.h"

namespace sim {

// True while the stream is being captured.
bool IsCapturing(CUstream stream);

// If the stream is being captured, adds a kernel node built from the op
// (name, grid, block, shared memory) that will run for duration_ns when the
// graph is launched, reports it, and returns true: the caller enqueues
// nothing.
bool CaptureKernel(CUstream stream, const SimOp& op, uint64_t duration_ns);

}  // namespace sim
