// How the writer thread collects one window's records from CUPTI, as
// decisions only: which step comes next (flush, forced or not; decode and
// count; stop recording; wait; ask whether this is the last window; seal),
// when the window is complete, and what it reports as missing. It calls
// nothing and reads no clock: the collector (collector_window.cpp) performs
// each Action and hands the outcome back as an event, so a test drives it
// with hand-made events and times (window_collection_test.cpp), as Kineto's
// tests drive its profiler's run loop with a clock they control.
//
// One window's collection, in rounds:
//   flush (forced only when asked and no later window records)
//   -> decode and count what the window's calls still wait for
//   -> stop recording once every call returned and calls with no callback
//      settled (or the deadline passed, or the process exits), then flush
//      and count again at once
//   -> complete when every device record and every call's own API record
//      is in (API records CUPTI may have dropped: 50 ms after the calls
//      returned), the window settled, and no buffer CUPTI held at
//      settled_ns() is still out (or a forced flush ran after it)
//   -> else, at the deadline: force a held buffer out, count, stop;
//      detached (the exit path): decode once more, stop;
//      otherwise sleep (1 ms, doubling to 16 ms) and flush again,
//      forced next time when only API records are missing and no later
//      window records (a plain flush keeps a buffer that also holds
//      records of work still running).
//   Every way out asks whether the schedule is finishing: the last window
//   forces out what CUPTI still holds, counts, and seals.
//
// Thread: the writer thread, one object per window; no state is shared.
#pragma once

#include <cstdint>

#include "model/window.h"

namespace prof::cupti {

class WindowCollection {
 public:
  // How long a window waits, once all its calls returned, for API records
  // still not delivered when CUPTI may have dropped them (a buffer request
  // refused, or CUPTI counted drops): those never come. With no drop
  // possible they do come (CUPTI writes a call's record as it returns,
  // after its exit callback: a thread preempted in between delivers it
  // late), and the window waits for them until its deadline. Also how long
  // after the window's end calls with no callback (cudaGetLastError, the
  // launch configuration calls) settle when API records are on.
  static constexpr uint64_t kApiRecordGraceNs = 50'000'000;
  // Polling while records are on their way: each round flushes and scans
  // the window's calls, so it backs off.
  static constexpr uint64_t kFirstPollNs = 1'000'000;
  static constexpr uint64_t kLongestPollNs = 16'000'000;

  // What the collector does next; each names the event that answers it.
  enum class Do : uint8_t {
    kFlush,          // cuptiActivityFlushAll, forced if force_if_last and no later window records -> OnFlushed
    kForceFlush,     // a forced flush -> OnFlushed
    kDrainAndCount,  // decode what CUPTI handed over, count what the window still waits for -> OnCounted
    kStopRecording,  // the deferred half of Pause, for the window being collected -> OnStopTried
    kSleep,          // wait sleep_ns -> OnWoke
    kAskLast,        // is the schedule finishing (this its last window)? -> OnLastKnown
    kSeal,           // complete: seal the window, with the missing counts below
  };
  struct Action {
    Do what = Do::kSeal;
    bool force_if_last = false;  // kFlush
    uint64_t sleep_ns = 0;       // kSleep
  };

  // What a count found (kDrainAndCount), and the collector's state then.
  struct Counts {
    uint64_t now_ns = 0;
    uint64_t device_records = 0;  // calls of the window still expecting their first device record
    DeviceLossKinds device_kinds;  // device_records by the kind of record each awaits
    uint64_t in_progress = 0;     // calls of the window that have not returned
    uint64_t api_records = 0;     // calls of the window whose own RUNTIME/DRIVER record is not in
    bool buffer_held = false;     // CUPTI still holds a buffer it had at settled_ns()
    bool may_have_dropped = false;  // since the last window: a buffer refused, or CUPTI counted drops
    bool no_later_window = false;   // no window after this one has begun recording
    bool exited = false;            // the process is exiting: it waits on this window
    bool detached = false;          // CUPTI was released (the exit path): nothing more comes
  };

  enum class Phase : uint8_t {
    kIdle,        // before Start
    kFlushing,    // a round's flush
    kCounting,    // a round's count
    kStopping,    // asked to stop recording
    kSleeping,    // between rounds
    kForcingOut,  // a forced flush after the rounds (deadline, last window)
    kFinalCount,  // the count after it, or after a detach
    kAskingLast,  // asked whether the schedule is finishing
    kDone,        // sealed
  };

  // end_ns, deadline_ns: the window's end and when to stop waiting, on the
  // agent clock. api_kinds: RUNTIME or DRIVER records are enabled, so calls
  // with no callback settle kApiRecordGraceNs after end_ns.
  WindowCollection(uint64_t end_ns, uint64_t deadline_ns, bool api_kinds);

  Action Start();
  // The flush ran; forced: it was a forced one, at now_ns.
  Action OnFlushed(bool forced, uint64_t now_ns);
  Action OnCounted(const Counts& counts);
  // stopped: recording stopped now (false: not paused, or a later window
  // still records; asked again next round).
  Action OnStopTried(bool stopped);
  Action OnWoke();
  Action OnLastKnown(bool finishing);
  // An event out of turn (a driver's mistake) ends the collection with
  // kSeal rather than loop: the window is sealed with what is in.

  Phase phase() const { return phase_; }
  // Calls with no callback made before end_ns have had their records
  // written by then; a buffer CUPTI held at that time may still hold them.
  uint64_t settled_ns() const { return settled_ns_; }
  bool stopped() const { return stopped_; }
  // The losses the window reports, from the last count (valid at kSeal):
  // launches whose device record never came, calls whose own API record
  // never came.
  uint64_t device_records_missing() const { return last_.device_records; }
  // device_records_missing() by kind (they sum to it).
  const DeviceLossKinds& device_records_missing_kinds() const { return last_.device_kinds; }
  uint64_t api_records_missing() const { return last_.api_records; }

 private:
  Action Flush(bool force_if_last);
  Action Decide();
  Action Conclude();
  Action Abandon();

  uint64_t deadline_ns_;
  uint64_t settled_ns_;
  Phase phase_ = Phase::kIdle;
  Counts last_;                // the last count: the round being decided, and the losses
  bool stopped_ = false;       // recording was stopped for this window
  bool returned_ = false;      // every call of the window had returned at returned_ns_
  uint64_t returned_ns_ = 0;
  uint64_t forced_ns_ = 0;     // the last forced flush: what CUPTI wrote before it is delivered
  bool next_force_ = false;    // the flush after the sleep is forced if no later window records
  bool asked_last_ = false;
  uint64_t poll_ns_ = kFirstPollNs;
};

}  // namespace prof::cupti
