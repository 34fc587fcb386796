// The CUPTI collector, part one: loading libcupti, subscribing and
// registering, which callback ids are on (all while recording, the watched
// ones while waiting), Attach/WatchCalls, and the DeviceCollector interface
// (every entry guarded: nothing escapes into the host). The other parts are
// named in collector_parts.h.
#include "collectors/cupti/cupti_collector.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/log.h"
#include "base/runtime_frames.h"
#include "model/observed_event.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/api_classes.h"
#include "collectors/cupti/call_arguments.h"
#include "collectors/cupti/collector_parts.h"
#include "collectors/cupti/cupti_loader.h"

namespace prof::cupti {

// CUPTI's buffer callbacks carry no user data: they reach the one collector
// that registered them through this pointer (one collector per process).
std::atomic<CuptiCollector*> g_buffer_owner{nullptr};

uint64_t CUPTIAPI AgentTimestamp() { return NowNs(); }

namespace {

// Safety net for an exit that comes between the end of the schedule and the
// next CUDA call (where cuptiFinalize would run): release the subscriber so
// nothing stays enabled. Registered once, after the agent's own exit handler,
// so it runs first and the agent can still collect the flushed records.
//
// It runs on the exiting thread, and a forced flush waits for CUPTI to hand
// back every buffer, which a late CUPTI can make take a minute: the release
// runs on a helper thread and the exit waits for it at most
// kExitReleaseBudget (the agent's own exit work is bounded separately).
constexpr auto kExitReleaseBudget = std::chrono::seconds(1);

void ReleaseAtExit() {
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  if (owner == nullptr) return;
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  try {
    std::thread([owner, done] {
      owner->OnExit();
      std::lock_guard<std::mutex> lock(done->mu);
      done->done = true;
      done->cv.notify_all();
    }).detach();
  } catch (...) {
    return;  // no thread: skip the release rather than risk the host's exit
  }
  std::unique_lock<std::mutex> lock(done->mu);
  done->cv.wait_for(lock, kExitReleaseBudget, [&] { return done->done; });
}

// The optional entry points a CUPTI lacks, for one log line ("" if none).
std::string MissingOptional(const CuptiApi& api) {
  std::string missing;
  auto note = [&missing](bool absent, const char* what) {
    if (absent) missing += std::string(missing.empty() ? "" : "; ") + what;
  };
  note(api.SubscribeV2 == nullptr, "cuptiSubscribe_v2 (CUPTI 13+): subscribing with cuptiSubscribe, a refusal cannot name the other tool");
  note(api.ActivityRegisterTimestampCallback == nullptr,
       "cuptiActivityRegisterTimestampCallback: CUPTI times mapped by paired clock samples");
  note(api.Finalize == nullptr, "cuptiFinalize: CUPTI stays attached after the last window");
  note(api.SetThreadIdType == nullptr, "cuptiSetThreadIdType: API records carry pthread ids");
  note(api.ActivitySetAttribute == nullptr, "cuptiActivitySetAttribute: CUPTI clears each buffer itself");
  note(api.ActivityEnableRuntimeApi == nullptr,
       "cuptiActivityEnableRuntimeApi: RUNTIME records are written for calls the wrappers record too");
  note(api.GetResultString == nullptr, "cuptiGetResultString: results logged as numbers");
  return missing;
}

// Whether a call of this class leaves a record of an enabled kind behind.
bool ExpectsRecord(ApiClass c, uint32_t activities) {
  switch (c) {
    case ApiClass::kLaunch:
      return (activities & kActKernel) != 0;
    case ApiClass::kMemcpy:
      return (activities & kActMemcpy) != 0;
    case ApiClass::kMemset:
      return (activities & kActMemset) != 0;
    default:
      return false;
  }
}

}  // namespace

CuptiCollector::CuptiCollector(Loader loader) : loader_(std::move(loader)) {}

CuptiCollector::~CuptiCollector() {
  CuptiCollector* self = this;
  g_buffer_owner.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
  ForgetSharingCollector(this);
}

// ---- control (application thread) ----

void CuptiCollector::GoOff(const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(mode_mutex_);
    if (!off_cause_.empty()) return;
    off_cause_ = cause;
  }
  state_.store(CollectorState::kOff, std::memory_order_release);
  callbacks_live_.store(false, std::memory_order_release);
  Log().warn(
      "CUPTI unavailable: {}; running interception-only (API calls and allocations keep host "
      "timestamps, no GPU timings)",
      cause);
}

