// The CUPTI-backed DeviceCollector. Construction loads nothing; the first
// Attach finds libcupti (through the Loader, so tests hand a fake table),
// subscribes and enables what Config::activities asks for.
//
// State machine (state_):
//   kIdle --Attach--> kAttached --BeginRecord--> kAttached --Pause--> kPaused
//   kPaused --Attach--> kAttached;  any attached state --Finish--> kFinishing
//   kFinishing --(first API exit after the last window was collected, or
//   after flush_timeout)--> kDetached (flush, unsubscribe, cuptiFinalize)
//   kDetached --Attach--> kAttached (a new cycle armed by a trigger file)
//   kPaused --OnWaitingStep (calls watched, every one fed by a wrapper for
//   kProbeSteps steps), then the next API exit--> kQuiet (detached:
//   unsubscribed and cuptiFinalize, as at the schedule's end)
//   kQuiet --Attach--> kAttached;  kQuiet --Tick (new libraries, or the
//   re-probe interval)--> kPaused;  kQuiet --Finish--> kDetached
//   any --failure--> kOff (interception-only, for good, one warning)
//
// CUPTI's activity API, shared (collector_sharing.cpp, README "Another
// profiler in the process"): on a CUPTI 13.2 that lets several subscribers
// in, libprof is a subscriber beside others with an activity client of its
// own (multi_client_). On one that allows one client, the program's own
// profiler comes first: when it claims the process-wide activity API
// (activity_user.h, seen under LD_PRELOAD) libprof hands it over as the
// program left it (YieldLocked), keeps recording what it still can (calls,
// host events; its windows count the launches whose records went elsewhere)
// and takes it back when the program releases it (TakeBackLocked). Another
// client libprof cannot see (CUDA_INJECTION64_PATH) is sensed instead (its
// timestamp callback replaced libprof's, or libprof's buffer requests went
// quiet while records were due) and given the API for good.
//
// Locks, outermost first (never taken in the other order):
//   control_mutex_  Attach/Pause/Finish/OnExit, flushes, finalize. CUPTI is
//                   called while holding it, and CUPTI may call
//                   OnBufferCompleted/OnBufferRequested from inside those
//                   calls, so those two never take it. API callbacks only
//                   try_lock it.
//   decode_mutex_   pending_, names_, loss counters of decoding.
//   completed_mutex_, synth_mutex_, BufferPool, mode_mutex_: leaves.
//                   LaunchRegistry takes no lock (application threads write
//                   it from API callbacks).
#pragma once

#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/api_ids.h"
#include "base/hot_state.h"
#include "base/device_collector.h"
#include "collectors/cupti/activity_user.h"
#include "collectors/cupti/buffer_pool.h"
#include "collectors/cupti/clock_map.h"
#include "collectors/cupti/cupti_api.h"
#include "collectors/cupti/graph_sites.h"
#include "collectors/cupti/launch_registry.h"
#include "collectors/cupti/loss_ledger.h"
#include "collectors/cupti/name_table.h"
#include "collectors/cupti/pending_records.h"
#include "collectors/cupti/record_layouts.h"
#include "collectors/cupti/window_collection.h"

namespace prof::cupti {

struct CallbackThread;  // the API callbacks' per-thread state (collector_callbacks.cpp)
struct DecodeContext;   // activity_decoder.h

enum class CollectorState : uint8_t { kIdle, kAttached, kPaused, kFinishing, kDetached, kOff, kQuiet };

class CuptiCollector final : public DeviceCollector {
 public:
  // Fills *api or returns false with a one-line cause.
  using Loader = std::function<bool(const Config& config, CuptiApi* api, std::string* cause)>;

  explicit CuptiCollector(Loader loader);
  ~CuptiCollector() override;

