// The CUPTI collector's activity kinds: which kinds PROF_ACTIVITIES turns
// on, and which runtime ids' RUNTIME records CUPTI is told to leave out
// (calls a recording wrapper shows: README.md, "RUNTIME records of wrapped
// calls"). Everything here runs with control_mutex_ held (Attach,
// BeginRecord, a window's stop and its end).
#include <algorithm>
#include <string>
#include <vector>

#include "base/log.h"
#include "collectors/cupti/activity_collector.h"

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

}  // namespace

void CuptiCollector::EnableActivities(bool enable) {
  kinds_wanted_ = enable;
  if (enable && !enabled_kinds_.empty()) return;  // still on: a pause that never stopped
  if (!enable) {
    // Only while the activity API is libprof's: held by another client,
    // the kinds are that client's to turn off (collector_sharing.cpp).
    if (ActivityOursLocked()) {
      for (CUpti_ActivityKind kind : enabled_kinds_) SetKindLocked(kind, /*on=*/false);
    }
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
  // Another client holds the activity API: the kinds come on when it is
  // given back (TakeBackLocked).
  if (!ActivityOursLocked()) return;
  std::string failed;
  for (CUpti_ActivityKind kind : KindsFor(config_.activities)) {
    CUptiResult r = SetKindLocked(kind, /*on=*/true);
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(kind);
    } else {
      failed += (failed.empty() ? "" : ", ") + std::to_string(static_cast<int>(kind)) + ": " + ResultName(api_, r);
    }
  }
  if (!failed.empty()) Log().warn("CUPTI refused some activity kinds ({}); their records are missing", failed);
  // Records built from callbacks carry gettid and agent-clock times, as
  // CUPTI's do only with both of these. Not as a subscriber beside others:
  // cuptiActivityEnableRuntimeApi has no subscriber, it would choose for
  // the process-wide client (the program's torch.profiler).
  rt_select_ok_ = api_.ActivityEnableRuntimeApi != nullptr && !rt_select_failed_ && thread_ids_system_ &&
                  agent_clock_ && !multi_client_.load(std::memory_order_relaxed) &&
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

}  // namespace prof::cupti
