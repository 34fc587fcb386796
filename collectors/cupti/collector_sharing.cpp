// The CUPTI collector beside another client of CUPTI's activity API (the
// program's own torch.profiler, Nsight Systems): README.md, "Another
// profiler in the process".
//
//  - CUPTI 13.2 with several subscribers: libprof is one of them, with an
//    activity client of its own (its kinds, buffers, clock, thread-id type
//    through the _v2 functions); it never calls what would change another
//    client's state (cuptiActivityEnableRuntimeApi, the process-wide clock,
//    cuptiFinalize) and forces no flush while another client records.
//  - One client (CUPTI 13.0, 12.x): the program's profiler comes first.
//    When it claims the activity API (activity_user.h) libprof disables its
//    kinds, flushes its own buffers out of CUPTI's hands and hands the API
//    over as the program left it (its callbacks, clock, thread ids, zeroed
//    buffers); while the program holds it libprof touches nothing of it and
//    its windows count the launches whose records went to the program; when
//    the program releases it libprof registers itself again and resumes.
//  - A client libprof cannot see (CUDA_INJECTION64_PATH) is sensed: the
//    timestamps CUPTI reports left libprof's clock (the other client
//    registered its own callback), or libprof's buffers were not asked for
//    while records were due. It is given the API for the rest of the process.
//
// Everything here runs with control_mutex_ held, but the span bookkeeping
// (spans_mutex_, a leaf) that the writer thread reads.
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/collector_parts.h"

