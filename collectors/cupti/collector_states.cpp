// The CUPTI collector's state machine (activity_collector.h): a window's
// begin, pause and the deferred stop, the schedule's finish and the detach
// from an API exit, detaching while waiting (kQuiet) and the agent thread's
// re-probe, and the process's exit.
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "base/loader_guard.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/collector_parts.h"

namespace prof::cupti {

namespace {

int CountLoads(dl_phdr_info* info, size_t, void* data) {
  *static_cast<uint64_t*>(data) = info->dlpi_adds;
  return 1;  // dlpi_adds is the process's count: the first object is enough
}

}  // namespace

uint64_t LoadedObjects() {
  uint64_t adds = 0;
  LoaderSection section;  // base/loader_guard.h: the agent thread calls this once a second
  dl_iterate_phdr(CountLoads, &adds);
  return adds;
}

void CuptiCollector::BeginRecordImpl(uint64_t start_ns) {
  // Warmup records need nothing here: they are discarded when the window is
  // collected, because their launches precede its start_ns. CUPTI's drop
  // count now is noted, so records CUPTI dropped during warmup are not
  // charged to the window (LossLedger::ChargeWindow); read first under
  // try_lock, since the writer may be flushing (best effort, never wait).
  // What libprof's buffer callbacks were asked for so far: a window whose
  // records are due with none asked for since went to another client.
  if (pool_) requests_at_begin_.store(pool_->requests(), std::memory_order_relaxed);
  windows_begun_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || state_.load(std::memory_order_acquire) != CollectorState::kAttached) {
    NoteDroppedAtBegin(start_ns);  // what was read so far
    return;
  }
  ReadCuptiDropsLocked();
  NoteDroppedAtBegin(start_ns);
  // What warmup's calls taught: the window leaves their records out.
  ApplyRuntimeSelectionLocked();
}

void CuptiCollector::NoteDroppedAtBegin(uint64_t start_ns) {
  std::lock_guard<std::mutex> lock(begin_drops_mutex_);
  // Bounded: a writer this far behind charges the oldest ones from the
  // last charge on (counted still, maybe one window off).
  if (begin_drops_.size() >= 256) begin_drops_.erase(begin_drops_.begin());
  begin_drops_.emplace_back(start_ns, cupti_dropped_.load(std::memory_order_relaxed));
}

CuptiCollector::DropReadings CuptiCollector::DropsOfWindow(uint64_t start_ns) {
  std::lock_guard<std::mutex> lock(begin_drops_mutex_);
  // The window's begin is the last noted at or before its start (a window
  // whose start was not recorded is sealed from a later start); the next
  // one noted is the next window's.
  DropReadings readings;
  auto first_later = begin_drops_.begin();
  while (first_later != begin_drops_.end() && first_later->first <= start_ns) {
    readings.at_begin = (first_later++)->second;
  }
  if (first_later != begin_drops_.end()) readings.at_next_begin = first_later->second;
  begin_drops_.erase(begin_drops_.begin(), first_later);
  return readings;
}

void CuptiCollector::PauseImpl() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (state_.load(std::memory_order_acquire) != CollectorState::kAttached) return;
  // Not now: calls of the window may still be in progress (a blocking copy
  // whose device work is enqueued after the step's end, a synchronize that
  // returns after it). CollectWindow stops recording once they are done.
  stop_pending_ = true;
  state_.store(CollectorState::kPaused, std::memory_order_release);
  // The writer may have collected the window already (its calls were all
  // done): then nothing is left to wait for. Both this and the end of
  // CollectWindow look under control_mutex_, so one of them stops.
  if (StopIfPausedLocked(/*collecting=*/false)) ReturnHeldBuffersLocked();
}

bool CuptiCollector::StopIfPausedLocked(bool collecting) {
  if (!stop_pending_ || state_.load(std::memory_order_acquire) != CollectorState::kPaused) return false;
  // Only once the last window begun is being (or was) collected: a window
  // still queued behind stops recording in its own collection.
  uint64_t collected = windows_collected_.load(std::memory_order_acquire) + (collecting ? 1 : 0);
  if (collected < windows_begun_.load(std::memory_order_acquire)) return false;
  stop_pending_ = false;
  EnableActivities(false);
  // Calls keep feeding the marker path between windows when it watches
  // them: the ids it watches stay on.
  if (watching_calls_.load(std::memory_order_acquire)) {
    callbacks_live_.store(false, std::memory_order_release);
    NarrowToWatchedCallbacks();
  } else {
    EnableCallbacks(false);
  }
  return true;
}

