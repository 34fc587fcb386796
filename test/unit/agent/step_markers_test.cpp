// The marker path's decision: which observed events end a step for each
// PROF_STEP, whichever feed (wrapper, CUPTI, NVTX, prof_step) saw them.
#include <catch2/catch.hpp>

#include "base/strings.h"
#include "agent/runtime/runtime.h"
#include "agent/steps/step_markers.h"

namespace prof {
namespace {

// Test data, field by field, as the other tests' builders fill their own structs.
ObservedEvent Call(MarkerSite site, ApiKind kind, std::string_view api, uint32_t name_id = 0,
                   MarkerFeed feed = MarkerFeed::kCupti) {
  ObservedEvent e;
  e.site = site;
  e.feed = feed;
  e.kind = kind;
  e.api = api;
  e.name_id = name_id;
  return e;
}

TEST_CASE("sync marks a step when a device or stream synchronize returns, runtime or driver", "[markers]") {
  Config c;
  c.step_source = StepSource::kSync;
  for (std::string_view api : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz",
                               "cuCtxSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz"}) {
    CHECK(IsStepMarker(c, nullptr, Call(MarkerSite::kCallReturn, ApiKind::kSync, api)));
    CHECK_FALSE(IsStepMarker(c, nullptr, Call(MarkerSite::kCallEnter, ApiKind::kSync, api)));
  }
  // Event waits are synchronizations but not step markers (as with the wrappers).
  CHECK_FALSE(IsStepMarker(c, nullptr, Call(MarkerSite::kCallReturn, ApiKind::kSync, "cudaEventSynchronize")));
  CHECK_FALSE(IsStepMarker(c, nullptr, Call(MarkerSite::kCallReturn, ApiKind::kSync, "cudaStreamWaitEvent")));
}

TEST_CASE("sync decides a call the wrapper names by id as it decides it by name", "[markers]") {
  Config c;
  c.step_source = StepSource::kSync;
  int markers = 0;
  for (size_t i = 0; i < kApiCount; ++i) {
    auto id = static_cast<ApiId>(i);
    ObservedEvent by_name = Call(MarkerSite::kCallReturn, ApiKindOf(id), ApiName(id), 0, MarkerFeed::kWrapper);
    ObservedEvent by_id = by_name;
    by_id.id = id;
    by_id.api = "";  // the id alone must decide
    bool marker = IsStepMarker(c, nullptr, by_name);
    CHECK(IsStepMarker(c, nullptr, by_id) == marker);
    markers += marker;
  }
  CHECK(markers >= 3);  // cudaDeviceSynchronize, cudaStreamSynchronize and its _ptsz twin at least
}

TEST_CASE("api marks a step when that function is entered, in either default-stream flavour", "[markers]") {
  Config c;
  c.step_source = StepSource::kApi;
  c.step_api = ApiId::cudaGraphLaunch;
  CHECK(IsStepMarker(c, nullptr, Call(MarkerSite::kCallEnter, ApiKind::kLaunch, "cudaGraphLaunch")));
  CHECK(IsStepMarker(c, nullptr, Call(MarkerSite::kCallEnter, ApiKind::kLaunch, "cudaGraphLaunch_ptsz")));
  CHECK_FALSE(IsStepMarker(c, nullptr, Call(MarkerSite::kCallReturn, ApiKind::kLaunch, "cudaGraphLaunch")));
  CHECK_FALSE(IsStepMarker(c, nullptr, Call(MarkerSite::kCallEnter, ApiKind::kLaunch, "cudaLaunchKernel")));
}

TEST_CASE("api decides a call the wrapper names by id as it decides it by name", "[markers]") {
  Config c;
  c.step_source = StepSource::kApi;
  c.step_api = ApiId::cudaStreamSynchronize;
  ArmApiMarker(c.step_api);  // as the agent does at start for this source
  for (size_t i = 0; i < kApiCount; ++i) {
    auto id = static_cast<ApiId>(i);
    for (MarkerSite site : {MarkerSite::kCallEnter, MarkerSite::kCallReturn}) {
      ObservedEvent by_name = Call(site, ApiKindOf(id), ApiName(id));
      ObservedEvent by_id = by_name;
      by_id.feed = MarkerFeed::kWrapper;
      by_id.id = id;
      CHECK(IsStepMarker(c, nullptr, by_id) == IsStepMarker(c, nullptr, by_name));
    }
  }
  ObservedEvent twin = Call(MarkerSite::kCallEnter, ApiKind::kSync, "cudaStreamSynchronize_ptsz");
  twin.id = ApiId::cudaStreamSynchronize_ptsz;
  CHECK(IsStepMarker(c, nullptr, twin));
  ArmApiMarker(ApiId::kCount);
}

TEST_CASE("kernel marks a step when a launch of a matching kernel is entered", "[markers]") {
  Config c;
  c.step_source = StepSource::kKernel;
  MarkerMatcher m;
  m.Configure("relu", /*demangle=*/true);
  uint32_t relu = Strings().Intern("_Z12relu_forwardPfi");
  uint32_t gemm = Strings().Intern("_Z4gemmPfi");
  CHECK(IsStepMarker(c, &m, Call(MarkerSite::kCallEnter, ApiKind::kLaunch, "cudaLaunchKernel", relu)));
  CHECK(IsStepMarker(c, &m, Call(MarkerSite::kCallEnter, ApiKind::kLaunch, "cuLaunchKernel", relu)));
  CHECK_FALSE(IsStepMarker(c, &m, Call(MarkerSite::kCallEnter, ApiKind::kLaunch, "cudaLaunchKernel", gemm)));
  CHECK_FALSE(IsStepMarker(c, &m, Call(MarkerSite::kCallReturn, ApiKind::kLaunch, "cudaLaunchKernel", relu)));
  CHECK_FALSE(IsStepMarker(c, &m, Call(MarkerSite::kCallEnter, ApiKind::kMemcpy, "cudaMemcpy", relu)));
}

TEST_CASE("a kernel name is known not to match only once the matcher said no to it", "[markers]") {
  MarkerMatcher m;
  m.Configure("relu", /*demangle=*/true);
  uint32_t relu = Strings().Intern("_Z12relu_forwardPfi");
  uint32_t gemm = Strings().Intern("_Z4gemmPfi");
  CHECK_FALSE(m.KnownNoMatch(gemm));  // not asked yet: the wrapper must ask Observe
  CHECK_FALSE(m.Matches(gemm));
  CHECK(m.KnownNoMatch(gemm));
  CHECK(m.Matches(relu));
  CHECK_FALSE(m.KnownNoMatch(relu));
  CHECK_FALSE(m.KnownNoMatch(0));
  MarkerMatcher unconfigured;
  CHECK_FALSE(unconfigured.KnownNoMatch(gemm));
}

TEST_CASE("nvtx and manual mark steps only from their own feeds and time never from events", "[markers]") {
  Config c;
  MarkerMatcher m;
  m.Configure("^step$", /*demangle=*/false);
  uint32_t step = Strings().Intern("step");
  ObservedEvent range;
  range.site = MarkerSite::kNvtxRange;
  range.name_id = step;
  ObservedEvent manual;
  manual.site = MarkerSite::kManual;
  c.step_source = StepSource::kNvtx;
  CHECK(IsStepMarker(c, &m, range));
  CHECK_FALSE(IsStepMarker(c, &m, manual));
  c.step_source = StepSource::kManual;
  CHECK(IsStepMarker(c, &m, manual));
  CHECK_FALSE(IsStepMarker(c, &m, range));
  c.step_source = StepSource::kTime;
  CHECK_FALSE(IsStepMarker(c, &m, manual));
  CHECK_FALSE(IsStepMarker(c, &m, Call(MarkerSite::kCallReturn, ApiKind::kSync, "cudaDeviceSynchronize")));
  CHECK(StepSourceWatchesCalls(StepSource::kSync));
  CHECK(StepSourceWatchesCalls(StepSource::kApi));
  CHECK(StepSourceWatchesCalls(StepSource::kKernel));
  CHECK_FALSE(StepSourceWatchesCalls(StepSource::kTime));
  CHECK_FALSE(StepSourceWatchesCalls(StepSource::kNvtx));
}

}  // namespace
}  // namespace prof
