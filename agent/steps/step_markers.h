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

#include <cstdint>
#include <string_view>

#include "base/agent_hooks.h"
#include "base/config.h"
#include "model/api_ids.h"
#include "model/observed_event.h"

namespace prof {

class MarkerMatcher;

// Marks the calls PROF_STEP=api:<fn> steps on (fn, and its _ptsz/_ptds
// flavours), so a wrapper under kHotApiMarker lets every other call take the
// plain path with one byte load instead of feeding the marker path.
void ArmApiMarker(ApiId fn);

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
// recorded (base/hot_state.h): the profiler start/stop wrappers, or NVTX
// range names outside windows.
uint32_t RangeHotBits(const Config& config);

}  // namespace prof
