// Host functions on streams (cuLaunchHostFunc, cuStreamAddCallback): each
// runs on the driver's own thread once the work before it on its stream has
// finished, and work after it on that stream is placed after its slot.
// CUPTI reports the API call only (there is no activity record for a host
// function). Synchronisation waits until the host functions it covers have
// returned, as in CUDA.
#pragma once

#include <cuda.h>
#include <stdint.h>

namespace sim {

// The slot a host function occupies on its stream's timeline in the model
// (its real run time is what the function takes; later work on the stream is
// placed after the modelled slot).
inline constexpr uint64_t kHostFuncSlotNs = 1000;

// Enqueues fn(data) on the stream; run(fn, data) is called on the driver's
// host-function thread at or after the slot's start.
using HostFuncRunner = void (*)(void* fn, void* data, CUstream stream);
CUresult EnqueueHostFunc(CUstream stream, HostFuncRunner run, void* fn, void* data);

// Blocks until every host function enqueued so far on this stream of device
// `device` (all its streams: stream_id 0) has returned. Never call from a
// host function.
void WaitHostFuncs(int device, uint32_t stream_id);

}  // namespace sim