bool CuptiCollector::LoadAndCheckVersion(const Config& config) {
  if (loaded_) return true;
  std::string cause;
  if (!loader_(config, &api_, &cause)) {
    GoOff(cause);
    return false;
  }
  CUptiResult result = api_.GetVersion(&cupti_version_);
  if (result != CUPTI_SUCCESS) {
    GoOff("cuptiGetVersion failed in " + api_.path + ": " + ResultName(api_, result));
    return false;
  }
  if (!LayoutsFor(cupti_version_, &layouts_)) {
    std::string release = CuptiRelease(cupti_version_);
    GoOff(api_.path + " reports CUPTI API version " + std::to_string(cupti_version_) +
          (release.empty() ? std::string() : " (CUDA " + release + ")") + ", outside the range libprof decodes (" +
          SupportedCuptiRange() + "); set PROF_CUPTI_LIB to a CUPTI in that range");
    return false;
  }
  loaded_ = true;
  Log().debug("CUPTI: {} ({}), API version {} (CUDA {}); records read as {}", api_.path, api_.found_by,
             cupti_version_, CuptiRelease(cupti_version_), DescribeLayouts(layouts_));
  std::string missing = MissingOptional(api_);
  if (!missing.empty()) Log().info("CUPTI {} lacks optional functions: {}", api_.path, missing);
  size_t half = std::max<size_t>(config.buffer_bytes / 2, 1);
  // The pool of raw CUPTI buffers, the launch registry and the decoded
  // records share PROF_BUFFER_MB with the host-side buffers: half of it
  // here, a quarter for raw buffers and a quarter for the registry's ring
  // plus the decoded records (one copy: the window takes them by move).
  // CUPTI accepts a NULL buffer from API version 27 on (every 13.x does);
  // older ones get scratch buffers whose records are counted and discarded.
  pool_ = std::make_unique<BufferPool>(half / 2, /*null_allowed=*/cupti_version_ >= 27);
  size_t registry_calls = std::max<size_t>(half / 256, 16384);
  registry_ = std::make_unique<LaunchRegistry>(registry_calls);
  size_t registry_bytes = LaunchRegistry::BytesFor(registry_calls);
  size_t decoded_bytes = half / 2 > registry_bytes ? half / 2 - registry_bytes : 0;
  max_pending_ = std::max<size_t>(decoded_bytes / (sizeof(DeviceRecord) + sizeof(uint64_t)), 1024);
  return true;
}

bool CuptiCollector::MultipleSubscribersAllowed() const {
  uint8_t state = 0;
  size_t size = sizeof(state);
  // CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE: 1 when allowed.
  return api_.ActivityGetAttributeV2(subscriber_,
                                     static_cast<CUpti_ActivityAttribute>(v13_2::kAttrMultipleSubscriberState), &size,
                                     &state) == CUPTI_SUCCESS &&
         state == 1;
}

