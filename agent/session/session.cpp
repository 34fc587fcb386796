#include "agent/session/session.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/log.h"
#include "base/strings.h"
#include "agent/steps/step_markers.h"

namespace prof {

Session::Session(const Config& config, DeviceCollector* collector, WindowWriter* writer, AllocTracker* allocs,
                 WindowMeta meta_template, uint64_t start_ns, std::function<bool()> uses_cuda)
    : config_(config),
      params_{config.skip_first, config.wait, config.warmup, config.active, config.repeat},
      collector_(collector),
      writer_(writer),
      allocs_(allocs),
      meta_template_(std::move(meta_template)),
      range_mode_(config.range_kind != RangeKind::kNone),
      ranges_(config.repeat),
      uses_cuda_(std::move(uses_cuda)),
      triggered_(!config.trigger_file.empty() && config.range_kind == RangeKind::kNone) {
  Locked lock(this);
  time_steps_ = config.step_source == StepSource::kTime;
  time_origin_ns_ = start_ns;
  if (config.step_source == StepSource::kAuto) {
    counting_ = false;  // LoopFound() or StartTimeSteps() begins the schedule
    meta_template_.step_description = "auto: looking for the loop";
    // A trigger file or ranges choose the windows themselves.
    provisional_pending_.store(!range_mode_ && !triggered_, std::memory_order_relaxed);
    return;
  }
  // PROF_RANGE: nothing happens until a range begins (OnRangeEdge).
  if (range_mode_) return;
  BeginCounting(start_ns);
}

void Session::BeginCounting(uint64_t now_ns, uint64_t first_step) {
  counting_ = true;
  step_ = first_step;
  step_start_ns_ = now_ns;
  Action first = ActionFor(first_step);
  Enter(Action::kNone, first, now_ns);
  // Step 0 starts now, on the thread that starts counting, and recording is
  // on before it returns: nothing of the program ran unrecorded in between
  // (attaching CUPTI is what took the time).
  window_unrecorded_ns_ = 0;
  action_ = first;
}

void Session::BeginProvisional(uint64_t now_ns) {
  Locked lock(this);
  if (!provisional_pending_.load(std::memory_order_relaxed) || counting_ || start_on_marker_ || finished_ ||
      window_open_) {
    return;
  }
  if (uses_cuda_ && !uses_cuda_()) return;  // asked again at the next poll
  provisional_pending_.store(false, std::memory_order_relaxed);
  step_ = 0;
  step_start_ns_ = now_ns;
  window_open_ = true;
  window_first_step_ = 0;
  window_start_ns_ = now_ns;
  names_generation_ = Strings().BeginWindow();
  spans_.clear();
  window_unrecorded_ns_ = 0;
  // Watching first, as for the schedule's windows: when the loop is found,
  // recording stops by narrowing the callbacks to the ids auto's marker
  // needs, not by turning them all off and on again at the first window.
  WatchCallsLocked();
  AttachIfCuda();  // BeginRecord too (window_open_)
  SetRecording(true);
  recording_since_ns_ = NowNs();
  provisional_ = true;
  writer_->SubmitDiscard(now_ns);
}

void Session::EndProvisionalLocked(uint64_t now_ns, bool write, bool at_exit, const std::string& why) {
  provisional_ = false;
  if (!window_open_) return;
  if (now_ns < step_start_ns_) now_ns = step_start_ns_;
  spans_.push_back({step_, step_start_ns_, now_ns});
  if (write) {
    std::string saved = meta_template_.step_description;
    meta_template_.step_description = "auto: " + why;
    EndWindow(now_ns, /*partial=*/false, "", at_exit);
    meta_template_.step_description = saved;
  } else {
    WindowJob job;
    job.meta.start_ns = window_start_ns_;
    job.meta.end_ns = now_ns;
    job.deadline_ns = now_ns;  // nothing to wait for: it is thrown away
    job.names_generation = names_generation_;
    job.discard = true;
    written_note_.clear();
    spans_.clear();
    Strings().WindowEnded();
    window_open_ = false;
    writer_->SubmitWindow(std::move(job));
    writer_->SubmitDiscard(now_ns);  // the buffered events go too
  }
  if (at_exit) return;  // EndPartial turns everything off itself
  SetRecording(false);
  recording_since_ns_ = 0;
  if (attached_) collector_->Pause();
  step_ = 0;
  action_ = Action::kNone;
}

void Session::EndProvisionalIfFull(uint64_t events, uint64_t now_ns) {
  if (events < kProvisionalEvents) return;
  Locked lock(this);
  // With PROF_SKIP_FIRST, PROF_WAIT and PROF_WARMUP all 0 the schedule's
  // first window would have the same first step (and file names): the
  // provisional one then stays open, bounded by PROF_BUFFER_MB.
  if (!provisional_ || params_.skip_first + params_.wait + params_.warmup == 0) return;
  std::string why = ProvisionalWhy(
      now_ns, fmt::format(" until auto had seen {} launches, copies and synchronizes (the most recorded while it looks)",
                          events)
                  .c_str());
  written_note_ = fmt::format(
      "PROF_STEP=auto: window 0 is the run from the first CUDA call until auto had seen {} launches, copies and "
      "synchronizes ({:.1f} s; the most recorded while it looks); still looking for the loop",
      events, (now_ns > window_start_ns_ ? now_ns - window_start_ns_ : 0) / 1e9);
  EndProvisionalLocked(now_ns, /*write=*/true, /*at_exit=*/false, why);
}

std::string Session::ProvisionalWhy(uint64_t now_ns, const char* until) const {
  return fmt::format("no loop found in {:.1f} s; this window is the whole run from the first CUDA call{}",
                     (now_ns > window_start_ns_ ? now_ns - window_start_ns_ : 0) / 1e9, until);
}

bool Session::LoopFound(const std::string& description, uint64_t iterations_before) {
  Locked lock(this);
  if (counting_ || finished_) return false;
  provisional_pending_.store(false, std::memory_order_relaxed);
  // The loop's windows replace what was recorded while looking: it is held
  // (sealed, not written) until the schedule's first window ends, and
  // written only if the process ends before that (a short program whose
  // loop was found early).
  if (provisional_) {
    uint64_t now_ns = NowNs();
    held_span_ns_ = now_ns > window_start_ns_ ? now_ns - window_start_ns_ : 0;
    hold_next_ = true;
    EndProvisionalLocked(now_ns, /*write=*/true, /*at_exit=*/false, "the run from the first CUDA call until the loop was found");
  }
  meta_template_.step_description = description;
  loop_iterations_before_ = iterations_before;
  if (range_mode_) {
    counting_ = true;  // markers delimit steps inside ranges from now on
    return true;
  }
  start_on_marker_ = true;
  return true;
}

uint64_t Session::LoopIterationLocked() {
  if (loop_iterations_before_ == 0) return 0;
  // The tape's last iteration was iterations_before - 1; each marker since,
  // this one included, began the next.
  const uint64_t k = loop_iterations_before_ + markers_unnumbered_;
  Log().debug("PROF_STEP=auto: the first marker after the decision begins the loop's iteration {}", k);
  // Steps are the loop's iterations while the schedule's first warm-up is
  // still ahead; past it, numbering from the discovery still gives a window.
  const uint64_t first_warmup = config_.skip_first + config_.wait;
  if (k <= first_warmup) return k;
  std::string note = fmt::format(
      "found after the schedule's first window would have begun (iteration {}): steps counted from the loop's discovery",
      k);
  meta_template_.step_description += "; " + note;
  Log().info("PROF_STEP=auto: {}", note);
  return 0;
}

std::string Session::StepDescription() {
  Locked lock(this);
  return meta_template_.step_description;
}

void Session::AnchorToCollectives(std::function<uint64_t()> collectives) {
  Locked lock(this);
  collectives_ = std::move(collectives);
}

bool Session::AnchoredFirstStep(uint64_t* first_step) {
  uint64_t n = collectives_();
  if (!anchor_calibrating_) {
    anchor_calibrating_ = true;
    anchor_count_ = n;
    return false;
  }
  uint64_t per_step = n > anchor_count_ ? n - anchor_count_ : 0;
  *first_step = per_step ? n / per_step : 0;
  meta_template_.step_description +=
      per_step ? fmt::format("; steps numbered by the job's iteration ({} collectives per step): first counted step {}",
                             per_step, *first_step)
               : std::string("; no collective between two markers: steps counted from the loop's discovery");
  return true;
}

bool Session::StartTimeSteps(uint64_t now_ns, const std::string& description) {
  Locked lock(this);
  if (counting_ || finished_) return false;
  provisional_pending_.store(false, std::memory_order_relaxed);
  if (provisional_) {
    // Written now unless the time steps record from their first step on
    // (PROF_SKIP_FIRST, PROF_WAIT and PROF_WARMUP all 0), whose window
    // would have the same first step.
    bool write = params_.skip_first + params_.wait + params_.warmup > 0;
    std::string why = ProvisionalWhy(now_ns, " until auto gave up");
    // (The fallback's own line says that no loop was found.)
    written_note_ = fmt::format("PROF_STEP=auto: window 0 is the whole run from the first CUDA call until auto gave up ({:.1f} s)",
                                (now_ns > window_start_ns_ ? now_ns - window_start_ns_ : 0) / 1e9);
    EndProvisionalLocked(now_ns, write, /*at_exit=*/false, why);
  }
  meta_template_.step_description = description;
  time_steps_ = true;
  time_origin_ns_ = now_ns;
  if (range_mode_) {
    counting_ = true;
    range_time_origin_ns_ = now_ns;  // inside an open range, its current step ends one slice from now
    range_time_first_step_ = step_;
    return true;
  }
  BeginCounting(now_ns);
  return true;
}

uint64_t Session::next_time_boundary_ns() {
  Locked lock(this);
  if (!time_steps_ || !counting_ || finished_) return 0;
  if (!range_mode_) return time_origin_ns_ + (step_ + 1) * config_.step_time_ns;
  if (!window_open_) return 0;
  return range_time_origin_ns_ + (step_ - range_time_first_step_ + 1) * config_.step_time_ns;
}

bool Session::counting() {
  Locked lock(this);
  return counting_;
}

Action Session::ActionFor(uint64_t step) const {
  if (!triggered_) return ScheduleAction(params_, step);
  if (!armed_ || step < trigger_origin_) return Action::kNone;
  // One cycle per arm: skip_first applies to the run as a whole, not here.
  ScheduleParams cycle{0, params_.wait, params_.warmup, params_.active, 1};
  return ScheduleAction(cycle, step - trigger_origin_);
}

void Session::AdvanceTriggerCycle() {
  if (!triggered_ || !armed_) return;
  uint64_t cycle = params_.wait + params_.warmup + params_.active;
  if (step_ < trigger_origin_ + cycle) return;
  if (pending_arms_ > 0) {
    --pending_arms_;
    trigger_origin_ = step_;
  } else {
    armed_ = false;
  }
}

// CUPTI is attached only in a process that has loaded CUDA: a shell the job
// runs through never loads libcupti. A process that loads CUDA later in the
// cycle is attached at its next step boundary.
void Session::AttachIfCuda() {
  attach_pending_ = false;
  if (uses_cuda_ && !uses_cuda_()) {
    attach_pending_ = true;
    return;
  }
  collector_->Attach(config_);
  attached_ = true;
  if (window_open_) collector_->BeginRecord(step_start_ns_);
}

void Session::WatchCallsLocked() {
  if (watching_calls_ || finished_ || !WatchesCalls(config_)) return;
  if (uses_cuda_ && !uses_cuda_()) return;
  collector_->WatchCalls(config_);
  watching_calls_ = true;
}

void Session::WatchCallsIfCuda() {
  Locked lock(this);
  WatchCallsLocked();
}

void Session::Step(uint64_t now_ns) {
  if (QuietStep()) return;
  Locked lock(this);
  if (range_mode_) {
    RangeStepLocked(now_ns);
    return;
  }
  if (!counting_) {
    if (!start_on_marker_) ++markers_unnumbered_;  // auto decided; LoopFound has not run yet
    if (start_on_marker_ && !finished_) {
      uint64_t first_step = LoopIterationLocked();
      if (collectives_ && !AnchoredFirstStep(&first_step)) return;
      start_on_marker_ = false;
      BeginCounting(now_ns, first_step);
    }
    return;
  }
  if (finished_) {
    ++step_;  // still counted (for the end-of-process line), nothing else to do
    return;
  }
  WatchCallsLocked();
  if (attach_pending_) AttachIfCuda();
  Action prev = action_;
  if (now_ns < step_start_ns_) now_ns = step_start_ns_;
  if (window_open_) spans_.push_back({step_, step_start_ns_, now_ns});
  bool ended = prev == Action::kRecordAndSave && window_open_;
  // The stall is measured only for a step that ends a window: a waiting
  // step reads no clock here.
  uint64_t t0 = ended ? NowNs() : 0;
  if (ended) EndWindow(now_ns, /*partial=*/false, "");
  ++step_;
  step_start_ns_ = now_ns;
  AdvanceTriggerCycle();
  Action next = ActionFor(step_);
  Enter(prev, next, now_ns);
  action_ = next;
  // Still waiting: the collector may stop paying for watching calls.
  if (prev == Action::kNone && next == Action::kNone) collector_->OnWaitingStep();
  if (ended) {
    uint64_t stall = NowNs() - t0;
    if (stall > max_stall_ns_) max_stall_ns_ = stall;
  }
}

// ---- Quiet steps ----

void Session::FoldQuietSteps() {
  uint64_t left = quiet_steps_.exchange(0, std::memory_order_relaxed);
  step_ += quiet_granted_ - left;
  quiet_granted_ = 0;
}

void Session::GrantQuietSteps() {
  quiet_granted_ = QuietStepsAhead();
  quiet_steps_.store(quiet_granted_, std::memory_order_relaxed);
}

// How many markers from now on Step would only count: each ends a NONE step
// and starts another NONE step that is not where the schedule finishes or a
// trigger cycle ends, with nothing pending (attach, WatchCalls).
uint64_t Session::QuietStepsAhead() const {
  constexpr uint64_t kUnbounded = uint64_t{1} << 62;  // step_ + it cannot wrap
  if (range_mode_ || !counting_ || window_open_ || action_ != Action::kNone || attach_pending_) return 0;
  if (finished_) return kUnbounded;  // Step only counts
  if (!watching_calls_ && WatchesCalls(config_)) return 0;  // WatchCallsLocked still has to run
  uint64_t next = kNoScheduleEvent;  // the first step after step_ that Step must enter
  if (!triggered_) {
    next = NextScheduleEvent(params_, step_ + 1);
  } else if (armed_) {
    // The armed cycle, as ActionFor and AdvanceTriggerCycle see it: its end
    // is the cycle's "finishing" step.
    ScheduleParams cycle{0, params_.wait, params_.warmup, params_.active, 1};
    uint64_t from = step_ + 1 > trigger_origin_ ? step_ + 1 - trigger_origin_ : 0;
    uint64_t in_cycle = NextScheduleEvent(cycle, from);
    next = in_cycle == kNoScheduleEvent ? kNoScheduleEvent : trigger_origin_ + in_cycle;
  }  // not armed: every step is NONE until Arm, which takes mu_
  if (next == kNoScheduleEvent) return kUnbounded;
  return next > step_ + 1 ? std::min(next - step_ - 1, kUnbounded) : 0;
}

// ---- PROF_RANGE ----

void Session::RangeStepLocked(uint64_t now_ns) {
  // Markers outside a range (or before PROF_STEP=auto decided) delimit nothing.
  if (!counting_ || !window_open_ || finished_) return;
  if (!time_steps_ && step_ == window_first_step_ && !range_has_calls_.load(std::memory_order_relaxed)) {
    return;  // the opening event of the range's first iteration: no empty first step (see NoteRangeCall)
  }
  if (attach_pending_) AttachIfCuda();
  if (now_ns < step_start_ns_) now_ns = step_start_ns_;
  spans_.push_back({step_, step_start_ns_, now_ns});
  ++step_;
  step_start_ns_ = now_ns;
  range_has_calls_.store(false, std::memory_order_relaxed);
}

bool Session::OnRangeEdge(const RangeEdge& edge, uint64_t now_ns, const std::string& range_name) {
  Locked lock(this);
  if (!range_mode_ || finished_) return false;
  if (edge.kind == RangeEdgeKind::kBegin) {
    if (!ranges_.Begin(edge.key)) return false;
    OpenRangeLocked(now_ns, range_name);
    return true;
  }
  if (edge.kind == RangeEdgeKind::kEnd && ranges_.End(edge.key)) {
    CloseRangeLocked(now_ns);
    return true;
  }
  return false;
}

void Session::OpenRangeLocked(uint64_t now_ns, const std::string& range_name) {
  WatchCallsLocked();
  // Attached (again: the last range's end paused it) at the range's start,
  // with no warmup step to attach in. Attaching may take a while the first
  // time (loading and subscribing CUPTI): the window starts after it, so
  // that time is not shown as the program's.
  AttachIfCuda();
  if (attached_) now_ns = std::max(now_ns, NowNs());
  range_description_ = fmt::format("{} range {}", range_name, ranges_.opened());
  step_start_ns_ = now_ns;
  range_time_origin_ns_ = now_ns;
  range_time_first_step_ = step_;
  window_open_ = true;
  window_first_step_ = step_;
  window_start_ns_ = now_ns;
  // NVTX names used from now on are this window's (base/strings.h).
  names_generation_ = Strings().BeginWindow();
  spans_.clear();
  range_has_calls_.store(false, std::memory_order_relaxed);
  window_unrecorded_ns_ = 0;  // it starts where the range was seen, recording on (attached above)
  action_ = Action::kRecord;
  SetRecording(true);
  if (attached_) collector_->BeginRecord(now_ns);
  writer_->SubmitDiscard(now_ns);  // events from before the range are not part of the window
}

void Session::CloseRangeLocked(uint64_t now_ns) {
  if (!window_open_) return;
  if (now_ns < step_start_ns_) now_ns = step_start_ns_;
  if (!time_steps_ && !spans_.empty() && !range_has_calls_.load(std::memory_order_relaxed)) {
    // No call since the last marker: that step ends with the range.
    spans_.back().end_ns = now_ns;
    --step_;
  } else {
    spans_.push_back({step_, step_start_ns_, now_ns});
  }
  EndWindow(now_ns, /*partial=*/false, "");
  ++step_;  // the next range begins a step of its own
  step_start_ns_ = now_ns;
  action_ = Action::kNone;
  SetRecording(false);
  attach_pending_ = false;
  if (attached_) collector_->Pause();
  if (ranges_.exhausted()) {
    // PROF_REPEAT ranges recorded: release CUPTI, wrappers back to their fast path.
    finished_ = true;
    if (attached_) collector_->Finish();
    attached_ = false;
    ClearHotBits(kHotLaunchMarker | kHotApiMarker | kHotSyncMarker | kHotCopyMarker | kHotNvtxNames | kHotRangeMarker);
  }
}

// A read first: a waiting step (none -> none) skips the locked RMW.
void Session::SetRecording(bool on) {
  bool changed = ((LoadHotBits() & kHotRecording) != 0) != on;
  if (changed) {
    if (on) SetHotBits(kHotRecording);
    else ClearHotBits(kHotRecording);
  }
  // Told again at every recording step, so that what could not follow the
  // change then (no interpreter yet) does now; a waiting step tells nothing.
  if (recording_changed_ && (changed || on)) recording_changed_(on);
}

void Session::OnRecordingChanged(std::function<void(bool)> changed) {
  Locked lock(this);
  recording_changed_ = std::move(changed);
}

void Session::OnWindowEnded(std::function<void()> ended) {
  Locked lock(this);
  window_ended_ = std::move(ended);
}

void Session::Enter(Action prev, Action next, uint64_t now_ns) {
  bool recording_next = next == Action::kRecord || next == Action::kRecordAndSave;
  if (next == Action::kWarmup || recording_next) {
    if (!attached_ || prev == Action::kNone) AttachIfCuda();
    SetRecording(true);
    // Read after CUPTI is attached and the bit is set: from now on calls are
    // recorded in both modes.
    if (recording_since_ns_ == 0) recording_since_ns_ = NowNs();
  }
  if (recording_next && !window_open_) {
    if (attached_) collector_->BeginRecord(now_ns);
    window_open_ = true;
    window_first_step_ = step_;
    window_start_ns_ = now_ns;
    // NVTX names used from now on are this window's (base/strings.h).
    names_generation_ = Strings().BeginWindow();
    // A marker starts its step when it is seen, with recording already on;
    // a time step starts at its nominal boundary, which the agent thread may
    // act on late (a loaded machine): the stretch before recording came on
    // is reported, not silently missing.
    window_unrecorded_ns_ = time_steps_ && recording_since_ns_ > now_ns ? recording_since_ns_ - now_ns : 0;
    spans_.clear();
    writer_->SubmitDiscard(now_ns);  // warmup events are not part of the window
  }
  if (next == Action::kNone) {
    SetRecording(false);
    recording_since_ns_ = 0;
    attach_pending_ = false;
    if (attached_ && prev != Action::kNone) collector_->Pause();
    bool done = !triggered_ && ScheduleFinished(params_, step_);
    if (done && !finished_) {
      finished_ = true;
      if (attached_) collector_->Finish();
      attached_ = false;
      // Nothing will be recorded again: wrappers go back to one load + branch
      // (allocator tracking stays, for the live table at exit).
      ClearHotBits(kHotLaunchMarker | kHotApiMarker | kHotSyncMarker | kHotCopyMarker | kHotNvtxNames);
    }
  }
}

void Session::EndWindow(uint64_t end_ns, bool partial, const std::string& reason, bool at_exit) {
  if (held_ && !hold_next_) {
    writer_->ReleaseHeld(/*write=*/false, "", "");  // this window replaces it
    held_ = false;
  }
  WindowJob job;
  job.hold = hold_next_;
  held_ = held_ || hold_next_;
  hold_next_ = false;
  job.written_note = std::move(written_note_);
  written_note_.clear();
  job.meta = meta_template_;
  job.meta.first_step = window_first_step_;
  job.meta.last_step = step_;
  job.meta.start_ns = window_start_ns_;
  job.meta.end_ns = end_ns;
  job.meta.partial = partial;
  job.meta.partial_reason = reason;
  if (range_mode_) job.meta.range_description = range_description_;
  job.meta.losses.unrecorded_start_ns = std::min(window_unrecorded_ns_, end_ns - window_start_ns_);
  job.steps = std::move(spans_);
  job.steps_at_calls = !time_steps_;
  spans_.clear();
  job.live_at_end = allocs_->LiveSnapshot();
  // At exit the process is waiting on us: bound the wait for late records.
  uint64_t wait_ns =
      partial || at_exit ? std::min<uint64_t>(config_.flush_timeout_ns, 2'000'000'000) : config_.flush_timeout_ns;
  job.deadline_ns = end_ns + wait_ns;
  job.names_generation = names_generation_;
  Strings().WindowEnded();
  window_open_ = false;
  if (!job.hold) ++windows_ended_;
  if (window_ended_ && !job.discard && !at_exit) window_ended_();
  writer_->SubmitWindow(std::move(job));
}

void Session::Arm() {
  Locked lock(this);
  if (!triggered_) return;
  if (armed_) {
    ++pending_arms_;
    return;
  }
  armed_ = true;
  trigger_origin_ = step_ + 1;  // the current step's action is already decided
}

bool Session::EndPartial(const std::string& reason, uint64_t now_ns) {
  Locked lock(this);
  bool wrote = false;
  provisional_pending_.store(false, std::memory_order_relaxed);
  if (provisional_) {
    std::string why = ProvisionalWhy(std::max(now_ns, window_start_ns_), fmt::format(" to its end ({})", reason).c_str());
    written_note_ = "PROF_STEP=auto: " + why;
    // The whole run, ended where it is meant to end: not partial (its last
    // step is the run itself, not one the exit cut short).
    EndProvisionalLocked(now_ns, /*write=*/true, /*at_exit=*/true, why);
    wrote = true;
  }
  if (window_open_) {
    if (now_ns < step_start_ns_) now_ns = step_start_ns_;
    if (range_mode_ && !time_steps_ && !spans_.empty() && !range_has_calls_.load(std::memory_order_relaxed)) {
      spans_.back().end_ns = now_ns;  // a range open at exit: no empty last step either (NoteRangeCall)
      --step_;
    } else {
      spans_.push_back({step_, step_start_ns_, now_ns});
    }
    EndWindow(now_ns, /*partial=*/true, reason);
    wrote = true;
  }
  if (held_) {
    // The loop was found, but no window of the schedule ended: the run
    // until the find is what there is.
    double secs = held_span_ns_ / 1e9;
    writer_->ReleaseHeld(
        /*write=*/true,
        fmt::format("{} (found after {:.1f} s; the process ended before the schedule's first window: this window is the "
                    "whole run from the first CUDA call until the loop was found)",
                    meta_template_.step_description, secs),
        fmt::format("PROF_STEP=auto: the process ended ({}) before the schedule's first window; window 0 is the whole "
                    "run from the first CUDA call until the loop was found ({:.1f} s)",
                    reason, secs));
    held_ = false;
    ++windows_ended_;
    wrote = true;
  }
  ClearHotBits(kHotRecording | kHotLaunchMarker | kHotApiMarker | kHotSyncMarker | kHotCopyMarker | kHotNvtxNames |
               kHotRangeMarker);
  if (attached_) collector_->OnExit();
  attached_ = false;
  action_ = Action::kNone;
  finished_ = true;
  return wrote;
}

std::string Session::EndedBeforeFirstWindowMessage() {
  Locked lock(this);
  if (windows_ended_ > 0) return "";
  if (range_mode_) {
    if (config_.range_kind == RangeKind::kProfilerApi) {
      return "process ended with no window: PROF_RANGE=cudaProfilerApi saw no successful cudaProfilerStart/cuProfilerStart";
    }
    return fmt::format(
        "process ended with no window: no NVTX range matched PROF_RANGE=nvtx:{} (names are `domain@name` for ranges "
        "in a domain; NVTX needs NVTX_INJECTION64_PATH=<libprof.so>, which prof run sets)",
        config_.range_pattern);
  }
  if (!counting_ && start_on_marker_) {
    return fmt::format(
        "process ended with no window: PROF_STEP=auto found the loop ({}), but the process ended before the loop's "
        "next iteration began; set PROF_STEP (e.g. sync, kernel:<regex>, time:100ms) to count steps from the start",
        meta_template_.step_description);
  }
  if (!counting_) {
    return "process ended with no window: PROF_STEP=auto was still looking for the loop; set PROF_STEP (e.g. sync, "
           "kernel:<regex>, time:100ms) or a shorter PROF_AUTO_TIMEOUT";
  }
  if (triggered_) {
    return fmt::format("process ended at step {} with no window recorded: PROF_TRIGGER_FILE '{}' {}", step_,
                       config_.trigger_file, armed_ ? "armed a cycle that had not reached its active steps" : "never appeared");
  }
  uint64_t first = params_.skip_first + params_.wait + params_.warmup;
  std::string step_hint;
  if (time_steps_) {
    step_hint = fmt::format(" or a shorter PROF_STEP (now time:{}ms)", config_.step_time_ns / 1'000'000);
  } else if (config_.step_source == StepSource::kManual) {
    step_hint = " (PROF_STEP=manual: is prof_step() called once per iteration?)";
  } else {
    step_hint = " or a PROF_STEP that matches more often";
  }
  // Only the numbers that can go lower are named.
  std::string lower;
  auto add = [&lower](const char* name, uint64_t value) {
    if (value != 0) lower += fmt::format("{}{}={}", lower.empty() ? "" : " ", name, value);
  };
  add("PROF_SKIP_FIRST", params_.skip_first);
  add("PROF_WAIT", params_.wait);
  add("PROF_WARMUP", params_.warmup);
  if (lower.empty()) {
    step_hint = step_hint.rfind(" or ", 0) == 0 ? ": use" + step_hint.substr(3) : step_hint;
    return fmt::format("process ended at step {} before the first window (steps {}-{}){}", step_, first,
                       first + params_.active - 1, step_hint);
  }
  return fmt::format("process ended at step {} before the first window (steps {}-{}): lower {}{}", step_, first,
                     first + params_.active - 1, lower, step_hint);
}

uint64_t Session::current_step() {
  Locked lock(this);
  return step_;
}

Action Session::current_action() {
  Locked lock(this);
  return action_;
}

// Accessors under the session's lock, one per member: boilerplate, not logic.
bool Session::finished() {
  Locked lock(this);
  return finished_;
}

uint64_t Session::windows_ended() {
  Locked lock(this);
  return windows_ended_;
}

uint64_t Session::max_window_end_stall_ns() {
  Locked lock(this);
  return max_stall_ns_;
}

}  // namespace prof
