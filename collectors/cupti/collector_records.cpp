// The CUPTI collector's records: the activity kinds and which RUNTIME
// records CUPTI leaves out, the buffer callbacks (which only hand buffers
// over), flushes and CUPTI's drop count, and on the writer thread the
// decoding of handed-over buffers into held records and the collection of a
// window's records.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread_id.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/activity_decoder.h"
#include "collectors/cupti/api_classes.h"
#include "collectors/cupti/collector_parts.h"
#include "collectors/cupti/record_order.h"

namespace prof::cupti {

namespace {

// Activity kinds per Config::activities (PROF_ACTIVITIES).
std::vector<CUpti_ActivityKind> KindsFor(uint32_t activities) {
  std::vector<CUpti_ActivityKind> kinds;
  if (activities & kActKernel) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (activities & kActMemcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);
  }
  if (activities & kActMemset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (activities & kActRuntime) kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (activities & kActDriver) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (activities & kActSync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (activities & kActMemory) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (activities & kActOverhead) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  return kinds;
}

// Only device work answers a call that put work in flight; the call's own
// RUNTIME/DRIVER record arrives at its exit, before a kernel still running.
bool IsDeviceWork(const DeviceRecord& r) {
  DeviceKind kind = static_cast<DeviceKind>(r.kind);
  return kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset;
}

// How long a window waits, once all its calls returned, for API records
// still not delivered when CUPTI may have dropped them (a buffer request
// refused, or CUPTI counted drops): those never come. With no drop possible
// they do come (CUPTI writes a call's record as it returns, after its exit
// callback: a thread preempted in between delivers it late), and the window
// waits for them until its deadline.
constexpr uint64_t kApiRecordGraceNs = 50'000'000;

bool IsApiRecord(const DeviceRecord& r) {
  DeviceKind kind = static_cast<DeviceKind>(r.kind);
  return kind == DeviceKind::kRuntimeApi || kind == DeviceKind::kDriverApi;
}

}  // namespace

void CUPTIAPI BufferRequestedTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  try {
    if (owner != nullptr) owner->OnBufferRequested(buffer, size, max_records);
  } catch (...) {
    *buffer = nullptr;  // declined: CUPTI counts the records it drops
    *size = 0;
  }
}

void CUPTIAPI BufferCompletedTrampoline(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid_size) {
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  try {
    if (owner != nullptr) owner->OnBufferCompleted(buffer, size, valid_size);
  } catch (...) {
    // The buffer is lost (never reused); its records count as missing.
  }
}

void CuptiCollector::EnableActivities(bool enable) {
  if (enable && !enabled_kinds_.empty()) return;  // still on: a pause that never stopped
  if (!enable) {
    for (CUpti_ActivityKind kind : enabled_kinds_) api_.ActivityDisable(kind);
    enabled_kinds_.clear();
    // Setting the RUNTIME kind overrides the per-id choices (cupti_activity.h,
    // cuptiActivityEnableRuntimeApi): the next enable records every id, and
    // the next ApplyRuntimeSelectionLocked leaves the wrapped ones out again.
    rt_select_ok_ = false;
    for (auto& bits : rt_api_) {
      if (bits.load(std::memory_order_relaxed) & kRtOff) bits.fetch_and(static_cast<uint8_t>(~kRtOff));
    }
    rt_select_dirty_.store(true, std::memory_order_relaxed);
    return;
  }
  std::string failed;
  for (CUpti_ActivityKind kind : KindsFor(config_.activities)) {
    CUptiResult r = api_.ActivityEnable(kind);
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(kind);
    } else {
      failed += (failed.empty() ? "" : ", ") + std::to_string(static_cast<int>(kind)) + ": " + ResultName(api_, r);
    }
  }
  if (!failed.empty()) Log().warn("CUPTI refused some activity kinds ({}); their records are missing", failed);
  // Records built from callbacks carry gettid and agent-clock times, as
  // CUPTI's do only with both of these.
  rt_select_ok_ = api_.ActivityEnableRuntimeApi != nullptr && !rt_select_failed_ && thread_ids_system_ &&
                  agent_clock_ &&
                  std::find(enabled_kinds_.begin(), enabled_kinds_.end(), CUPTI_ACTIVITY_KIND_RUNTIME) !=
                      enabled_kinds_.end();
}

