#include "collectors/cupti/window_collection.h"

#include <algorithm>

namespace prof::cupti {

WindowCollection::WindowCollection(uint64_t end_ns, uint64_t deadline_ns, bool api_kinds)
    : deadline_ns_(deadline_ns),
      // By settled_ns_ the records of calls with no callback made before
      // end_ns have been written (a thread descheduled for longer between
      // such a call's return and CUPTI writing its record delivers it after
      // its window was sealed: counted then).
      settled_ns_(end_ns + (api_kinds ? kApiRecordGraceNs : 0)) {}

WindowCollection::Action WindowCollection::Start() {
  if (phase_ != Phase::kIdle) return Abandon();
  return Flush(/*force_if_last=*/false);
}

WindowCollection::Action WindowCollection::Flush(bool force_if_last) {
  phase_ = Phase::kFlushing;
  return Action{Do::kFlush, force_if_last, 0};
}

WindowCollection::Action WindowCollection::OnFlushed(bool forced, uint64_t now_ns) {
  if (phase_ == Phase::kFlushing) {
    if (forced) forced_ns_ = now_ns;
    phase_ = Phase::kCounting;
    return Action{Do::kDrainAndCount};
  }
  if (phase_ == Phase::kForcingOut) {
    phase_ = Phase::kFinalCount;
    return Action{Do::kDrainAndCount};
  }
  return Abandon();
}

WindowCollection::Action WindowCollection::OnCounted(const Counts& counts) {
  if (phase_ != Phase::kCounting && phase_ != Phase::kFinalCount) return Abandon();
  last_ = counts;
  if (phase_ == Phase::kFinalCount) return Conclude();
  // Every call of the window returned, so all its device work is enqueued:
  // recording may stop (if the window's end paused it). Records of what is
  // enqueued keep coming. Not before settled_ns_: a call with no callback
  // still running (its thread descheduled) would lose its record.
  if (!stopped_ && ((counts.in_progress == 0 && counts.now_ns >= settled_ns_) || counts.now_ns >= deadline_ns_ ||
                    counts.exited)) {
    phase_ = Phase::kStopping;
    return Action{Do::kStopRecording};
  }
  return Decide();
}

WindowCollection::Action WindowCollection::OnStopTried(bool stopped) {
  if (phase_ != Phase::kStopping) return Abandon();
  stopped_ = stopped;
  if (stopped) return Flush(/*force_if_last=*/false);  // flush and look again at once
  return Decide();
}

WindowCollection::Action WindowCollection::Decide() {
  const Counts& c = last_;
  bool timed_out = c.now_ns >= deadline_ns_;
  if (c.in_progress == 0 && !returned_) {
    returned_ = true;
    returned_ns_ = c.now_ns;
  }
  // Done once the device records and the calls' own API records (written
  // as each call returns) are in. API records CUPTI dropped never come: once
  // every call returned, they get a short grace, not the whole deadline.
  bool api_done = c.api_records == 0 ||
                  (returned_ && c.now_ns - returned_ns_ > kApiRecordGraceNs && c.may_have_dropped);
  bool awaited_in = c.device_records == 0 && c.in_progress == 0 && api_done;
  // A record of a call with no callback, written by settled_ns_, may sit in
  // a buffer CUPTI still holds: one it fills, or one that also holds a
  // record of device work still running, which a plain flush keeps back
  // until that work ends (CUPTI's documented flush). So the window is
  // complete once every buffer CUPTI had by then came back, or a forced
  // flush ran after it. Exiting: the process waits on this window; its
  // threads are ending.
  bool settled = c.now_ns >= settled_ns_ || c.exited;
  bool held = forced_ns_ < settled_ns_ && c.buffer_held;
  if (awaited_in && settled && !held) return Conclude();
  if (timed_out) {
    // Out of time with a buffer still out: force it out. Records of work
    // still running come untimed, and are counted by their windows.
    if (!held) return Conclude();
    phase_ = Phase::kForcingOut;
    return Action{Do::kForceFlush};
  }
  // Every call returned and its device records are in, but some API
  // records are not: they may sit in a buffer a plain flush does not
  // deliver (one holding records of work still running), so the next flush
  // is forced if that costs nothing. Else, and for a buffer still held, the
  // window waits for CUPTI to hand the buffer over by itself (full, or its
  // work done), and forces it at the deadline.
  if (awaited_in && settled && c.no_later_window) return Flush(/*force_if_last=*/true);  // nothing else is awaited
  // Detached (the process is exiting): the detach's forced flush was the
  // last delivery; waiting longer would only cost the window the exit
  // path's bounded wait for the writer. It may have come after this
  // round's decoding: decode it, then stop.
  if (c.detached) {
    phase_ = Phase::kFinalCount;
    return Action{Do::kDrainAndCount};
  }
  next_force_ = c.device_records == 0 && c.in_progress == 0 && c.api_records > 0;
  // Records still on their way (GPU busy, CUPTI's worker): poll, bounded.
  phase_ = Phase::kSleeping;
  Action sleep{Do::kSleep, false, poll_ns_};
  poll_ns_ = std::min(poll_ns_ * 2, kLongestPollNs);
  return sleep;
}

WindowCollection::Action WindowCollection::OnWoke() {
  if (phase_ != Phase::kSleeping) return Abandon();
  return Flush(next_force_);
}

WindowCollection::Action WindowCollection::Conclude() {
  if (asked_last_) {
    phase_ = Phase::kDone;
    return Action{Do::kSeal};
  }
  asked_last_ = true;
  phase_ = Phase::kAskingLast;
  return Action{Do::kAskLast};
}

WindowCollection::Action WindowCollection::OnLastKnown(bool finishing) {
  if (phase_ != Phase::kAskingLast) return Abandon();
  if (!finishing) {
    phase_ = Phase::kDone;
    return Action{Do::kSeal};
  }
  // The last window: force out what CUPTI still holds (half-filled
  // buffers), since nothing more will come after the detach.
  phase_ = Phase::kForcingOut;
  return Action{Do::kForceFlush};
}

WindowCollection::Action WindowCollection::Abandon() {
  phase_ = Phase::kDone;
  return Action{Do::kSeal};
}

}  // namespace prof::cupti
