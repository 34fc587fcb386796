// The CUPTI collector's API callbacks: the trampoline CUPTI calls on the
// application thread and everything it calls on the recording and waiting
// paths (enter, exit, libprof's own calls, the resource domain, the
// RUNTIME-record notes, the marker path), kept in one translation unit so
// the compiler inlines them into the trampoline (docs/performance.md).
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string_view>

#include "model/api_ids.h"
#include "base/clock.h"
#include "base/hot_state.h"
#include "base/log.h"
#include "base/strings.h"
#include "base/thread_id.h"
#include "base/agent_hooks.h"
#include "model/events.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/api_classes.h"
#include "collectors/cupti/call_arguments.h"
#include "collectors/cupti/collector_parts.h"
#include "collectors/cupti/zero_bytes.h"

namespace prof::cupti {

// Plain per-thread fields: state, alike in shape to other structs of counters.
// What the API callbacks keep per application thread, in one thread_local:
// each thread_local of a shared library is a lookup of its own, so a
// callback finds all of this with one.
struct CallbackThread {
  // Runtime calls this thread is inside, and the outermost one's
  // correlation id: a driver call made by the runtime has its own
  // correlation id, while its device work may carry the runtime's.
  int runtime_depth = 0;
  uint32_t runtime_correlation = 0;
  // The outermost call in progress on this thread that the registry expects
  // device work from (0: none). A graph node created inside it means the
  // call was captured into a graph: it put nothing in flight.
  uint32_t expecting_correlation = 0;
  // Driver calls this thread is inside outside any runtime call (a
  // driver-API program's own calls): only the outermost call reaches the
  // marker path.
  int driver_depth = 0;
  // The outermost call in progress on this thread (both depths above 0):
  // the collector's narrow_epoch_ and off_epoch_ when it entered and
  // whether it is watched between windows. A call that is not watched loses
  // its exit callback when callbacks are narrowed while it runs; any call
  // loses it when every callback goes off while it runs.
  uint32_t outer_epoch = 0;
  uint32_t outer_off_epoch = 0;
  bool outer_watched = true;
  // The outermost call in progress that these callbacks record as a host
  // event, because no wrapper does (0: none), and when it entered.
  uint32_t host_correlation = 0;
  uint64_t host_start_ns = 0;
  // A runtime call was in progress on this thread when the driver loaded
  // libprof from its first cuInit (NoteRuntimeCallInProgress): its driver
  // calls reach the callbacks with no runtime call entered around them.
  // Until the next runtime callback on this thread, while windows_begun_ is
  // still unseen_windows (a window begun since enables every callback, so
  // a flag left over from a runtime exit no callback saw expires).
  bool unseen_runtime = false;
  uint64_t unseen_windows = 0;
  // The collector's on_epoch_ at this thread's last callback.
  uint32_t on_epoch = 0;
};

namespace {

thread_local CallbackThread t_calls;

// The marker path's idea of a call, from its CUPTI class.
ApiKind KindOf(ApiClass c, const char* name) {
  switch (c) {
    case ApiClass::kLaunch: return ApiKind::kLaunch;
    case ApiClass::kMemcpy: return ApiKind::kMemcpy;
    case ApiClass::kMemset: return ApiKind::kMemset;
    case ApiClass::kSync: return ApiKind::kSync;
    case ApiClass::kMemory: {
      std::string_view n = name != nullptr ? name : "";
      return n.find("Free") != std::string_view::npos || n.find("Release") != std::string_view::npos ? ApiKind::kFree
                                                                                                    : ApiKind::kAlloc;
    }
    default: return ApiKind::kOther;
  }
}

}  // namespace

// The dispatch is here rather than in a member, so that each callback is one
// call from CUPTI into the half it needs.
void CUPTIAPI CallbackTrampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (userdata == nullptr) return;  // never ours (we subscribe with the collector)
  auto* collector = static_cast<CuptiCollector*>(userdata);
  try {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      const auto* info = static_cast<const CUpti_CallbackData*>(data);
      bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
      if (tls_own_cuda_calls > 0) {
        collector->OnOwnCall(info);
      } else if (info->callbackSite == CUPTI_API_ENTER) {
        // The thread's state is found here once and handed on (each TLS
        // lookup is a call in a shared library).
        collector->OnApiEnter(t_calls, runtime, cbid, info);
      } else {
        collector->OnApiExit(t_calls, runtime, cbid, info);
      }
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      collector->OnResourceCallback(cbid, data);
    }
  } catch (...) {
    // Never let an exception unwind into CUPTI or the host.
  }
}