void CuptiCollector::ApplyRuntimeSelectionLocked() {
  if (!rt_select_ok_ || !rt_select_dirty_.exchange(false, std::memory_order_acq_rel)) return;
  for (uint32_t cbid = 1; cbid < kMaxWatchedCbid; ++cbid) {
    uint8_t bits = rt_api_[cbid].load(std::memory_order_acquire);
    bool off = (bits & kRtOff) != 0;
    bool leave_out = (bits & kRtFed) != 0 && (bits & kRtUnfed) == 0 && !rt_select_failed_;
    if (leave_out == off) continue;
    if (leave_out) {
      // Marked first: a callback that still sees the id clear is sure its
      // record comes (CUPTI stops recording it only after this).
      rt_api_[cbid].fetch_or(kRtOff, std::memory_order_seq_cst);
      CUptiResult r = api_.ActivityEnableRuntimeApi(cbid, 0);
      if (r != CUPTI_SUCCESS) {
        // Keep today's records: this id, and no other from now on.
        rt_api_[cbid].fetch_and(static_cast<uint8_t>(~kRtOff), std::memory_order_seq_cst);
        rt_select_failed_ = true;
        Log().info("cuptiActivityEnableRuntimeApi({}, 0) returned {}; RUNTIME records of wrapped calls stay on",
                   cbid, ResultName(api_, r));
      }
    } else if (api_.ActivityEnableRuntimeApi(cbid, 1) == CUPTI_SUCCESS) {
      rt_api_[cbid].fetch_and(static_cast<uint8_t>(~kRtOff), std::memory_order_seq_cst);
    } else {
      // Still left out: calls no wrapper records keep getting built records.
      rt_select_dirty_.store(true, std::memory_order_relaxed);
    }
  }
}

void CuptiCollector::FlushLocked(bool forced) {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  CUptiResult r = api_.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (r != CUPTI_SUCCESS) Log().debug("cuptiActivityFlushAll returned {}", ResultName(api_, r));
  ReadCuptiDropsLocked();
}

void CuptiCollector::ReadCuptiDropsLocked() {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  size_t dropped = 0;
  if (api_.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    cupti_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  }
}

bool CuptiCollector::HasCallbackWhileRecording(bool runtime, uint32_t cbid) {
  // libprof's own device queries are subscribed while recording too
  // (EnableCallbacks); an application's call of them is awaited.
  if (cbid == (runtime ? CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020 : CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice)) {
    return true;
  }
  for (const uint32_t* id = runtime ? RuntimeCallbackIds() : DriverWorkCallbackIds(); *id != 0; ++id) {
    if (*id == cbid) return true;
  }
  return false;
}

void CuptiCollector::ForceFlushAndDrain() {
  {
    std::lock_guard<std::mutex> control(control_mutex_);
    FlushLocked(/*forced=*/true);
  }
  std::lock_guard<std::mutex> decode(decode_mutex_);
  DrainCompletedLocked();
}

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

bool CuptiCollector::MayHaveDroppedRecords() const {
  return pool_->refused() != refused_reported_ ||
         cupti_dropped_.load(std::memory_order_relaxed) != dropped_reported_;
}

void CuptiCollector::OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // No locks but the pool's leaf mutex: CUPTI may ask from inside a flush
  // that holds control_mutex_.
  *max_records = 0;
  if (!pool_) return;
  *buffer = pool_->Acquire(NowNs());
  *size = *buffer != nullptr ? pool_->buffer_bytes() : 0;
}

void CuptiCollector::OnBufferCompleted(uint8_t* buffer, size_t, size_t valid_size) {
  // Hand over only: decoding happens on the writer thread (CollectWindow).
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(completed_mutex_);
  completed_.push_back(Completed{buffer, valid_size});
}

// ---- decoding and windows (writer thread) ----

