// The CUPTI collector's window collection, on the writer thread: performs
// what WindowCollection (window_collection.h) decides — flushes, decoding
// and counting, stopping the recording, polling — and seals the window:
// its records in start order with their names, the registry's calls of it
// forgotten, and its losses.
//
// Locks: each step takes control_mutex_ (flushes, the stop) or
// decode_mutex_ (decoding, counting, sealing) on its own, never both.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/record_order.h"

namespace prof::cupti {

bool CuptiCollector::NoLaterWindowRecords() const {
  // The process is exiting (OnExit may not have got the lock to detach):
  // no window records again.
  if (exited_.load(std::memory_order_acquire)) return true;
  // This window is the last one begun, and no window recorded since its
  // pause (an Attach would have made the state kAttached again).
  CollectorState state = state_.load(std::memory_order_acquire);
  return windows_begun_.load(std::memory_order_acquire) <= windows_collected_.load(std::memory_order_acquire) + 1 &&
         (state == CollectorState::kPaused || state == CollectorState::kFinishing);
}

void CuptiCollector::CollectWindowImpl(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) {
  out->meta.cupti_api_version = cupti_version_;
  if (!loaded_ || state_.load(std::memory_order_acquire) == CollectorState::kOff) {
    out->meta.cupti_mode =
        loaded_ || state() == CollectorState::kOff ? Mode() : "interception-only (CUPTI was not attached)";
    out->meta.has_gpu_timings = false;
    return;
  }
  WindowCollection collection(end_ns, deadline_ns,
                              /*api_kinds=*/(config_.activities & (kActRuntime | kActDriver)) != 0);
  WindowCollection::Action next = collection.Start();
  while (next.what != WindowCollection::Do::kSeal) next = Perform(next, collection, start_ns, end_ns);
  SealWindow(start_ns, end_ns, collection, out);
}

WindowCollection::Action CuptiCollector::Perform(const WindowCollection::Action& action,
                                                 WindowCollection& collection, uint64_t start_ns, uint64_t end_ns) {
  using Do = WindowCollection::Do;
  switch (action.what) {
    case Do::kFlush:
    case Do::kForceFlush: {
      // Forced only if no later window records, checked under the lock
      // Attach takes: what a forced flush delivers untimed is then only
      // work of calls between windows, while it would cost a later window
      // its times.
      std::lock_guard<std::mutex> control(control_mutex_);
      bool forced = action.what == Do::kForceFlush || (action.force_if_last && NoLaterWindowRecords());
      FlushLocked(forced);
      return collection.OnFlushed(forced, NowNs());
    }
    case Do::kDrainAndCount:
      return collection.OnCounted(CountWindow(start_ns, end_ns, collection.settled_ns()));
    case Do::kStopRecording: {
      bool stopped = false;
      {
        std::lock_guard<std::mutex> control(control_mutex_);
        stopped = StopIfPausedLocked(/*collecting=*/true);
      }
      return collection.OnStopTried(stopped);
    }
    case Do::kSleep:
      std::this_thread::sleep_for(std::chrono::nanoseconds(action.sleep_ns));
      return collection.OnWoke();
    case Do::kAskLast:
      return collection.OnLastKnown(state_.load(std::memory_order_acquire) == CollectorState::kFinishing);
    case Do::kSeal:
      break;
  }
  return action;
}

WindowCollection::Counts CuptiCollector::CountWindow(uint64_t start_ns, uint64_t end_ns, uint64_t settled_ns) {
  WindowCollection::Counts counts;
  LaunchRegistry::Pending pending;
  {
    std::lock_guard<std::mutex> decode(decode_mutex_);
    DrainCompletedLocked();
    counts.device_records = registry_->Outstanding(start_ns, end_ns, &pending);
  }
  counts.device_kinds = pending.device;
  counts.in_progress = pending.in_progress;
  counts.api_records = pending.api_records;
  counts.now_ns = NowNs();
  counts.buffer_held = pool_->HeldSince(settled_ns);
  counts.may_have_dropped = MayHaveDroppedRecords();
  counts.no_later_window = NoLaterWindowRecords();
  counts.exited = exited_.load(std::memory_order_acquire);
  counts.detached = state_.load(std::memory_order_acquire) == CollectorState::kDetached;
  return counts;
}

void CuptiCollector::SealWindow(uint64_t start_ns, uint64_t end_ns, const WindowCollection& collection,
                                Window* out) {
  {
    std::lock_guard<std::mutex> decode(decode_mutex_);
    MoveRecordsLocked(start_ns, end_ns, out);
    ForgetWindowLocked(start_ns, end_ns);
    LossCounts& losses = out->meta.losses;
    losses.device_records_missing += collection.device_records_missing();
    losses.missing_kinds.Add(collection.device_records_missing_kinds());
    losses.api_records_missing += collection.api_records_missing();
    refused_reported_ = pool_->refused();
    // CUPTI's drops read from this window's begin to the next one's (or
    // to now, if none began since): a window collected after the next one
    // began leaves that one its own.
    DropReadings drops = DropsOfWindow(start_ns);
    losses_.ChargeWindow(start_ns, end_ns, std::min(cupti_dropped_.load(std::memory_order_relaxed), drops.at_next_begin),
                         drops.at_begin, &losses);
  }
  out->meta.cupti_mode = Mode();
  out->meta.has_gpu_timings = true;

  // The last window is in: let the next API exit release CUPTI.
  windows_collected_.fetch_add(1, std::memory_order_acq_rel);
  {
    // A pause that came after this window's calls were done (see PauseImpl).
    std::lock_guard<std::mutex> control(control_mutex_);
    StopIfPausedLocked(/*collecting=*/false);
    // Windows back to back (no Attach between): what this one taught.
    ApplyRuntimeSelectionLocked();
  }
  if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing) {
    finalize_after_ns_.store(0, std::memory_order_release);
  }
}

void CuptiCollector::MoveRecordsLocked(uint64_t start_ns, uint64_t end_ns, Window* out) {
  std::vector<DeviceRecord> window = pending_.Take(start_ns, end_ns);
  WindowStrings strings(&out->strings);
  for (DeviceRecord& r : window) r.name_id = strings.Map(names_, r.name_id);
  SortByStart(&window);
  if (out->device_records.empty()) {
    out->device_records = std::move(window);
  } else {
    out->device_records.insert(out->device_records.end(), window.begin(), window.end());
    SortByStart(&out->device_records);
  }
}

void CuptiCollector::ForgetWindowLocked(uint64_t start_ns, uint64_t end_ns) {
  wrapped_ids_.clear();
  registry_->WrappedCalls(start_ns, end_ns, &wrapped_ids_);
  NoteSealedLocked(start_ns, end_ns);
  registry_->ForgetBefore(end_ns);
  sealed_start_ns_ = start_ns;
  sealed_end_ns_ = end_ns;
  // Built records of sealed windows: CUPTI's own of them, if any came late,
  // belong to no window now.
  if (!synth_ids_.empty()) {
    std::erase_if(synth_ids_, [this](uint32_t id) {
      uint64_t enter_ns = 0;
      return !registry_->EnterNs(id, &enter_ns);
    });
  }
}

}  // namespace prof::cupti
