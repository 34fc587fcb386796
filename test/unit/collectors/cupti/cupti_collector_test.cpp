// The collector's decisions against a fake CUPTI: subscription and the
// interception-only fallbacks, what is enabled when, window membership and
// completeness, loss counts, and the detach at the end of the schedule.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>
#include <chrono>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/thread_id.h"
#include "collectors/cupti/activity_collector.h"
#include "fake_cupti.h"

namespace prof::cupti {
namespace {

constexpr auto kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto kDriver = CUPTI_CB_DOMAIN_DRIVER_API;
constexpr uint32_t kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr uint32_t kGetDevice = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
// A call that gets callbacks but enqueues no kernel/copy: an API exit.
constexpr uint32_t kSync = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;

struct Harness {
  Config config;
  std::unique_ptr<CuptiCollector> collector;
  bool load_fails = false;

  Harness() {
    fake::Reset();
    config.flush_timeout_ns = 50'000'000;
  }
  ~Harness() {
    // Give back what the fake still holds so the pool is the only owner.
    collector.reset();
    fake::Reset();
  }
  CuptiCollector& Make() {
    collector = std::make_unique<CuptiCollector>([this](const Config&, CuptiApi* api, std::string* cause) {
      if (load_fails) {
        *cause = "no usable libcupti (libcupti.so.13: cannot open shared object file)";
        return false;
      }
      *api = fake::Api();
      return true;
    });
    return *collector;
  }
  // Made and attached with this harness's config: where most cases start.
  CuptiCollector& Attached() {
    CuptiCollector& c = Make();
    c.Attach(config);
    return c;
  }
  // One runtime launch whose kernel ran [start, end) on CUPTI's clock.
  void Launch(uint32_t correlation_id, const char* name = "_Z6kernelv") {
    fake::Call(kRuntime, kLaunch, correlation_id);
    uint64_t now = NowNs();
    fake::Write(fake::Kernel(correlation_id, now + 1000, now + 5000, name));
  }
  Window Collect(uint64_t start_ns, uint64_t end_ns, uint64_t wait_ns = 0) {
    Window w;
    collector->CollectWindow(start_ns, end_ns, NowNs() + wait_ns, &w);
    return w;
  }
};

// What stays on while subscribed, recording or not: the graph-node
// callbacks (graph_sites.h), which fire only as graphs are built.
std::set<std::pair<int, uint32_t>> GraphNodeCallbacks() {
  return {{CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED},
          {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}};
}

std::vector<uint32_t> Correlations(const Window& w) {
  std::vector<uint32_t> ids;
  for (const auto& r : w.device_records) ids.push_back(r.correlation_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST_CASE("attach subscribes as libprof and enables the configured kinds after the timestamp callback", "[collector]") {
  Harness h;
  h.Make().Attach(h.config);
  const auto& s = fake::State();
  CHECK(h.collector->state() == CollectorState::kAttached);
  CHECK(h.collector->Mode() == "activity");
  CHECK(s.subscribe_calls == 1);
  CHECK(s.subscriber_name == "libprof");
  CHECK(s.timestamp != nullptr);
  CHECK(s.timestamp_registered_before_kinds);
  CHECK(h.collector->clock().identity());
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_MEMCPY));
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_MEMSET));
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME));
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_MEMORY2));
  CHECK_FALSE(s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER));  // off by default
  CHECK(s.callbacks.count({kRuntime, kLaunch}));
  CHECK(s.callbacks.count({kRuntime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000}));
  CHECK(s.callbacks.count({kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020}));
  CHECK(s.callbacks.count({kRuntime, kSync}));
  // Calls that enqueue nothing cost no callback (PyTorch makes many), but
  // for cudaGetDevice while recording: libprof's own query after each
  // allocation must be known as libprof's (OwnCudaCall), and while recording
  // every call already costs CUPTI a RUNTIME record.
  CHECK_FALSE(s.domains.count(kRuntime));
  CHECK(s.callbacks.count({kRuntime, kGetDevice}));
  CHECK_FALSE(s.callbacks.count({kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020}));
  CHECK(s.callbacks.count({kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}));
}

TEST_CASE("PROF_ACTIVITIES decides the kinds: kernel only enables kernels only", "[collector]") {
  Harness h;
  h.config.activities = kActKernel;
  h.Make().Attach(h.config);
  CHECK(fake::State().kinds == std::set<int>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
}

TEST_CASE("a refused subscription names the holder, registers nothing and is never retried", "[collector]") {
  Harness h;
  fake::State().subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake::State().holder_name = "CUPTI for Nsight Systems";
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kOff);
  CHECK(c.Mode().rfind("interception-only (", 0) == 0);
  CHECK(c.Mode().find("CUPTI for Nsight Systems") != std::string::npos);
  // The other tool's buffers and clock are left alone.
  CHECK(fake::State().request == nullptr);
  CHECK(fake::State().timestamp == nullptr);
  CHECK(fake::State().kinds.empty());
  c.Pause();
  c.Attach(h.config);
  CHECK(fake::State().subscribe_calls == 1);
  Window w = h.Collect(0, NowNs());
  CHECK_FALSE(w.meta.has_gpu_timings);
  CHECK(w.meta.cupti_mode == c.Mode());
  CHECK(w.device_records.empty());
}

TEST_CASE("without a driver CUPTI answers UNKNOWN: interception-only, the cause says so", "[collector]") {
  Harness h;
  fake::State().subscribe_result = CUPTI_ERROR_UNKNOWN;
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kOff);
  CHECK(c.Mode().find("no CUDA driver") != std::string::npos);
  CHECK(c.Mode().find("999") != std::string::npos);
}

TEST_CASE("an old cuptiSubscribe without _v2 is used when that is all there is", "[collector]") {
  Harness h;
  fake::State().has_subscribe_v2 = false;
  h.Make().Attach(h.config);
  CHECK(h.collector->state() == CollectorState::kAttached);
  CHECK(fake::State().subscriber_name.empty());
}

