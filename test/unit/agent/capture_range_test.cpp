// PROF_RANGE's decisions (agent/steps/capture_range.h): which observed events
// begin or end a range, how ranges pair up (nesting, other threads, stray
// ends, PROF_REPEAT), and the session's windows from ranges: one window per
// range, steps inside delimited by markers (no empty first or last sliver),
// numbering that continues across ranges, partial at exit, the collector
// attached at each range and released once the cap is reached.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/strings.h"
#include "agent/runtime/runtime.h"
#include "agent/session/alloc_tracker.h"
#include "agent/session/session.h"
#include "agent/steps/capture_range.h"
#include "fakes.h"

namespace prof {
namespace {

using testing::FakeCollector;
using testing::FakeWriter;

ObservedEvent Call(MarkerSite site, std::string_view api, bool ok = true, ApiKind kind = ApiKind::kOther) {
  ObservedEvent e;
  e.site = site;
  e.kind = kind;
  e.api = api;
  e.result_ok = ok;
  return e;
}

ObservedEvent Nvtx(MarkerSite site, const char* name, uint64_t key) {
  ObservedEvent e;
  e.site = site;
  e.feed = MarkerFeed::kNvtx;
  e.name_id = Strings().Intern(name);
  e.range_key = key;
  return e;
}

TEST_CASE("cudaProfilerApi: a range opens when the start returns and closes when the stop is entered", "[ranges]") {
  Config c;
  c.range_kind = RangeKind::kProfilerApi;
  for (std::string_view start : {"cudaProfilerStart", "cuProfilerStart"}) {
    CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallReturn, start)).kind == RangeEdgeKind::kBegin);
    CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallEnter, start)).kind == RangeEdgeKind::kNone);
    // A failed start opens nothing.
    CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallReturn, start, /*ok=*/false)).kind == RangeEdgeKind::kNone);
  }
  for (std::string_view stop : {"cudaProfilerStop", "cuProfilerStop"}) {
    CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallEnter, stop)).kind == RangeEdgeKind::kEnd);
    CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallReturn, stop)).kind == RangeEdgeKind::kNone);
  }
  CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallReturn, "cudaProfilerInitialize")).kind == RangeEdgeKind::kNone);
  CHECK(ClassifyRangeEvent(c, nullptr, Call(MarkerSite::kCallEnter, "cudaLaunchKernel", true, ApiKind::kLaunch)).kind ==
        RangeEdgeKind::kNone);
  // NVTX ranges are not profiler ranges, and without PROF_RANGE nothing is an edge.
  CHECK(ClassifyRangeEvent(c, nullptr, Nvtx(MarkerSite::kNvtxRange, "cudaProfilerStart", 1)).kind == RangeEdgeKind::kNone);
  Config none;
  CHECK(ClassifyRangeEvent(none, nullptr, Call(MarkerSite::kCallReturn, "cudaProfilerStart")).kind == RangeEdgeKind::kNone);
}

TEST_CASE("nvtx:<regex> ranges: matching pushes begin and their pops end, paired by key", "[ranges]") {
  Config c;
  c.range_kind = RangeKind::kNvtx;
  c.range_pattern = "^train@step";
  MarkerMatcher m;
  m.Configure(c.range_pattern, /*demangle=*/false);
  RangeEdge begin = ClassifyRangeEvent(c, &m, Nvtx(MarkerSite::kNvtxRange, "train@step", 77));
  CHECK(begin.kind == RangeEdgeKind::kBegin);
  CHECK(begin.key == 77);
  CHECK(begin.name_id == Strings().Intern("train@step"));
  RangeEdge end = ClassifyRangeEvent(c, &m, Nvtx(MarkerSite::kNvtxRangeEnd, "train@step", 77));
  CHECK(end.kind == RangeEdgeKind::kEnd);
  CHECK(end.key == 77);
  // The bare name, another domain, and calls do not match.
  CHECK(ClassifyRangeEvent(c, &m, Nvtx(MarkerSite::kNvtxRange, "step", 1)).kind == RangeEdgeKind::kNone);
  CHECK(ClassifyRangeEvent(c, &m, Nvtx(MarkerSite::kNvtxRange, "eval@step", 1)).kind == RangeEdgeKind::kNone);
  CHECK(ClassifyRangeEvent(c, &m, Call(MarkerSite::kCallReturn, "cudaProfilerStart")).kind == RangeEdgeKind::kNone);
}

TEST_CASE("NVTX names are domain@name in a domain, bare in the default domain", "[ranges]") {
  CHECK(QualifiedNvtxName("train", "step") == "train@step");
  CHECK(QualifiedNvtxName(nullptr, "step") == "step");
  CHECK(QualifiedNvtxName("", "step") == "step");
  CHECK(QualifiedNvtxName("train", nullptr) == "train@");
}

