// The CUPTI side of the marker path (agent/steps/step_markers.h): calls no wrapper
// fed reach the session from the API callbacks, outermost calls only, once;
// a call a wrapper feeds is not fed again; between windows the callbacks
// stay on for it while activity kinds are off.
#include <catch2/catch.hpp>
#include <memory>

#include "base/clock.h"
#include "base/hot_state.h"
#include "agent/runtime/runtime.h"
#include "agent/steps/step_markers.h"
#include "collectors/cupti/activity_collector.h"
#include "fake_cupti.h"
#include "test/unit/agent/fakes.h"

namespace prof::cupti {
namespace {

// Each test file names the callback ids it uses: constants, not logic.
constexpr auto kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto kDriver = CUPTI_CB_DOMAIN_DRIVER_API;
constexpr uint32_t kStreamSync = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
constexpr uint32_t kDriverStreamSync = CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize;
constexpr uint32_t kCopy = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
constexpr uint32_t kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr uint32_t kDriverLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr uint32_t kDriverCopy = CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;

// A session on PROF_STEP=sync with a wait long enough that no window opens:
// only the step count moves. The session's own collector is a fake; the
// CUPTI collector under test only feeds the marker path.
struct Agent {
  explicit Agent(StepSource source = StepSource::kSync, ApiId step_api = ApiId::kCount) {
    fake::Reset();
    rt.config.step_source = source;
    rt.config.step_api = step_api;
    rt.config.wait = 1000;
    // What the agent sets at start for the source (agent_start.cpp): the
    // bits that make wrappers feed its calls to the marker path.
    switch (source) {
      case StepSource::kSync: hot = kHotSyncMarker; break;
      case StepSource::kApi: hot = kHotApiMarker; break;
      case StepSource::kKernel: hot = kHotLaunchMarker; break;
      case StepSource::kAuto: hot = kHotLaunchMarker | kHotSyncMarker | kHotCopyMarker | kHotNvtxNames; break;
      default: break;
    }
    SetHotBits(hot);
    // api:<fn>: the calls it marks at, by id (a feed that names the call,
    // the wrappers and CUPTI's callbacks, looks them up there).
    ArmApiMarker(source == StepSource::kApi ? step_api : ApiId::kCount);
    rt.session = std::make_unique<Session>(rt.config, &session_collector, &writer, &rt.allocs, WindowMeta{}, NowNs());
    InstallRuntime(&rt);
    collector = std::make_unique<CuptiCollector>([](const Config&, CuptiApi* api, std::string*) {
      *api = fake::Api();
      return true;
    });
  }
  ~Agent() {
    ClearHotBits(hot);
    InstallRuntime(nullptr);
    collector.reset();
    fake::Reset();
  }
  uint32_t hot = 0;
  testing::FakeCollector session_collector;
  testing::FakeWriter writer;
  Runtime rt;
  std::unique_ptr<CuptiCollector> collector;
};

TEST_CASE("watching calls subscribes with callbacks on and no activity kind", "[markers]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  CHECK(fake::State().subscribed);
  CHECK(fake::State().kinds.empty());
  CHECK(fake::State().callbacks.count({kRuntime, kStreamSync}));
  CHECK(a.collector->state() == CollectorState::kPaused);
}

bool On(CUpti_CallbackDomain domain, uint32_t cbid) { return fake::State().callbacks.count({domain, cbid}) != 0; }

TEST_CASE("while waiting, only the calls the step source is marked by have callbacks", "[markers]") {
  SECTION("sync: synchronizes, runtime and driver") {
    Agent a(StepSource::kSync);
    a.collector->WatchCalls(a.rt.config);
    CHECK(On(kRuntime, kStreamSync));
    CHECK(On(kDriver, kDriverStreamSync));
    CHECK_FALSE(On(kRuntime, kCopy));
    CHECK_FALSE(On(kRuntime, kLaunch));
    CHECK_FALSE(On(kDriver, kDriverLaunch));
  }
  // One SECTION per step source: alike in shape, other calls.
  SECTION("kernel: launches, runtime and driver") {
    Agent a(StepSource::kKernel);
    a.collector->WatchCalls(a.rt.config);
    CHECK(On(kRuntime, kLaunch));
    CHECK(On(kDriver, kDriverLaunch));
    CHECK_FALSE(On(kRuntime, kStreamSync));
    CHECK_FALSE(On(kRuntime, kCopy));
  }
  SECTION("api:<fn>: the calls of fn's class (its nested driver call is of the same class)") {
    Agent a(StepSource::kApi, ApiId::cudaMemcpyAsync);
    a.collector->WatchCalls(a.rt.config);
    CHECK(On(kRuntime, kCopy));
    CHECK(On(kDriver, kDriverCopy));
    CHECK_FALSE(On(kRuntime, kStreamSync));
    CHECK_FALSE(On(kRuntime, kLaunch));
  }
}

TEST_CASE("a window turns every callback on and once it stops only the watched ones stay", "[markers]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  a.collector->Attach(a.rt.config);
  CHECK(On(kRuntime, kCopy));
  CHECK(On(kRuntime, kLaunch));
  a.collector->Pause();  // no window begun: nothing to wait for, recording stops now
  CHECK_FALSE(On(kRuntime, kCopy));
  CHECK_FALSE(On(kRuntime, kLaunch));
  CHECK(On(kRuntime, kStreamSync));
  CHECK(On(kDriver, kDriverStreamSync));
  fake::Call(kRuntime, kStreamSync, 1);
  CHECK(a.rt.session->current_step() == 1);
}

TEST_CASE("a call in progress when its callbacks were turned off does not hide the thread's next marker", "[markers]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  a.collector->Attach(a.rt.config);
  fake::Enter(kRuntime, kCopy, 1);
  fake::Enter(kDriver, kDriverCopy, 2);
  a.collector->Pause();  // the copy's exits never reach the collector
  fake::Exit(kDriver, kDriverCopy, 2, 0);
  fake::Exit(kRuntime, kCopy, 1, 0);
  fake::Call(kRuntime, kStreamSync, 3);
  CHECK(a.rt.session->current_step() == 1);
  fake::Enter(kRuntime, kStreamSync, 4);
  fake::Call(kDriver, kDriverStreamSync, 5);  // nested: not a second marker
  fake::Exit(kRuntime, kStreamSync, 4, 0);
  CHECK(a.rt.session->current_step() == 2);
}

TEST_CASE("a call that enters while the callbacks are being narrowed does not hide the thread's next marker",
          "[markers]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  a.collector->Attach(a.rt.config);
  // The copy enters (on the application's side) while the stop is under
  // way on the writer's: after the narrowing began, before its own id
  // went off. Its exit is never delivered.
  bool entered = false;
  fake::State().before_enable_callback = [&](CUpti_CallbackDomain domain, uint32_t cbid, uint32_t enable) {
    if (domain == kRuntime && cbid == kCopy && enable == 0 && !entered) {
      entered = true;
      fake::Enter(kRuntime, kCopy, 1);
    }
  };
  a.collector->Pause();  // no window begun: recording stops now, the watched ids stay on
  fake::State().before_enable_callback = nullptr;
  REQUIRE(entered);
  REQUIRE_FALSE(On(kRuntime, kCopy));
  fake::Exit(kRuntime, kCopy, 1, 0);  // CUPTI calls nothing
  fake::Call(kRuntime, kStreamSync, 2);
  CHECK(a.rt.session->current_step() == 1);
}

TEST_CASE("a synchronize no wrapper saw ends a step when it returns, once with its nested driver call", "[markers]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  fake::Enter(kRuntime, kStreamSync, 1);
  fake::Call(kDriver, kDriverStreamSync, 2);  // the runtime's own driver call: not a second marker
  CHECK(a.rt.session->current_step() == 0);
  fake::Exit(kRuntime, kStreamSync, 1, 0);
  CHECK(a.rt.session->current_step() == 1);
  fake::Call(kRuntime, kCopy, 3);
  CHECK(a.rt.session->current_step() == 1);
  // A driver-API program's own synchronize is a marker too.
  fake::Call(kDriver, kDriverStreamSync, 4);
  CHECK(a.rt.session->current_step() == 2);
}

TEST_CASE("a call a wrapper feeds to the marker path is not fed again from CUPTI", "[markers]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  tls_wrapper_feeds_markers = true;
  fake::Call(kRuntime, kStreamSync, 1);
  tls_wrapper_feeds_markers = false;
  CHECK(a.rt.session->current_step() == 0);
}

TEST_CASE("without WatchCalls CUPTI feeds nothing (PROF_STEP does not count calls)", "[markers]") {
  Agent a;
  a.collector->Attach(a.rt.config);
  fake::Call(kRuntime, kStreamSync, 1);
  CHECK(a.rt.session->current_step() == 0);
}

// Calls a wrapper fed (LD_PRELOAD, a dynamic cudart): CUPTI sees them with
// tls_wrapper_feeds_markers set, as inside an interposed call.
void FedSync(uint32_t correlation_id) {
  tls_wrapper_feeds_markers = true;
  fake::Call(kRuntime, kStreamSync, correlation_id);
  tls_wrapper_feeds_markers = false;
}

TEST_CASE("while every watched call reaches a wrapper, waiting detaches CUPTI after a few steps", "[markers][quiet]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  for (uint32_t i = 1; i < CuptiCollector::kProbeStepsForTest; ++i) {
    FedSync(i);
    a.collector->OnWaitingStep();
    CHECK(fake::State().subscribed);
  }
  FedSync(100);
  a.collector->OnWaitingStep();
  // cuptiFinalize is safe only from an API-exit callback: the next one detaches.
  CHECK(fake::State().subscribed);
  FedSync(101);
  CHECK_FALSE(fake::State().subscribed);
  CHECK(a.collector->state() == CollectorState::kQuiet);
  CHECK(fake::State().unsubscribe_calls == 1);
  CHECK(fake::State().finalize_calls == 1);
  CHECK(a.rt.session->current_step() == 0);  // the fed calls were the wrappers' to count
  SECTION("a window subscribes again, every callback on, and its end goes back to the watched ones") {
    a.collector->Attach(a.rt.config);
    CHECK(fake::State().subscribed);
    CHECK(a.collector->state() == CollectorState::kAttached);
    CHECK(On(kRuntime, kCopy));
    CHECK(On(kRuntime, kLaunch));
    a.collector->Pause();
    CHECK(a.collector->state() == CollectorState::kPaused);
    CHECK_FALSE(On(kRuntime, kCopy));
    CHECK(On(kRuntime, kStreamSync));
    a.collector->OnWaitingStep();  // the probe's steps were counted before the window
    FedSync(102);
    CHECK(a.collector->state() == CollectorState::kQuiet);
    CHECK(fake::State().finalize_calls == 2);
  }
  SECTION("a re-probe finds a call no wrapper fed: it is a marker, and the collector stays subscribed") {
    a.collector->Tick(NowNs() + 2'000'000'000ull);  // past the first re-probe interval
    CHECK(fake::State().subscribed);
    CHECK(On(kRuntime, kStreamSync));
    fake::Call(kRuntime, kStreamSync, 200);  // a static cudart's synchronize: no wrapper around it
    CHECK(a.rt.session->current_step() == 1);
    for (int i = 0; i < 10; ++i) a.collector->OnWaitingStep();
    CHECK(fake::State().subscribed);
    a.collector->Tick(NowNs() + 200'000'000'000ull);
    CHECK(fake::State().subscribed);
    fake::Call(kDriver, kDriverStreamSync, 201);
    CHECK(a.rt.session->current_step() == 2);
  }
  SECTION("the schedule's end leaves nothing subscribed, and no re-probe comes") {
    a.collector->Finish();
    CHECK(a.collector->state() == CollectorState::kDetached);
    a.collector->Tick(NowNs() + 200'000'000'000ull);
    CHECK_FALSE(fake::State().subscribed);
  }
}

TEST_CASE("a call no wrapper fed keeps the collector subscribed while waiting (injection, static cudart)", "[markers][quiet]") {
  SECTION("sync") {
    Agent a;
    a.collector->WatchCalls(a.rt.config);
    fake::Call(kRuntime, kStreamSync, 1);
    for (int i = 0; i < 10; ++i) {
      FedSync(2 + i);
      a.collector->OnWaitingStep();
    }
    FedSync(20);
    CHECK(fake::State().subscribed);
    CHECK(fake::State().finalize_calls == 0);
    CHECK(a.collector->state() == CollectorState::kPaused);
  }
  SECTION("api:<fn>: only fn's own calls unfed are a sign (the wrappers pass the others through unfed)") {
    Agent a(StepSource::kApi, ApiId::cudaMemcpyAsync);
    a.collector->WatchCalls(a.rt.config);
    fake::Call(kDriver, kDriverCopy, 1);  // of fn's class, not fn: no marker, no sign
    for (int i = 0; i < 3; ++i) a.collector->OnWaitingStep();
    fake::Call(kDriver, kDriverCopy, 2);
    CHECK(a.rt.session->current_step() == 0);
    CHECK_FALSE(fake::State().subscribed);
  }
  SECTION("api:<fn>: fn unfed") {
    Agent a(StepSource::kApi, ApiId::cudaMemcpyAsync);
    a.collector->WatchCalls(a.rt.config);
    fake::Call(kRuntime, kCopy, 1);
    CHECK(a.rt.session->current_step() == 1);
    for (int i = 0; i < 10; ++i) a.collector->OnWaitingStep();
    fake::Call(kRuntime, kCopy, 2);
    CHECK(a.rt.session->current_step() == 2);
    CHECK(fake::State().subscribed);
  }
}

TEST_CASE("a call no wrapper fed is no sign when the hot bits do not ask wrappers to feed its kind", "[markers][quiet]") {
  // PROF_STEP=auto decided on an NVTX range: launches no longer leave the
  // wrappers' fast path (unfed, though a wrapper saw them) and the marker
  // does not need them.
  Agent a(StepSource::kAuto);
  a.collector->WatchCalls(a.rt.config);
  ClearHotBits(kHotLaunchMarker | kHotSyncMarker | kHotCopyMarker);
  fake::Call(kRuntime, kLaunch, 1);
  for (int i = 0; i < 3; ++i) a.collector->OnWaitingStep();
  fake::Call(kRuntime, kLaunch, 2);
  CHECK(a.collector->state() == CollectorState::kQuiet);
  SECTION("while it detects, every kind is asked for: an unfed launch keeps CUPTI") {
    a.collector->Tick(NowNs() + 2'000'000'000ull);
    REQUIRE(fake::State().subscribed);
    SetHotBits(kHotLaunchMarker);
    fake::Call(kRuntime, kLaunch, 3);
    for (int i = 0; i < 10; ++i) a.collector->OnWaitingStep();
    fake::Call(kRuntime, kLaunch, 4);
    CHECK(fake::State().subscribed);
  }
}

TEST_CASE("a call in progress when the collector detached does not hide the thread's next marker", "[markers][quiet]") {
  Agent a;
  a.collector->WatchCalls(a.rt.config);
  tls_wrapper_feeds_markers = true;
  fake::Enter(kRuntime, kStreamSync, 1);  // its exit is lost: unsubscribed meanwhile
  tls_wrapper_feeds_markers = false;
  for (int i = 0; i < 3; ++i) a.collector->OnWaitingStep();
  FedSync(3);  // nested in call 1 on this thread: its exit detaches
  REQUIRE(a.collector->state() == CollectorState::kQuiet);
  a.collector->Tick(NowNs() + 2'000'000'000ull);
  REQUIRE(fake::State().subscribed);
  fake::Call(kRuntime, kStreamSync, 2);  // outermost on this thread: a marker
  CHECK(a.rt.session->current_step() == 1);
}

}  // namespace
}  // namespace prof::cupti