void CuptiCollector::OnOwnCall(const CUpti_CallbackData* info) {
  // libprof's own call (and any call nested in it): no step marker, no
  // expectation, no correlation for the wrapper; its records are dropped.
  if (info->callbackSite == CUPTI_API_ENTER && registry_) registry_->OnOwnCall(info->correlationId, NowNs());
}

void CuptiCollector::NoteRuntimeCallInProgress() {
  t_calls.unseen_runtime = true;
  t_calls.unseen_windows = windows_begun_.load(std::memory_order_relaxed);
}

void CuptiCollector::OnResourceCallback(CUpti_CallbackId cbid, const void* data) {
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED || cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    if (resource != nullptr && resource->resourceDescriptor != nullptr) {
      OnGraphNode(cbid, *static_cast<const CUpti_GraphData*>(resource->resourceDescriptor));
    }
    return;
  }
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && callbacks_live_.load(std::memory_order_acquire)) {
    // Records of a context are lost with it; flush while it exists. No
    // control_mutex_: a flush may run beside another, CUPTI serializes.
    api_.ActivityFlushAll(0);
  }
}

void CuptiCollector::OnGraphNode(CUpti_CallbackId cbid, const CUpti_GraphData& graph) {
  if (api_.GetGraphNodeId == nullptr) return;
  uint64_t node_id = 0;
  if (graph.node == nullptr || api_.GetGraphNodeId(graph.node, &node_id) != CUPTI_SUCCESS) return;
  bool kept = true;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    uint64_t original_id = 0;
    if (graph.originalNode != nullptr && api_.GetGraphNodeId(graph.originalNode, &original_id) == CUPTI_SUCCESS) {
      kept = graph_sites_.Cloned(node_id, original_id);
    }
  } else {
    // Created inside the call that made it, on its thread: that call's stack.
    kept = graph_sites_.Created(node_id, hooks::CaptureStack(NowNs(), /*launch=*/true) & 0xFFFFFF);
  }
  if (!kept && !graph_sites_full_said_.exchange(true, std::memory_order_relaxed)) {
    Log().info("the capturing lines of {} CUDA graph nodes are kept, no more: replayed work of graph nodes made "
               "from now on is charged to its graph launch's line", GraphSites::kMaxNodes);
  }
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) return;
  if (callbacks_live_.load(std::memory_order_acquire)) {
    // Captured, not run: no record will come for this call, so the window
    // must not wait for one nor count it missing. (A graph launch's
    // kernels carry the cudaGraphLaunch call's correlation id.)
    uint32_t expecting = t_calls.expecting_correlation;
    if (expecting != 0) registry_->OnExit(expecting, /*succeeded=*/false);
  }
}