TEST_CASE("a CUDA 12 libcupti is accepted and its records are read through the 12.x layouts", "[collector]") {
  Harness h;
  fake::State().version = 22;  // CUDA 12.4's numbering
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kAttached);
  CHECK(fake::State().subscribe_calls == 1);
}

TEST_CASE("a libcupti older than 12.0 is refused with one line naming file, version and range", "[collector]") {
  Harness h;
  fake::State().version = 18;  // CUDA 11.8
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kOff);
  CHECK(c.Mode().find("version 18") != std::string::npos);
  CHECK(c.Mode().find(SupportedCuptiRange()) != std::string::npos);
  CHECK(c.Mode().find('\n') == std::string::npos);
  CHECK(fake::State().subscribe_calls == 0);
}

TEST_CASE("a libcupti newer than the newest layout libprof knows is refused, not misread", "[collector]") {
  Harness h;
  fake::State().version = 130300;  // CUDA 13.3: kernels arrive as CUpti_ActivityKernel12
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kOff);
  CHECK(c.Mode().find("version 130300 (CUDA 13.3)") != std::string::npos);
  CHECK(c.Mode().find(SupportedCuptiRange()) != std::string::npos);
  CHECK(fake::State().subscribe_calls == 0);
}

TEST_CASE("no libcupti found: interception-only with the loader's reason", "[collector]") {
  Harness h;
  h.load_fails = true;
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK(c.Mode().find("no usable libcupti") != std::string::npos);
}

TEST_CASE("the runtime enter callback sets the thread's correlation id but a nested driver call does not", "[collector]") {
  Harness h;
  h.Make().Attach(h.config);
  tls_correlation_id = 0;
  fake::Enter(kRuntime, kLaunch, 41);
  CHECK(tls_correlation_id == 41);
  fake::Enter(kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 42);
  CHECK(tls_correlation_id == 41);
  fake::Exit(kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 42);
  fake::Exit(kRuntime, kLaunch, 41);
  // A driver call made directly (wrapper reset the id to 0) sets its own.
  tls_correlation_id = 0;
  fake::Call(kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 43);
  CHECK(tls_correlation_id == 43);
}

TEST_CASE("a window holds exactly the records of calls launched inside it", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  h.Launch(1);  // warmup
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(2);
  h.Launch(3);
  fake::Call(kRuntime, kGetDevice, 4);  // no device work
  uint64_t end = NowNs();
  h.Launch(5);  // after the window: kept for a later one, not this
  Window w = h.Collect(start, end);
  CHECK(Correlations(w) == std::vector<uint32_t>{2, 3});
  CHECK(w.meta.has_gpu_timings);
  CHECK(w.meta.cupti_mode == "activity");
  CHECK(w.meta.losses.device_records_missing == 0);
  CHECK(w.meta.losses.cupti_records_dropped == 0);
  CHECK(w.String(w.device_records[0].name_id) == "_Z6kernelv");
  // The record launched after the first window belongs to the next.
  Window next = h.Collect(end, NowNs());
  CHECK(Correlations(next) == std::vector<uint32_t>{5});
}

TEST_CASE("a writer several windows behind hands each window exactly its records, in start order", "[collector]") {
  // Later windows' records outnumber the collected window's: the window's
  // are copied out and the later ones stay pending (the other branch of
  // PendingRecords::Take than the test above).
  Harness h;
  auto& c = h.Attached();
  uint64_t t0 = NowNs();
  c.BeginRecord(t0);
  h.Launch(1);
  h.Launch(2);
  uint64_t t1 = NowNs();
  for (uint32_t id = 3; id <= 7; ++id) h.Launch(id);
  uint64_t t2 = NowNs();
  for (uint32_t id = 8; id <= 13; ++id) h.Launch(id);
  uint64_t t3 = NowNs();
  auto in_start_order = [](const Window& w) {
    return std::is_sorted(w.device_records.begin(), w.device_records.end(),
                          [](const DeviceRecord& a, const DeviceRecord& b) { return a.start_ns < b.start_ns; });
  };
  Window a = h.Collect(t0, t1);
  CHECK(Correlations(a) == std::vector<uint32_t>{1, 2});
  CHECK(in_start_order(a));
  Window b = h.Collect(t1, t2);
  CHECK(Correlations(b) == std::vector<uint32_t>{3, 4, 5, 6, 7});
  CHECK(in_start_order(b));
  Window c3 = h.Collect(t2, t3);
  CHECK(Correlations(c3) == std::vector<uint32_t>{8, 9, 10, 11, 12, 13});
  CHECK(in_start_order(c3));
  CHECK(c3.String(c3.device_records[0].name_id) == "_Z6kernelv");
  CHECK(c3.meta.losses.device_records_missing == 0);
}

TEST_CASE("a writer many windows behind hands every window exactly its records", "[collector]") {
  // 40 windows of 25 launches all decoded before the first is collected:
  // each collection takes its window from the front of what is pending and
  // leaves the later windows' records in place (PendingRecords), dropping
  // the taken ones now and then.
  Harness h;
  auto& c = h.Attached();
  constexpr uint32_t kWindows = 40, kPerWindow = 25;
  std::vector<uint64_t> bounds{NowNs()};
  c.BeginRecord(bounds[0]);
  uint32_t id = 0;
  for (uint32_t w = 0; w < kWindows; ++w) {
    for (uint32_t i = 0; i < kPerWindow; ++i) h.Launch(++id);
    bounds.push_back(NowNs());
  }
  for (uint32_t w = 0; w < kWindows; ++w) {
    Window win = h.Collect(bounds[w], bounds[w + 1]);
    std::vector<uint32_t> expected;
    for (uint32_t i = 1; i <= kPerWindow; ++i) expected.push_back(w * kPerWindow + i);
    CHECK(Correlations(win) == expected);
    CHECK(win.meta.losses.device_records_missing == 0);
  }
}

