// CUDA graphs in the simulated driver, as far as stream capture and graph
// launch go: work launched into a capturing stream becomes a node of the
// capture's graph instead of running (CUPTI reports no activity for it, and
// issues GRAPHNODE_CREATED inside the launching call); cuGraphLaunch runs
// an executable graph's nodes in order on one stream, each attributed to
// the cuGraphLaunch call's correlation id and carrying the executable
// graph's id and node id, as CUPTI's kernel records do.
//
// Captured: kernels, copies and memsets (their bytes move when the graph
// runs). Explicit construction (driver_graph_build.cpp) adds kernel, memcpy,
// memset, host, empty and event record/wait nodes with dependencies. A
// graph runs its nodes one after another on the launch stream, in an order
// that respects the dependencies. Event record/wait and host functions on a
// capturing stream fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
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

struct CopyRegion;
// The same for a copy and a memset; false if the stream is not capturing.
bool CaptureCopy(CUstream stream, const CopyRegion& src, const CopyRegion& dst, size_t width, size_t rows,
                 size_t depth);
bool CaptureMemset(CUstream stream, void* dst, size_t pitch, unsigned char value, size_t width, size_t rows);

}  // namespace sim