void CuptiCollector::OnApiEnter(CallbackThread& t, bool runtime, CUpti_CallbackId cbid,
                                const CUpti_CallbackData* info) {
  bool live = callbacks_live_.load(std::memory_order_acquire);
  if ((t.runtime_depth != 0 || t.driver_depth != 0) &&
      ((!t.outer_watched && t.outer_epoch != narrow_epoch_.load(std::memory_order_relaxed)) ||
       t.outer_off_epoch != off_epoch_.load(std::memory_order_relaxed))) {
    // The outermost call this thread was inside was not watched and the
    // callbacks were narrowed since it entered, or every callback went off
    // since (recording stopped with no step source watching calls, or the
    // collector unsubscribed): its exit never came. Left stale, the depths
    // would make every later driver call look nested (no launch for NCCL's
    // LaunchSink, no marker).
    t.runtime_depth = 0;
    t.driver_depth = 0;
    t.runtime_correlation = 0;
    t.expecting_correlation = 0;
    t.host_correlation = 0;
  }
  if (t.runtime_depth == 0 && t.driver_depth == 0) {
    t.outer_epoch = narrow_epoch_.load(std::memory_order_relaxed);
    t.outer_off_epoch = off_epoch_.load(std::memory_order_relaxed);
    t.outer_watched = Watched(runtime, cbid);
  }
  if (t.unseen_runtime && (runtime || t.unseen_windows != windows_begun_.load(std::memory_order_relaxed))) {
    t.unseen_runtime = false;
  }
  uint32_t on_epoch = on_epoch_.load(std::memory_order_relaxed);
  if (t.on_epoch != on_epoch) {
    t.on_epoch = on_epoch;
    // The first callback on this thread since callbacks came on: a driver
    // call at depth 0 may be one the runtime makes inside a call that
    // entered while they were off (a thread preempted across a window's
    // start). That runtime call is no window's, nor is its device work.
    if (!runtime && t.runtime_depth == 0 && t.driver_depth == 0 && !t.unseen_runtime && runtime_on_stack_ != nullptr &&
        runtime_on_stack_()) {
      t.unseen_runtime = true;
      t.unseen_windows = windows_begun_.load(std::memory_order_relaxed);
    }
  }
  bool outermost = runtime ? t.runtime_depth == 0 : t.runtime_depth == 0 && t.driver_depth == 0 && !t.unseen_runtime;
  if (runtime && t.runtime_depth++ == 0) t.runtime_correlation = info->correlationId;
  if (!runtime) ++t.driver_depth;
  bool marker = false;
  if (outermost && !tls_wrapper_feeds_markers && watching_calls_.load(std::memory_order_acquire)) {
    // A call the marker path needs that no wrapper fed: the collector
    // must stay subscribed to see such calls while waiting.
    if (Unfed(runtime, cbid) && !saw_unfed_.load(std::memory_order_relaxed)) {
      saw_unfed_.store(true, std::memory_order_relaxed);
    }
    marker = ObserveCall(/*enter=*/true, runtime, cbid, info);
    live = callbacks_live_.load(std::memory_order_acquire);  // the marker may have opened or closed a window
  }
  if (!live) {
    // A marker that just closed a window starts the next step: its records
    // must be placed after the boundary, not by their own start time
    // (taken before this callback).
    if (marker && registry_) registry_->OnEnter(info->correlationId, NowNs(), LaunchRegistry::Awaits::kNothing);
    return;
  }
  // PROF_RANGE's step edges (config_ is the session's: no range, no call).
  if (outermost && config_.range_kind != RangeKind::kNone) hooks::NoteCall();
  if (runtime || tls_correlation_id == 0) tls_correlation_id = info->correlationId;
  if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) api_.ActivityFlushAll(0);
  uint8_t traits = CallTraits(runtime, cbid);
  bool nested = !runtime && (t.runtime_depth > 0 || t.unseen_runtime);
  bool expects = !nested && (traits & kTraitExpectsRecord) != 0 &&
                 !((traits & kTraitCountsBytes) != 0 && MovesZeroBytes(runtime, cbid, info->functionParams));
  if (expects) t.expecting_correlation = info->correlationId;
  // Inside an NCCL call (collectors/nccl): its kernel launches, in order.
  if (expects && tls_launch_sink != nullptr && tls_launch_sink->count < LaunchSink::kMax) {
    tls_launch_sink->ids[tls_launch_sink->count++] = info->correlationId;
  }
  // Its own RUNTIME/DRIVER record comes when it returns (unless CUPTI was
  // told to leave it out: a wrapper records this call).
  // The wrapper's start when it timed this call (same instant as the host
  // event), else 0.
  uint64_t call_start_ns = tls_call_start_ns;
  bool expects_api = (traits & kTraitExpectsApiRecord) != 0;
  if (runtime && expects_api) {
    // Known on the call's side (a timing wrapper's or not): nothing to note.
    // An id past the table counts as known and never left out.
    uint8_t side = outermost && call_start_ns != 0 ? kRtFed : kRtUnfed;
    uint8_t bits = cbid < kMaxWatchedCbid ? rt_api_[cbid].load(std::memory_order_acquire) : side;
    if ((bits & side) == 0) bits = NoteRuntimeSide(cbid, side == kRtFed, bits);
    expects_api = (bits & kRtOff) == 0;
  }
  uint64_t enter_ns = call_start_ns != 0 ? call_start_ns : NowNs();
  LaunchRegistry::Awaits awaits =
      expects ? static_cast<LaunchRegistry::Awaits>((traits & kTraitAwaitsMask) >> kTraitAwaitsShift)
              : LaunchRegistry::Awaits::kNothing;
  registry_->OnEnter(info->correlationId, enter_ns, awaits, nested ? t.runtime_correlation : 0, expects_api);
  if ((traits & kTraitHostEvent) != 0 && call_start_ns == 0 && outermost && (LoadHotBits() & kHotRecording) != 0) {
    // No wrapper records this call (CUDA_INJECTION64_PATH, a handle from
    // dlopen, a static cudart, a driver-API launch): recorded at its exit
    // as a wrapper would have, from the same instant as its GPU records.
    t.host_correlation = info->correlationId;
    t.host_start_ns = enter_ns;
  }
}

