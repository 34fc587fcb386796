// The CUPTI side of the marker path (agent/step_markers.h): calls no wrapper
// fed reach the session from the API callbacks, outermost calls only, once;
// a call a wrapper feeds is not fed again; between windows the callbacks
// stay on for it while activity kinds are off.
#include <catch2/catch.hpp>
#include <memory>

#include "agent/clock.h"
#include "agent/runtime.h"
#include "agent/step_markers.h"
#include "collectors/cupti/activity_collector.h"
#include "fake_cupti.h"
#include "test/unit/agent/fakes.h"

namespace prof::cupti {
namespace {

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
    rt.session = std::make_unique<Session>(rt.config, &session_collector, &writer, &rt.allocs, WindowMeta{}, NowNs());
    InstallRuntime(&rt);
    collector = std::make_unique<CuptiCollector>([](const Config&, CuptiApi* api, std::string*) {
      *api = fake::Api();
      return true;
    });
  }
  ~Agent() {
    InstallRuntime(nullptr);
    collector.reset();
    fake::Reset();
  }
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

}  // namespace
}  // namespace prof::cupti