TEST_CASE("ranges pair up: nested and other begins are part of the open one, stray ends are ignored", "[ranges]") {
  CaptureRanges r(/*repeat=*/0);
  CHECK_FALSE(r.End(5));  // nothing open
  CHECK(r.Begin(5));
  CHECK(r.open());
  CHECK_FALSE(r.Begin(6));  // nested (or another thread's): inside the window
  CHECK_FALSE(r.End(6));    // its end closes nothing
  CHECK(r.open());
  CHECK(r.End(5));  // the range that opened the window closes it
  CHECK_FALSE(r.open());
  CHECK(r.Begin(9));
  CHECK(r.opened() == 2);
  CHECK(r.ignored_begins() == 1);
  CHECK(r.ignored_ends() == 2);
  CHECK_FALSE(r.exhausted());  // repeat 0: all ranges
}

TEST_CASE("PROF_REPEAT caps the ranges recorded", "[ranges]") {
  CaptureRanges r(/*repeat=*/2);
  CHECK(r.Begin(1));
  CHECK_FALSE(r.exhausted());  // open: not done until it closes
  CHECK(r.End(1));
  CHECK(r.Begin(1));
  CHECK(r.End(1));
  CHECK(r.exhausted());
  CHECK_FALSE(r.Begin(1));
  CHECK(r.opened() == 2);
}

// The session with PROF_RANGE. Times are T(x): x ms after the harness was
// made, on the agent clock, because a range's window starts once the
// collector is attached (the session reads the clock after attaching), so
// a window's start is checked to lie in [T(begin), T(next event)).
uint64_t g_base = 0;
uint64_t T(uint64_t ms) { return g_base + ms * 1'000'000; }

struct RangeHarness {
  explicit RangeHarness(Config c) : config(Complete(c)), session(config, &collector, &writer, &allocs, WindowMeta(), 1000) {
    ClearHotBits(~0u);
    g_base = NowNs();
  }
  ~RangeHarness() { ClearHotBits(~0u); }
  static Config Complete(Config c) {
    if (c.range_kind == RangeKind::kNone) c.range_kind = RangeKind::kProfilerApi;
    return c;
  }
  bool Begin(uint64_t t, uint64_t key = 1) { return session.OnRangeEdge({RangeEdgeKind::kBegin, key, 0}, t, "r"); }
  bool End(uint64_t t, uint64_t key = 1) { return session.OnRangeEdge({RangeEdgeKind::kEnd, key, 0}, t, "r"); }
  // Step spans; the first one's start (the window's, after the attach) as T(begin).
  std::vector<std::pair<uint64_t, uint64_t>> Spans(size_t window, uint64_t begin) const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    const WindowJob& w = writer.windows.at(window);
    for (const StepSpan& s : w.steps) out.emplace_back(s.start_ns, s.end_ns);
    if (!out.empty()) {
      bool started_in_range = out[0].first == w.meta.start_ns && out[0].first >= begin && out[0].first < out[0].second;
      if (started_in_range) out[0].first = begin;
    }
    return out;
  }
  Config config;
  FakeCollector collector;
  FakeWriter writer;
  AllocTracker allocs;
  Session session;
};

Config Manual(uint64_t repeat) {
  Config c;
  c.step_source = StepSource::kManual;
  c.range_kind = RangeKind::kProfilerApi;
  c.repeat = repeat;
  c.wait = 30;  // the schedule's numbers do not apply to ranges
  c.warmup = 2;
  c.active = 5;
  return c;
}

TEST_CASE("each range is one window whose steps are delimited by markers, numbered on across ranges", "[ranges]") {
  RangeHarness h(Manual(/*repeat=*/0));
  h.session.Step(T(500));  // outside a range: delimits nothing
  CHECK(h.session.current_step() == 0);
  CHECK((LoadHotBits() & kHotRecording) == 0);
  REQUIRE(h.Begin(T(1000)));
  CHECK((LoadHotBits() & kHotRecording) != 0);
  h.session.NoteRangeCall();
  h.session.Step(T(1100));
  h.session.NoteRangeCall();
  h.session.Step(T(1200));
  h.session.NoteRangeCall();
  REQUIRE(h.End(T(1300)));
  CHECK((LoadHotBits() & kHotRecording) == 0);
  REQUIRE(h.writer.windows.size() == 1);
  const WindowMeta& m = h.writer.windows[0].meta;
  CHECK(m.first_step == 0);
  CHECK(m.last_step == 2);
  CHECK(m.start_ns == T(1000));
  CHECK(m.end_ns == T(1300));
  CHECK_FALSE(m.partial);
  CHECK(m.range_description == "r range 1");
  CHECK(h.Spans(0, T(1000)) == std::vector<std::pair<uint64_t, uint64_t>>{{T(1000), T(1100)}, {T(1100), T(1200)}, {T(1200), T(1300)}});
  h.session.Step(T(1400));  // between ranges
  REQUIRE(h.Begin(T(2000)));
  h.session.NoteRangeCall();
  REQUIRE(h.End(T(2100)));
  REQUIRE(h.writer.windows.size() == 2);
  CHECK(h.writer.windows[1].meta.first_step == 3);  // files never collide
  CHECK(h.writer.windows[1].meta.last_step == 3);
  CHECK(h.writer.windows[1].meta.range_description == "r range 2");
  CHECK(h.collector.calls ==
        std::vector<std::string>{"Attach", "BeginRecord", "Pause", "Attach", "BeginRecord", "Pause"});
}

