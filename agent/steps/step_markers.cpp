#include "agent/steps/step_markers.h"

#include <array>

#include "base/hot_state.h"
#include "base/strings.h"
#include "agent/steps/marker_matcher.h"

namespace prof {

void ArmApiMarker(ApiId fn) {
  std::string_view base = fn != ApiId::kCount ? BaseApiName(ApiName(fn)) : std::string_view();
  for (size_t i = 0; i < kApiCount; ++i) {
    bool marker = !base.empty() && BaseApiName(ApiName(static_cast<ApiId>(i))) == base;
    internal::g_api_marker_calls[i].store(marker ? 1 : 0, std::memory_order_relaxed);
  }
}

namespace {

// PROF_STEP=sync: each device or stream synchronize, runtime or driver (a
// driver-API program synchronizes with cuCtxSynchronize/cuStreamSynchronize;
// a runtime synchronize's nested driver call is never observed, only
// outermost calls are).
bool IsSyncMarkerCall(std::string_view api) {
  std::string_view base = BaseApiName(api);
  return base == "cudaDeviceSynchronize" || base == "cudaStreamSynchronize" || base == "cuCtxSynchronize" ||
         base == "cuCtxSynchronize_v2" || base == "cuStreamSynchronize";
}

// The same by ApiId, for a feed that knows the call (the wrappers): one
// load instead of the suffix stripping and name compares per call.
bool IsSyncMarkerCall(ApiId id) {
  static const auto* table = new std::array<bool, kApiCount>([] {
    std::array<bool, kApiCount> t{};
    for (size_t i = 0; i < kApiCount; ++i) t[i] = IsSyncMarkerCall(ApiName(static_cast<ApiId>(i)));
    return t;
  }());
  return id < ApiId::kCount && (*table)[static_cast<size_t>(id)];
}

}  // namespace

bool StepSourceWatchesCalls(StepSource source) {
  return source == StepSource::kKernel || source == StepSource::kApi || source == StepSource::kSync ||
         source == StepSource::kAuto;
}

bool WatchesCalls(const Config& config) {
  return StepSourceWatchesCalls(config.step_source) || config.range_kind == RangeKind::kProfilerApi;
}

uint32_t RangeHotBits(const Config& config) {
  switch (config.range_kind) {
    case RangeKind::kProfilerApi: return kHotRangeMarker;
    case RangeKind::kNvtx: return kHotNvtxNames;
    default: return 0;
  }
}

bool IsStepMarker(const Config& config, MarkerMatcher* matcher, const ObservedEvent& event) {
  switch (config.step_source) {
    case StepSource::kApi:
      if (event.site != MarkerSite::kCallEnter) return false;
      // A wrapper names the call by id: the armed table (ArmApiMarker, set at
      // start for this source) holds fn and its twin, one load instead of
      // stripping suffixes and comparing names per call.
      if (event.id != ApiId::kCount) return IsArmedApiMarker(event.id);
      return BaseApiName(event.api) == BaseApiName(ApiName(config.step_api));
    case StepSource::kKernel:
      return event.site == MarkerSite::kCallEnter && event.kind == ApiKind::kLaunch && matcher != nullptr &&
             matcher->Matches(event.name_id);
    case StepSource::kSync:
      return event.site == MarkerSite::kCallReturn &&
             (event.id != ApiId::kCount ? IsSyncMarkerCall(event.id) : IsSyncMarkerCall(event.api));
    case StepSource::kNvtx:
      if (event.site != MarkerSite::kNvtxRange || matcher == nullptr) return false;
      // A name the full table did not keep is matched by its text (not cached).
      if (event.name_id == kDroppedNameId) return matcher->MatchesText(event.name_text);
      return matcher->Matches(event.name_id);
    case StepSource::kManual:
      return event.site == MarkerSite::kManual;
    case StepSource::kTime:
      return false;
    case StepSource::kAuto:
      return false;  // hooks::Observe hands every event to AutoStep, which owns the chosen marker
  }
  return false;
}

}  // namespace prof
