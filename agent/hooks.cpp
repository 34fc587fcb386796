#include "agent/hooks.h"

#include <string_view>

#include "agent/clock.h"
#include "agent/runtime.h"
#include "agent/signal_deferral.h"

namespace prof::hooks {
namespace {

// api:cudaGraphLaunch also counts cudaGraphLaunch_ptsz (same call, another
// default-stream mode).
bool SameBaseApi(ApiId a, ApiId b) {
  if (a == b) return true;
  std::string_view x = ApiName(a), y = ApiName(b);
  auto base = [](std::string_view s) {
    for (std::string_view suffix : {"_ptsz", "_ptds"}) {
      if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) return s.substr(0, s.size() - suffix.size());
    }
    return s;
  };
  return base(x) == base(y);
}

}  // namespace

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

void OnCallStart(ApiId id, uint32_t name_id) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session) return;
    const Config& c = rt->config;
    bool marker = false;
    if (c.step_source == StepSource::kApi) {
      marker = SameBaseApi(id, c.step_api);
    } else if (c.step_source == StepSource::kKernel && ApiKindOf(id) == ApiKind::kLaunch) {
      marker = rt->markers.Matches(name_id);
    }
    if (marker) {
      ExitSignalDeferral defer;  // Step takes Session::mu_, which the exit path needs
      rt->session->Step(NowNs());
    }
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

void OnSyncReturn(ApiId id) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session || rt->config.step_source != StepSource::kSync) return;
    if (id == ApiId::cudaDeviceSynchronize || id == ApiId::cudaStreamSynchronize || id == ApiId::cudaStreamSynchronize_ptsz) {
      ExitSignalDeferral defer;
      rt->session->Step(NowNs());
    }
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

void OnNvtxRangeStart(uint32_t name_id) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session || rt->config.step_source != StepSource::kNvtx) return;
    ExitSignalDeferral defer;
    if (rt->markers.Matches(name_id)) rt->session->Step(NowNs());
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

void ManualStep() {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session || rt->config.step_source != StepSource::kManual) return;
    ExitSignalDeferral defer;
    rt->session->Step(NowNs());
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
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
