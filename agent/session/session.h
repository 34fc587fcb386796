// The session: counts steps, asks the schedule what each step is, drives the
// device collector through its phases, turns the "recording" hot bit on and
// off, and at each window end hands a WindowJob to the writer.
//
// Every entry point takes mu_; markers come from any application thread (a
// launch, a sync return, prof_step(), the time ticker, the trigger watcher).
// The exception is a waiting step that changes nothing (QuietStep): one
// compare-and-swap on a budget of such steps that the last locked entry
// point handed out.
// Lock order: Session::mu_ -> AllocTracker::mu_ (live snapshot) ->
// writer queue mutex. The collector's Attach/BeginRecord/Pause/Finish run
// under mu_ and must not call back into the session.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "base/config.h"
#include "agent/session/alloc_tracker.h"
#include "base/device_collector.h"
#include "agent/session/window_job.h"
#include "agent/steps/capture_range.h"
#include "agent/steps/schedule.h"

namespace prof {

class Session {
 public:
  // meta_template: identity fields (name, rank, pid, host, config,
  // versions) copied into each window's metadata.
  // uses_cuda: asked before attaching the collector; a process that has
  // not loaded CUDA (a shell the job runs through) never loads CUPTI.
  // Null: always true.
  Session(const Config& config, DeviceCollector* collector, WindowWriter* writer, AllocTracker* allocs,
          WindowMeta meta_template, uint64_t start_ns, std::function<bool()> uses_cuda = nullptr);

  // A step marker at now_ns: ends the current step, starts the next
  // (torch.profiler's prof.step()). With PROF_STEP=auto, markers before the
  // loop is found are not seen here, and the first marker after LoopFound()
  // starts the step numbered by the loop's own iterations (LoopFound), so
  // step k is the loop's iteration k, counted from 0.
  // Tries QuietStep first.
  void Step(uint64_t now_ns);

  // A step marker that keeps waiting and changes nothing else (the current
  // and the next step are NONE, the schedule does not finish there, nothing
  // is pending, the collector wants no OnWaitingStep): counted without the
  // lock, the clock or the collector, and true. False when the marker needs
  // Step(now_ns). Lock-free, so no exit-signal deferral is needed around it.
  bool QuietStep() {
    uint64_t left = quiet_steps_.load(std::memory_order_relaxed);
    if (left == 0 || collector_->WantsWaitingSteps()) return false;
    // Relaxed: the count is the only thing published; whoever takes mu_ next
    // folds it in with an exchange (FoldQuietSteps), which sees every
    // decrement made before it and lets none through after it.
    while (!quiet_steps_.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      if (left == 0) return false;
    }
    return true;
  }

  // CUDA may have been loaded (InitializeInjection, the agent thread's
  // periodic wake): when PROF_STEP counts calls, the collector starts
  // watching them for the marker path (DeviceCollector::WatchCalls), so
  // calls no wrapper sees still make steps. Once; cheap when done.
  void WatchCallsIfCuda();
  // PROF_STEP=auto found the loop: `description` says what a step is (for the
  // windows' metadata); `iterations_before` iterations of the loop had begun
  // on auto's tape. The next marker starts the step of the loop's iteration
  // it begins, counted from the loop's first (the schedule counts the
  // loop's iterations, not the set-up before them nor the time auto took):
  // iterations_before, plus the markers that came between the decision and
  // this call (the agent thread seals the provisional window in between).
  // With 0, or when that step is past the schedule's first warm-up (a loop
  // found late), it starts step 0 and the description says so. False, and
  // nothing changes, once counting began or the session finished (the
  // process is exiting: the exit already said auto was still looking).
  bool LoopFound(const std::string& description, uint64_t iterations_before = 0);
  // What a step is, as the windows' metadata says it (LoopFound's
  // description and how steps are numbered).
  std::string StepDescription();
  // Multi-rank jobs (PROF_STEP=auto, no PROF_RANGE): once the loop is found,
  // steps are numbered by the job's iteration rather than from 0 at the
  // first marker, so that every rank's step k is the same iteration whenever
  // each rank found its loop. `collectives` reads how many collectives this
  // process has launched so far (the same number on every rank at the same
  // point of a data-parallel program). The first marker after LoopFound
  // notes the count; the second measures the collectives per iteration (C)
  // and starts counting at step count / C. With no collective between the
  // two markers, steps count from 0 as in a single process. Call before
  // any marker.
  void AnchorToCollectives(std::function<uint64_t()> collectives);

  // Called, under the session's lock, each time recording (a window warming
  // up or recording) turns on or off, and at each step while it is on: the
  // PyTorch operator ranges follow it.
  void OnRecordingChanged(std::function<void(bool)> changed);
  // Told as each window ends, before the writer gets it.
  void OnWindowEnded(std::function<void()> ended);

