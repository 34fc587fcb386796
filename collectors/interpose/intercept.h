// The shape every wrapper shares.
//
//   fast path: one relaxed load of the hot bits and a branch, then the real
//              call (nothing records, no step source watches this call);
//   slow path: nested calls (a runtime function calling a driver function we
//              also wrap) pass straight through, so nothing is counted twice;
//              the outermost call runs the step markers, takes start/end on
//              the agent clock, lets the CUPTI collector's API-enter callback
//              leave its correlation id in tls_correlation_id, fills the
//              event's arguments, tracks allocations, and appends one
//              fixed-size HostEvent to the thread's buffer.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "model/api_ids.h"
#include "base/clock.h"
#include "base/hot_state.h"
#include "base/kernel_registry.h"
#include "base/thread_id.h"
#include "base/agent_hooks.h"
#include "base/device_collector.h"
#include "model/events.h"
#include "base/agent_hooks.h"
#include "collectors/interpose/real_functions.h"

#define AGENT_LIKELY(x) __builtin_expect(!!(x), 1)

namespace prof::interpose {

// ApiKindOf at compile time, so the fast path's mask is a constant.
constexpr ApiKind kKinds[] = {
#define KIND_OF_ENTRY(name, kind) ApiKind::kind,
    FOR_EACH_CUDA_API(KIND_OF_ENTRY)
#undef KIND_OF_ENTRY
};
constexpr ApiKind KindOf(ApiId id) { return kKinds[static_cast<size_t>(id)]; }

// Which hot bits make a call of this kind leave the fast path.
constexpr uint32_t MaskFor(ApiKind kind) {
  uint32_t mask = kHotRecording | kHotApiMarker;
  if (kind == ApiKind::kLaunch) mask |= kHotLaunchMarker;
  if (kind == ApiKind::kSync) mask |= kHotSyncMarker;
  if (kind == ApiKind::kMemcpy || kind == ApiKind::kMemset) mask |= kHotCopyMarker;
  if (kind == ApiKind::kAlloc || kind == ApiKind::kFree) mask |= kHotAllocTracking;
  return mask;
}

// The profiler switch (cudaProfilerStart/Stop, cuProfilerStart/Stop): rare
// calls that PROF_RANGE=cudaProfilerApi watches (kHotRangeMarker).
constexpr bool IsProfilerControl(ApiId id) {
  return id == ApiId::cudaProfilerStart || id == ApiId::cudaProfilerStop || id == ApiId::cuProfilerStart ||
         id == ApiId::cuProfilerStop;
}

// Which hot bits make this call leave the fast path, and which make it feed the marker path.
constexpr uint32_t MaskForId(ApiId id) {
  return MaskFor(KindOf(id)) | (IsProfilerControl(id) ? uint32_t{kHotRangeMarker} : 0u);
}
constexpr uint32_t FeedMaskFor(ApiId id) { return kHotMarkerFeed | (IsProfilerControl(id) ? uint32_t{kHotRangeMarker} : 0u); }

// Which hot bits need this call observed at its enter, and at its return
// (agent/steps/step_markers.h, agent/steps/auto_step.h, agent/steps/capture_range.h): launches
// (kernel:, auto), copies and memsets (auto) and api:<fn> (armed calls only,
// checked at the call) mark at enter; synchronizes (sync, auto) at return;
// the profiler switch (PROF_RANGE=cudaProfilerApi) at either. A feeding
// wrapper skips the other site's Observe (a marker-path call of ~150-300
// instructions).
constexpr uint32_t EnterObserveMask(ApiId id) {
  ApiKind kind = KindOf(id);
  uint32_t mask = kHotApiMarker | (IsProfilerControl(id) ? uint32_t{kHotRangeMarker} : 0u);
  if (kind == ApiKind::kLaunch) mask |= kHotLaunchMarker;
  if (kind == ApiKind::kMemcpy || kind == ApiKind::kMemset) mask |= kHotCopyMarker;
  return mask;
}
constexpr uint32_t ReturnObserveMask(ApiId id) {
  return (KindOf(id) == ApiKind::kSync ? uint32_t{kHotSyncMarker} : 0u) |
         (IsProfilerControl(id) ? uint32_t{kHotRangeMarker} : 0u);
}

namespace internal {
// Depth of interposed calls on this thread (the outermost is recorded).
inline thread_local int t_depth = 0;
// How many devices the process sees (alloc_wrappers.cpp's CurrentDevice):
// 0 until asked, -1 when asking failed. A process's count never changes.
inline std::atomic<int> g_device_count{0};
}  // namespace internal

struct DepthGuard {
  DepthGuard() { ++internal::t_depth; }
  ~DepthGuard() { --internal::t_depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

// After an allocation/free succeeded, feed the live table. While recording
// the sample's time is the call's end; otherwise only the live table's
// allocation time needs one, and the coarse clock (same epoch, tick
// resolution, a fraction of a precise read's cost) is enough for it.
inline void TrackAllocation(ApiId id, const HostEvent& e, bool keep_sample) {
  ApiKind kind = KindOf(id);
  uint64_t ts_ns = keep_sample ? e.end_ns : CoarseNowNs();
  uint32_t tid = keep_sample ? ThisThreadId() : 0;  // only samples carry it
  if (kind == ApiKind::kAlloc) {
    hooks::TrackAlloc(e.ptr, e.bytes, e.device, hooks::MemKindOf(id), id, tid, ts_ns, keep_sample);
  } else if (kind == ApiKind::kFree) {
    hooks::TrackFree(e.ptr, id, tid, ts_ns, keep_sample);
  }
}

// A call seen by a wrapper, for the marker path.
// detail: the kernel's interned name for launches, cudaMemcpyKind + 1 for copies.
inline ObservedEvent CallEvent(MarkerSite site, ApiId id, uint32_t detail, bool result_ok) {
  ObservedEvent event;
  event.site = site;
  event.feed = MarkerFeed::kWrapper;
  event.kind = KindOf(id);
  event.api = ApiName(id);
  event.id = id;
  event.name_id = event.kind == ApiKind::kLaunch ? detail : 0;
  event.detail = detail;
  event.result_ok = result_ok;
  return event;  // now_ns 0: the marker path reads the clock only for a marker
}

// Slow path. detail: interned kernel name for launches, cudaMemcpyKind + 1
// for copies (0 otherwise). fill(HostEvent&, R result) sets the arguments
// that matter.
template <typename R, typename Fn, typename Fill, typename... A>
__attribute__((noinline)) R InterceptSlow(ApiId id, uint8_t flags, uint32_t detail, Fn real, Fill fill, A... a) {
  const uint32_t name_id = KindOf(id) == ApiKind::kLaunch ? detail : 0;
  if (internal::t_depth > 0) return real(a...);
  DepthGuard guard;
  uint32_t hot = LoadHotBits();
  // The marker path (agent/steps/step_markers.h): this wrapper feeds it for this
  // call, so the CUPTI callbacks inside the call stay silent.
  bool feeds_markers = (hot & FeedMaskFor(id)) != 0;
  // api:<fn>: only fn (and its twin) can mark; the others are fed (CUPTI
  // stays silent for them) but not observed.
  uint32_t enter_mask = EnterObserveMask(id) & (IsArmedApiMarker(id) ? ~0u : ~uint32_t{kHotApiMarker});
  bool observe_return = (hot & ReturnObserveMask(id)) != 0;
  if (feeds_markers) {
    tls_wrapper_feeds_markers = true;
    // kernel:<regex> alone while recording: a launch of a kernel the matcher
    // already said no to cannot mark (one cache load instead of the marker
    // path). While waiting InterceptRest already sent those past this path
    // (the registry's verdict): what reaches here may mark.
    bool known_no = (hot & enter_mask) == kHotLaunchMarker && (hot & kHotRecording) != 0 &&
                    !hooks::LaunchMayMark(detail);
    if ((hot & enter_mask) != 0 && !known_no) {
      hooks::Observe(CallEvent(MarkerSite::kCallEnter, id, detail, /*result_ok=*/true));
      hot = LoadHotBits();  // the marker may just have opened a window
    }
  }
  // The call's return, for the marker path: a synchronize marks here.
  auto returned = [&](R result) {
    if (feeds_markers) {
      if (observe_return) hooks::Observe(CallEvent(MarkerSite::kCallReturn, id, detail, static_cast<int>(result) == 0));
      tls_wrapper_feeds_markers = false;
    }
    return result;
  };
  bool recording = (hot & kHotRecording) != 0;
  bool tracks = (hot & kHotAllocTracking) != 0 && (KindOf(id) == ApiKind::kAlloc || KindOf(id) == ApiKind::kFree);
  // Outside windows a call that allocates nothing is here only for the
  // marker path: no event to fill, no correlation to take.
  if (!recording && !tracks) return returned(real(a...));
  HostEvent e{};
  e.api = static_cast<uint16_t>(id);
  e.name_id = name_id;
  e.device = -1;
  e.flags = flags;
  // Timestamps only for an event that will be kept: outside a window the
  // slow path runs for markers and allocation tracking, which need none.
  if (recording) e.start_ns = NowNs();
  tls_correlation_id = 0;
  tls_call_start_ns = e.start_ns;
  R result = real(a...);
  tls_call_start_ns = 0;
  if (recording) {
    e.end_ns = NowNs();
    // After the call: walking the stack is not counted in its duration.
    e.stack_id = hooks::CaptureStack(e.end_ns, KindOf(id) == ApiKind::kLaunch) & 0xFFFFFF;
  }
  e.correlation_id = tls_correlation_id;
  e.result = static_cast<int32_t>(result);
  fill(e, result);
  if ((hot & kHotAllocTracking) && static_cast<int>(result) == 0) TrackAllocation(id, e, recording);
  if (recording) hooks::RecordEvent(e);
  return returned(result);
}

// Everything but the fast path: first use (resolve the real function),
// then either the plain call or the recorded one. Out of line, so the fast
// path needs no stack frame.
template <ApiId kId, typename R, typename Fn, typename NameOf, typename Fill, typename... A>
__attribute__((noinline)) R InterceptRest(R missing, uint8_t flags, Fn real, NameOf name_of, Fill fill, A... a) {
  if (real == nullptr) real = reinterpret_cast<Fn>(RealFunction(kId));
  if (real == nullptr) return missing;
  constexpr uint32_t kMask = MaskForId(kId);
  uint32_t hot = LoadHotBits() & kMask;
  // PROF_STEP=api:<fn> alone concerns this call: only <fn> itself feeds the
  // marker path; any other call is a plain call (one byte load more).
  if (hot == 0 || (hot == kHotApiMarker && !IsArmedApiMarker(kId))) return real(a...);
  uint32_t detail;
  if constexpr (std::is_pointer_v<decltype(name_of(a...))>) {
    // A launch by host stub or kernel handle: name_of gives the registry's
    // key, and the registry the kernel's name and PROF_STEP=kernel:'s
    // verdict on it in one lookup.
    const void* key = name_of(a...);
    KernelRegistry::Entry kernel = Kernels().Lookup(key);
    detail = kernel.name_id;
    if (hot == kHotLaunchMarker && detail != 0) {
      // PROF_STEP=kernel:<regex> while nothing records: the first launch of
      // each kernel asks the matcher; a launch of one that does not match
      // cannot mark. A plain call, still fed (the CUPTI callbacks inside it
      // stay silent: a wrapper saw it).
      if (kernel.verdict == KernelRegistry::Verdict::kUnknown) {
        kernel.verdict = hooks::LaunchVerdict(detail);
        Kernels().SetVerdict(key, detail, kernel.verdict);
      }
      if (kernel.verdict == KernelRegistry::Verdict::kNoMatch) {
        bool outer = tls_wrapper_feeds_markers;  // a launch nested in a fed call keeps its flag
        tls_wrapper_feeds_markers = true;
        R result = real(a...);
        tls_wrapper_feeds_markers = outer;
        return result;
      }
    }
  } else {
    detail = name_of(a...);
  }
  return InterceptSlow<R>(kId, flags, detail, real, fill, a...);
}

// The whole wrapper body. Fast path: the real function is resolved and no
// hot bit concerns this call: one relaxed load, a branch and a tail call.
// real: Loaded<Fn>(id) (not resolving), so this path contains no call.
// name_of(a...) gives a launch's registry key (its host stub or kernel
// handle), or the detail of other calls (the copy kind; 0 for most);
// fill captures by value so nothing is spilled before the branch.
// PROF_STEP=api:<fn> alone concerns the call: all but <fn> (and its twin)
// stay on the fast path too, with one byte load more (a constant address).
template <ApiId kId, typename R, typename Fn, typename NameOf, typename Fill, typename... A>
__attribute__((always_inline)) inline R Intercept(R missing, uint8_t flags, Fn real, NameOf name_of, Fill fill, A... a) {
  constexpr uint32_t kMask = MaskForId(kId);
  uint32_t hot = LoadHotBits() & kMask;
  if (AGENT_LIKELY(real != nullptr && (hot == 0 || (hot == kHotApiMarker && !IsArmedApiMarker(kId))))) {
    return real(a...);
  }
  return InterceptRest<kId, R>(missing, flags, real, name_of, fill, a...);
}

// For calls that are not launches.
inline constexpr auto kNoName = [](auto...) -> uint32_t { return 0; };

}  // namespace prof::interpose