bool CuptiCollector::Subscribe() {
  CUptiResult result;
  const char* how = "cuptiSubscribe";
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  // CUPTI 13.2 lets subscribers that ask for it in beside each other, each
  // with an activity client of its own: asked for wherever the library has
  // the functions such a subscriber needs (cupti_13_2.h). An older one
  // reads 13.0's 32 bytes of the parameters.
  const bool ask_multi = cupti_version_ >= v13_2::kFirstVersion && api_.HasMultiSubscriber();
  if (api_.SubscribeV2 != nullptr) {
    how = "cuptiSubscribe_v2";
    v13_2::SubscriberParams params;
    std::memset(&params, 0, sizeof(params));
    params.structSize = ask_multi ? sizeof(v13_2::SubscriberParams) : CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "libprof";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
    params.allowMultipleSubscribers = ask_multi ? 1 : 0;
    result = api_.SubscribeV2(&subscriber_, CallbackTrampoline, this, reinterpret_cast<CUpti_SubscriberParams*>(&params));
  } else {
    result = api_.Subscribe(&subscriber_, CallbackTrampoline, this);
  }
  if (result == CUPTI_SUCCESS) {
    // Let in: beside others only if CUPTI says several subscribers are
    // allowed now (a 13.2 that reads 13.0's parameters, or limits activity
    // to one subscriber, answers otherwise).
    bool multi = ask_multi && MultipleSubscribersAllowed();
    bool was_multi = multi_client_.exchange(multi, std::memory_order_acq_rel);
    if (multi) {
      NoteProcessClockBaselineLocked();
      // A claim the program made before is no concern of libprof's own client.
      if (activity_elsewhere_.exchange(false, std::memory_order_acq_rel)) CloseElsewhereSpan(NowNs());
      if (!was_multi) {
        Log().info("CUPTI {}: subscribed beside other tools (allowMultipleSubscribers{}): libprof's GPU records come "
                   "through an activity client of its own, the program's torch.profiler or another tool records at "
                   "the same time",
                   CuptiRelease(cupti_version_), holder[0] != '\0' ? std::string(", first subscriber ") + holder : "");
      }
    }
    return true;
  }
  subscriber_ = nullptr;
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    std::string who = holder[0] != '\0' ? std::string(" (") + holder + ")" : std::string();
    GoOff("another tool already holds CUPTI" + who + ", e.g. Nsight, torch.profiler or DCGM");
  } else if (result == CUPTI_ERROR_UNKNOWN || result == CUPTI_ERROR_NOT_INITIALIZED) {
    // What NVIDIA's libcupti answers on a machine without a driver (999).
    // Say what happened, with the file; guess at the cause only when the
    // process has no driver loaded at all.
    std::string what = std::string(how) + " in " + api_.path + " returned " + ResultName(api_, result);
    GoOff(DriverLoaded() ? what : what + "; no CUDA driver is loaded in this process (libcuda.so.1)");
  } else {
    GoOff(std::string(how) + " in " + api_.path + " returned " + ResultName(api_, result));
  }
  return false;
}

void CuptiCollector::EnableCallbacks(bool enable) {
  SetCallbacks(enable);
  // libprof's own device queries (base/device_collector.h: OwnCudaCall) are
  // seen while recording, so their records are known as libprof's and
  // dropped. Not subscribed while only watching calls for step markers: a
  // program that asks for its device constantly pays nothing then.
  uint32_t on = enable ? 1 : 0;
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020);
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice);
  callbacks_live_.store(enable, std::memory_order_release);
  if (enable) on_epoch_.fetch_add(1, std::memory_order_release);
}

void CuptiCollector::SetCallbacks(bool enable) {
  uint32_t on = enable ? 1 : 0;
  if (enable) {
    for (const uint32_t* id = RuntimeCallbackIds(); *id != 0; ++id) {
      api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
    }
  } else {
    CUptiResult r = api_.EnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (r != CUPTI_SUCCESS) Log().debug("cuptiEnableDomain(runtime, 0) returned {}", ResultName(api_, r));
  }
  // Driver calls that launch or copy: gives work a library launched through
  // the driver API (cuBLAS, Triton) a launch time too.
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id) {
    api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  }
  // Context destruction: flush first so its records survive.
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  // Calls in progress now lose their exit callbacks (see OnApiEnter).
  if (!enable) off_epoch_.fetch_add(1, std::memory_order_relaxed);
}

