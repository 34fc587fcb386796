// The marker path: the one seam through which everything that can end a step
// reaches the session, whichever part of libprof saw it.
//
//   interposed wrapper (LD_PRELOAD)            -+
//   CUPTI API callback (injection, static       |
//     cudart, calls no wrapper saw)             +--> hooks::Observe(ObservedEvent)
//   NVTX injection (range starts)               |      IsStepMarker: this PROF_STEP's marker?
//   prof_step()                                -+      -> Session::Step(now_ns)
//
// A call is observed once, by one feed: a wrapper that feeds the marker path
// for a call sets tls_wrapper_feeds_markers around the real call, and the
// CUPTI callbacks inside that call (the runtime's, and the driver's nested
// under it) then stay silent. Calls no wrapper saw (CUDA_INJECTION64_PATH,
// where libprof is not in the global scope; a statically linked cudart) are
// fed by CUPTI, outermost calls only. So PROF_STEP=sync, api:<fn> and
// kernel:<regex> give the same steps in both modes.
//
// Timing: a call-enter event is observed before the call's start time is
// taken (the wrapper's start_ns, the collector's launch time), so the
// marking call belongs to the step it starts; a call-return event after the
// call returned (sync: the step ends when the wait is over).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "agent/base/api_ids.h"
#include "agent/base/config.h"

namespace prof {

class MarkerMatcher;

// Where in a call (or what else) an observed event is.
enum class MarkerSite : uint8_t {
  kCallEnter,   // a runtime/driver call begins (before its start time is taken)
  kCallReturn,  // a runtime/driver call returned
  kNvtxRange,   // an NVTX range was pushed/started
  kNvtxRangeEnd,  // an NVTX range was popped/ended (PROF_RANGE=nvtx: only)
  kManual,      // the process called prof_step()
};

// Which part of libprof saw it (for logs and tests; the policy ignores it).
enum class MarkerFeed : uint8_t { kWrapper, kCupti, kNvtx, kApp };

struct ObservedEvent {
  MarkerSite site = MarkerSite::kCallEnter;
  MarkerFeed feed = MarkerFeed::kWrapper;
  ApiKind kind = ApiKind::kOther;  // what the call does (launch, copy, sync, ...)
  std::string_view api;            // the function as called: "cudaStreamSynchronize_ptsz", "cuCtxSynchronize"
  uint32_t name_id = 0;            // interned kernel name (launch) or NVTX range name; 0: none
  std::string_view name_text;      // NVTX: the range's name as given, matched when the table dropped it (kDroppedNameId)
  bool result_ok = true;           // kCallReturn: the call succeeded
  uint64_t now_ns = 0;             // agent clock, when it was observed; 0: read at the marker (a clock read only for markers)
  ApiId id = ApiId::kCount;        // the call, when the feed knows it (wrappers); kCount: look `api` up
  uint32_t detail = 0;             // copies: cudaMemcpyKind + 1 when the feed knows it (PROF_STEP=auto's tokens)
  uint64_t range_key = 0;          // NVTX ranges: pairs a pop/end with its push/start (agent/steps/capture_range.h)
};

// Set by an interposed wrapper while it feeds the marker path for the call
// it is making (from before the call-enter event to after the call-return
// event): the CUPTI callbacks of that call must not feed it again.
inline thread_local bool tls_wrapper_feeds_markers = false;

namespace internal {
// PROF_STEP=api:<fn>: 1 for <fn> and its _ptsz/_ptds flavours, by ApiId.
// Filled (ArmApiMarker) before kHotApiMarker is set; relaxed like the hot bits.
inline std::atomic<uint8_t> g_api_marker_calls[kApiCount] = {};
}  // namespace internal

// Marks the calls PROF_STEP=api:<fn> steps on (fn, and its _ptsz/_ptds
// flavours), so a wrapper under kHotApiMarker lets every other call take the
// plain path with one byte load instead of feeding the marker path.
void ArmApiMarker(ApiId fn);
inline bool IsArmedApiMarker(ApiId id) {
  return internal::g_api_marker_calls[static_cast<size_t>(id)].load(std::memory_order_relaxed) != 0;
}

// "cudaStreamSynchronize_ptsz" -> "cudaStreamSynchronize": the per-thread
// default stream flavours (_ptsz/_ptds) are the same call.
std::string_view BaseApiName(std::string_view name);

// Whether an observed event is a step marker for config's PROF_STEP. Pure
// but for the matcher's cache (kernel and NVTX names are matched once).
bool IsStepMarker(const Config& config, MarkerMatcher* matcher, const ObservedEvent& event);

// Whether PROF_STEP counts calls (kernel:, api:, sync): then the CUPTI
// callbacks must feed the marker path whenever no wrapper does.
bool StepSourceWatchesCalls(StepSource source);
// The same for the whole configuration: PROF_STEP, or PROF_RANGE=cudaProfilerApi
// (the profiler start/stop calls).
bool WatchesCalls(const Config& config);
// The hot bits PROF_RANGE needs from the start until its ranges are all
// recorded (agent/base/hot_state.h): the profiler start/stop wrappers, or NVTX
// range names outside windows.
uint32_t RangeHotBits(const Config& config);

}  // namespace prof