  // PROF_STEP=auto, still looking, CUDA loaded: record provisionally from
  // now on (the first CUDA call, within the agent thread's poll), so that a
  // program that ends before the loop is found, or has none, still writes
  // one window: the whole run from here, bounded by PROF_BUFFER_MB and by
  // kProvisionalEvents. Dropped (and CUPTI paused) when the loop is found;
  // written at exit, when auto falls back to time steps, or once it holds
  // kProvisionalEvents (EndProvisionalIfFull). Once; cheap (one relaxed
  // load) when done.
  void BeginProvisionalIfCuda(uint64_t now_ns) {
    if (!provisional_pending_.load(std::memory_order_relaxed)) return;
    BeginProvisional(now_ns);
  }
  // The most launches, copies, memsets and synchronizes (auto's events) the
  // provisional window records: about 3 CUDA calls and one device record
  // each, a trace of some 15 MB that the exit budget can write even on a
  // loaded machine. A window as large as PROF_BUFFER_MB could take longer
  // to write than the process has at its exit, and would then be lost.
  static constexpr uint64_t kProvisionalEvents = uint64_t{1} << 14;
  // Agent thread, while auto looks: once auto has seen kProvisionalEvents
  // events (`events`, since the process began), the provisional window ends
  // and is written now; auto keeps looking, and the schedule's windows
  // follow as usual when it finds the loop (their first step is past 0).
  void EndProvisionalIfFull(uint64_t events, uint64_t now_ns);

  // PROF_STEP=auto gave up: time steps of config.step_time_ns from now_ns on.
  // False, as LoopFound.
  bool StartTimeSteps(uint64_t now_ns, const std::string& description);
  // False while PROF_STEP=auto is still looking for the loop.
  bool counting();

  // PROF_RANGE (agent/steps/capture_range.h): a range began or ended at now_ns.
  // A range that opens a window starts a step; the window's end ends one.
  // range_name: how the window's metadata names the range.
  // Returns true when it opened or closed a window.
  bool OnRangeEdge(const RangeEdge& edge, uint64_t now_ns, const std::string& range_name);
  // Time steps: when the current one ends (agent clock); 0 when no time
  // step runs (none configured, auto still looking, outside a range).
  uint64_t next_time_boundary_ns();
  // PROF_RANGE: a CUDA call was made in the current step of the open range
  // (a wrapper recorded it, or CUPTI's callback saw it enter). A range's
  // edges rarely fall on step markers: a marker before any call of the range
  // (the range began just before an iteration's opening launch) starts no
  // step, and a range that ends with no call after its last marker (a sync
  // marker, then cudaProfilerStop) adds the sliver to the step before, so
  // the per-step rows are iterations, not empty slivers. Not with time
  // steps (slices of time). One relaxed load per call once set.
  void NoteRangeCall() {
    if (!range_has_calls_.load(std::memory_order_relaxed)) range_has_calls_.store(true, std::memory_order_relaxed);
  }

  // PROF_TRIGGER_FILE appeared (again): arm one more cycle.
  void Arm();

  // Exit or fatal signal: a window in progress is ended as partial and
  // handed to the writer. Returns true if it did so.
  bool EndPartial(const std::string& reason, uint64_t now_ns);

  // The "process ended before the first window" line, or "" when a window
  // was written or is being written.
  std::string EndedBeforeFirstWindowMessage();

  uint64_t current_step();
  Action current_action();
  bool finished();
  uint64_t windows_ended();
  // Longest time Step() held the calling thread at a window end, in ns.
  uint64_t max_window_end_stall_ns();

  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  // mu_, with the quiet steps taken since the last grant folded into step_;
  // on release, the budget of quiet steps is handed out again for the state
  // the entry point left.
  class Locked {
   public:
    explicit Locked(Session* session) : session_(session), lock_(session->mu_) { session_->FoldQuietSteps(); }
    ~Locked() { session_->GrantQuietSteps(); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    Session* session_;
    std::lock_guard<std::mutex> lock_;
  };
  void FoldQuietSteps();
  void GrantQuietSteps();
  uint64_t QuietStepsAhead() const;
  Action ActionFor(uint64_t step) const;
  void BeginCounting(uint64_t now_ns, uint64_t first_step = 0);
  void BeginProvisional(uint64_t now_ns);
  // "no loop found in 3.1 s; this window is the whole run from the first CUDA call<until>"
  std::string ProvisionalWhy(uint64_t now_ns, const char* until) const;
  // Ends the provisional window: written (with `why` in its metadata) or
  // collected and discarded; recording off, the collector paused (not
  // at_exit: EndPartial turns everything off itself). The whole run ending
  // with the process is where that window is meant to end: it is not
  // partial, but its late records are awaited only as long as at exit.
  void EndProvisionalLocked(uint64_t now_ns, bool write, bool at_exit, const std::string& why);
  // The first step's number for AnchorToCollectives; false while calibrating.
  bool AnchoredFirstStep(uint64_t* first_step);
  void Enter(Action prev, Action next, uint64_t now_ns);
  // Sets or clears kHotRecording, telling recording_changed_ when it changes.
  void SetRecording(bool on);
  // partial: ended by the process's exit or a signal before its last step
  // (WindowMeta::partial, with `reason`). at_exit: the process is ending
  // (implied by partial), so the wait for late records is bounded.
  void EndWindow(uint64_t end_ns, bool partial, const std::string& reason, bool at_exit = false);
  void AdvanceTriggerCycle();
  void AttachIfCuda();
  void WatchCallsLocked();
  void RangeStepLocked(uint64_t now_ns);
  void OpenRangeLocked(uint64_t now_ns, const std::string& range_name);
  void CloseRangeLocked(uint64_t now_ns);

