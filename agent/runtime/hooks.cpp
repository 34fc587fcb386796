#include "base/agent_hooks.h"

#include "base/clock.h"
#include "base/signal_deferral.h"
#include "base/strings.h"
#include "agent/runtime/runtime.h"
#include "agent/steps/auto_step.h"
#include "agent/steps/capture_range.h"
#include "model/collectives.h"

namespace prof::hooks {

void RecordEvent(const HostEvent& event) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr) return;
    rt->buffers.Append(event);
    if (rt->config.range_kind != RangeKind::kNone && rt->session) rt->session->NoteRangeCall();
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
  }
}

uint32_t CaptureStack(uint64_t now_ns, bool launch) {
  Runtime* rt = CurrentRuntime();
  return rt != nullptr && rt->python ? rt->python->Capture(now_ns, launch) : 0;  // Capture never throws
}

namespace {

// Runs f on the installed runtime, if any, with exit signals deferred (f
// takes a mutex the exit path takes too: the allocation table's, a store's).
// Called from wrappers: nothing may unwind into the host's C code.
template <typename F>
void WithRuntimeLocked(F&& f) {
  try {
    Runtime* rt = CurrentRuntime();
    ExitSignalDeferral defer;
    if (rt != nullptr) f(*rt);
  } catch (...) {
  }
}

// How a window's metadata names its range: "cudaProfilerStart/Stop" or "NVTX `train@step`".
std::string RangeName(const ObservedEvent& event, const RangeEdge& edge) {
  if (edge.name_id != 0) return "NVTX `" + Strings().Get(edge.name_id) + "`";
  return "cudaProfilerStart/Stop";
}

}  // namespace

bool Observe(const ObservedEvent& event) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session) return false;
    // PROF_RANGE: the event may open or close a window. A range edge that
    // did is not also a step marker (the range's start already starts a step).
    bool edge_acted = false;
    if (rt->config.range_kind != RangeKind::kNone) {
      RangeEdge edge = ClassifyRangeEvent(rt->config, &rt->range_markers, event);
      if (edge.kind != RangeEdgeKind::kNone) {
        ExitSignalDeferral defer;  // OnRangeEdge takes Session::mu_
        edge_acted = rt->session->OnRangeEdge(edge, event.now_ns != 0 ? event.now_ns : NowNs(), RangeName(event, edge));
      }
    }
    bool marker;
    if (rt->config.step_source == StepSource::kAuto) {
      // PROF_STEP=auto: the detector sees the event; once decided, the marker may fire.
      uint32_t token = TokenForEvent(event);
      marker = token != 0 && rt->auto_step && rt->auto_step->Observe(token);
    } else {
      marker = IsStepMarker(rt->config, &rt->markers, event);
    }
    // A waiting step that changes nothing is counted lock-free, without a
    // clock read; any other takes Session::mu_, which the exit path needs.
    if (marker && !edge_acted && !rt->session->QuietStep()) {
      ExitSignalDeferral defer;
      rt->session->Step(event.now_ns != 0 ? event.now_ns : NowNs());
    }
    return marker || edge_acted;
  } catch (...) {
    // Called from wrappers and CUPTI callbacks: nothing may unwind into the host's C code.
    return false;
  }
}

bool LaunchMayMark(uint32_t name_id) {
  Runtime* rt = CurrentRuntime();
  if (rt == nullptr || rt->config.step_source != StepSource::kKernel || rt->config.range_kind != RangeKind::kNone) {
    return true;
  }
  return !rt->markers.KnownNoMatch(name_id);
}

KernelRegistry::Verdict LaunchVerdict(uint32_t name_id) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || rt->config.step_source != StepSource::kKernel || rt->config.range_kind != RangeKind::kNone ||
        name_id == 0 || name_id == kDroppedNameId || name_id >= kTransientBase) {
      return KernelRegistry::Verdict::kUnknown;
    }
    return rt->markers.Matches(name_id) ? KernelRegistry::Verdict::kMatch : KernelRegistry::Verdict::kNoMatch;
  } catch (...) {
    // Called from wrappers: nothing may unwind into the host's C code.
    return KernelRegistry::Verdict::kUnknown;
  }
}

bool RangeEndsWanted() {
  Runtime* rt = CurrentRuntime();
  return rt != nullptr && rt->config.range_kind == RangeKind::kNvtx;
}

bool AgentRunning() { return CurrentRuntime() != nullptr; }

void NoteCollective() {
  Runtime* rt = CurrentRuntime();
  if (rt != nullptr) rt->collectives_launched.fetch_add(1, std::memory_order_release);
}

void NoteCall() {
  Runtime* rt = CurrentRuntime();
  if (rt != nullptr && rt->config.range_kind != RangeKind::kNone && rt->session) rt->session->NoteRangeCall();
}

void TrackAlloc(uint64_t ptr, uint64_t bytes, int device, MemKind kind, ApiId api, uint32_t tid, uint64_t ts_ns,
                bool keep_sample) {
  WithRuntimeLocked([&](Runtime& rt) { rt.allocs.OnAlloc(ptr, bytes, device, kind, api, tid, ts_ns, keep_sample); });
}

void TrackFree(uint64_t ptr, ApiId api, uint32_t tid, uint64_t ts_ns, bool keep_sample) {
  WithRuntimeLocked([&](Runtime& rt) { rt.allocs.OnFree(ptr, api, tid, ts_ns, keep_sample); });
}

void RecordCollective(const CollectiveCall& call) {
  WithRuntimeLocked([&](Runtime& rt) { rt.collectives.Add(call); });
}

void RegisterComm(const CommInfo& comm) {
  WithRuntimeLocked([&](Runtime& rt) { rt.collectives.AddComm(comm); });
}

void SetNcclVersion(int version) {
  Runtime* rt = CurrentRuntime();
  if (rt != nullptr) rt->collectives.SetNcclVersion(version);
}

void NoteCudaInitialized() {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt != nullptr && rt->session) rt->session->WatchCallsIfCuda();
  } catch (...) {
    // Called from a wrapper: nothing may unwind into the host's C code.
  }
}

void RecordNvtxRange(const NvtxRange& range) {
  WithRuntimeLocked([&](Runtime& rt) {
    if (rt.config.activities & kActNvtx) rt.nvtx.Add(range);
  });
}

// A table as a switch: one kind per allocating call.
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