void CuptiCollector::OnApiExit(CallbackThread& t, bool runtime, CUpti_CallbackId cbid,
                               const CUpti_CallbackData* info) {
  bool live = callbacks_live_.load(std::memory_order_acquire);
  if (runtime && t.runtime_depth > 0 && --t.runtime_depth == 0) t.runtime_correlation = 0;
  if (!runtime && t.driver_depth > 0) --t.driver_depth;
  // The unseen runtime call's own exit (or a later one) ends it.
  if (runtime) t.unseen_runtime = false;
  bool outermost = t.runtime_depth == 0 && t.driver_depth == 0 && !t.unseen_runtime;
  if (info->correlationId == t.expecting_correlation) t.expecting_correlation = 0;
  if (t.host_correlation != 0 && info->correlationId == t.host_correlation) RecordHostEvent(t, runtime, cbid, info);
  if (live && info->functionReturnValue != nullptr) {
    // cudaError_t and CUresult are both int-sized enums; 0 is success.
    bool ok = *static_cast<const int*>(info->functionReturnValue) == 0;
    bool api_record_comes = true;
    if (runtime && cbid < kMaxWatchedCbid && (config_.activities & kActRuntime) != 0) {
      // Inline for an id never left out (no wrapper records it) and for an
      // outermost call a wrapper timed.
      uint8_t bits = rt_api_[cbid].load(std::memory_order_acquire);
      if ((bits & kRtFed) != 0) {
        api_record_comes = t.runtime_depth == 0 && tls_call_start_ns != 0 ? (bits & kRtOff) == 0
                                                                          : BuildIfLeftOut(cbid, bits, info);
      }
    }
    // A wrapper that timed this call appends its host event after the call
    // returns: the writer waits for it (WrappedCalls), not only for this exit.
    bool wrapped = runtime && t.runtime_depth == 0 && tls_call_start_ns != 0;
    registry_->OnExit(info->correlationId, ok, api_record_comes, wrapped);
  }
  if (outermost && !tls_wrapper_feeds_markers && watching_calls_.load(std::memory_order_acquire)) {
    ObserveCall(/*enter=*/false, runtime, cbid, info);
  }
  if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing) MaybeFinalizeFromApiExit();
  if (quiet_pending_.load(std::memory_order_relaxed)) MaybeGoQuietFromApiExit();
}

uint8_t CuptiCollector::NoteRuntimeSide(CUpti_CallbackId cbid, bool fed, uint8_t bits) {
  std::atomic<uint8_t>& slot = rt_api_[cbid];
  if (fed) {
    // A recording wrapper timed it: its host event, with this correlation
    // id, is what the trace shows of the call.
    bits = slot.fetch_or(kRtFed, std::memory_order_relaxed);
    rt_select_dirty_.store(true, std::memory_order_relaxed);
  } else if ((LoadHotBits() & kHotRecording) != 0) {
    // Recorded by no wrapper although one would have: its record is shown.
    bits = slot.fetch_or(kRtUnfed, std::memory_order_acq_rel);
    rt_select_dirty_.store(true, std::memory_order_relaxed);
  }
  return bits;
}