namespace prof::cupti {

namespace {

// Farther than this from its value when libprof registered its timestamp
// callback, cuptiGetTimestamp - NowNs means the callback is not libprof's.
constexpr int64_t kForeignClockNs = 100'000'000;

// CUPTI's own clock on Linux when no client registered one
// (cupti_activity.h, cuptiActivityRegisterTimestampCallback: "Linux ... uses
// clock_gettime(CLOCK_REALTIME)"): what a program that registered none
// gets back when libprof hands the activity API over (a callback cannot be
// unregistered: NULL is CUPTI_ERROR_INVALID_PARAMETER).
uint64_t CUPTIAPI CuptiDefaultClock() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// cuptiGetTimestamp minus the agent clock, bracketed.
bool ClockOffset(const CuptiApi& api, int64_t* offset_ns, uint64_t* at_ns) {
  uint64_t before = NowNs();
  uint64_t cupti = 0;
  if (api.GetTimestamp == nullptr || api.GetTimestamp(&cupti) != CUPTI_SUCCESS) return false;
  uint64_t after = NowNs();
  *at_ns = after;
  *offset_ns = static_cast<int64_t>(cupti - (before / 2 + after / 2));
  return true;
}

}  // namespace

void CuptiCollector::SyncActivityOursLocked() {
  activity_ours_.store(ActivityOursLocked(), std::memory_order_release);
}

bool CuptiCollector::RegisterActivityLocked() {
  const bool multi = multi_client_.load(std::memory_order_relaxed);
  // The clock first: it must be in place before any kind is enabled.
  CUpti_TimestampCallbackFunc clock_fn = AgentTimestamp;
  size_t size = sizeof(clock_fn);
  if (multi) {
    // CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK: "for the specified subscriber".
    agent_clock_ = api_.ActivitySetAttributeV2(subscriber_, static_cast<CUpti_ActivityAttribute>(v13_2::kAttrTimestampCallback),
                                               &size, &clock_fn) == CUPTI_SUCCESS;
  } else {
    agent_clock_ = api_.ActivityRegisterTimestampCallback != nullptr &&
                   api_.ActivityRegisterTimestampCallback(AgentTimestamp) == CUPTI_SUCCESS;
  }
  if (agent_clock_) {
    clock_ = ClockMap();
  } else if (multi) {
    // This client's default timer is CUPTI's own (CLOCK_REALTIME); the
    // process-wide cuptiGetTimestamp may be another client's clock.
    clock_.Calibrate(NowNs, [](uint64_t* ns) {
      *ns = CuptiDefaultClock();
      return true;
    });
  } else {
    clock_.Calibrate(NowNs, [this](uint64_t* ns) { return api_.GetTimestamp(ns) == CUPTI_SUCCESS; });
  }
  if (!agent_clock_) {
    Log().info("CUPTI timestamps mapped onto the agent clock by paired samples (offset {} ns, +-{} ns)",
               clock_.offset_ns(), clock_.uncertainty_ns());
  }
  // API records carry the OS thread id (gettid), as host events do;
  // CUPTI's default is pthread_self().
  CUpti_ActivityThreadIdType system = CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
  size = sizeof(system);
  thread_ids_system_ = multi ? api_.ActivitySetAttributeV2(subscriber_, static_cast<CUpti_ActivityAttribute>(v13_2::kAttrThreadIdType),
                                                           &size, &system) == CUPTI_SUCCESS
                             : api_.SetThreadIdType != nullptr && api_.SetThreadIdType(system) == CUPTI_SUCCESS;
  // Our buffers come zeroed (fresh pages, and the decoding thread clears
  // what CUPTI wrote before a buffer goes back): otherwise CUPTI zeroes
  // each whole buffer on the thread that asked for it, a stall NVIDIA
  // documents, on an application thread.
  uint8_t zeroed = 1;
  size = sizeof(zeroed);
  if (multi) {
    api_.ActivitySetAttributeV2(subscriber_, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  } else if (api_.ActivitySetAttribute != nullptr) {
    api_.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  }
  g_buffer_owner.store(this, std::memory_order_release);
  CUptiResult r = multi ? api_.ActivityRegisterCallbacksV2(subscriber_, BufferRequestedV2Trampoline,
                                                            BufferCompletedV2Trampoline)
                        : api_.ActivityRegisterCallbacks(BufferRequestedTrampoline, BufferCompletedTrampoline);
  if (r != CUPTI_SUCCESS) {
    GoOff(std::string(multi ? "cuptiActivityRegisterCallbacks_v2" : "cuptiActivityRegisterCallbacks") +
          " returned " + ResultName(api_, r));
    return false;
  }
  activity_registered_ = true;
  if (!multi) NoteClockBaselineLocked();
  SyncActivityOursLocked();
  return true;
}

CUptiResult CuptiCollector::SetKindLocked(CUpti_ActivityKind kind, bool on) {
  if (multi_client_.load(std::memory_order_relaxed)) {
    return on ? api_.ActivityEnableV2(subscriber_, kind, nullptr) : api_.ActivityDisableV2(subscriber_, kind, nullptr);
  }
  return on ? api_.ActivityEnable(kind) : api_.ActivityDisable(kind);
}

bool CuptiCollector::OthersRecordingLocked() const {
  if (!multi_client_.load(std::memory_order_relaxed)) return false;
  if (api_.ActivityGetEnabledKinds == nullptr) return true;
  // The union of every client's kinds ("subscriber NULL"). Room for 256
  // whether CUPTI reads the size as a count or in bytes.
  CUpti_ActivityKind kinds[256] = {};
  uint32_t room = 256;
  uint32_t count = 0;
  if (api_.ActivityGetEnabledKinds(nullptr, kinds, &room, &count) != CUPTI_SUCCESS) return true;
  for (uint32_t i = 0; i < std::min<uint32_t>(count, 256); ++i) {
    if (std::find(enabled_kinds_.begin(), enabled_kinds_.end(), kinds[i]) == enabled_kinds_.end()) return true;
  }
  // Every kind on is one of libprof's: another client with only those is
  // not told apart (README: what is not guarded against).
  return false;
}

void CuptiCollector::OpenElsewhereSpan(uint64_t since_ns) {
  std::lock_guard<std::mutex> lock(spans_mutex_);
  elsewhere_spans_.emplace_back(since_ns, ~0ull);
}

void CuptiCollector::CloseElsewhereSpan(uint64_t until_ns) {
  std::lock_guard<std::mutex> lock(spans_mutex_);
  if (!elsewhere_spans_.empty() && elsewhere_spans_.back().second == ~0ull) elsewhere_spans_.back().second = until_ns;
}

uint64_t CuptiCollector::ElsewhereOutstanding(uint64_t start_ns, uint64_t end_ns, LaunchRegistry::Pending* pending) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  {
    std::lock_guard<std::mutex> lock(spans_mutex_);
    // Spans that ended before every window still collectable are done with.
    std::erase_if(elsewhere_spans_, [start_ns](const auto& s) { return s.second <= start_ns; });
    spans = elsewhere_spans_;
  }
  uint64_t launches = 0;
  for (const auto& [since, until] : spans) {
    uint64_t from = std::max(since, start_ns);
    uint64_t to = std::min(until, end_ns);
    if (from < to) launches += registry_->Outstanding(from, to, pending);
  }
  return launches;
}

void CuptiCollector::YieldLocked(const std::string& who, const std::string& call) {
  other_client_seen_ = true;  // from now on, cuptiFinalize is never libprof's to call
  if (multi_client_.load(std::memory_order_relaxed) || activity_elsewhere_.load(std::memory_order_relaxed)) return;
  uint64_t now = NowNs();
  if (activity_registered_) {
    // libprof's records out of CUPTI's hands before the program's callbacks
    // replace libprof's: a buffer CUPTI still held would go to the program,
    // and fill with the program's records there.
    bool recording = kinds_wanted_;
    EnableActivities(false);
    kinds_wanted_ = recording;  // what TakeBackLocked restores
    CUptiResult r = api_.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) Log().debug("cuptiActivityFlushAll(forced) returned {}", ResultName(api_, r));
    ReadCuptiDropsLocked();
    RestoreUserSettingsLocked(SnapshotUserClient());
    activity_registered_ = false;
  }
  activity_elsewhere_.store(true, std::memory_order_release);
  elsewhere_holder_ = who;
  OpenElsewhereSpan(now);
  SyncActivityOursLocked();
  Log().info(
      "CUPTI's activity API claimed by {} ({}): CUPTI {} lets one client use it, so libprof hands it over as the "
      "program left it and records CUDA calls without GPU activity until the program releases it; each window says "
      "how many launches' GPU records went to the program",
      who, call, cupti_version_ != 0 ? CuptiRelease(cupti_version_) : std::string("(not loaded yet)"));
}

