// What a step marker looks like to whichever part of libprof saw it: the
// call, NVTX range or prof_step() that the marker path (base/agent_hooks.h,
// hooks::Observe) hands to the agent's steps (agent/steps/step_markers.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/api_ids.h"

namespace prof {

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

// "cudaStreamSynchronize_ptsz" -> "cudaStreamSynchronize": the per-thread
// default stream flavours (_ptsz/_ptds) are the same call.
std::string_view BaseApiName(std::string_view name);

// Names the NVTX injection gives ranges for the matcher: "domain@name" for a
// range in a domain the program created, the bare name otherwise.
std::string QualifiedNvtxName(const char* domain, const char* name);

}  // namespace prof
