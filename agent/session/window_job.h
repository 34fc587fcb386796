// What the session hands the writer thread at a window's end: everything
// that must be fixed at that instant (steps, the live-allocation table,
// metadata). The writer adds what can be gathered later (host events from
// the thread buffers, device records, allocator samples, strings) and seals
// the Window.
#pragma once

#include <cstdint>
#include <vector>

#include "model/window.h"

namespace prof {

struct WindowJob {
  WindowMeta meta;  // first/last step, start/end, partial, identity, config
  std::vector<StepSpan> steps;
  std::vector<LiveAllocation> live_at_end;
  uint64_t deadline_ns = 0;  // wait for late device records until then
  uint32_t names_generation = 0;  // Strings().BeginWindow() at its opening; 0: none taken
  // The event buffers' id for the window's drops (EventBuffers::SetDropRange),
  // set by the writer when the job is submitted; ~0: every drop not yet reported.
  uint64_t drop_window = ~0ull;
  // Collected and thrown away, not written: PROF_STEP=auto's provisional
  // window once the loop is found (its records are consumed, so the
  // collector's pause can stop recording).
  bool discard = false;
  // Sealed and kept, not written: the provisional window once the loop is
  // found. WindowWriter::ReleaseHeld writes it (the process ended before
  // the schedule's first window) or drops it (that window came).
  bool hold = false;
  // Logged at info before the "written" line, only if the window's files
  // are written (Session::written_note_).
  std::string written_note;
  // The step boundaries were taken at calls (a step marker, a range edge),
  // not read off a clock (PROF_STEP=time:): the writer moves one that falls
  // inside a call only CUPTI timed to the call's nearer end
  // (AlignStepsWithCuptiCalls). A time step's boundary may truly fall
  // inside a call.
  bool steps_at_calls = false;
};

// The writer's side of the seam, so the session can be tested with a fake.
class WindowWriter {
 public:
  virtual ~WindowWriter() = default;
  // Application thread: must not block beyond a queue push.
  virtual void SubmitWindow(WindowJob job) = 0;
  // Events and samples from before before_ns are warmup or wait: drop them.
  virtual void SubmitDiscard(uint64_t before_ns) = 0;
  // The window held last (WindowJob::hold), queued behind what is submitted:
  // written with this step description and info note, or dropped.
  virtual void ReleaseHeld(bool write, const std::string& step_description, const std::string& note) = 0;
};

}  // namespace prof