void CuptiCollector::ComputeWatchedLocked() {
  uint32_t classes = 0;
  switch (config_.step_source) {
    case StepSource::kSync: classes = ClassBit(ApiClass::kSync); break;
    case StepSource::kKernel: classes = ClassBit(ApiClass::kLaunch); break;
    case StepSource::kApi: classes = ClassesOfCallsNamed(BaseApiName(ApiName(config_.step_api))); break;
    case StepSource::kAuto:
      // The detector's tokens: launches, copies and memsets at enter, synchronize returns.
      classes = ClassBit(ApiClass::kLaunch) | ClassBit(ApiClass::kMemcpy) | ClassBit(ApiClass::kMemset) |
                ClassBit(ApiClass::kSync);
      break;
    default: break;
  }
  // Which hot bits make a wrapper feed a call of each watched id to the
  // marker path (intercept.h): seen unfed while one of them is set, the call
  // reached no wrapper. Under api:<fn> only fn's own calls (the wrappers
  // pass the others of its class through unfed).
  std::string_view api_base =
      config_.step_source == StepSource::kApi ? BaseApiName(ApiName(config_.step_api)) : std::string_view();
  for (int d = 0; d < 2; ++d) {
    ApiDomain domain = d == 0 ? ApiDomain::kRuntime : ApiDomain::kDriver;
    for (auto& w : watched_[d]) w.store(0, std::memory_order_relaxed);
    for (auto& u : unfed_sign_[d]) u.store(0, std::memory_order_relaxed);
    for (uint32_t id : CallbackIdsOfClasses(domain, classes)) {
      if (id >= kMaxWatchedCbid) continue;
      watched_[d][id].store(1, std::memory_order_relaxed);
      const char* name = CallbackName(domain, id);
      uint32_t bits = 0;
      switch (ClassifyCallback(domain, id)) {
        case ApiClass::kLaunch: bits = kHotLaunchMarker; break;
        case ApiClass::kMemcpy:
        case ApiClass::kMemset: bits = kHotCopyMarker; break;
        case ApiClass::kSync: bits = kHotSyncMarker; break;
        default: break;
      }
      if (!api_base.empty() && name != nullptr && BaseApiName(name) == api_base) bits |= kHotApiMarker;
      unfed_sign_[d][id].store(bits, std::memory_order_relaxed);
    }
  }
  if (config_.range_kind == RangeKind::kProfilerApi) {
    // PROF_RANGE=cudaProfilerApi: the range edges, whatever PROF_STEP watches.
    for (uint32_t id : {static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000),
                        static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)}) {
      if (id >= kMaxWatchedCbid) continue;
      watched_[0][id].store(1, std::memory_order_relaxed);
      unfed_sign_[0][id].store(kHotRangeMarker, std::memory_order_relaxed);
    }
    for (uint32_t id : {static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart),
                        static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)}) {
      if (id >= kMaxWatchedCbid) continue;
      watched_[1][id].store(1, std::memory_order_relaxed);
      unfed_sign_[1][id].store(kHotRangeMarker, std::memory_order_relaxed);
    }
  }
}

void CuptiCollector::SetConfigLocked(const Config& config) {
  config_ = config;
  for (int d = 0; d < 2; ++d) {
    for (uint32_t id = 0; id < kMaxWatchedCbid; ++id) {
      call_traits_[d][id].store(TraitsOf(/*runtime=*/d == 0, id), std::memory_order_relaxed);
      host_api_[d][id].store(static_cast<uint8_t>(HostApiOf(/*runtime=*/d == 0, id)), std::memory_order_relaxed);
    }
  }
}

uint8_t CuptiCollector::TraitsOf(bool runtime, CUpti_CallbackId cbid) const {
  ApiClass c = ClassifyCallback(runtime ? ApiDomain::kRuntime : ApiDomain::kDriver, cbid);
  uint8_t traits = 0;
  if (ExpectsRecord(c, config_.activities)) {
    LaunchRegistry::Awaits awaits = c == ApiClass::kMemcpy   ? LaunchRegistry::Awaits::kMemcpy
                                    : c == ApiClass::kMemset ? LaunchRegistry::Awaits::kMemset
                                                             : LaunchRegistry::Awaits::kKernel;
    traits |= kTraitExpectsRecord | static_cast<uint8_t>(static_cast<uint8_t>(awaits) << kTraitAwaitsShift);
  }
  if (c == ApiClass::kMemcpy || c == ApiClass::kMemset) traits |= kTraitCountsBytes;
  if ((config_.activities & (runtime ? kActRuntime : kActDriver)) != 0) traits |= kTraitExpectsApiRecord;
  if (HostApiOf(runtime, cbid) != ApiId::kCount) traits |= kTraitHostEvent;
  return traits;
}

void CuptiCollector::EnableWatchedCallbacks() {
  for (const uint32_t* id = RuntimeCallbackIds(); *id != 0; ++id) {
    if (Watched(/*runtime=*/true, *id)) api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  }
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id) {
    if (Watched(/*runtime=*/false, *id)) api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  }
  on_epoch_.fetch_add(1, std::memory_order_release);
}

