#include "agent/steps/capture_range.h"

#include <string>

#include "base/strings.h"
#include "agent/steps/marker_matcher.h"

namespace prof {

namespace {

// The profiler switch, runtime or driver. The runtime's start reaches the
// driver's inside it; only outermost calls are observed, so one range is
// one pair whichever the program calls.
bool IsProfilerStart(std::string_view api) { return api == "cudaProfilerStart" || api == "cuProfilerStart"; }
bool IsProfilerStop(std::string_view api) { return api == "cudaProfilerStop" || api == "cuProfilerStop"; }

constexpr uint64_t kProfilerKey = 1;

}  // namespace

RangeEdge ClassifyRangeEvent(const Config& config, MarkerMatcher* matcher, const ObservedEvent& event) {
  RangeEdge edge;
  switch (config.range_kind) {
    case RangeKind::kNone:
      break;
    case RangeKind::kProfilerApi:
      if (event.kind != ApiKind::kOther) break;  // launches, copies, syncs: the common case, no name compared
      // Opens once the start call returned (a failed start opens nothing);
      // closes as the stop call is entered: neither call is in the window.
      if (event.site == MarkerSite::kCallReturn && event.result_ok && IsProfilerStart(BaseApiName(event.api))) {
        edge = {RangeEdgeKind::kBegin, kProfilerKey};
      } else if (event.site == MarkerSite::kCallEnter && IsProfilerStop(BaseApiName(event.api))) {
        edge = {RangeEdgeKind::kEnd, kProfilerKey};
      }
      break;
    case RangeKind::kNvtx:
      if (event.site != MarkerSite::kNvtxRange && event.site != MarkerSite::kNvtxRangeEnd) break;
      if (matcher == nullptr) break;
      // A name the table dropped (base/strings.h) is matched as given.
      if (event.name_id == kDroppedNameId ? !matcher->MatchesText(event.name_text) : !matcher->Matches(event.name_id)) break;
      edge = {event.site == MarkerSite::kNvtxRange ? RangeEdgeKind::kBegin : RangeEdgeKind::kEnd, event.range_key,
              event.name_id};
      break;
  }
  return edge;
}

bool CaptureRanges::Begin(uint64_t key) {
  if (open_ || (repeat_ != 0 && opened_ >= repeat_)) {
    if (open_) ++ignored_begins_;
    return false;
  }
  open_ = true;
  key_ = key;
  ++opened_;
  return true;
}

bool CaptureRanges::End(uint64_t key) {
  if (!open_ || key != key_) {
    ++ignored_ends_;
    return false;
  }
  open_ = false;
  return true;
}

}  // namespace prof