TEST_CASE("a GPU record is never earlier than the call that launched it", "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  uint64_t before_call = NowNs();
  h.Launch(1);
  Window w = h.Collect(start, NowNs());
  REQUIRE(w.device_records.size() == 1);
  CHECK(w.device_records[0].start_ns >= before_call);
}

TEST_CASE("every record's name id resolves to its name in the window's string table", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  h.Launch(1, "_Z1av");
  h.Launch(2, "_Z1bv");
  Window w;
  c.CollectWindow(start, NowNs(), NowNs(), &w);
  REQUIRE(w.device_records.size() == 2);
  for (const auto& r : w.device_records) {
    CHECK(w.String(r.name_id) == (r.correlation_id == 1 ? "_Z1av" : "_Z1bv"));
  }
  REQUIRE_FALSE(w.strings.empty());
  CHECK(w.strings[0].empty());
}

TEST_CASE("a record CUPTI could not time is a loss of the window holding its call, and of no other", "[collector]") {
  // A forced flush hands over records of work still running, untimed. One
  // of a call the window holds is that window's loss (and not also "never
  // delivered"); one of a call after it, or of no window's call, is nobody's:
  // counting it made a window that lost nothing report a loss.
  Harness h;
  auto& c = h.Make();
  c.Attach(h.config);
  fake::Call(kRuntime, kLaunch, 1);  // before any window
  fake::Write(fake::Kernel(1, 0, 0, "_Z6kernelv"));
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(2);
  fake::Call(kRuntime, kLaunch, 3);
  fake::Write(fake::Kernel(3, 0, 0, "_Z6kernelv"));  // the window's own, untimed
  uint64_t end = NowNs();
  fake::Call(kRuntime, kLaunch, 4);  // after the window, still running at the flush
  fake::Write(fake::Kernel(4, 0, 0, "_Z6kernelv"));
  Window w = h.Collect(start, end);
  CHECK(Correlations(w) == std::vector<uint32_t>{2});
  CHECK(w.meta.losses.device_records_untimed == 1);
  CHECK(w.meta.losses.device_records_missing == 0);
  CHECK(w.meta.losses.device_records_dropped == 0);
  // Nothing of the window above is charged again; the call after it is the
  // loss of a window that holds it only.
  uint64_t later = NowNs();
  Window next = h.Collect(later, NowNs());
  CHECK(next.meta.losses.device_records_untimed == 0);
  CHECK(next.meta.losses.device_records_dropped == 0);
}

TEST_CASE("a launch whose record never comes is counted missing after a bounded wait", "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  h.Launch(1);
  fake::Call(kRuntime, kLaunch, 2);  // launched, record never written
  uint64_t end = NowNs();
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/30'000'000);
  uint64_t waited = NowNs() - before;
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  CHECK(w.meta.losses.device_records_missing == 1);
  CHECK(waited >= 30'000'000);
  CHECK(waited < 1'000'000'000);
}

TEST_CASE("what never comes is counted by the kind of record each call awaited", "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  h.Launch(1);
  fake::Call(kRuntime, kLaunch, 2);                                              // kernel, never written
  fake::Call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 3);       // copy, never written
  fake::Call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 4);            // copy, never written
  fake::Call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 5);       // memset, never written
  uint64_t end = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/30'000'000);
  CHECK(w.meta.losses.device_records_missing == 4);
  CHECK(w.meta.losses.missing_kinds.kernels == 1);
  CHECK(w.meta.losses.missing_kinds.copies == 2);
  CHECK(w.meta.losses.missing_kinds.memsets == 1);
}

TEST_CASE("a GPU record of a sealed window's call that comes after it was written is counted, in no window",
          "[collector]") {
  // A graph launch's first kernel answers the call; its others come with
  // their work, and one that comes after the window was sealed cannot be in
  // it: counted and logged, never held for a later window.
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  fake::Call(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 41);
  uint64_t now = NowNs();
  fake::Write(fake::Kernel(41, now + 1000, now + 2000, "_Z5firstv"));
  uint64_t end = NowNs();
  Window first = h.Collect(start, end);
  CHECK(Correlations(first) == std::vector<uint32_t>{41});
  CHECK(c.late_device_records() == 0);
  fake::Write(fake::Kernel(41, now + 2000, now + 3000, "_Z6secondv"));  // the graph's second kernel, late
  uint64_t next = NowNs();
  c.BeginRecord(next);
  h.Launch(42);
  Window second = h.Collect(next, NowNs());
  CHECK(Correlations(second) == std::vector<uint32_t>{42});
  CHECK(c.late_device_records() == 1);
}

