// The collector beside another client of CUPTI's activity API
// (collector_sharing.cpp), against the fake CUPTI: as a subscriber among
// several (CUPTI 13.2), and on a CUPTI that allows one client, the program's
// own profiler (its calls through activity_user.h, as the exported functions
// make them under LD_PRELOAD) or one libprof cannot see.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/activity_user.h"
#include "fake_cupti.h"

namespace prof::cupti {
namespace {

constexpr auto kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr uint32_t kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr uint32_t kSync = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;

// The program's own client: its buffers, what it was handed, its clock.
struct Program {
  static inline std::vector<std::unique_ptr<uint8_t[]>> buffers;
  static inline int requested = 0;
  static inline std::vector<uint8_t*> completed;
  static void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
    buffers.push_back(std::make_unique<uint8_t[]>(1 << 16));
    *buffer = buffers.back().get();
    *size = 1 << 16;
    *max_records = 0;
    ++requested;
  }
  static void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) { completed.push_back(buffer); }
  // A clock that is not libprof's (Kineto's counts TSC ticks).
  static uint64_t CUPTIAPI Clock() { return NowNs() + 10'000'000'000ull; }
  static void Reset() {
    buffers.clear();
    requested = 0;
    completed.clear();
  }
};

struct Harness {
  Config config;
  std::unique_ptr<CuptiCollector> collector;