void CuptiCollector::NarrowToWatchedCallbacks() {
  // Id by id, never the whole domain off and the watched ids on again: a
  // marker call on another thread in between would be missed.
  for (const uint32_t* id = RuntimeCallbackIds(); *id != 0; ++id) {
    if (!Watched(/*runtime=*/true, *id)) api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  }
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id) {
    if (!Watched(/*runtime=*/false, *id)) api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  }
  api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  // Bumped once the ids are off, not before: a call that entered while
  // its id was still on (even after the narrowing began) took the old epoch
  // and is seen as stale; one that entered since cannot be an unwatched one.
  narrow_epoch_.fetch_add(1, std::memory_order_release);
}

bool CuptiCollector::SubscribeAndRegister(CollectorState state) {
  if (exited_.load(std::memory_order_acquire)) return false;  // released at exit: for good
  // Subscribe before registering anything: a refused subscriber must not
  // take another tool's buffers or timestamps.
  if (!Subscribe()) return false;
  // Graph nodes created and cloned, whenever subscribed (graph_sites.h): a
  // graph is usually captured long before the windows that replay it. Both
  // fire only as graphs are built, never per replay. A launch captured while
  // recording is also one that puts nothing in flight.
  api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  // A new session may count correlation ids from 1 again; nothing of the
  // last one is awaited any more (its windows were collected).
  if (state == CollectorState::kDetached) {
    registry_->Clear();
    // Nor are the sealed windows' ids the new session's.
    std::lock_guard<std::mutex> decode(decode_mutex_);
    sealed_spans_.fill(SealedSpan{});
  }
  subscribed_pid_ = getpid();
  static std::once_flag exit_hook;
  std::call_once(exit_hook, [] { std::atexit(ReleaseAtExit); });
  if (!multi_client_.load(std::memory_order_relaxed)) {
    // The program's own client of the activity API (activity_user.h) may
    // have come first: while it has kinds on, it keeps the API.
    UserClient user = SnapshotUserClient();
    if (user.claimed) {
      other_client_seen_ = true;
      if (user.kinds.any() && !activity_elsewhere_.load(std::memory_order_relaxed)) {
        YieldLocked(user.who, "its kinds were on when libprof attached");
      }
    }
    // Held by another client: libprof registers when it is released.
    if (activity_elsewhere_.load(std::memory_order_relaxed)) return true;
  }
  if (!RegisterActivityLocked()) {
    api_.Unsubscribe(subscriber_);
    subscriber_ = nullptr;
    return false;
  }
  return true;
}

void CuptiCollector::AttachImpl(const Config& config) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  CollectorState state = state_.load(std::memory_order_acquire);
  if (state == CollectorState::kOff || state == CollectorState::kAttached) return;
  if (state == CollectorState::kIdle) SetConfigLocked(config);
  if (!LoadAndCheckVersion(config_)) return;

  if ((state == CollectorState::kIdle || state == CollectorState::kDetached) && !SubscribeAndRegister(state)) return;
  // From kQuiet: the window's calls are a probe too (its callbacks see which
  // calls wrappers fed), so the steps counted before it still count.
  if (state == CollectorState::kQuiet && !ResubscribeLocked(/*new_probe=*/false)) return;
  finalize_after_ns_.store(~0ull, std::memory_order_release);
  quiet_pending_.store(false, std::memory_order_relaxed);  // recording instead
  stop_pending_ = false;  // the last window's pause never stopped: keep going
  // Another client libprof cannot see may have taken the activity API
  // since libprof last used it: its kinds must not be touched then.
  ForeignClockLocked();
  ReadCuptiDropsLocked();
  EnableCallbacks(true);
  EnableActivities(true);
  ApplyRuntimeSelectionLocked();
  state_.store(CollectorState::kAttached, std::memory_order_release);
}