  void Attach(const Config& config) override;
  void WatchCalls(const Config& config) override;
  void BeginRecord(uint64_t start_ns) override;
  void Pause() override;
  void Finish() override;
  void NoteRuntimeCallInProgress() override;
  // RuntimeOnThisStack, or a test's stand-in (a unit test has no libcudart).
  void SetRuntimeOnStack(bool (*fn)()) { runtime_on_stack_ = fn; }
  void OnWaitingStep() override;
  bool WantsWaitingSteps() const override;
  void Tick(uint64_t now_ns) override;
  void CollectWindow(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) override;
  void TakeWrappedCalls(std::vector<uint32_t>* ids) override;
  void OnExit() override;
  std::string Mode() const override;

  // Entered from CUPTI through the static trampolines. The API callbacks:
  // an API call's enter and exit (t: the calling thread's state), one of
  // libprof's own calls (OwnCudaCall), and the resource domain.
  void OnApiEnter(CallbackThread& t, bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  void OnApiExit(CallbackThread& t, bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  void OnOwnCall(const CUpti_CallbackData* info);
  void OnResourceCallback(CUpti_CallbackId cbid, const void* data);
  void OnGraphNode(CUpti_CallbackId cbid, const CUpti_GraphData& graph);
  void OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  void OnBufferCompleted(uint8_t* buffer, size_t size, size_t valid_size);

  // The program's own client of CUPTI's process-wide activity API
  // (activity_user.h), on the program's thread: it is about to set the
  // activity API's state (call: the function), it released the API (a
  // forced flush with none of its kinds on), and it is finalizing CUPTI /
  // did. Each takes control_mutex_; never called from CUPTI's callbacks.
  void OnOtherClientClaims(const std::string& call);
  void OnOtherClientReleased();
  void OnOtherClientFinalizing();
  void OnOtherClientFinalized();
  // One of the program's calls that set the activity API's state (its
  // clock, thread ids, an attribute, a disable): forwarded now, or, while
  // libprof holds the activity API, kept (activity_user.h) for the
  // hand-over and answered CUPTI_SUCCESS.
  CUptiResult OtherClientSetting(const std::function<CUptiResult()>& forward);
  // libprof holds CUPTI's process-wide activity API now (one client allowed).
  bool HoldsActivityApi();
  // Subscribed beside other tools, with an activity client of libprof's own
  // (CUPTI 13.2's allowMultipleSubscribers).
  bool multi_client() const { return multi_client_.load(std::memory_order_acquire); }
  // Another client holds CUPTI's process-wide activity API now.
  bool activity_elsewhere() const { return activity_elsewhere_.load(std::memory_order_acquire); }

  CollectorState state() const { return state_.load(std::memory_order_acquire); }
  // Decoded records held at most (budget, fixed at the first attach).
  size_t decoded_capacity() const { return max_pending_; }
  // Raw buffers whose pages were handed back after decoding (0 before attach).
  uint64_t raw_buffers_evicted() const { return pool_ ? pool_->evictions() : 0; }
  // Records of calls with no callback that came after their window was sealed.
  uint64_t late_api_records() const { return late_api_records_.load(std::memory_order_relaxed); }
  // GPU records of a sealed window's calls that came after it was written.
  uint64_t late_device_records() const { return late_device_records_.load(std::memory_order_relaxed); }
  const ClockMap& clock() const { return clock_; }
  static constexpr uint32_t kProbeStepsForTest = 3;
  // At exit, with a window still to be collected: how long threads get to
  // write the records of calls they returned from (OnExitImpl).
  static constexpr uint64_t kExitSettleNs = 10'000'000;

 private:
  struct Completed {
    uint8_t* buffer;
    size_t valid_size;
  };

  void AttachImpl(const Config& config);
  void WatchCallsImpl(const Config& config);
  void BeginRecordImpl(uint64_t start_ns);
  void PauseImpl();
  void FinishImpl();
  void OnWaitingStepImpl();
  void TickImpl(uint64_t now_ns);
  void OnExitImpl();
  void CollectWindowImpl(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out);
  // Runs fn; an exception switches the collector off (one warning).
  template <typename Fn>
  void Guarded(const char* what, Fn&& fn);
  void GoOffNoThrow(const std::string& cause);

  // All with control_mutex_ held.
  // Takes the configuration (kIdle only: it is fixed from the first Attach
  // or WatchCalls on) and fills call_traits_ from it.
  void SetConfigLocked(const Config& config);
  bool LoadAndCheckVersion(const Config& config);
  // As "libprof", beside others (allowMultipleSubscribers) where CUPTI 13.2
  // allows it.
  bool Subscribe();
  // Subscribed, CUPTI says several subscribers are allowed (13.2).
  bool MultipleSubscribersAllowed() const;
  // Subscribe and register timestamps, buffers and thread ids (kIdle,
  // kDetached); false (and kOff) on failure.
  bool SubscribeAndRegister(CollectorState state);
  // Turns the callback ids on/off; callbacks_live_ is the caller's.
  void SetCallbacks(bool enable);
  void EnableCallbacks(bool enable);
  // While calls are watched and no window records, only the ids the step
  // source can be marked by (and the runtime calls of the same classes, in
  // which such a driver call nests) stay on: the rest cost the application
  // a callback per call for nothing. Sets watched_ from config_.
  void ComputeWatchedLocked();
  // Turns the watched ids on (from nothing) / the others off (from all).
  void EnableWatchedCallbacks();
  void NarrowToWatchedCallbacks();
  // What a call of the id registers while recording (kTrait* bits).
  uint8_t TraitsOf(bool runtime, CUpti_CallbackId cbid) const;
  // The call of an id as model/api_ids.h names it (ApiId::kCount: none).
  ApiId HostApi(bool runtime, CUpti_CallbackId cbid) const {
    return cbid < kMaxWatchedCbid
               ? static_cast<ApiId>(host_api_[runtime ? 0 : 1][cbid].load(std::memory_order_relaxed))
               : ApiId::kCount;
  }
  uint8_t CallTraits(bool runtime, CUpti_CallbackId cbid) const {
    return cbid < kMaxWatchedCbid ? call_traits_[runtime ? 0 : 1][cbid].load(std::memory_order_relaxed)
                                  : TraitsOf(runtime, cbid);
  }
  bool Watched(bool runtime, CUpti_CallbackId cbid) const {
    return cbid < kMaxWatchedCbid && watched_[runtime ? 0 : 1][cbid].load(std::memory_order_relaxed) != 0;
  }
  void EnableActivities(bool enable);
  void FlushLocked(bool forced);

  // Sharing CUPTI's activity API (collector_sharing.cpp), control_mutex_ held.
  // Registers libprof's buffer callbacks, clock, thread-id type and zeroed
  // buffers: with the process-wide functions, or its own client's _v2 ones.
  bool RegisterActivityLocked();
  void SyncActivityOursLocked();  // activity_ours_ = ActivityOursLocked()
  CUptiResult SetKindLocked(CUpti_ActivityKind kind, bool on);
  // libprof may call the activity API now: its registration is CUPTI's and
  // no other client holds the process-wide API.
  bool ActivityOursLocked() const { return activity_registered_ && !activity_elsewhere_.load(std::memory_order_relaxed); }
  // Multi: another client has kinds on (a forced flush would hand it
  // records of work still running, untimed).
  bool OthersRecordingLocked() const;
  // Classic: hands the process-wide activity API to the program's client,
  // as it left it (libprof's records flushed out first), until it releases it.
  void YieldLocked(const std::string& who, const std::string& call);
  void RestoreUserSettingsLocked(const UserClient& user);
  void TakeBackLocked();
  // Classic: another client libprof cannot see holds the activity API
  // (why), since about since_ns: given to it for the rest of the process.
  void SenseElsewhereLocked(const std::string& why, uint64_t since_ns);
  // The clock CUPTI stamps records with is no longer libprof's (another
  // client registered its own timestamp callback); senses it.
  bool ForeignClockLocked();
  void NoteClockBaselineLocked();
  void NoteProcessClockBaselineLocked();
  // cuptiFinalize detaches every client: only when none other was ever seen.
  bool MayFinalizeLocked();
  // The launches of [start_ns, end_ns) made while another client held the
  // activity API and still awaited (their records went to it), and what
  // they still wait for (writer thread).
  uint64_t ElsewhereOutstanding(uint64_t start_ns, uint64_t end_ns, LaunchRegistry::Pending* pending);
  void OpenElsewhereSpan(uint64_t since_ns);
  void CloseElsewhereSpan(uint64_t until_ns);
  // Classic: recording stopped and every window begun collected: flushes
  // (forced) any buffer of libprof's CUPTI still holds, so that a client
  // registering its own callbacks later never gets one of them (CUPTI
  // fills the buffer it holds before asking the new callbacks for another).
  void ReturnHeldBuffersLocked();
  // The deferred half of Pause (stop_pending_), when the last window begun
  // is the one being collected (collecting) or was collected. Returns true
  // if it stopped.
  bool StopIfPausedLocked(bool collecting);
  void ReadCuptiDropsLocked();
  void DetachLocked(bool finalize);
  void GoOff(const std::string& cause);
  // kPaused -> kQuiet: detached while waiting (every watched call reaches a
  // wrapper): OnWaitingStep asks (quiet_pending_), the next API exit
  // finalizes. kQuiet -> kPaused: attached again with the watched ids on,
  // a new probe (new_probe: its step count starts again). False (and kOff)
  // when CUPTI refuses the subscriber.
  bool CanGoQuietLocked() const;
  void MaybeGoQuietFromApiExit();
  bool ResubscribeLocked(bool new_probe);
  // A call of a watched id that no wrapper fed, although the hot bits now
  // would have made a wrapper feed it (base/hot_state.h): so no wrapper saw
  // it. (A call the bits do not ask for is no sign: PROF_STEP=auto decided
  // on a marker that does not need its kind, api:<fn> and the other calls.)
  bool Unfed(bool runtime, CUpti_CallbackId cbid) const {
    return cbid < kMaxWatchedCbid &&
           (unfed_sign_[runtime ? 0 : 1][cbid].load(std::memory_order_relaxed) & LoadHotBits()) != 0;
  }

  // RUNTIME records of calls a wrapper recorded (rt_api_ below). The API
  // callbacks answer inline once a call's id is known on the call's side
  // (timed by a recording wrapper or not) and call these only otherwise.
  // The first call of an id on a side (fed: a recording wrapper timed it):
  // notes it and returns the id's bits.
  uint8_t NoteRuntimeSide(CUpti_CallbackId cbid, bool fed, uint8_t bits);
  // At the exit of a call no wrapper recorded, of an id a wrapper records:
  // when CUPTI was told to leave its record out (when it entered or now),
  // builds that record from the callbacks (synth_) and returns false (the
  // registry waits for no record of it); else true.
  bool BuildIfLeftOut(CUpti_CallbackId cbid, uint8_t bits, const CUpti_CallbackData* info);
  // control_mutex_: tells CUPTI which ids to leave out (or record again).
  void ApplyRuntimeSelectionLocked();

  // Decoding (collector_decode.cpp), with decode_mutex_ held: the buffers
  // CUPTI handed over and the records built from callbacks, into pending_.
  void DrainCompletedLocked();
  void HoldBuiltRecords(const DecodeContext& context);
  void DecodeBuffer(const Completed& done, const DecodeContext& context);
  // A decoded record CUPTI could not time, of a call some window recorded:
  // that window's loss.
  void NoteUntimed(const DeviceRecord& record);
  // Keeps a decoded record for the window its call was launched in (or
  // drops it: libprof's own calls, a sealed window's, past the budget).
  void HoldRecord(const DeviceRecord& record);
  // A GPU record of a call of a window sealed already (its call launched in
  // one's span; or forgotten, with an id among one's calls): counted late,
  // never held for a window that is gone.
  bool OfSealedWindowLocked(const DeviceRecord& record, bool call_known, uint64_t launch_ns) const;
  void NoteSealedLocked(uint64_t start_ns, uint64_t end_ns);

  // A window's collection (collector_window.cpp), on the writer thread:
  // performs what WindowCollection decides and seals the window.
  WindowCollection::Action Perform(const WindowCollection::Action& action, WindowCollection& collection,
                                   uint64_t start_ns, uint64_t end_ns);
  WindowCollection::Counts CountWindow(uint64_t start_ns, uint64_t end_ns, uint64_t settled_ns);
  void SealWindow(uint64_t start_ns, uint64_t end_ns, const WindowCollection& collection, Window* out);
  // With decode_mutex_ held: the window's records into out, in start order,
  // names in its string table; the registry forgets the window's calls.
  void MoveRecordsLocked(uint64_t start_ns, uint64_t end_ns, Window* out);
  void ForgetWindowLocked(uint64_t start_ns, uint64_t end_ns);

  // kQuiet is not subscribed.
  bool Subscribed(CollectorState state) const {
    return state == CollectorState::kAttached || state == CollectorState::kPaused ||
           state == CollectorState::kFinishing;
  }
  void MaybeFinalizeFromApiExit();
  // At the exit of a call no wrapper recorded (kTraitHostEvent, entered
  // while recording): the host event a wrapper would have written.
  void RecordHostEvent(CallbackThread& t, bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  // The marker path, for an outermost call no wrapper feeds.
  // Returns true when the call was a step marker.
  bool ObserveCall(bool enter, bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* info);

  Loader loader_;
  CuptiApi api_;
  // Sharing CUPTI's activity API. control_mutex_ unless atomic.
  std::atomic<bool> multi_client_{false};     // a subscriber beside others: activity calls through the _v2 functions
  bool activity_registered_ = false;          // libprof's buffer callbacks (clock, ...) are the ones CUPTI uses
  std::atomic<bool> activity_elsewhere_{false};  // classic: another client holds the process-wide activity API
  std::atomic<bool> activity_ours_{false};    // ActivityOursLocked(), for the callbacks (no lock)
  bool kinds_wanted_ = false;                 // the last EnableActivities asked for the kinds on
  bool elsewhere_for_good_ = false;           // sensed, not seen: never taken back
  bool other_client_seen_ = false;            // another activity client was ever seen or sensed: no cuptiFinalize
  std::string elsewhere_holder_;              // who holds it, for the log
  bool clock_baseline_ok_ = false;            // clock_baseline_ns_ holds cuptiGetTimestamp - NowNs with our callback
  int64_t clock_baseline_ns_ = 0;
  uint64_t clock_ok_ns_ = 0;                  // the last time the clock was found libprof's
  // Multi: cuptiGetTimestamp - NowNs when libprof first subscribed (the
  // process-wide client's clock: it moves when another client registers a
  // timestamp callback, which a cuptiFinalize would take from it).
  bool process_clock_baseline_ok_ = false;
  int64_t process_clock_baseline_ns_ = 0;
  // Quiet buffer requests (collector_window.cpp): the pool's requests when
  // the last window began recording (application thread, relaxed), and a
  // count found records due that none of libprof's buffers can hold (writer).
  std::atomic<uint64_t> requests_at_begin_{0};
  std::atomic<bool> quiet_requests_{false};
  // [since, until) agent-clock spans another client held the activity API
  // (until ~0: still); leaf mutex, read by the writer thread.
  std::mutex spans_mutex_;
  std::vector<std::pair<uint64_t, uint64_t>> elsewhere_spans_;
  // The last count's launches whose records went elsewhere (writer thread).
  uint64_t window_elsewhere_ = 0;
  bool loaded_ = false;
  uint32_t cupti_version_ = 0;
  RecordLayouts layouts_;  // each kind's struct for cupti_version_; set with it
  Config config_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  int subscribed_pid_ = 0;                         // the process that subscribed (a fork child is another)
  std::vector<CUpti_ActivityKind> enabled_kinds_;  // what EnableActivities turned on
  // Pause asked for recording to stop (control_mutex_). It stops only when
  // nothing launched inside the window can still produce a record: in
  // CollectWindow, once the window's calls have their device records and
  // their own API records (so a call still in progress at the window's end,
  // a blocking copy whose device work is enqueued after it, keeps its
  // records). A new window's Attach before that cancels it.
  bool stop_pending_ = false;

  std::atomic<CollectorState> state_{CollectorState::kIdle};
  // Set while the runtime/driver callbacks should do their work.
  std::atomic<bool> callbacks_live_{false};
  // Set from WatchCalls to Finish: API callbacks feed calls no wrapper saw to
  // the marker path, and stay enabled between windows for it.
  std::atomic<bool> watching_calls_{false};
  // Per domain (runtime, driver), per callback id: on while watching calls
  // between windows. Written under control_mutex_ before the ids are
  // enabled, read by callbacks (relaxed: set once, before it matters).
  static constexpr uint32_t kMaxWatchedCbid = 1024;
  std::atomic<uint8_t> watched_[2][kMaxWatchedCbid] = {};
  // Per domain and id: what the API-enter callback registers for a call of
  // it while recording, from its class (api_classes.h) and
  // config_.activities: one table load per call instead of classifying it
  // and asking which kinds are on. Filled by SetConfigLocked, before
  // anything is subscribed; read by callbacks (relaxed: never changes after).
  static constexpr uint8_t kTraitExpectsRecord = 1;     // leaves a kernel/memcpy/memset record of an enabled kind
  static constexpr uint8_t kTraitCountsBytes = 2;       // a copy or memset: leaves none when it moves zero bytes
  static constexpr uint8_t kTraitExpectsApiRecord = 4;  // its own RUNTIME/DRIVER record is enabled
  static constexpr uint8_t kTraitHostEvent = 8;         // a call of model/api_ids.h: a host event when no wrapper records it
  // With kTraitExpectsRecord, which record it awaits (LaunchRegistry::Awaits),
  // so what never comes is counted by kind.
  static constexpr int kTraitAwaitsShift = 4;
  static constexpr uint8_t kTraitAwaitsMask = 3 << kTraitAwaitsShift;
  std::atomic<uint8_t> call_traits_[2][kMaxWatchedCbid] = {};
  // Per domain and id: its ApiId (kCount: none), set with call_traits_.
  static_assert(kApiCount < 256, "an ApiId fits the table's bytes");
  std::atomic<uint8_t> host_api_[2][kMaxWatchedCbid] = {};
  bool name_launches_ = false;  // kernel: and auto: a launch fed to the marker path carries its kernel's name
  // Per domain and id: the hot bits under which a call of it that reaches
  // the callbacks unfed by a wrapper is a sign of calls no wrapper sees
  // (CUDA_INJECTION64_PATH, a statically linked cudart, a driver-API
  // program). Set with watched_.
  std::atomic<uint32_t> unfed_sign_[2][kMaxWatchedCbid] = {};
  // Waiting detached (kQuiet). CUPTI's per-call work while it is attached
  // (from the first subscribe to cuptiFinalize) is what a waiting
  // call-counting source paid; under
  // LD_PRELOAD the wrappers see every call that can be a marker unless a
  // sign above says otherwise. saw_unfed_ is sticky: once a call no wrapper
  // fed was seen, the collector stays subscribed while calls are watched.
  // probe_steps_: waiting step boundaries since the last (re)subscribe.
  std::atomic<bool> saw_unfed_{false};
  // OnWaitingStep decided to detach; the next API-exit callback does it.
  std::atomic<bool> quiet_pending_{false};
  std::atomic<uint32_t> probe_steps_{0};
  static constexpr uint32_t kProbeSteps = kProbeStepsForTest;
  // Re-probe (agent thread, kQuiet): when the process loaded a library since
  // the last look (dl_iterate_phdr's load count, taken at WatchCalls and at
  // each look while detached: a library loaded while attached makes the
  // first look after a detach probe once more), or at next_probe_ns_ (set
  // at each detach), whose interval doubles from 1 s to 64 s: a static
  // cudart whose calls begin late is seen within that bound.
  uint64_t loads_seen_ = 0;
  uint64_t next_probe_ns_ = 0;
  uint64_t probe_interval_ns_ = 1'000'000'000;
  // Bumped each time every callback goes off (EnableCallbacks(false) when
  // recording stops and no step source watches calls, DetachLocked): a call
  // in progress then never gets its exit callback (as with narrow_epoch_).
  // Bumped after the callbacks are off, so a call that entered before it
  // is seen as stale at its thread's next callback.
  std::atomic<uint32_t> off_epoch_{0};
  // Released at the process's exit (OnExit: CUPTI's own exit hook runs
  // before the agent's exit work). Nothing subscribes again after it: the
  // agent thread may still begin a step before its exit work ends the
  // session, and a new subscription would forget the calls of the windows
  // the writer has still to collect (their records, flushed at the release,
  // would belong to no window).
  std::atomic<bool> exited_{false};
  // Bumped each time callbacks come on after being off or narrowed (the
  // subscription, Attach, Finish, the watched ids): a thread's first driver
  // call seen at depth 0 since then may be inside a runtime call that
  // entered while the runtime's callbacks were off. Such a call's device
  // records carry the runtime call's id, which no window recorded: the
  // driver call must not wait for one. runtime_on_stack_ tells (once per
  // thread and bump; RuntimeOnThisStack, a test's stand-in). One count for
  // every collector of the process: a thread's last value never matches a
  // new collector's (a fork child's, a test's) by chance.
  static inline std::atomic<uint32_t> on_epoch_{0};
  bool (*runtime_on_stack_)() = nullptr;
  // Bumped each time callbacks are narrowed to the watched ids, once the
  // others are off: a thread whose outermost call was not watched and
  // entered before it may never get that call's exit callback, so its depth
  // counts are stale.
  std::atomic<uint32_t> narrow_epoch_{0};
  // kFinishing: the API-exit callback finalizes once NowNs() passes this.
  std::atomic<uint64_t> finalize_after_ns_{~0ull};
  // The last collected window's wrapper-timed calls (TakeWrappedCalls):
  // writer thread only.
  std::vector<uint32_t> wrapped_ids_;
  // Windows begun (BeginRecord) and collected (CollectWindow): when Finish
  // finds them equal, the writer already has the last window and CUPTI can
  // go at the next API exit. The writer may collect before or after Finish.
  std::atomic<uint64_t> windows_begun_{0};
  std::atomic<uint64_t> windows_collected_{0};

  // RUNTIME records of calls a wrapper recorded. Such a call is shown by the
  // wrapper's host event (same correlation id), so its RUNTIME record was
  // decoded, held, sorted and never shown (WindowIndex::ApiRecordShown), and
  // CUPTI wrote it on the application thread. Per runtime callback id:
  //   kRtFed    an outermost call of it reached the enter callback timed by a
  //             recording wrapper (tls_call_start_ns): a wrapper exists for it;
  //   kRtUnfed  a call of it reached the callbacks while recording without a
  //             wrapper timing it (nested in another runtime call, a static
  //             cudart, a dlopen'ed handle, CUDA_INJECTION64_PATH): its
  //             records are shown, so it is never left out again (sticky);
  //   kRtOff    CUPTI is told not to record it (cuptiActivityEnableRuntimeApi
  //             (cbid, 0)): set before that call, cleared after the one that
  //             records it again, so a callback that sees it clear is sure the
  //             record comes.
  // Ids with kRtFed and not kRtUnfed are left out (ApplyRuntimeSelectionLocked,
  // at Attach, BeginRecord and the end of CollectWindow: never from a
  // callback). A call of a kRtOff id that no wrapper recorded (the first ones
  // of a library that bypasses the wrappers) gets a record built from its
  // callbacks (synth_), unless CUPTI's own came anyway.
  static constexpr uint8_t kRtFed = 1;
  static constexpr uint8_t kRtUnfed = 2;
  static constexpr uint8_t kRtOff = 4;
  std::atomic<uint8_t> rt_api_[kMaxWatchedCbid] = {};
  std::atomic<bool> rt_select_dirty_{false};  // an id changed sides: apply at the next chance
  // control_mutex_: the per-id switch can be used (the function exists, the
  // RUNTIME kind is on, records carry gettid and agent-clock times as the
  // built ones do); cleared for good when CUPTI refuses a switch.
  bool rt_select_ok_ = false;
  bool rt_select_failed_ = false;
  bool thread_ids_system_ = false;  // cuptiSetThreadIdType(SYSTEM) succeeded
  bool agent_clock_ = false;        // the timestamp callback is registered
  std::mutex synth_mutex_;          // leaf: application threads append, the writer takes
  std::vector<CUpti_ActivityAPI> synth_;
  std::vector<uint32_t> synth_ids_;  // decode_mutex_: built records held; CUPTI's own of them are dropped

  std::mutex control_mutex_;

  mutable std::mutex mode_mutex_;
  std::string off_cause_;  // empty while CUPTI works

  ClockMap clock_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<LaunchRegistry> registry_;
  GraphSites graph_sites_;  // graph node -> the Python stack that created it
  std::atomic<bool> graph_sites_full_said_{false};

  std::mutex completed_mutex_;
  std::vector<Completed> completed_;  // handed over by OnBufferCompleted

  std::mutex decode_mutex_;
  NameTable names_;
  // Decoded records waiting for the window their call's launch belongs to.
  PendingRecords pending_;
  size_t max_pending_ = 0;
  // Records decoding could not keep and CUPTI's drop count, charged to
  // the windows they belong to as each is sealed.
  LossLedger losses_;
  // cuptiActivityGetNumDroppedRecords is a global counter that resets on
  // read: its readings add up in cupti_dropped_ (control_mutex_). A window
  // is charged what was read between its BeginRecord (or the last window's
  // charge, if later) and its seal: drops read in warmup, between windows,
  // are no window's; those read while an earlier window still awaited its
  // collection are that window's (windows back to back, or a writer behind
  // the session: setting them aside as the next window's warmup made the
  // earlier window report none).
  std::atomic<uint64_t> cupti_dropped_{0};
  // cupti_dropped_ when each window still to be sealed began recording,
  // by its start (begin_drops_mutex_: a leaf; BeginRecord and the writer).
  std::mutex begin_drops_mutex_;
  std::vector<std::pair<uint64_t, uint64_t>> begin_drops_;
  // What cupti_dropped_ was when the window starting at start_ns began
  // recording (0: unknown) and when the next one did (~0: none yet),
  // forgetting that window's and earlier entries.
  struct DropReadings {
    uint64_t at_begin = 0;
    uint64_t at_next_begin = ~0ull;
  };
  DropReadings DropsOfWindow(uint64_t start_ns);
  void NoteDroppedAtBegin(uint64_t start_ns);
  uint64_t refused_reported_ = 0;            // writer thread: pool refusals when the last window was sealed
  // Since the last window was sealed, a buffer request was refused or CUPTI
  // counted drops: a record not delivered yet may never come (writer thread).
  bool MayHaveDroppedRecords() const;
  // No window after the one being collected has begun recording: a forced
  // flush would untime only the work of calls between windows.
  bool NoLaterWindowRecords() const;
  // The id is one whose calls get callbacks while a window records (so
  // the registry awaits their records).
  static bool HasCallbackWhileRecording(bool runtime, uint32_t cbid);
  // decode_mutex_: the window sealed last, and records of calls with no
  // callback that came after it was written (a warning, and a count at exit).
  uint64_t sealed_start_ns_ = 0;
  uint64_t sealed_end_ns_ = 0;
  std::atomic<uint64_t> late_api_records_{0};
  // decode_mutex_: the last windows sealed, their spans and their calls'
  // ids (a device record can be later than an API record: a graph launch's
  // first kernel answers the call, the others come with their work), and
  // the GPU records that came for them after they were written.
  struct SealedSpan {
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint32_t low_id = 0;  // 0: no call
    uint32_t high_id = 0;
  };
  static constexpr size_t kSealedSpans = 16;
  std::array<SealedSpan, kSealedSpans> sealed_spans_{};
  size_t sealed_next_ = 0;
  std::atomic<uint64_t> late_device_records_{0};
};

}  // namespace prof::cupti
