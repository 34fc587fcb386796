// The seam between the session (agent/) and whatever delivers GPU records
// (collectors/cupti implements it; tests hand a fake). The session owns the
// schedule and tells the collector what phase it is in; the collector owns
// CUPTI and decides which records belong to a window.
//
// Threads: Attach/BeginRecord/Pause/Finish are called from the application
// thread that crossed a step boundary, and must be quick (no waiting on
// CUPTI's buffers). CollectWindow is called from the writer thread and may
// wait up to its deadline. OnExit is called once from the exit path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/config.h"
#include "model/window.h"

namespace prof {

// The correlation id of the CUDA API call running on this thread, set by the
// collector's API-enter callback, read by interposed wrappers after the real
// call returns (they reset it to 0 before calling). 0: unknown.
inline thread_local uint32_t tls_correlation_id = 0;

// The start (agent clock) of the interposed call running on this thread, set
// by a recording wrapper just before the real call and reset after it; 0
// when no wrapper timed the call. The collector's API-enter callback takes
// it as the call's launch time instead of reading the clock again, so the
// host event and the GPU records it launched fall on the same side of a
// window boundary.
inline thread_local uint64_t tls_call_start_ns = 0;

// The launches an NCCL call made (collectors/nccl): while a sink is set on
// this thread, the collector's API-enter callback appends the correlation id
// of each call that enqueues device work (the kernel launch inside
// ncclAllReduce, or each launch of a group's ncclGroupEnd), so a collective
// is tied to its kernel. Null outside NCCL calls: the callback pays one
// thread-local load.
struct LaunchSink {
  static constexpr uint32_t kMax = 16;
  uint32_t ids[kMax] = {};
  uint32_t count = 0;
};
inline thread_local LaunchSink* tls_launch_sink = nullptr;

// Nonzero while libprof itself makes a CUDA call on this thread (the
// allocation wrappers' device query): the collector's callbacks register
// nothing for it and its CUPTI records are dropped, so libprof's own calls
// never appear as the application's. Set through OwnCudaCall.
inline thread_local int tls_own_cuda_calls = 0;

struct OwnCudaCall {
  OwnCudaCall() { ++tls_own_cuda_calls; }
  ~OwnCudaCall() { --tls_own_cuda_calls; }
  OwnCudaCall(const OwnCudaCall&) = delete;
  OwnCudaCall& operator=(const OwnCudaCall&) = delete;
};

class DeviceCollector {
 public:
  virtual ~DeviceCollector() = default;

  // Warmup of a window begins: load/subscribe if needed, enable callbacks
  // and the configured activity kinds. On failure the collector switches to
  // interception-only for good and says why once (Mode()).
  virtual void Attach(const Config& config) = 0;

  // PROF_STEP counts calls (kernel:, api:, sync) and CUDA is loaded: keep
  // the API callbacks on from now on, even between windows (no activity
  // kinds), so that calls no interposed wrapper sees (CUDA_INJECTION64_PATH,
  // a static cudart) still reach the marker path (agent/steps/step_markers.h).
  // Until Finish. A collector without callbacks ignores it.
  virtual void WatchCalls(const Config& config) { (void)config; }

  // Called on the thread inside the first cuInit that the driver tells
  // libprof of (InitializeInjection), when a runtime call encloses that
  // cuInit (the program's first runtime call initializes the driver): the
  // callbacks never saw that call enter, so the driver calls it still makes
  // on this thread are its own, not the program's.
  virtual void NoteRuntimeCallInProgress() {}

  // A step boundary that keeps waiting (no window warms up or records):
  // a collector that watches calls may stop paying for them here when every
  // call it watches reaches an interposed wrapper. Application thread,
  // under the session's lock; must be cheap.
  virtual void OnWaitingStep() {}
  // Whether OnWaitingStep may do anything now. While false the session
  // counts waiting steps without its lock and without calling OnWaitingStep
  // (Session::QuietStep); once true, the next waiting step calls it. Any
  // application thread, on every step marker: a few relaxed loads at most.
  virtual bool WantsWaitingSteps() const { return false; }

  // The agent thread's periodic wake (about once a second while idle): a
  // collector that stopped watching through CUPTI may look again (new
  // libraries loaded, a re-probe due).
  virtual void Tick(uint64_t now_ns) { (void)now_ns; }

  // The first active step begins at start_ns; everything launched earlier
  // (warmup) is discarded.
  virtual void BeginRecord(uint64_t start_ns) = 0;

  // Between windows: stop activity collection (records of windows already
  // ended still arrive and are kept for CollectWindow).
  virtual void Pause() = 0;

  // The schedule is finished: disable everything and release the subscriber
  // (cuptiFinalize from an API-exit callback) so no CUPTI cost lingers.
  virtual void Finish() = 0;

  // Fill out->device_records with exactly the records of calls launched in
  // [start_ns, end_ns) (by API-enter time), waiting until deadline_ns for
  // outstanding ones; add loss counts and cupti_mode/has_gpu_timings to
  // out->meta. Writer thread.
  virtual void CollectWindow(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) = 0;
  // After CollectWindow: the correlation ids of that window's calls that
  // returned through a recording wrapper, whose host events the wrapper
  // appends after the call's return (a thread descheduled in between
  // appends it after the collection saw the call return). Writer thread.
  virtual void TakeWrappedCalls(std::vector<uint32_t>* ids) { (void)ids; }

  // Process exit or fatal signal during a window: forced flush, no waiting
  // beyond a short bound.
  virtual void OnExit() = 0;

  // "activity" or "interception-only (<cause>)".
  virtual std::string Mode() const = 0;
};

}  // namespace prof