TEST_CASE("a marker before any call of a range and a range ending right after a marker add no empty step", "[ranges]") {
  RangeHarness h(Manual(/*repeat=*/0));
  REQUIRE(h.Begin(T(1000)));
  h.session.Step(T(1010));  // the iteration's opening marker, no call yet: step 0 goes on
  h.session.NoteRangeCall();
  h.session.Step(T(1100));
  h.session.NoteRangeCall();
  h.session.Step(T(1200));  // a closing marker (a sync), then the stop
  REQUIRE(h.End(T(1210)));
  REQUIRE(h.writer.windows.size() == 1);
  CHECK(h.Spans(0, T(1000)) == std::vector<std::pair<uint64_t, uint64_t>>{{T(1000), T(1100)}, {T(1100), T(1210)}});
  CHECK(h.writer.windows[0].meta.last_step == 1);
  REQUIRE(h.Begin(T(2000)));
  CHECK(h.session.current_step() == 2);
}

TEST_CASE("PROF_REPEAT ranges are recorded, then the collector is released and later ranges ignored", "[ranges]") {
  RangeHarness h(Manual(/*repeat=*/1));
  REQUIRE(h.Begin(T(1000), 7));
  CHECK_FALSE(h.Begin(T(1050), 8));  // nested: part of the window
  CHECK_FALSE(h.End(T(1060), 8));
  h.session.NoteRangeCall();
  REQUIRE(h.End(T(1100), 7));
  CHECK(h.session.finished());
  CHECK_FALSE(h.Begin(T(2000), 9));
  CHECK(h.writer.windows.size() == 1);
  CHECK(h.writer.windows[0].meta.end_ns == T(1100));
  CHECK(h.collector.calls == std::vector<std::string>{"Attach", "BeginRecord", "Pause", "Finish"});
  CHECK((LoadHotBits() & (kHotRecording | kHotRangeMarker)) == 0);
}

TEST_CASE("a range open at exit is written partial", "[ranges]") {
  RangeHarness h(Manual(/*repeat=*/0));
  REQUIRE(h.Begin(T(1000)));
  h.session.NoteRangeCall();
  h.session.Step(T(1100));
  h.session.NoteRangeCall();
  CHECK(h.session.EndPartial("exit", T(1500)));
  REQUIRE(h.writer.windows.size() == 1);
  CHECK(h.writer.windows[0].meta.partial);
  CHECK(h.writer.windows[0].meta.partial_reason == "exit");
  CHECK(h.Spans(0, T(1000)) == std::vector<std::pair<uint64_t, uint64_t>>{{T(1000), T(1100)}, {T(1100), T(1500)}});
  CHECK(h.session.EndedBeforeFirstWindowMessage().empty());
}

TEST_CASE("with no range the end-of-process line names what was expected", "[ranges]") {
  RangeHarness api(Manual(/*repeat=*/1));
  CHECK(api.session.EndedBeforeFirstWindowMessage().find("PROF_RANGE=cudaProfilerApi saw no successful cudaProfilerStart") !=
        std::string::npos);
  Config c = Manual(1);
  c.range_kind = RangeKind::kNvtx;
  c.range_pattern = "^step$";
  RangeHarness nvtx(c);
  CHECK(nvtx.session.EndedBeforeFirstWindowMessage().find("no NVTX range matched PROF_RANGE=nvtx:^step$") !=
        std::string::npos);
}

TEST_CASE("time steps inside a range count from the range's start", "[ranges]") {
  Config c = Manual(0);
  c.step_source = StepSource::kTime;
  c.step_time_ns = 100'000'000;
  RangeHarness h(c);
  CHECK(h.session.next_time_boundary_ns() == 0);  // no range open: no ticking
  REQUIRE(h.Begin(T(4000)));
  CHECK(h.session.next_time_boundary_ns() == T(4100));
  h.session.Step(T(4100));
  CHECK(h.session.next_time_boundary_ns() == T(4200));
  REQUIRE(h.End(T(4150)));
  CHECK(h.session.next_time_boundary_ns() == 0);
  REQUIRE(h.Begin(T(8000)));
  CHECK(h.session.next_time_boundary_ns() == T(8100));
  // Time slices are time: a slice with no call is still a step.
  h.session.Step(T(8100));
  REQUIRE(h.End(T(8150)));
  CHECK(h.writer.windows.back().steps.size() == 2);
}

}  // namespace
}  // namespace prof