  Harness() {
    fake::Reset();
    Program::Reset();
    ResetUserClient();
    SetForwardedCuptiForTest(fake::Forwarded());
    config.flush_timeout_ns = 50'000'000;
  }
  ~Harness() {
    SetSharingCollector(nullptr);
    collector.reset();
    SetForwardedCuptiForTest(nullptr);
    ResetUserClient();
    fake::Reset();
  }
  // Attached to a fake 13.2 whose CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE says one.
  CuptiCollector& Make13_2ReadingOnly32Bytes() {
    fake::State().one_subscriber_only = true;
    return Attached();
  }
  CuptiCollector& Attached() {
    collector = std::make_unique<CuptiCollector>([](const Config&, CuptiApi* api, std::string*) {
      *api = fake::Api();
      return true;
    });
    SetSharingCollector(collector.get());
    collector->Attach(config);
    return *collector;
  }
  void Launch(uint32_t correlation_id) {
    fake::Call(kRuntime, kLaunch, correlation_id);
    uint64_t now = NowNs();
    fake::Write(fake::Kernel(correlation_id, now + 1000, now + 5000, "_Z6kernelv"));
  }
  Window Collect(uint64_t start_ns, uint64_t end_ns, uint64_t wait_ns = 0) {
    Window w;
    collector->CollectWindow(start_ns, end_ns, NowNs() + wait_ns, &w);
    return w;
  }
};

std::vector<uint32_t> Correlations(const Window& w) {
  std::vector<uint32_t> ids;
  for (const auto& r : w.device_records) ids.push_back(r.correlation_id);
  return ids;
}

uint8_t Attribute(CUpti_ActivityAttribute attr) {
  auto it = fake::State().attributes.find(attr);
  return it == fake::State().attributes.end() || it->second.empty() ? 0xff : it->second[0];
}

TEST_CASE("on CUPTI 13.2 libprof subscribes beside others and records through its own client only", "[sharing]") {
  Harness h;
  auto& s = fake::State();
  s.version = 130202;
  s.multi = true;
  s.other_kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};  // torch.profiler's
  auto& c = h.Attached();
  CHECK(c.multi_client());
  CHECK(s.allow_multiple);
  CHECK(s.subscribe_struct_size == 40);
  // Its kinds, buffers, clock, thread ids and zeroed buffers through the
  // _v2 functions; nothing of the process-wide client's.
  CHECK(s.process_wide_activity_calls == 0);
  CHECK(s.v2_activity_calls > 0);
  CHECK(s.request_v2 != nullptr);
  CHECK(s.request == nullptr);
  CHECK(s.timestamp != nullptr);
  CHECK(s.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  uint64_t end = NowNs();
  c.Finish();
  Window w = h.Collect(start, end);
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  CHECK(w.meta.losses.device_records_elsewhere == 0);
  // No per-id RUNTIME choice (cuptiActivityEnableRuntimeApi would choose for
  // the process-wide client), and no forced flush while another client
  // records (its records of work still running would come untimed).
  CHECK(s.runtime_api_calls.empty());
  CHECK(s.forced_flushes == 0);
  fake::Call(kRuntime, kSync, 2);  // the API exit that detaches
  CHECK(c.state() == CollectorState::kDetached);
  CHECK(s.finalize_calls == 0);  // it would detach torch.profiler too
  CHECK(s.process_wide_activity_calls == 0);
}

TEST_CASE("on CUPTI 13.2 with no other client, CUPTI is still finalized after the last window", "[sharing]") {
  Harness h;
  fake::State().version = 130202;
  fake::State().multi = true;
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  uint64_t end = NowNs();
  c.Finish();
  CHECK(Correlations(h.Collect(start, end)) == std::vector<uint32_t>{1});
  fake::Call(kRuntime, kSync, 2);
  CHECK(fake::State().finalize_calls == 1);
}

TEST_CASE("a 13.2 that lets one subscriber in is used as the only client, through the process-wide functions",
          "[sharing]") {
  Harness h;
  fake::State().version = 130202;
  fake::State().multi = true;
  // Let in, but CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE says one (a
  // 13.2 on a driver that limits activity to one subscriber, or one that
  // reads 13.0's 32 bytes of the parameters, as the sim's classic rule).
  auto& c = h.Make13_2ReadingOnly32Bytes();
  CHECK_FALSE(c.multi_client());
  CHECK(fake::State().v2_activity_calls == 0);
  CHECK(fake::State().request != nullptr);
  CHECK(fake::State().kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

TEST_CASE("a CUPTI before 13.2 is subscribed to with 13.0's parameters, as the only client", "[sharing]") {
  Harness h;
  fake::State().version = 130001;
  fake::State().multi = true;  // functions present, but not the release that has them
  auto& c = h.Attached();
  CHECK_FALSE(c.multi_client());
  CHECK(fake::State().subscribe_struct_size == sizeof(CUpti_SubscriberParams));
  CHECK_FALSE(fake::State().allow_multiple);
  CHECK(fake::State().v2_activity_calls == 0);
}

TEST_CASE("one client: the program's claim gets CUPTI as it left it, its release gives it back", "[sharing]") {
  Harness h;
  auto& s = fake::State();
  auto& c = h.Attached();
  CuptiApi ours = fake::Api();
  auto libprof_request = s.request;
  auto libprof_clock = s.timestamp;
  REQUIRE(Attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) == 1);  // libprof's promise
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);  // into a buffer of libprof's that CUPTI holds
  // Its clock and an attribute while libprof holds the activity API: kept
  // for its claim (they would change what libprof's records are), answered
  // CUPTI_SUCCESS.
  CHECK(UserRegisterTimestampCallback(Program::Clock, nullptr) == CUPTI_SUCCESS);
  uint8_t per_thread = 1;
  size_t size = sizeof(per_thread);
  CHECK(UserSetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread, nullptr) ==
        CUPTI_SUCCESS);
  CHECK(s.timestamp == libprof_clock);
  CHECK(Attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER) == 0xff);
  int forced = s.forced_flushes;
  // The claim: libprof's kinds off, its buffers flushed out of CUPTI's
  // hands, then the program's state put back before its call goes on.
  CHECK(UserRegisterCallbacks(Program::Request, Program::Complete, nullptr) == CUPTI_SUCCESS);
  CHECK(c.activity_elsewhere());
  CHECK(s.forced_flushes == forced + 1);
  CHECK(s.kinds.empty());
  CHECK(s.request == Program::Request);
  CHECK(s.timestamp == Program::Clock);
  CHECK(s.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  CHECK(Attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) == 0);
  CHECK(Attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER) == 1);
  CHECK(Program::completed.empty());  // libprof's buffer went to libprof
  // The program records: a launch while it holds CUPTI lands in its buffers.
  CHECK(UserEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  CHECK(s.kinds == std::set<int>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  h.Launch(2);
  CHECK(Program::requested == 1);
  // It stops: its kinds off, a forced flush hands it its buffers, and
  // libprof registers itself again and resumes its kinds.
  CHECK(UserDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  CHECK(UserFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(Program::completed.size() == 1);
  CHECK_FALSE(c.activity_elsewhere());
  CHECK(s.request == libprof_request);
  CHECK(s.timestamp == libprof_clock);
  CHECK(s.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  CHECK(s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  h.Launch(3);
  uint64_t end = NowNs();
  // The program's flush while libprof holds CUPTI again touches nothing.
  int flushes = s.flushes;
  CHECK(UserFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(s.flushes == flushes);
  Window w = h.Collect(start, end);
  CHECK(Correlations(w) == std::vector<uint32_t>{1, 3});
  CHECK(w.meta.losses.device_records_elsewhere == 1);  // launch 2's record went to the program
  CHECK(w.meta.losses.device_records_missing == 0);
  (void)ours;
}

TEST_CASE("one client: after the program used CUPTI, libprof never finalizes it", "[sharing]") {
  Harness h;
  auto& c = h.Attached();
  CHECK(UserRegisterCallbacks(Program::Request, Program::Complete, nullptr) == CUPTI_SUCCESS);
  CHECK(UserEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  CHECK(UserDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  CHECK(UserFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  uint64_t end = NowNs();
  c.Finish();
  CHECK(Correlations(h.Collect(start, end)) == std::vector<uint32_t>{1});
  fake::Call(kRuntime, kSync, 2);
  CHECK(c.state() == CollectorState::kDetached);
  // torch.profiler registered its clock once: a cuptiFinalize would take it away.
  CHECK(fake::State().finalize_calls == 0);
}

TEST_CASE("one client libprof cannot see: its clock is sensed before libprof turns a kind on", "[sharing]") {
  Harness h;
  auto& s = fake::State();
  auto& c = h.Attached();
  c.BeginRecord(NowNs());
  c.Pause();
  h.Collect(0, NowNs());
  REQUIRE(s.kinds.empty());
  // Under CUDA_INJECTION64_PATH: torch.profiler registers its clock and its
  // callbacks straight with CUPTI, and records.
  s.timestamp = Program::Clock;
  s.request = Program::Request;
  s.complete = Program::Complete;
  s.kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  c.Attach(h.config);
  CHECK(c.activity_elsewhere());
  CHECK(s.kinds == std::set<int>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});  // nothing of libprof's, nothing turned off
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(5);
  uint64_t end = NowNs();
  int flushes = s.flushes;
  Window w = h.Collect(start, end, /*wait_ns=*/5'000'000'000);
  CHECK(w.device_records.empty());
  CHECK(w.meta.losses.device_records_elsewhere == 1);
  CHECK(w.meta.losses.device_records_missing == 0);
  CHECK(s.flushes == flushes);  // its buffers are not libprof's to flush
  c.Finish();
  fake::Call(kRuntime, kSync, 6);
  CHECK(s.finalize_calls == 0);
  CHECK(s.kinds == std::set<int>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
}

TEST_CASE("one client libprof cannot see: buffer requests gone quiet while records were due", "[sharing]") {
  Harness h;
  auto& s = fake::State();
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  // Another client registered its callbacks (not its clock): CUPTI asks it
  // for buffers, libprof's are never asked for.
  s.request = Program::Request;
  s.complete = Program::Complete;
  h.Launch(7);
  uint64_t end = NowNs();
  Window w = h.Collect(start, end, /*wait_ns=*/5'000'000'000);
  CHECK(c.activity_elsewhere());
  CHECK(w.device_records.empty());
  CHECK(w.meta.losses.device_records_elsewhere == 1);
  CHECK(w.meta.losses.device_records_missing == 0);
  CHECK(NowNs() - end < 2'000'000'000);  // sensed, not waited out to the deadline
}

TEST_CASE("the program's cuptiFinalize: libprof's records flushed first, subscribed again at the next window",
          "[sharing]") {
  Harness h;
  auto& s = fake::State();
  auto& c = h.Attached();
  uint64_t start = NowNs();
  c.BeginRecord(start);
  h.Launch(1);
  int forced = s.forced_flushes;
  CHECK(UserFinalize() == CUPTI_SUCCESS);
  CHECK(s.forced_flushes == forced + 1);
  CHECK(c.state() == CollectorState::kDetached);
  Window w = h.Collect(start, NowNs());
  CHECK(Correlations(w) == std::vector<uint32_t>{1});
  c.Attach(h.config);
  CHECK(s.subscribe_calls == 2);
  CHECK(c.state() == CollectorState::kAttached);
}

}  // namespace
}  // namespace prof::cupti