void CuptiCollector::WatchCallsImpl(const Config& config) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  CollectorState state = state_.load(std::memory_order_acquire);
  if (state == CollectorState::kOff || state == CollectorState::kFinishing || state == CollectorState::kQuiet) return;
  if (state == CollectorState::kIdle) SetConfigLocked(config);
  if (!LoadAndCheckVersion(config_)) return;
  // PROF_STEP=auto names a launch by its kernel as the wrappers do, so it
  // finds the same loop and names its marker the same way.
  name_launches_ = config_.step_source == StepSource::kKernel || config_.step_source == StepSource::kAuto;
  ComputeWatchedLocked();
  loads_seen_ = LoadedObjects();
  watching_calls_.store(true, std::memory_order_release);
  if (state == CollectorState::kIdle || state == CollectorState::kDetached) {
    if (!SubscribeAndRegister(state)) {
      watching_calls_.store(false, std::memory_order_release);
      return;
    }
    // Subscribed, no activity kinds: what a pause between windows is.
    state_.store(CollectorState::kPaused, std::memory_order_release);
  }
  // The watched ids on; callbacks_live_ stays as it is (off between
  // windows: the calls feed the marker path, nothing is registered or
  // recorded). A window recording (or still to stop) keeps every id on
  // until it stops (StopIfPausedLocked narrows then).
  if (state_.load(std::memory_order_acquire) != CollectorState::kAttached && !stop_pending_) EnableWatchedCallbacks();
}

std::string CuptiCollector::Mode() const {
  std::lock_guard<std::mutex> lock(mode_mutex_);
  return off_cause_.empty() ? std::string("activity") : "interception-only (" + off_cause_ + ")";
}

// ---- the DeviceCollector interface: nothing escapes into the host ----

template <typename Fn>
void CuptiCollector::Guarded(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    GoOffNoThrow(std::string(what) + " failed: " + e.what());
  } catch (...) {
    GoOffNoThrow(std::string(what) + " failed");
  }
}

void CuptiCollector::GoOffNoThrow(const std::string& cause) {
  try {
    // A part that failed must not leave CUPTI attached behind it.
    std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
    if (lock.owns_lock()) DetachLocked(/*finalize=*/false);
  } catch (...) {
  }
  try {
    GoOff(cause);
  } catch (...) {
    state_.store(CollectorState::kOff, std::memory_order_release);
    callbacks_live_.store(false, std::memory_order_release);
  }
}

void CuptiCollector::Attach(const Config& config) {
  Guarded("Attach", [&] { AttachImpl(config); });
}
void CuptiCollector::WatchCalls(const Config& config) {
  Guarded("WatchCalls", [&] { WatchCallsImpl(config); });
}
void CuptiCollector::BeginRecord(uint64_t start_ns) {
  Guarded("BeginRecord", [&] { BeginRecordImpl(start_ns); });
}
void CuptiCollector::Pause() {
  Guarded("Pause", [&] { PauseImpl(); });
}
void CuptiCollector::Finish() {
  Guarded("Finish", [&] { FinishImpl(); });
}
void CuptiCollector::OnWaitingStep() {
  Guarded("OnWaitingStep", [&] { OnWaitingStepImpl(); });
}
void CuptiCollector::Tick(uint64_t now_ns) {
  Guarded("Tick", [&] { TickImpl(now_ns); });
}
void CuptiCollector::OnExit() {
  Guarded("OnExit", [&] { OnExitImpl(); });
}
void CuptiCollector::CollectWindow(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) {
  Guarded("CollectWindow", [&] { CollectWindowImpl(start_ns, end_ns, deadline_ns, out); });
}

void CuptiCollector::TakeWrappedCalls(std::vector<uint32_t>* ids) {
  ids->swap(wrapped_ids_);
  wrapped_ids_.clear();
}

}  // namespace prof::cupti

namespace prof {

std::unique_ptr<DeviceCollector> MakeCuptiCollector() {
  auto collector =
      std::make_unique<cupti::CuptiCollector>([](const Config& config, cupti::CuptiApi* api, std::string* cause) {
        return cupti::LoadCupti(cupti::ProcessSearch(config.cupti_lib), api, cause);
      });
  collector->SetRuntimeOnStack(&RuntimeOnThisStack);
  // The program's own calls of CUPTI's activity API (under LD_PRELOAD) are
  // reported to this collector.
  cupti::SetSharingCollector(collector.get());
  return collector;
}

}  // namespace prof