bool CuptiCollector::BuildIfLeftOut(CUpti_CallbackId cbid, uint8_t bits, const CUpti_CallbackData* info) {
  LaunchRegistry::ApiState state;
  if (!registry_->LookUpApi(info->correlationId, &state)) return true;
  // On when it entered and still on: CUPTI writes its record.
  if ((bits & kRtOff) == 0 && state.expects_api_record) return true;
  // Left out when it entered or now, and no wrapper shows it: the record
  // CUPTI would have written, from the callbacks (CUPTI's own, if it comes
  // anyway, is dropped when decoded).
  CUpti_ActivityAPI r;
  std::memset(&r, 0, sizeof(r));
  r.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  r.cbid = cbid;
  r.start = state.enter_ns;
  r.end = NowNs();
  r.processId = static_cast<uint32_t>(getpid());
  r.threadId = ThisThreadId();
  r.correlationId = info->correlationId;
  r.returnValue = *static_cast<const uint32_t*>(info->functionReturnValue);
  std::lock_guard<std::mutex> lock(synth_mutex_);
  synth_.push_back(r);
  return false;
}

void CuptiCollector::RecordHostEvent(CallbackThread& t, bool runtime, CUpti_CallbackId cbid,
                                     const CUpti_CallbackData* info) {
  t.host_correlation = 0;
  HostEvent e{};
  e.start_ns = t.host_start_ns;
  e.end_ns = NowNs();
  ApiId id = HostApi(runtime, cbid);
  // After the call, as a wrapper does: the walk is not in its duration.
  e.stack_id = hooks::CaptureStack(e.end_ns, ApiKindOf(id) == ApiKind::kLaunch) & 0xFFFFFF;
  e.api = static_cast<uint16_t>(id);
  e.correlation_id = info->correlationId;
  e.device = -1;
  e.flags = kHostEventViaCupti | (runtime ? kHostEventNone : kHostEventDriver);
  e.result = info->functionReturnValue != nullptr ? *static_cast<const int32_t*>(info->functionReturnValue) : 0;
  FillArguments(id, info->functionParams, e.result == 0, &e);
  if (ApiKindOf(id) == ApiKind::kLaunch && info->symbolName != nullptr) e.name_id = Strings().Intern(info->symbolName);
  if (NamesCurrentDevice(id) && api_.GetDeviceId != nullptr && info->context != nullptr) {
    // The device of the call's context: the device a wrapper's
    // cudaGetDevice/cuCtxGetDevice names, without a CUDA call.
    uint32_t device = 0;
    if (api_.GetDeviceId(info->context, &device) == CUPTI_SUCCESS) e.device = static_cast<int16_t>(device);
  }
  // Allocations and frees feed the allocation tracker as the wrappers' do
  // (only those of windows: no callback comes between them).
  ApiKind kind = ApiKindOf(id);
  if (e.result == 0 && (kind == ApiKind::kAlloc || kind == ApiKind::kFree) &&
      (LoadHotBits() & kHotAllocTracking) != 0) {
    if (kind == ApiKind::kAlloc) {
      hooks::TrackAlloc(e.ptr, e.bytes, e.device, hooks::MemKindOf(id), id, ThisThreadId(), e.end_ns, true);
    } else {
      hooks::TrackFree(e.ptr, id, ThisThreadId(), e.end_ns, true);
    }
  }
  hooks::RecordEvent(e);
}

bool CuptiCollector::ObserveCall(bool enter, bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* info) {
  ApiDomain domain = runtime ? ApiDomain::kRuntime : ApiDomain::kDriver;
  const char* name = CallbackName(domain, cbid);
  ObservedEvent event;
  event.site = enter ? MarkerSite::kCallEnter : MarkerSite::kCallReturn;
  event.feed = MarkerFeed::kCupti;
  event.kind = KindOf(ClassifyCallback(domain, cbid), name);
  event.api = name != nullptr ? name : (info->functionName != nullptr ? info->functionName : "");
  // The call and a copy's kind, as a wrapper feeds them (PROF_STEP=auto's
  // tokens, api:'s armed ids).
  event.id = HostApi(runtime, cbid);
  if (enter && event.kind == ApiKind::kMemcpy) event.detail = CopyDetail(event.id, info->functionParams);
  if (name_launches_ && enter && event.kind == ApiKind::kLaunch && info->symbolName != nullptr) {
    event.name_id = Strings().Intern(info->symbolName);
  }
  if (!enter && info->functionReturnValue != nullptr) event.result_ok = *static_cast<const int*>(info->functionReturnValue) == 0;
  return hooks::Observe(event);
}

}  // namespace prof::cupti