  std::mutex mu_;
  // Waiting steps any thread may still count without mu_ (QuietStep), from
  // step_ on: the steps before the next one the schedule acts at (or while
  // something is pending, none). Only decremented outside mu_; exchanged and
  // stored under it. quiet_granted_ (under mu_): the budget last stored, so
  // step_ + quiet_granted_ - quiet_steps_ is the current step.
  std::atomic<uint64_t> quiet_steps_{0};
  uint64_t quiet_granted_ = 0;
  const Config config_;
  const ScheduleParams params_;
  DeviceCollector* collector_;
  WindowWriter* writer_;
  AllocTracker* allocs_;
  WindowMeta meta_template_;  // step_description is filled in when auto decides

  uint64_t step_ = 0;           // current step number
  uint64_t step_start_ns_ = 0;  // when it began
  Action action_ = Action::kNone;
  bool attached_ = false;       // collector attached (warmup or active)
  bool window_open_ = false;    // between BeginRecord and the window's end
  bool finished_ = false;       // finite schedule done: collector released
  uint64_t window_first_step_ = 0;
  uint64_t window_start_ns_ = 0;
  std::vector<StepSpan> spans_;  // steps of the open window
  uint32_t names_generation_ = 0;  // the open window's NVTX name generation (base/strings.h)
  uint64_t windows_ended_ = 0;
  bool attach_pending_ = false;   // a cycle began before CUDA was loaded
  bool watching_calls_ = false;   // WatchCalls done (PROF_STEP counts calls)
  uint64_t max_stall_ns_ = 0;
  // When recording (warmup or active) was last turned on, by the clock, not
  // the step's nominal time: a time step's boundary is acted on when the
  // agent thread wakes, which may be late. 0: recording is off.
  uint64_t recording_since_ns_ = 0;
  uint64_t window_unrecorded_ns_ = 0;  // the open window's start not recorded (LossCounts::unrecorded_start_ns)

  // PROF_STEP=auto: counting_ is false until the loop is found (or auto
  // falls back to time steps); start_on_marker_: the next Step() begins counting.
  bool counting_ = true;
  bool start_on_marker_ = false;
  uint64_t loop_iterations_before_ = 0;  // LoopFound's
  uint64_t markers_unnumbered_ = 0;      // markers before counting began (auto decided, LoopFound not yet)
  uint64_t LoopIterationLocked();        // the step the first marker after LoopFound starts (mu_ held)
  // The provisional window (BeginProvisionalIfCuda): still to open, and open.
  std::atomic<bool> provisional_pending_{false};
  bool provisional_ = false;
  // The line the writer logs at info once the next window ended is written
  // (what the provisional window covers and why); a window with nothing in
  // it writes no files and says nothing at info. Moved into its WindowJob.
  std::string written_note_;
  // The provisional window when the loop was found: the next EndWindow
  // submits it held (hold_next_); held_ while the writer keeps it (until
  // the schedule's first window ends, or EndPartial writes it);
  // held_span_ns_: from the first CUDA call to the find.
  bool hold_next_ = false;
  bool held_ = false;
  uint64_t held_span_ns_ = 0;
  // AnchorToCollectives: the count reader, and the count at the first
  // marker after LoopFound (anchor_calibrating_ until the second).
  std::function<uint64_t()> collectives_;
  bool anchor_calibrating_ = false;
  uint64_t anchor_count_ = 0;
  bool time_steps_ = false;
  uint64_t time_origin_ns_ = 0;

  // PROF_RANGE: windows open and close at the program's ranges instead of
  // the schedule; steps number on across ranges (each range's first step
  // follows the previous range's last), so window files never collide.
  const bool range_mode_;
  CaptureRanges ranges_;
  std::string range_description_;  // of the open window
  uint64_t range_time_origin_ns_ = 0;  // time steps inside a range count from here ...
  uint64_t range_time_first_step_ = 0;  // ... starting with this step
  std::atomic<bool> range_has_calls_{false};  // see NoteRangeCall; cleared when a range opens

  // PROF_TRIGGER_FILE: the schedule (one cycle of wait/warmup/active) runs
  // relative to trigger_origin_ while armed; more arms queue up.
  std::function<bool()> uses_cuda_;
  std::function<void(bool)> recording_changed_;
  std::function<void()> window_ended_;
  bool triggered_ = false;
  bool armed_ = false;
  uint64_t trigger_origin_ = 0;
  uint64_t pending_arms_ = 0;
};

}  // namespace prof
