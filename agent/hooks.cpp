#include "agent/hooks.h"

#include "agent/auto_step.h"
#include "agent/clock.h"
#include "agent/runtime.h"
#include "agent/signal_deferral.h"

namespace prof::hooks {

void RecordEvent(const HostEvent& event) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt != nullptr) rt->buffers.Append(event);
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

uint32_t CaptureStack() {
  Runtime* rt = CurrentRuntime();
  return rt != nullptr && rt->python ? rt->python->Capture() : 0;  // Capture never throws
}

bool Observe(const ObservedEvent& event) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session) return false;
    if (rt->config.step_source == StepSource::kAuto) {
      // PROF_STEP=auto: the detector sees the event; once decided, the marker may fire.
      uint32_t token = TokenForEvent(event);
      if (token == 0 || !rt->auto_step || !rt->auto_step->Observe(token)) return false;
    } else if (!IsStepMarker(rt->config, &rt->markers, event)) {
      return false;
    }
    ExitSignalDeferral defer;  // Step takes Session::mu_, which the exit path needs
    rt->session->Step(event.now_ns != 0 ? event.now_ns : NowNs());
    return true;
  } catch (...) {
    // Called from wrappers and CUPTI callbacks: nothing may unwind into the host's C code.
    return false;
  }
}

void TrackAlloc(uint64_t ptr, uint64_t bytes, int device, MemKind kind, ApiId api, uint32_t tid, uint64_t ts_ns,
                bool keep_sample) {
  try {
    Runtime* rt = CurrentRuntime();
    ExitSignalDeferral defer;  // the allocation table's mutex: the exit path snapshots it
    if (rt != nullptr) rt->allocs.OnAlloc(ptr, bytes, device, kind, api, tid, ts_ns, keep_sample);
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

void TrackFree(uint64_t ptr, ApiId api, uint32_t tid, uint64_t ts_ns, bool keep_sample) {
  try {
    Runtime* rt = CurrentRuntime();
    ExitSignalDeferral defer;
    if (rt != nullptr) rt->allocs.OnFree(ptr, api, tid, ts_ns, keep_sample);
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

void RecordNvtxRange(const NvtxRange& range) {
  try {
    Runtime* rt = CurrentRuntime();
    ExitSignalDeferral defer;
    if (rt != nullptr && (rt->config.activities & kActNvtx)) rt->nvtx.Add(range);
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

MemKind MemKindOf(ApiId id) {
  switch (id) {
    case ApiId::cudaMallocHost:
    case ApiId::cudaHostAlloc:
    case ApiId::cudaFreeHost:
      return MemKind::kHostPinned;
    case ApiId::cudaMallocManaged:
      return MemKind::kManaged;
    case ApiId::cudaMallocAsync:
    case ApiId::cudaMallocAsync_ptsz:
    case ApiId::cudaMallocFromPoolAsync:
    case ApiId::cudaMallocFromPoolAsync_ptsz:
    case ApiId::cuMemAllocAsync:
      return MemKind::kAsyncPool;
    case ApiId::cuMemCreate:
      return MemKind::kVmm;
    default:
      return MemKind::kDevice;
  }
}

}  // namespace prof::hooks