void CuptiCollector::DrainCompletedLocked() {
  std::vector<Completed> batch;
  {
    std::lock_guard<std::mutex> lock(completed_mutex_);
    batch.swap(completed_);
  }
  DecodeContext context{&names_, &clock_, &layouts_};
  auto hold = [&](const DeviceRecord& record) {
    // libprof's own calls (the writer's version and device queries) are
    // not the application's.
    if (IsApiRecord(record) && IsLibprofThread(record.thread_id)) return;
    // libprof's own calls on application threads (OwnCudaCall).
    if (record.correlation_id != 0 && registry_->IsOwn(record.correlation_id)) return;
    if (record.correlation_id != 0 && IsDeviceWork(record)) registry_->MarkDelivered(record.correlation_id);
    if (record.correlation_id != 0 && IsApiRecord(record)) registry_->MarkApiDelivered(record.correlation_id);
    uint64_t launch_ns = record.start_ns;
    if (record.correlation_id != 0 && !registry_->EnterNs(record.correlation_id, &launch_ns) &&
        IsDeviceWork(record) && registry_->overflowed() == 0) {
      // Device work of a call the registry never saw: it entered while no
      // window was recording (a wait step; its device work was enqueued
      // after recording resumed), or its window was sealed already. No
      // window holds that call, so none holds its record.
      launch_ns = 0;
    }
    if (IsApiRecord(record) && launch_ns >= sealed_start_ns_ && launch_ns < sealed_end_ns_ &&
        !HasCallbackWhileRecording(static_cast<DeviceKind>(record.kind) == DeviceKind::kRuntimeApi, record.cbid)) {
      // A call with no callback of the window sealed last, whose record came
      // after the window was written: not silent (awaited calls' records
      // are counted missing when their window is sealed).
      if (late_api_records_.fetch_add(1, std::memory_order_relaxed) == 0) {
        Log().warn("a call's CUPTI record came after its window was written (its thread was descheduled between the "
                   "call's return and the record, a busy machine); such records are counted and logged at exit");
      }
      return;
    }
    if (pending_.slots() >= max_pending_) pending_.Compact();
    if (pending_.slots() >= max_pending_) {
      ++dropped_by_launch_[launch_ns >> kDropBucketShift];
      return;
    }
    // Reserved whole (address space only: pages count once written), so
    // growth never holds an old and a new copy at once.
    pending_.Reserve(max_pending_);
    pending_.Append(record, launch_ns);
  };
  // Records built from callbacks (BuildIfLeftOut) first: CUPTI's own of the
  // same call, written after its exit callback, is then dropped below.
  std::vector<CUpti_ActivityAPI> built;
  {
    std::lock_guard<std::mutex> lock(synth_mutex_);
    built.swap(synth_);
  }
  for (const CUpti_ActivityAPI& a : built) {
    LaunchRegistry::ApiState state;
    if (registry_->LookUpApi(a.correlationId, &state) && state.api_record_delivered) continue;  // CUPTI's came
    DeviceRecord record;
    if (DecodeActivity(reinterpret_cast<const CUpti_Activity&>(a), context, &record) != DecodeStatus::kRecord) continue;
    synth_ids_.push_back(a.correlationId);
    hold(record);
  }
  for (const Completed& done : batch) {
    bool scratch = pool_->IsScratch(done.buffer);
    CUpti_Activity* activity = nullptr;
    while (done.valid_size > 0 &&
           api_.ActivityGetNextRecord(done.buffer, done.valid_size, &activity) == CUPTI_SUCCESS) {
      if (scratch) {
        ++own_dropped_;
        continue;
      }
      DeviceRecord record;
      switch (DecodeActivity(*activity, context, &record)) {
        case DecodeStatus::kRecord:
          break;
        case DecodeStatus::kFiltered:
          continue;
        case DecodeStatus::kNoTimestamp: {
          // A forced flush hands over records of work still running (CUPTI
          // documents it); those are of calls made after the window's own
          // records were in, which no window holds. Only an untimed record of
          // a call some window recorded is that window's loss.
          uint64_t launch_ns = 0;
          if (record.correlation_id != 0 && IsDeviceWork(record) && !registry_->IsOwn(record.correlation_id) &&
              registry_->EnterNs(record.correlation_id, &launch_ns)) {
            registry_->MarkDelivered(record.correlation_id);  // it came: not also "never delivered"
            untimed_launch_ns_.push_back(launch_ns);
          }
          continue;
        }
        case DecodeStatus::kUnknownKind:
          ++unknown_kinds_;
          continue;
      }
      if (!synth_ids_.empty() && IsApiRecord(record)) {
        auto built_id = std::find(synth_ids_.begin(), synth_ids_.end(), record.correlation_id);
        if (built_id != synth_ids_.end()) {
          synth_ids_.erase(built_id);  // held already, built from the callbacks
          continue;
        }
      }
      hold(record);
    }
    // Raw and decoded records share the device side's memory: once they
    // would together exceed the raw pool's cap (a window larger than the
    // pool), a decoded buffer's pages go back to the kernel, so decoding
    // turns raw memory into decoded memory instead of adding to it. Small
    // windows never reach this, and CUPTI refills resident buffers first.
    size_t decoded_bytes = pending_.live() * (sizeof(DeviceRecord) + sizeof(uint64_t));
    pool_->Release(done.buffer, done.valid_size,
                   /*evict=*/decoded_bytes + pool_->resident_bytes() > pool_->cap_bytes());
  }
}