void CuptiCollector::RestoreUserSettingsLocked(const UserClient& user) {
  // What libprof changed, back to the program's choice or CUPTI's default,
  // before the program's own call goes on.
  if (thread_ids_system_ && api_.SetThreadIdType != nullptr) {
    api_.SetThreadIdType(user.thread_id_set ? user.thread_id : CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  }
  if (api_.ActivitySetAttribute != nullptr) {
    // libprof's zeroed-buffer promise is not the program's (CUPTI's default: 0).
    if (user.attributes.count(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) == 0) {
      uint8_t zeroed = 0;
      size_t size = sizeof(zeroed);
      api_.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
    }
    // And what the program set while libprof held the API, in its order of attributes.
    for (const auto& [attr, bytes] : user.attributes) {
      std::vector<uint8_t> value = bytes;
      size_t size = value.size();
      api_.ActivitySetAttribute(static_cast<CUpti_ActivityAttribute>(attr), &size, value.data());
    }
  }
  if (agent_clock_ && api_.ActivityRegisterTimestampCallback != nullptr) {
    api_.ActivityRegisterTimestampCallback(user.timestamp != nullptr ? user.timestamp : CuptiDefaultClock);
  }
  // Its buffer callbacks, if it registered any before (a program that
  // claims with cuptiActivityEnable after libprof took the API back). Until
  // it registers some, libprof's bufferRequested answers NULL, as CUPTI
  // without callbacks would drop the records.
  if (user.request != nullptr && user.complete != nullptr) api_.ActivityRegisterCallbacks(user.request, user.complete);
}

void CuptiCollector::TakeBackLocked() {
  if (multi_client_.load(std::memory_order_relaxed) || !activity_elsewhere_.load(std::memory_order_relaxed) ||
      elsewhere_for_good_) {
    return;
  }
  activity_elsewhere_.store(false, std::memory_order_release);
  CloseElsewhereSpan(NowNs());
  if (loaded_ && Subscribed(state_.load(std::memory_order_acquire))) {
    if (!RegisterActivityLocked()) return;
    if (kinds_wanted_) {
      EnableActivities(true);
      ApplyRuntimeSelectionLocked();
    }
  }
  SyncActivityOursLocked();
  Log().info("CUPTI's activity API released by {}: libprof records GPU activity again", elsewhere_holder_);
}

void CuptiCollector::SenseElsewhereLocked(const std::string& why, uint64_t since_ns) {
  if (multi_client_.load(std::memory_order_relaxed) || activity_elsewhere_.load(std::memory_order_relaxed)) return;
  other_client_seen_ = true;
  elsewhere_for_good_ = true;
  // The registration and the kinds may be the other client's now: libprof
  // turns nothing off (it could be what that client turned on).
  activity_registered_ = false;
  enabled_kinds_.clear();
  rt_select_ok_ = false;
  activity_elsewhere_.store(true, std::memory_order_release);
  elsewhere_holder_ = "a client libprof cannot see";
  OpenElsewhereSpan(since_ns);
  SyncActivityOursLocked();
  // CUPTI fills a buffer of libprof's it still holds before it asks the
  // other client's callbacks for one: hand the complete ones over now (to
  // those callbacks), so its records go to its own buffers sooner. Not
  // forced: that would hand it its records of work still running untimed.
  if (loaded_) api_.ActivityFlushAll(0);
  Log().warn(
      "CUPTI's activity API is held by another client libprof cannot see ({}); CUPTI {} lets one client use it, and "
      "without LD_PRELOAD libprof cannot tell when it is released, so libprof leaves it alone for the rest of the "
      "process and records CUDA calls without GPU activity (run under LD_PRELOAD, or with a CUPTI that allows several "
      "subscribers, 13.2, to record both)",
      why, CuptiRelease(cupti_version_));
}

void CuptiCollector::NoteClockBaselineLocked() {
  clock_baseline_ok_ = agent_clock_ && ClockOffset(api_, &clock_baseline_ns_, &clock_ok_ns_);
}

bool CuptiCollector::ForeignClockLocked() {
  if (multi_client_.load(std::memory_order_relaxed) || !ActivityOursLocked() || !clock_baseline_ok_) return false;
  int64_t offset = 0;
  uint64_t at = 0;
  if (!ClockOffset(api_, &offset, &at)) return false;
  if (std::llabs(offset - clock_baseline_ns_) <= kForeignClockNs) {
    clock_ok_ns_ = at;
    return false;
  }
  SenseElsewhereLocked("the times CUPTI reports left libprof's clock: another client registered its own timestamp "
                       "callback",
                       clock_ok_ns_);
  return true;
}

bool CuptiCollector::MayFinalizeLocked() {
  if (other_client_seen_ || SnapshotUserClient().claimed) return false;
  if (!multi_client_.load(std::memory_order_relaxed)) return !ForeignClockLocked();
  // Beside others: only when no client has a kind on (libprof's went with
  // its subscription) and nobody registered a process-wide clock since
  // libprof subscribed (torch.profiler keeps its own between sessions).
  uint32_t kinds = 0;
  int64_t offset = 0;
  uint64_t at = 0;
  if (api_.ActivityGetEnabledKinds == nullptr ||
      api_.ActivityGetEnabledKinds(nullptr, nullptr, nullptr, &kinds) != CUPTI_SUCCESS || kinds != 0) {
    return false;
  }
  return process_clock_baseline_ok_ && ClockOffset(api_, &offset, &at) &&
         std::llabs(offset - process_clock_baseline_ns_) <= kForeignClockNs;
}

void CuptiCollector::NoteProcessClockBaselineLocked() {
  // The first subscription's: a later one may already see another client's clock.
  if (!process_clock_baseline_ok_) {
    uint64_t at = 0;
    process_clock_baseline_ok_ = ClockOffset(api_, &process_clock_baseline_ns_, &at);
  }
}

void CuptiCollector::ReturnHeldBuffersLocked() {
  if (multi_client_.load(std::memory_order_relaxed) || !ActivityOursLocked() || !enabled_kinds_.empty() ||
      stop_pending_ || !pool_ ||
      windows_collected_.load(std::memory_order_acquire) < windows_begun_.load(std::memory_order_acquire)) {
    return;
  }
  // What a held buffer has is of calls between windows (or after the last),
  // which no window keeps: forcing it out untimed costs nothing.
  if (pool_->HeldSince(~0ull)) FlushLocked(/*forced=*/true);
}

// ---- the program's own client (activity_user.h), on its thread ----

void CuptiCollector::OnOtherClientClaims(const std::string& call) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  YieldLocked(SnapshotUserClient().who, call);
}

