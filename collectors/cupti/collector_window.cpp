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

namespace {

// How long after a window's end, every call of it returned, records still
// due with no buffer of libprof's asked for or held means they went to
// another client's buffers (CUPTI writes a call's API record as it returns,
// a kernel's when it ends).
constexpr uint64_t kQuietRequestsNs = 200'000'000;

}  // namespace

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
      // The last count found libprof's buffers not asked for while records
      // were due: another client's callbacks get them (collector_sharing.cpp).
      if (quiet_requests_.exchange(false, std::memory_order_acq_rel)) {
        SenseElsewhereLocked("CUPTI asked libprof for no buffer while the window's records were due: another "
                             "client registered its own buffer callbacks",
                             start_ns);
      }
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
  LaunchRegistry::Pending elsewhere_pending;
  {
    std::lock_guard<std::mutex> decode(decode_mutex_);
    DrainCompletedLocked();
    counts.device_records = registry_->Outstanding(start_ns, end_ns, &pending);
    // Launched while another client held CUPTI's activity API: their
    // records went to it, nothing waits for them; the window counts them.
    window_elsewhere_ = ElsewhereOutstanding(start_ns, end_ns, &elsewhere_pending);
  }
  counts.device_records -= std::min(counts.device_records, window_elsewhere_);
  counts.device_kinds = pending.device;
  if (window_elsewhere_ != 0) {
    auto less = [](uint64_t& n, uint64_t other) { n -= std::min(n, other); };
    less(counts.device_kinds.kernels, elsewhere_pending.device.kernels);
    less(counts.device_kinds.copies, elsewhere_pending.device.copies);
    less(counts.device_kinds.memsets, elsewhere_pending.device.memsets);
  }
  counts.in_progress = pending.in_progress;
  counts.api_records = pending.api_records - std::min(pending.api_records, elsewhere_pending.api_records);
  counts.now_ns = NowNs();
  // Records due, every call returned long ago, and libprof's callbacks
  // neither asked for a buffer since the window began nor hold one: CUPTI
  // writes them into another client's buffers.
  if (activity_ours_.load(std::memory_order_acquire) && !multi_client() && counts.in_progress == 0 &&
      counts.device_records + counts.api_records > 0 && counts.now_ns > end_ns + kQuietRequestsNs &&
      pool_->requests() == requests_at_begin_.load(std::memory_order_relaxed) && !pool_->HeldSince(~0ull)) {
    quiet_requests_.store(true, std::memory_order_release);
  }
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
    losses.device_records_elsewhere += window_elsewhere_;
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
    // The schedule's last window is in: nothing is recorded any more (the
    // detach waits for an API exit, for cuptiFinalize; the kinds need not).
    if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing &&
        windows_collected_.load(std::memory_order_acquire) >= windows_begun_.load(std::memory_order_acquire)) {
      EnableActivities(false);
    }
    ReturnHeldBuffersLocked();
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