TEST_CASE("what a call is awaited for follows PROF_ACTIVITIES: without kernels a launch waits for nothing",
          "[collector]") {
  // The API-enter callback reads what a call registers from a per-id table
  // filled with the configuration: it must be the configuration attached.
  Harness h;
  h.config.activities = kActMemcpy | kActMemset;  // no kernel, no RUNTIME records
  auto& c = h.Make();
  c.Attach(h.config);
  uint64_t start = NowNs();
  fake::Call(kRuntime, kLaunch, 2);  // its kernel record is not enabled: none comes
  uint64_t end = NowNs();
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/2'000'000'000);
  CHECK(w.meta.losses.device_records_missing == 0);
  CHECK(NowNs() - before < 1'000'000'000);  // nothing awaited: no wait for the deadline
}

TEST_CASE("a launch's own RUNTIME record does not stand in for the kernel still to come", "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  fake::Call(kRuntime, kLaunch, 2);
  uint64_t now = NowNs();
  fake::Write(fake::RuntimeApi(2, kLaunch, now, now + 100));  // at the call's exit; the kernel never comes
  Window w = h.Collect(start, NowNs(), /*wait_ns=*/20'000'000);
  CHECK(w.meta.losses.device_records_missing == 1);
}

TEST_CASE("a window awaiting a record stops waiting once the exit path detaches CUPTI", "[collector]") {
  // At exit the writer gets a bounded wait; a window still polling until a
  // long PROF_FLUSH_TIMEOUT_MS would be lost whole.
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  h.Launch(1);
  fake::Call(kRuntime, kLaunch, 2);  // its record never comes
  uint64_t end = NowNs();
  std::thread exiting([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.OnExit();
  });
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/20'000'000'000);
  uint64_t waited = NowNs() - before;
  exiting.join();
  CHECK(waited < 5'000'000'000);
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  CHECK(w.meta.losses.device_records_missing == 1);
}

TEST_CASE("a failed launch is not waited for and not missing", "[collector]") {
  Harness h;
  fake::State().api_records = true;  // its RUNTIME record comes; no kernel record
  auto& c = h.Make();
  c.Attach(h.config);
  uint64_t start = NowNs();
  fake::Call(kRuntime, kLaunch, 2, /*result=*/1);  // cudaErrorInvalidValue
  uint64_t before = NowNs();
  Window w = h.Collect(start, NowNs(), /*wait_ns=*/2'000'000'000);
  CHECK(NowNs() - before < 1'000'000'000);
  CHECK(w.meta.losses.device_records_missing == 0);
}

TEST_CASE("past the buffer cap CUPTI gets NULL and the window reports every record lost", "[collector]") {
  Harness h;
  h.config.buffer_bytes = 4u << 20;  // pool: 1 MiB of 128 KiB buffers
  auto& c = h.Make();
  c.Attach(h.config);
  uint64_t start = NowNs();
  // Many more kernel records than 1 MiB holds, none handed back meanwhile.
  constexpr uint32_t kLaunches = 10000;
  for (uint32_t id = 1; id <= kLaunches; ++id) h.Launch(id);
  Window w = h.Collect(start, NowNs());
  const auto& s = fake::State();
  REQUIRE(s.dropped_total > 0);
  CHECK(w.meta.losses.cupti_records_dropped == s.dropped_total);
  // What CUPTI wrote and the decoded budget could not hold is ours to count.
  CHECK(w.device_records.size() + w.meta.losses.device_records_dropped == s.records_written);
  CHECK(w.device_records.size() + w.meta.losses.device_records_dropped + w.meta.losses.cupti_records_dropped ==
        kLaunches);
  // Dropped launches are not also reported missing, but they are: the
  // record never came. Both views are written; the test pins the sum above.
}

TEST_CASE("unknown activity kinds are counted in the window", "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  CUpti_ActivityMarker2 marker;
  std::memset(&marker, 0, sizeof(marker));
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  fake::Write(marker);
  Window w = h.Collect(start, NowNs());
  CHECK(w.meta.losses.unknown_activity_kinds == 1);
}

TEST_CASE("pause disables kinds and callbacks once the window is collected, and the next attach re-enables without resubscribing", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  c.BeginRecord(NowNs());
  c.Pause();
  CHECK(c.state() == CollectorState::kPaused);
  // Calls of the window may still be in progress: recording goes on until
  // the window is collected.
  CHECK_FALSE(fake::State().kinds.empty());
  h.Collect(0, NowNs());
  CHECK(fake::State().kinds.empty());
  CHECK(fake::State().domains.empty());
  CHECK(fake::State().callbacks == GraphNodeCallbacks());
  tls_correlation_id = 0;
  fake::Enter(kRuntime, kLaunch, 9);  // not delivered: domain off
  CHECK(tls_correlation_id == 0);
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kAttached);
  CHECK_FALSE(fake::State().kinds.empty());
  CHECK(fake::State().subscribe_calls == 1);
}

TEST_CASE("after the last window CUPTI is finalized from an API exit and nothing stays enabled", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  uint64_t end = NowNs();
  c.Finish();
  CHECK(c.state() == CollectorState::kFinishing);
  // Still recording: the window's calls may still be in progress.
  CHECK_FALSE(fake::State().kinds.empty());
  // Not before the last window is collected.
  fake::Call(kRuntime, kSync, 2);
  CHECK(fake::State().finalize_calls == 0);
  Window w = h.Collect(start, end);
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  CHECK(fake::State().forced_flushes >= 1);
  fake::Call(kRuntime, kSync, 3);
  CHECK(c.state() == CollectorState::kDetached);
  CHECK(fake::State().finalize_calls == 1);
  CHECK_FALSE(fake::State().subscribed);
  CHECK(fake::State().kinds.empty());
}

TEST_CASE("finish while a window awaits collection still detaches once the flush timeout passed", "[collector]") {
  Harness h;
  // 200 ms: a loaded CI machine may stall this thread for milliseconds
  // between Finish and the first call.
  h.config.flush_timeout_ns = 200'000'000;
  auto& c = h.Make();
  c.Attach(h.config);
  c.BeginRecord(NowNs());
  c.Finish();
  fake::Call(kRuntime, kSync, 1);
  CHECK(fake::State().finalize_calls == 0);
  uint64_t until = NowNs() + 210'000'000;
  while (NowNs() < until) {
  }
  fake::Call(kRuntime, kSync, 2);
  CHECK(fake::State().finalize_calls == 1);
}

TEST_CASE("a new cycle after the detach subscribes again", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  c.Finish();
  h.Collect(0, NowNs());
  fake::Call(kRuntime, kSync, 1);
  REQUIRE(c.state() == CollectorState::kDetached);
  c.Attach(h.config);
  CHECK(c.state() == CollectorState::kAttached);
  CHECK(fake::State().subscribe_calls == 2);
  CHECK(fake::State().subscribed);
}

TEST_CASE("at exit the collector flushes (forced) and releases the subscriber, without finalize", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  h.Launch(1);
  c.OnExit();
  CHECK(fake::State().forced_flushes == 1);
  CHECK_FALSE(fake::State().subscribed);
  CHECK(fake::State().finalize_calls == 0);
  CHECK(fake::State().kinds.empty());
  // The flushed records are still collected into the partial window.
  Window w = h.Collect(start, NowNs());
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
}

TEST_CASE("at exit, with a window still to be collected, threads get a moment to write their calls' records first",
          "[collector]") {
  // A call with no callback shows only through the record CUPTI writes as
  // it returns: a thread descheduled in between wrote it after the release.
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  uint64_t before = NowNs();
  c.OnExit();
  CHECK(NowNs() - before >= CuptiCollector::kExitSettleNs);
  CHECK_FALSE(fake::State().subscribed);
  Window w = h.Collect(start, NowNs());
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
}

TEST_CASE("after the exit release nothing attaches CUPTI again, and the windows still queued keep their records",
          "[collector]") {
  // The process exits while the writer is behind: CUPTI's release at exit
  // runs first (ReleaseAtExit), then the agent thread may still begin a
  // step (a time step's warmup attaches) before the agent's exit work.
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  uint64_t end = NowNs();
  c.Pause();
  c.OnExit();
  c.Attach(h.config);  // the next window's warmup
  c.WatchCalls(h.config);
  CHECK(fake::State().subscribe_calls == 1);
  CHECK_FALSE(fake::State().subscribed);
  CHECK(fake::State().kinds.empty());
  Window w = h.Collect(start, end);
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  CHECK(w.meta.losses.device_records_missing == 0);
}

TEST_CASE("without a timestamp callback, CUPTI times are mapped onto the agent clock", "[collector]") {
  Harness h;
  fake::State().has_timestamp_callback = false;
  fake::State().cupti_clock_offset_ns = 5'000'000'000;  // CUPTI 5 s ahead
  auto& c = h.Make();
  c.Attach(h.config);
  CHECK_FALSE(c.clock().identity());
  uint64_t start = NowNs();
  fake::Call(kRuntime, kLaunch, 1);
  uint64_t cupti_now = NowNs() + 5'000'000'000;
  fake::Write(fake::Kernel(1, cupti_now, cupti_now + 1000, "_Z1kv"));
  uint64_t end = NowNs();
  Window w = h.Collect(start, end);
  REQUIRE(w.device_records.size() == 1);
  // Within the calibration error of the agent time the record was made.
  CHECK(w.device_records[0].start_ns >= start - 1'000'000);
  CHECK(w.device_records[0].start_ns <= end + 1'000'000);
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

TEST_CASE("windows back to back: each is charged CUPTI's drops from its begin to the next one's, none twice",
          "[collector]") {
  // The first window is collected after the second began (its collection
  // overlaps the next window's recording): the drops read meanwhile are the
  // second's. Taking them as the second's warmup used to charge them to
  // neither.
  Harness h;
  h.config.buffer_bytes = 4u << 20;  // pool: 1 MiB
  auto& c = h.Attached();
  uint64_t start1 = NowNs();
  c.BeginRecord(start1);
  for (uint32_t id = 1; id <= 10000; ++id) h.Launch(id);  // overflows the pool
  uint64_t first_drops = fake::State().dropped_total;
  REQUIRE(first_drops > 0);
  uint64_t start2 = NowNs();
  c.BeginRecord(start2);
  for (uint32_t id = 10001; id <= 12000; ++id) h.Launch(id);  // the pool is still full: all dropped
  uint64_t second_drops = fake::State().dropped_total - first_drops;
  REQUIRE(second_drops > 0);
  Window first = h.Collect(start1, start2);
  Window second = h.Collect(start2, NowNs());
  CHECK(first.meta.losses.cupti_records_dropped == first_drops);
  CHECK(second.meta.losses.cupti_records_dropped == second_drops);
}

TEST_CASE("records CUPTI dropped during warmup are not charged to the window", "[collector]") {
  Harness h;
  h.config.buffer_bytes = 4u << 20;  // pool: 1 MiB
  auto& c = h.Make();
  c.Attach(h.config);
  for (uint32_t id = 1; id <= 10000; ++id) h.Launch(id);  // warmup overflows the pool
  size_t warmup_drops = fake::State().dropped_total;
  REQUIRE(warmup_drops > 0);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  // Give the pool back: the writer collects the (empty) window so far.
  Window first = h.Collect(start, start);
  CHECK(first.meta.losses.cupti_records_dropped == 0);
  h.Launch(20001);
  Window w = h.Collect(start, NowNs());
  CHECK(Correlations(w) == std::vector<uint32_t>{20001});
  CHECK(w.meta.losses.cupti_records_dropped == 0);
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

TEST_CASE("a window collected before any attach says CUPTI was not attached", "[collector]") {
  Harness h;
  auto& c = h.Make();
  Window w = h.Collect(0, NowNs());
  CHECK(w.meta.cupti_mode == "interception-only (CUPTI was not attached)");
  CHECK_FALSE(w.meta.has_gpu_timings);
  CHECK(fake::State().subscribe_calls == 0);
  (void)c;
}

TEST_CASE("an exception inside the collector never reaches the caller and switches it off", "[collector]") {
  Harness h;
  CuptiCollector c([](const Config&, CuptiApi*, std::string*) -> bool { throw std::runtime_error("boom"); });
  REQUIRE_NOTHROW(c.Attach(h.config));
  CHECK(c.state() == CollectorState::kOff);
  CHECK(c.Mode() == "interception-only (Attach failed: boom)");
  Window w;
  REQUIRE_NOTHROW(c.CollectWindow(0, 1, 1, &w));
  CHECK_FALSE(w.meta.has_gpu_timings);
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

TEST_CASE("when the writer collected the last window before Finish, CUPTI goes at the next API exit", "[collector]") {
  Harness h;
  h.config.flush_timeout_ns = 10'000'000'000;  // long: must not be what releases CUPTI
  auto& c = h.Make();
  c.Attach(h.config);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  Window w = h.Collect(start, NowNs());  // the writer ran first
  c.Pause();
  c.Finish();
  fake::Call(kRuntime, kSync, 2);
  CHECK(c.state() == CollectorState::kDetached);
  CHECK(fake::State().finalize_calls == 1);
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

TEST_CASE("cudaDeviceReset and context destruction flush before the records would be lost", "[collector]") {
  Harness h;
  h.Attached();
  REQUIRE(fake::State().callbacks.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING}));
  uint64_t start = NowNs();
  h.Launch(1);
  int before = fake::State().flushes;
  fake::Enter(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, 2);
  CHECK(fake::State().flushes == before + 1);
  fake::Exit(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, 2);
  fake::Enter(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, 0);
  CHECK(fake::State().flushes == before + 2);
  // The record flushed at the reset is still collected into its window.
  Window w = h.Collect(start, NowNs());
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
}

// NCCL's wrappers and profiler plugin (collectors/nccl) tie a collective to
// its kernel through the launches this thread's API-enter callbacks see
// inside the call; NCCL launches through the driver API (cuLaunchKernelEx).
TEST_CASE("a call in progress when every callback went off does not make the thread's later launches look nested", "[collector]") {
  Harness h;  // PROF_STEP=time: no call is watched, so a stop turns every callback off
  auto& c = h.Attached();
  fake::Enter(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 1);  // its exit is lost
  c.Pause();  // no window begun: recording stops now, every callback off
  REQUIRE(fake::State().callbacks == GraphNodeCallbacks());
  fake::Exit(kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 1);  // CUPTI calls nothing
  c.Attach(h.config);  // the next window
  c.BeginRecord(NowNs());
  LaunchSink sink;
  tls_launch_sink = &sink;
  fake::Call(kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 5);  // inside an NCCL call
  tls_launch_sink = nullptr;
  REQUIRE(sink.count == 1);
  CHECK(sink.ids[0] == 5);
}

bool g_runtime_on_stack = false;
bool RuntimeOnStackStandIn() { return g_runtime_on_stack; }

TEST_CASE("a runtime call that entered while the callbacks were off is no window's, nor are its driver call's records",
          "[collector]") {
  // PROF_STEP=time: between windows every callback is off. A thread enters
  // cudaMemcpyAsync then, is preempted, and the runtime's own cuMemcpyAsync
  // reaches the callbacks once the next window turned them on: at depth 0,
  // but inside a runtime call (a libcudart frame is on the stack). Its
  // device record carries the runtime call's id (CUPTI's rule for copies
  // made from the runtime), which no window recorded.
  Harness h;
  auto& c = h.Attached();
  c.SetRuntimeOnStack(&RuntimeOnStackStandIn);
  constexpr uint32_t kCopy = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
  constexpr uint32_t kDriverCopy = CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;
  c.Pause();  // no window begun: every callback off now
  REQUIRE(fake::State().callbacks == GraphNodeCallbacks());
  fake::Enter(kRuntime, kCopy, 10);  // CUPTI calls nothing
  c.Attach(h.config);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  g_runtime_on_stack = true;
  fake::Enter(kDriver, kDriverCopy, 11);
  g_runtime_on_stack = false;
  fake::Exit(kDriver, kDriverCopy, 11);
  fake::Exit(kRuntime, kCopy, 10);
  uint64_t now = NowNs();
  fake::Write(fake::Kernel(10, now + 1000, now + 5000, "_Z6kernelv"));
  h.Launch(12);  // the window's own call, after the straddling one returned
  Window w = h.Collect(start, NowNs());
  CHECK(Correlations(w) == std::vector<uint32_t>{12});
  CHECK(w.meta.losses.device_records_missing == 0);
}

TEST_CASE("a driver call at depth 0 with no runtime frame on the stack is the program's own and awaits its record",
          "[collector]") {
  Harness h;
  auto& c = h.Attached();
  c.SetRuntimeOnStack(&RuntimeOnStackStandIn);
  c.Pause();
  c.Attach(h.config);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  g_runtime_on_stack = false;
  fake::Call(kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 20);  // a driver-API program's launch
  Window w = h.Collect(start, NowNs());
  CHECK(w.meta.losses.device_records_missing == 1);  // awaited: its record never came
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

// Not a test of behaviour: prints what an API enter+exit callback pair costs
// the calling thread while recording. Run: unit_cupti "[.bench]".
TEST_CASE("callback cost per API call while recording", "[.bench]") {
  Harness h;
  auto& c = h.Attached();
  c.BeginRecord(NowNs());
  constexpr uint32_t kCalls = 200000;
  uint64_t t0 = NowNs();
  for (uint32_t id = 1; id <= kCalls; ++id) fake::Call(kRuntime, kLaunch, id);
  uint64_t per_call = (NowNs() - t0) / kCalls;
  WARN("enter+exit callbacks of one launch: " << per_call << " ns (fake CUPTI dispatch included)");
  CHECK(per_call > 0);
}

}  // namespace
}  // namespace prof::cupti

// Each part of this file opens its namespaces anew: boilerplate, not logic.
namespace prof::cupti {
namespace {

TEST_CASE("device work of a call no recording saw enter lands in no window, even when it runs inside one", "[collector]") {
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  // Correlation 2's call entered in a wait step (callbacks off): its copy
  // was enqueued after recording resumed and runs inside this window.
  uint64_t now = NowNs();
  fake::Write(fake::Kernel(2, now + 1000, now + 2000, "_Z4latev"));
  Window w = h.Collect(start, NowNs() + 10'000);
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  CHECK(w.meta.losses.device_records_missing == 0);
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

// A runtime call an interposed wrapper times and records (collectors/
// interpose/intercept.h): tls_call_start_ns is set around the real call.
void WrappedCall(uint32_t cbid, uint32_t correlation_id) {
  tls_call_start_ns = NowNs();
  fake::Call(kRuntime, cbid, correlation_id);
  tls_call_start_ns = 0;
}

// A call no wrapper saw while the session records (a static cudart's).
void UnwrappedCallWhileRecording(uint32_t cbid, uint32_t correlation_id) {
  SetHotBits(kHotRecording);
  fake::Call(kRuntime, cbid, correlation_id);
  ClearHotBits(kHotRecording);
}

// A collector attached with API records on whose wrapper timed one call of
// kSync, now recording from the returned time: kSync's records left out.
uint64_t RecordWithSyncLeftOut(Harness& h) {
  fake::State().api_records = true;
  auto& c = h.Make();
  c.Attach(h.config);
  WrappedCall(kSync, 1);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  REQUIRE(fake::State().runtime_left_out == std::set<uint32_t>{kSync});
  return start;
}

std::vector<const DeviceRecord*> ApiRecordsOf(const Window& w, uint32_t correlation_id) {
  std::vector<const DeviceRecord*> found;
  for (const auto& r : w.device_records) {
    if (r.correlation_id == correlation_id && static_cast<DeviceKind>(r.kind) == DeviceKind::kRuntimeApi) {
      found.push_back(&r);
    }
  }
  return found;
}

}  // namespace

TEST_CASE("RUNTIME records of calls a recording wrapper timed are left out from the next window on", "[collector]") {
  Harness h;
  fake::State().api_records = true;
  auto& c = h.Make();
  c.Attach(h.config);
  WrappedCall(kSync, 1);  // warmup: recorded, and it says a wrapper records this id
  CHECK(fake::State().records_written == 1);
  CHECK(fake::State().runtime_left_out.empty());  // never from a callback
  uint64_t start = NowNs();
  c.BeginRecord(start);
  CHECK(fake::State().runtime_left_out == std::set<uint32_t>{kSync});
  WrappedCall(kSync, 2);             // its host event shows it: no record
  fake::Call(kRuntime, kLaunch, 3);  // no wrapper timed this one: its record stays
  CHECK(fake::State().records_written == 2);
  Window w = h.Collect(start, NowNs());
  CHECK(ApiRecordsOf(w, 2).empty());
  CHECK(ApiRecordsOf(w, 3).size() == 1);
  // A new CUPTI session (after the schedule's end) learns again from nothing
  // left out: enabling the RUNTIME kind records every id.
  c.Pause();
  h.Collect(start, NowNs());
  CHECK(fake::State().runtime_left_out.empty());
  c.Attach(h.config);
  CHECK(fake::State().runtime_left_out == std::set<uint32_t>{kSync});  // what it knows, left out at once
}

TEST_CASE("a call of a left-out id that no wrapper timed gets its record built from its callbacks", "[collector]") {
  Harness h;
  uint64_t start = RecordWithSyncLeftOut(h);
  auto& c = *h.collector;
  uint64_t before = NowNs();
  UnwrappedCallWhileRecording(kSync, 5);  // CUPTI writes nothing for it
  uint64_t after = NowNs();
  CHECK(fake::State().records_written == 1);
  Window w = h.Collect(start, NowNs());
  auto built = ApiRecordsOf(w, 5);
  REQUIRE(built.size() == 1);
  CHECK(built[0]->cbid == kSync);
  CHECK(w.String(built[0]->name_id) == "cudaDeviceSynchronize");
  CHECK(built[0]->thread_id == ThisThreadId());
  CHECK(built[0]->start_ns >= before);
  CHECK(built[0]->start_ns <= built[0]->end_ns);
  CHECK(built[0]->end_ns <= after);
  // The id reached the callbacks past the wrappers: it is recorded again,
  // and never left out from then on.
  CHECK(fake::State().runtime_left_out.empty());
  CHECK(fake::State().runtime_api_calls.back() == std::pair<uint32_t, int>{kSync, 1});
  c.BeginRecord(NowNs());
  CHECK(fake::State().runtime_left_out.empty());
}

TEST_CASE("a call whose record was built and also written by CUPTI is in its window once", "[collector]") {
  Harness h;
  uint64_t start = RecordWithSyncLeftOut(h);
  auto& c = *h.collector;
  // Entered while left out, recorded again before it returns: CUPTI writes
  // its record at the exit (this fake decides there) and libprof, having
  // seen it enter left out, builds one too.
  SetHotBits(kHotRecording);
  fake::Enter(kRuntime, kSync, 6);
  c.BeginRecord(NowNs());  // applies "record it again"
  REQUIRE(fake::State().runtime_left_out.empty());
  fake::Exit(kRuntime, kSync, 6);
  ClearHotBits(kHotRecording);
  CHECK(fake::State().records_written == 2);
  Window w = h.Collect(start, NowNs());
  CHECK(ApiRecordsOf(w, 6).size() == 1);
}

TEST_CASE("without cuptiActivityEnableRuntimeApi, or when CUPTI refuses it, every RUNTIME record is kept",
          "[collector]") {
  Harness h;
  fake::State().api_records = true;
  SECTION("absent (an older libcupti)") { fake::State().has_enable_runtime_api = false; }
  SECTION("refused") { fake::State().enable_runtime_api_result = CUPTI_ERROR_NOT_SUPPORTED; }
  SECTION("no system thread ids: built records could not carry CUPTI's") { fake::State().has_thread_id_type = false; }
  auto& c = h.Make();
  c.Attach(h.config);
  WrappedCall(kSync, 1);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  CHECK(fake::State().runtime_left_out.empty());
  size_t asked = fake::State().runtime_api_calls.size();
  CHECK(asked <= 1);  // refused once: never asked again
  WrappedCall(kSync, 2);
  WrappedCall(kLaunch, 3);
  c.BeginRecord(NowNs());
  CHECK(fake::State().runtime_api_calls.size() == asked);
  CHECK(fake::State().records_written == 3);
  Window w = h.Collect(start, NowNs());
  CHECK(ApiRecordsOf(w, 2).size() == 1);
  CHECK(ApiRecordsOf(w, 3).size() == 1);
}

TEST_CASE("a call's own RUNTIME record written long after its exit callback is still its window's", "[collector]") {
  // CUPTI writes a call's record after the exit callback: a thread
  // preempted in between (a loaded machine) delivers it late. With nothing
  // dropped the record will come, so the window waits for it.
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  fake::Call(kRuntime, kSync, 7);  // no record at its exit
  uint64_t returned = NowNs();
  uint64_t end = NowNs();
  bool written = false;
  fake::State().before_flush = [&] {
    if (written || NowNs() < returned + 150'000'000) return;
    fake::Write(fake::RuntimeApi(7, kSync, start, returned));
    written = true;
  };
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/3'000'000'000);
  uint64_t waited = NowNs() - before;
  CHECK(ApiRecordsOf(w, 7).size() == 1);
  CHECK(w.meta.losses.api_records_missing == 0);
  CHECK(waited >= 140'000'000);
  CHECK(waited < 2'500'000'000);  // done once it came, not at the deadline
}

TEST_CASE("a call whose own RUNTIME record never comes is counted missing at the deadline", "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  fake::Call(kRuntime, kSync, 8);  // no record, ever
  uint64_t end = NowNs();
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/200'000'000);
  CHECK(NowNs() - before >= 200'000'000);
  CHECK(ApiRecordsOf(w, 8).empty());
  CHECK(w.meta.losses.api_records_missing == 1);
  // The next window starts afresh: nothing of this one is still awaited.
  uint64_t next = NowNs();
  Window w2 = h.Collect(next, NowNs(), /*wait_ns=*/200'000'000);
  CHECK(w2.meta.losses.api_records_missing == 0);
}

TEST_CASE("once CUPTI dropped records, a RUNTIME record not delivered gets a short grace, not the deadline",
          "[collector]") {
  Harness h;
  h.Attached();
  uint64_t start = NowNs();
  fake::Call(kRuntime, kSync, 9);  // its record was among those dropped
  fake::State().dropped = 3;
  uint64_t end = NowNs();
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/5'000'000'000);
  CHECK(NowNs() - before < 4'000'000'000);
  CHECK(w.meta.losses.cupti_records_dropped == 3);
  CHECK(w.meta.losses.api_records_missing == 1);
}

// A window that recorded a call with no callback (cudaGetLastError): CUPTI
// wrote its record, and nothing awaits it. It sits in the buffer CUPTI
// fills, which a plain flush keeps while that buffer also holds work still
// running. The window is paused; with later_window the next one records.
std::pair<uint64_t, uint64_t> WindowWithUnwatchedCall(Harness& h, uint32_t correlation_id, bool later_window) {
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  fake::State().plain_flush_keeps_current = true;
  uint64_t now = NowNs();
  fake::Write(fake::RuntimeApi(correlation_id, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, now, now + 100));
  uint64_t end = NowNs();
  c.Pause();
  if (later_window) {
    c.Attach(h.config);  // the next window: warmup, then recording
    c.BeginRecord(NowNs());
  }
  return {start, end};
}

TEST_CASE("a record of a call with no callback, in a buffer CUPTI keeps, is forced out when no later window records",
          "[collector]") {
  Harness h;
  auto [start, end] = WindowWithUnwatchedCall(h, 21, /*later_window=*/false);
  int forced_before = fake::State().forced_flushes;
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/3'000'000'000);
  CHECK(ApiRecordsOf(w, 21).size() == 1);
  CHECK(fake::State().forced_flushes == forced_before + 1);
  CHECK(NowNs() - before < 2'000'000'000);  // at once, not at the deadline
}

TEST_CASE("while a later window records, the buffer is awaited rather than forced out", "[collector]") {
  // A forced flush would hand over the later window's work still running
  // without its times.
  Harness h;
  auto [start, end] = WindowWithUnwatchedCall(h, 22, /*later_window=*/true);
  uint64_t full_at = NowNs() + 100'000'000;  // CUPTI retires the buffer then (full, its work done)
  fake::State().before_flush = [full_at] {
    if (NowNs() >= full_at) fake::RetireCurrent();
  };
  int forced_before = fake::State().forced_flushes;
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/3'000'000'000);
  uint64_t waited = NowNs() - before;
  CHECK(ApiRecordsOf(w, 22).size() == 1);
  CHECK(fake::State().forced_flushes == forced_before);
  CHECK(waited >= 90'000'000);
  CHECK(waited < 2'000'000'000);
}

TEST_CASE("a buffer still held at the deadline is forced out then, so the record is in its window", "[collector]") {
  Harness h;
  auto [start, end] = WindowWithUnwatchedCall(h, 23, /*later_window=*/true);
  int forced_before = fake::State().forced_flushes;
  uint64_t before = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/200'000'000);
  CHECK(NowNs() - before >= 200'000'000);
  CHECK(ApiRecordsOf(w, 23).size() == 1);
  CHECK(fake::State().forced_flushes == forced_before + 1);
}

TEST_CASE("a record of a call with no callback that comes after its window was sealed is counted, in no window",
          "[collector]") {
  Harness h;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  uint64_t made = NowNs();  // the call; its thread is descheduled before CUPTI writes the record
  uint64_t end = NowNs();
  Window first = h.Collect(start, end);
  CHECK(first.device_records.empty());
  CHECK(c.late_api_records() == 0);
  fake::Write(fake::RuntimeApi(31, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, made, made + 10));
  uint64_t next = NowNs();
  Window second = h.Collect(next, NowNs());
  CHECK(ApiRecordsOf(second, 31).empty());
  CHECK(c.late_api_records() == 1);
}

}  // namespace prof::cupti