void CuptiCollector::CollectWindowImpl(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) {
  out->meta.cupti_api_version = cupti_version_;
  if (!loaded_ || state_.load(std::memory_order_acquire) == CollectorState::kOff) {
    out->meta.cupti_mode =
        loaded_ || state() == CollectorState::kOff ? Mode() : "interception-only (CUPTI was not attached)";
    out->meta.has_gpu_timings = false;
    return;
  }
  uint64_t outstanding = 0;
  auto poll = std::chrono::milliseconds(1);
  bool stopped = false;
  uint64_t returned_ns = 0;  // when every call of the window had returned
  // Calls with no callback (cudaGetLastError, the launch configuration
  // calls) are not awaited, but their records are the window's too: by
  // settled_ns those made before end_ns have been written (a thread
  // descheduled for longer between such a call's return and CUPTI writing
  // its record delivers it after its window was sealed: counted then).
  uint64_t settled_ns = end_ns + ((config_.activities & (kActRuntime | kActDriver)) != 0 ? kApiRecordGraceNs : 0);
  uint64_t forced_ns = 0;      // the last forced flush: what CUPTI wrote before it is delivered
  // Force the next flush if no later window records (checked under the lock
  // Attach takes): what a forced flush delivers untimed is then only work of
  // calls between windows, while it would cost a later window its times.
  bool force_if_last = false;
  LaunchRegistry::Pending pending;
  for (;;) {
    {
      std::lock_guard<std::mutex> control(control_mutex_);
      bool force = force_if_last && NoLaterWindowRecords();
      force_if_last = false;
      FlushLocked(/*forced=*/force);
      if (force) forced_ns = NowNs();
    }
    {
      std::lock_guard<std::mutex> decode(decode_mutex_);
      DrainCompletedLocked();
      outstanding = registry_->Outstanding(start_ns, end_ns, &pending);
    }
    bool timed_out = NowNs() >= deadline_ns;
    // Every call of the window returned, so all its device work is enqueued:
    // recording may stop (if the window's end paused it). Records of what is
    // enqueued keep coming. Not before settled_ns: a call with no callback
    // still running (its thread descheduled) would lose its record.
    if (!stopped && ((pending.in_progress == 0 && NowNs() >= settled_ns) || timed_out ||
                     exited_.load(std::memory_order_acquire))) {
      std::lock_guard<std::mutex> control(control_mutex_);
      stopped = StopIfPausedLocked(/*collecting=*/true);
      if (stopped) continue;  // flush and look again at once
    }
    // Done once the device records and the calls' own API records (written
    // as each call returns) are in. API records CUPTI dropped never come: once
    // every call returned, they get a short grace, not the whole deadline.
    if (pending.in_progress == 0 && returned_ns == 0) returned_ns = NowNs();
    bool api_done = pending.api_records == 0 ||
                    (returned_ns != 0 && NowNs() - returned_ns > kApiRecordGraceNs && MayHaveDroppedRecords());
    bool awaited_in = outstanding == 0 && pending.in_progress == 0 && api_done;
    // A record of a call with no callback, written by settled_ns, may sit in
    // a buffer CUPTI still holds: one it fills, or one that also holds a
    // record of device work still running, which a plain flush keeps back
    // until that work ends (CUPTI's documented flush). So the window is
    // complete once every buffer CUPTI had by then came back, or a forced
    // flush ran after it.
    // Exiting: the process waits on this window; its threads are ending.
    bool settled = NowNs() >= settled_ns || exited_.load(std::memory_order_acquire);
    bool held = forced_ns < settled_ns && pool_->HeldSince(settled_ns);
    if (awaited_in && settled && !held) break;
    if (timed_out) {
      // Out of time with a buffer still out: force it out. Records of work
      // still running come untimed, and are counted by their windows.
      if (held) {
        ForceFlushAndDrain();
        std::lock_guard<std::mutex> decode(decode_mutex_);
        outstanding = registry_->Outstanding(start_ns, end_ns, &pending);
      }
      break;
    }
    // Every call returned and its device records are in, but some API
    // records are not: they may sit in a buffer a plain flush does not
    // deliver (one holding records of work still running), so the next flush
    // is forced if that costs nothing. Else, and for a buffer still held
    // below, the window waits for CUPTI to hand the buffer over by itself
    // (full, or its work done), and forces it at the deadline.
    force_if_last = outstanding == 0 && pending.in_progress == 0 && pending.api_records > 0;
    if (awaited_in && settled && NoLaterWindowRecords()) {
      force_if_last = true;
      continue;  // at once: nothing else is awaited
    }
    // Detached (the process is exiting): the detach's forced flush was the
    // last delivery; waiting longer would only cost the window the exit
    // path's bounded wait for the writer. It may have come after this
    // round's decoding: decode it, then stop.
    if (state_.load(std::memory_order_acquire) == CollectorState::kDetached) {
      std::lock_guard<std::mutex> decode(decode_mutex_);
      DrainCompletedLocked();
      outstanding = registry_->Outstanding(start_ns, end_ns, &pending);
      break;
    }
    // Records still on their way (GPU busy, CUPTI's worker): poll, bounded,
    // backing off to 16 ms (each poll flushes and scans the window's calls).
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(16));
  }
  if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing) {
    // The last window: force out what CUPTI still holds (half-filled
    // buffers), since nothing more will come after the detach.
    ForceFlushAndDrain();
    std::lock_guard<std::mutex> decode(decode_mutex_);
    outstanding = registry_->Outstanding(start_ns, end_ns, &pending);
  }

  std::lock_guard<std::mutex> decode(decode_mutex_);
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
  wrapped_ids_.clear();
  registry_->WrappedCalls(start_ns, end_ns, &wrapped_ids_);
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

  LossCounts& losses = out->meta.losses;
  losses.device_records_missing += outstanding;
  losses.api_records_missing += pending.api_records;
  refused_reported_ = pool_->refused();
  losses.device_records_dropped += own_dropped_;
  std::erase_if(untimed_launch_ns_, [&](uint64_t launch_ns) {
    if (launch_ns >= end_ns) return false;  // a later window's
    if (launch_ns >= start_ns) ++losses.device_records_untimed;
    return true;
  });
  // Budget drops of calls launched in this window; later windows' stay for
  // them, earlier ones (warmup, between windows) would have been discarded
  // anyway and are forgotten.
  for (auto it = dropped_by_launch_.begin();
       it != dropped_by_launch_.end() && (it->first << kDropBucketShift) < end_ns;
       it = dropped_by_launch_.erase(it)) {
    if (it->first >= (start_ns >> kDropBucketShift)) losses.device_records_dropped += it->second;
  }
  uint64_t dropped_total = cupti_dropped_.load(std::memory_order_relaxed);
  uint64_t warmup = warmup_dropped_.exchange(0, std::memory_order_relaxed);
  uint64_t window_dropped = dropped_total - dropped_reported_;
  window_dropped = window_dropped > warmup ? window_dropped - warmup : 0;
  dropped_reported_ = dropped_total;
  losses.cupti_records_dropped += window_dropped;
  losses.unknown_activity_kinds += unknown_kinds_;
  own_dropped_ = unknown_kinds_ = 0;
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

}  // namespace prof::cupti
