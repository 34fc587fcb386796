// CUDA graphs in the simulated driver: stream capture (driver_capture.cpp)
// and graph launch (driver_graph.cpp). Work launched into a capturing stream
// becomes a node of the capture's graph instead of running (CUPTI reports
// no activity for it, and issues GRAPHNODE_CREATED inside the launching
// call); cuGraphLaunch runs an executable graph's nodes in dependency order
// on its stream, each attributed to the cuGraphLaunch call's correlation id
// and carrying the executable graph's id and node id, as CUPTI's kernel
// records do.
//
// Capture follows CUDA's rules (README "CUDA graphs"): several streams join
// one capture through events recorded and waited on inside it; each stream
// has a dependency set; operations that conflict with a capture, or that a
// capture mode prohibits, fail and invalidate it.
//
// Each Capture* function below is asked by an operation on a stream before
// it runs. It returns false when no capture is concerned: the operation
// runs as usual. It returns true when capture took the operation: *result
// is CUDA_SUCCESS (a node was added, or the capture's dependencies changed)
// or the error the operation returns (the capture is then invalidated, as
// CUDA documents).
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../hub.h"

namespace sim {

struct CopyRegion;

bool CaptureKernel(CUstream stream, const SimOp& op, uint64_t duration_ns, CUresult* result);
bool CaptureCopy(CUstream stream, const CopyRegion& src, const CopyRegion& dst, size_t width, size_t rows,
                 size_t depth, CUresult* result);
bool CaptureMemset(CUstream stream, void* dst, size_t pitch, unsigned char value, size_t width, size_t rows,
                   CUresult* result);
// cuLaunchHostFunc: a host node.
bool CaptureHostFunc(CUstream stream, CUhostFn fn, void* data, CUresult* result);
// Operations the sim cannot capture (stream callbacks, graph launches as
// child graphs, stream-ordered allocations): refused on a capturing stream
// with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated.
bool CaptureUnsupported(CUstream stream, CUresult* result);
// An event recorded inside a capture stands for the stream's dependency set
// there (external: an event record node too). A record outside a capture
// returns false and makes the event an ordinary one again.
bool CaptureEventRecord(CUevent event, CUstream stream, bool external, CUresult* result);
// A stream waiting on an event recorded inside a capture joins that capture
// (or, already in it, adds the event's dependencies to its own); a
// capturing stream waiting on an event recorded outside the capture is a
// cross-capture dependency (CUDA_ERROR_STREAM_CAPTURE_ISOLATION), on an
// event of another capture a merge (..._MERGE). External: an event wait node.
bool CaptureStreamWait(CUstream stream, CUevent event, bool external, CUresult* result);

// Checks before a call that queries or waits for something. CUDA_SUCCESS:
// go on. Otherwise the call returns the error: querying or synchronising a
// capturing stream or an event last recorded inside a capture, or a device
// whose streams capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), or the
// legacy stream while a blocking stream of its device captures
// (..._IMPLICIT); each invalidates the captures concerned. When nothing
// captured is concerned, the call is still a potentially unsafe one and
// CaptureCheckUnsafe decides.
CUresult CaptureCheckStream(CUstream stream);
CUresult CaptureCheckEvent(CUevent event);
CUresult CaptureCheckDevice(int device);
// A potentially unsafe call (allocations, frees, queries, synchronisation)
// under the calling thread's capture mode (cuThreadExchangeStreamCaptureMode):
// prohibited (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the prohibiting
// captures invalidated) in global mode while this thread has a capture not
// begun relaxed or another thread one begun global, in thread-local mode
// while this thread has a capture not begun relaxed; never in relaxed mode.
CUresult CaptureCheckUnsafe();
// The event is gone (cuEventDestroy).
void CaptureForgetEvent(CUevent event);

}  // namespace sim