void CuptiCollector::FinishImpl() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  CollectorState state = state_.load(std::memory_order_acquire);
  if (state == CollectorState::kQuiet) {
    // Unsubscribed already, every window collected: nothing to finalize.
    watching_calls_.store(false, std::memory_order_release);
    state_.store(CollectorState::kDetached, std::memory_order_release);
    return;
  }
  if (state != CollectorState::kAttached && state != CollectorState::kPaused) return;
  // Activity kinds stay as they are: the last window's calls may still be in
  // progress; the detach after its collection turns everything off.
  // Runtime callbacks stay on: cuptiFinalize may only run from an API exit.
  // It runs after the last window was collected (CollectWindow lowers this),
  // or after the flush timeout if no window is collected.
  bool recording = state == CollectorState::kAttached || stop_pending_;
  stop_pending_ = false;
  quiet_pending_.store(false, std::memory_order_relaxed);
  EnableCallbacks(true);
  callbacks_live_.store(recording, std::memory_order_release);
  // The schedule is done: no step will start a window again.
  watching_calls_.store(false, std::memory_order_release);
  bool collected = windows_collected_.load(std::memory_order_acquire) >= windows_begun_.load(std::memory_order_acquire);
  finalize_after_ns_.store(collected ? 0 : NowNs() + config_.flush_timeout_ns, std::memory_order_release);
  state_.store(CollectorState::kFinishing, std::memory_order_release);
}

void CuptiCollector::DetachLocked(bool finalize) {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  FlushLocked(/*forced=*/true);  // nothing while another client holds the activity API
  EnableActivities(false);
  callbacks_live_.store(false, std::memory_order_release);
  api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
  // A subscriber's own activity client goes with it (CUPTI 13.2).
  if (multi_client_.load(std::memory_order_relaxed)) activity_registered_ = false;
  // Calls in progress now lose their exit callbacks (see OnApiEnter).
  off_epoch_.fetch_add(1, std::memory_order_relaxed);
  // cuptiFinalize detaches every client of CUPTI, not only libprof: never
  // once another one was seen (the program's torch.profiler keeps its
  // timestamp callback registered between its sessions).
  if (finalize && api_.Finalize != nullptr && MayFinalizeLocked()) {
    CUptiResult r = api_.Finalize();
    if (r != CUPTI_SUCCESS) Log().debug("cuptiFinalize returned {}", ResultName(api_, r));
    activity_registered_ = false;
    process_clock_baseline_ok_ = false;  // CUPTI forgot every clock
  } else if (finalize) {
    Log().debug("CUPTI left attached (unsubscribed, no cuptiFinalize): another client of CUPTI is in the process");
  }
  SyncActivityOursLocked();
  finalize_after_ns_.store(~0ull, std::memory_order_release);
  state_.store(CollectorState::kDetached, std::memory_order_release);
}

void CuptiCollector::OnWaitingStepImpl() {
  // Cheap while it does not apply: one relaxed load each for a source that
  // watches no calls or a process with calls no wrapper sees.
  if (!watching_calls_.load(std::memory_order_relaxed) || saw_unfed_.load(std::memory_order_relaxed)) return;
  if (state_.load(std::memory_order_acquire) != CollectorState::kPaused) return;
  if (probe_steps_.fetch_add(1, std::memory_order_relaxed) + 1 < kProbeSteps) return;
  if (quiet_pending_.load(std::memory_order_relaxed)) return;
  // try_lock: the writer may be collecting (it holds the lock while flushing);
  // the next waiting step tries again.
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !CanGoQuietLocked()) return;
  // CUPTI stays attached to the process, and costs every call, until
  // cuptiFinalize, which is safe only from an API-exit callback: the next
  // watched call's exit detaches (MaybeGoQuietFromApiExit).
  quiet_pending_.store(true, std::memory_order_release);
}

// OnWaitingStepImpl's early returns, negated: attached and probing whether
// every watched call is fed, and not yet asked to detach.
bool CuptiCollector::WantsWaitingSteps() const {
  return watching_calls_.load(std::memory_order_relaxed) && !saw_unfed_.load(std::memory_order_relaxed) &&
         state_.load(std::memory_order_relaxed) == CollectorState::kPaused &&
         !quiet_pending_.load(std::memory_order_relaxed);
}

bool CuptiCollector::CanGoQuietLocked() const {
  return state_.load(std::memory_order_acquire) == CollectorState::kPaused && !stop_pending_ &&
         !saw_unfed_.load(std::memory_order_acquire) && watching_calls_.load(std::memory_order_acquire) &&
         // Every window begun was collected: nothing of CUPTI's is still awaited.
         windows_collected_.load(std::memory_order_acquire) >= windows_begun_.load(std::memory_order_acquire);
}