CUptiResult CuptiCollector::OtherClientSetting(const std::function<CUptiResult()>& forward) {
  // Under the lock: libprof must not register itself between the look and
  // the call (CUPTI runs no client code in these calls).
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (!multi_client_.load(std::memory_order_relaxed) && ActivityOursLocked()) return CUPTI_SUCCESS;
  return forward();
}

bool CuptiCollector::HoldsActivityApi() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  return !multi_client_.load(std::memory_order_relaxed) && ActivityOursLocked();
}

void CuptiCollector::OnOtherClientReleased() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  TakeBackLocked();
}

void CuptiCollector::OnOtherClientFinalizing() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  other_client_seen_ = true;
  // CUPTI drops what it has not delivered: libprof's records first.
  if (ActivityOursLocked() && Subscribed(state_.load(std::memory_order_acquire))) FlushLocked(/*forced=*/true);
}

void CuptiCollector::OnOtherClientFinalized() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  // CUPTI forgot every subscriber, kind, callback and clock.
  activity_registered_ = false;
  enabled_kinds_.clear();
  rt_select_ok_ = false;
  if (activity_elsewhere_.load(std::memory_order_relaxed) && !elsewhere_for_good_) {
    activity_elsewhere_.store(false, std::memory_order_release);
    CloseElsewhereSpan(NowNs());
  }
  SyncActivityOursLocked();
  CollectorState state = state_.load(std::memory_order_acquire);
  if (!Subscribed(state)) return;
  subscriber_ = nullptr;
  callbacks_live_.store(false, std::memory_order_release);
  off_epoch_.fetch_add(1, std::memory_order_relaxed);
  finalize_after_ns_.store(~0ull, std::memory_order_release);
  state_.store(CollectorState::kDetached, std::memory_order_release);
  Log().info("the program called cuptiFinalize, which detaches every CUPTI client: libprof subscribes again at its "
             "next window");
}

}  // namespace prof::cupti
