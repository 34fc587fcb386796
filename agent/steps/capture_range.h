// PROF_RANGE: windows from the ranges a program marks itself, instead of
// the skip_first/wait/warmup/active schedule.
//
//   cudaProfilerApi  each cudaProfilerStart ... cudaProfilerStop (or the
//                    driver's cuProfilerStart ... cuProfilerStop): the
//                    window opens when the start call returns and closes
//                    when the stop call is entered, so it holds exactly the
//                    calls made between them;
//   nvtx:<regex>     each NVTX push/pop or start/end range whose name
//                    (`domain@name` for a range in a domain) the regex
//                    finds: the window opens at the push/start and closes at
//                    the matching pop/end.
//
// Each range is one window, recorded whole; PROF_STEP's markers inside it
// delimit its steps (the per-step rows). PROF_REPEAT caps the number of
// ranges recorded (0: all). A range that begins while a window's range is
// open (nested, overlapping, another thread's, a second cudaProfilerStart)
// is part of that window; only the end of the range that opened it closes
// it. An end with no open range is ignored. A range still open at exit is
// written as a partial window, like any window at exit.
//
// The classification is pure (tests call it with hand-built events); the
// state machine is not thread-safe: Session calls it under its mutex.
#pragma once

#include <cstdint>
#include <string>

#include "base/config.h"
#include "agent/steps/step_markers.h"

namespace prof {

enum class RangeEdgeKind : uint8_t { kNone, kBegin, kEnd };

struct RangeEdge {
  RangeEdgeKind kind = RangeEdgeKind::kNone;
  uint64_t key = 0;      // pairs an end with its begin (the profiler API: always 1)
  uint32_t name_id = 0;  // NVTX: the range's interned name
};

// Whether an observed event begins or ends a PROF_RANGE range. matcher: the
// nvtx:<regex> (names are matched once each); may be null for cudaProfilerApi.
RangeEdge ClassifyRangeEvent(const Config& config, MarkerMatcher* matcher, const ObservedEvent& event);

class CaptureRanges {
 public:
  explicit CaptureRanges(uint64_t repeat) : repeat_(repeat) {}

  // A range begins: true when it opens a window (none open, cap not reached).
  bool Begin(uint64_t key);
  // A range ends: true when it closes the open window (the range that opened it).
  bool End(uint64_t key);

  bool open() const { return open_; }
  // Windows opened so far.
  uint64_t opened() const { return opened_; }
  // PROF_REPEAT ranges were recorded and the last one is closed: no window will open again.
  bool exhausted() const { return !open_ && repeat_ != 0 && opened_ >= repeat_; }
  // Ranges that began while a window was open, and ends that closed nothing.
  uint64_t ignored_begins() const { return ignored_begins_; }
  uint64_t ignored_ends() const { return ignored_ends_; }

 private:
  uint64_t repeat_;
  bool open_ = false;
  uint64_t key_ = 0;
  uint64_t opened_ = 0;
  uint64_t ignored_begins_ = 0;
  uint64_t ignored_ends_ = 0;
};

}  // namespace prof