void CuptiCollector::MaybeGoQuietFromApiExit() {
  // try_lock: an application thread must never wait here (as for finalize).
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  quiet_pending_.store(false, std::memory_order_relaxed);
  if (!CanGoQuietLocked()) return;
  DetachLocked(/*finalize=*/true);
  state_.store(CollectorState::kQuiet, std::memory_order_release);
  next_probe_ns_ = NowNs() + probe_interval_ns_;
  Log().debug("CUPTI detached while waiting (the last {} step boundaries' watched calls all reached a wrapper)",
              probe_steps_.load(std::memory_order_relaxed));
}

bool CuptiCollector::ResubscribeLocked(bool new_probe) {
  // After cuptiFinalize, as a new cycle after the schedule's end: subscribe,
  // register buffers and timestamps again, correlation ids may restart.
  quiet_pending_.store(false, std::memory_order_relaxed);
  if (!SubscribeAndRegister(CollectorState::kDetached)) return false;
  if (new_probe) probe_steps_.store(0, std::memory_order_relaxed);
  state_.store(CollectorState::kPaused, std::memory_order_release);
  EnableWatchedCallbacks();
  return true;
}

void CuptiCollector::TickImpl(uint64_t now_ns) {
  // Nothing to do unless detached: no lock, no loader call while attached.
  if (!watching_calls_.load(std::memory_order_acquire) || saw_unfed_.load(std::memory_order_relaxed) ||
      state_.load(std::memory_order_acquire) != CollectorState::kQuiet) {
    return;
  }
  uint64_t loads = LoadedObjects();  // the loader's lock, not ours
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || state_.load(std::memory_order_acquire) != CollectorState::kQuiet) return;
  bool loaded_more = loads != loads_seen_;
  loads_seen_ = loads;
  if (!loaded_more && now_ns < next_probe_ns_) return;
  if (exited_.load(std::memory_order_acquire)) return;
  // A library loaded since (it may carry a static cudart), or the interval
  // is up: watch through CUPTI again until kProbeSteps waiting steps pass.
  if (!loaded_more) probe_interval_ns_ = std::min<uint64_t>(probe_interval_ns_ * 2, 64'000'000'000ull);
  next_probe_ns_ = now_ns + probe_interval_ns_;
  if (ResubscribeLocked(/*new_probe=*/true)) {
    Log().debug("CUPTI attached again while waiting ({})", loaded_more ? "libraries loaded" : "re-probe");
  }
}

void CuptiCollector::OnExitImpl() {
  // A forked child must not touch the parent's CUPTI session.
  if (getpid() != subscribed_pid_) return;
  exited_.store(true, std::memory_order_release);
  if (uint64_t late = late_api_records_.load(std::memory_order_relaxed); late != 0) {
    Log().info("{} CUPTI records of calls came after their window was written; those windows lack them", late);
  }
  if (uint64_t late = late_device_records_.load(std::memory_order_relaxed); late != 0) {
    Log().info("{} GPU records came after their window was written; those windows lack them", late);
  }
  // Calls with no callback (cudaStreamAddCallback, cudaGetLastError) show
  // only through the RUNTIME/DRIVER record CUPTI writes as each returns, on
  // its own thread: a thread descheduled between such a call's return and
  // its record (a busy machine) wrote it after the unsubscribe below, and
  // the exit's window lacked the call, saying nothing. While a window is
  // still to be collected, those threads get a moment first (the exit
  // budget is seconds; no window, no wait).
  if ((config_.activities & (kActRuntime | kActDriver)) != 0 &&
      windows_collected_.load(std::memory_order_acquire) < windows_begun_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(kExitSettleNs));
  }
  // The exit path must not wait long: if a window is being collected (the
  // writer holds control_mutex_ while flushing), give it a moment, then go.
  std::unique_lock<std::mutex> lock(control_mutex_, std::defer_lock);
  for (int i = 0; i < 100 && !lock.try_lock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!lock.owns_lock()) return;
  // Not finalized: outside an API-exit callback that is unsafe, and the
  // process is ending anyway. Unsubscribing releases CUPTI for others.
  DetachLocked(/*finalize=*/false);
}

void CuptiCollector::MaybeFinalizeFromApiExit() {
  if (NowNs() < finalize_after_ns_.load(std::memory_order_acquire)) return;
  // try_lock: an application thread must never wait here, and the writer
  // may hold the lock while CUPTI waits for this very callback to return.
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || state_.load(std::memory_order_acquire) != CollectorState::kFinishing) return;
  // The only place cuptiFinalize is safe: an API-exit callback.
  DetachLocked(/*finalize=*/true);
  Log().debug("CUPTI detached: schedule finished, nothing stays enabled");
}

}  // namespace prof::cupti
