// Activity records: which are written, their fields in the CUDA 13
// structs, correlation with the callbacks, and the reported clock.
#include <catch2/catch.hpp>
#include <cupti.h>
#include <pthread.h>

#include "../internal.h"
#include "fake_hub.h"
#include "test_client.h"

namespace {

using testclient::RecordsOf;

constexpr uint64_t kUs = 1000;
const fakehub::Call kLaunch{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                            "cudaLaunchKernel", "_Z4axpyPf"};
const fakehub::Call kMemcpy{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                            "cudaMemcpyAsync"};
const fakehub::Call kDriverCopy{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                                "cuMemcpyHtoDAsync_v2"};

uint32_t g_callback_correlation = 0;
void CUPTIAPI RememberCorrelation(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  g_callback_correlation = static_cast<const CUpti_CallbackData*>(data)->correlationId;
}

// Launches one kernel that runs [now+10us, now+20us) and lets it finish.
uint32_t LaunchFinishedKernel(const char* name = "_Z4axpyPf") {
  const uint32_t id = fakehub::MakeCall(kLaunch, [&](uint32_t correlation) {
    fakehub::Enqueue(fakehub::Kernel(correlation, 7, fakehub::Now() + 10 * kUs, fakehub::Now() + 20 * kUs, name));
  });
  fakehub::Advance(100 * kUs);
  return id;
}

uint64_t g_client_offset_ns = 0;
uint64_t CUPTIAPI ClientClock() { return fakehub::Now() + g_client_offset_ns; }

}  // namespace

TEST_CASE("the kernel record and the API record and the callback carry the same correlation id", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  CUpti_SubscriberHandle handle = nullptr;
  REQUIRE(cuptiSubscribe(&handle, RememberCorrelation, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  const uint64_t start = fakehub::Now();
  const uint32_t id = LaunchFinishedKernel();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  auto api = RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  auto kernels = RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  REQUIRE(api.size() == 1);
  REQUIRE(kernels.size() == 1);
  CHECK(g_callback_correlation == id);
  CHECK(api[0].correlationId == id);
  CHECK(kernels[0].correlationId == id);
  CHECK(api[0].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  CHECK(api[0].start == start);
  CHECK(api[0].end == start + 1000);  // the fake call lasts 1 us
  CHECK(api[0].threadId == static_cast<uint32_t>(pthread_self()));  // default thread-id type
  CHECK(kernels[0].start == start + 10 * kUs);
  CHECK(kernels[0].end == start + 20 * kUs);
  CHECK(kernels[0].completed == kernels[0].end);
  CHECK(kernels[0].streamId == 7);
  CHECK(std::string(kernels[0].name) == "_Z4axpyPf");
  CHECK(kernels[0].blockX == 128);
  CHECK(kernels[0].queued == CUPTI_TIMESTAMP_UNKNOWN);  // latency timestamps are off by default
}

TEST_CASE("an op is recorded only if its kind was enabled when it was launched", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  LaunchFinishedKernel("first");
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  LaunchFinishedKernel("while_disabled");
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  // Launched while enabled, still running when the kind is disabled: kept.
  fakehub::MakeCall(kLaunch, [](uint32_t correlation) {
    fakehub::Enqueue(fakehub::Kernel(correlation, 0, fakehub::Now(), fakehub::Now() + 50 * kUs, "third"));
  });
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  fakehub::Advance(100 * kUs);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  auto kernels = RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  REQUIRE(kernels.size() == 2);
  CHECK(std::string(kernels[0].name) == "first");
  CHECK(std::string(kernels[1].name) == "third");
  CHECK(RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME).empty());  // RUNTIME never enabled
}

TEST_CASE("with a timestamp callback every reported time is on the client's clock", "[activity][clock]") {
  testclient::Fresh fresh;
  testclient::Install();
  g_client_offset_ns = 5000000000ull;
  REQUIRE(cuptiActivityRegisterTimestampCallback(ClientClock) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  const uint64_t sim_start = fakehub::Now();
  LaunchFinishedKernel();
  uint64_t now = 0;
  REQUIRE(cuptiGetTimestamp(&now) == CUPTI_SUCCESS);
  CHECK(now == ClientClock());
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  auto api = RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  auto kernels = RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  REQUIRE(api.size() == 1);
  REQUIRE(kernels.size() == 1);
  CHECK(api[0].start == sim_start + g_client_offset_ns);
  CHECK(kernels[0].start == sim_start + 10 * kUs + g_client_offset_ns);
  CHECK(kernels[0].end == sim_start + 20 * kUs + g_client_offset_ns);
  // cuptiFinalize forgets it: the next attach must register it again.
  cuptiFinalize();
  REQUIRE(cuptiGetTimestamp(&now) == CUPTI_SUCCESS);
  CHECK(now == fakehub::Now());
}

TEST_CASE("memcpy records name the driver call and the enclosing runtime call", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
  uint32_t driver_id = 0;
  const uint32_t runtime_id = fakehub::MakeCall(kMemcpy, [&](uint32_t) {
    driver_id = fakehub::MakeCall(kDriverCopy, [&](uint32_t correlation) {
      SimOp op = fakehub::Op(SIM_OP_MEMCPY, correlation, 3, fakehub::Now(), fakehub::Now() + kUs);
      op.bytes = 4096;
      op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
      op.src_kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
      op.dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      fakehub::Enqueue(op);
    });
  });
  fakehub::Advance(10 * kUs);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  auto copies = RecordsOf<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].correlationId == driver_id);
  CHECK(copies[0].runtimeCorrelationId == runtime_id);
  CHECK(copies[0].bytes == 4096);
  CHECK(copies[0].copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK(copies[0].srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  CHECK(copies[0].dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK(copies[0].streamId == 3);
}

TEST_CASE("peer copies and memsets and synchronizations and allocations use their CUDA 13 structs", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  for (auto kind : {CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                    CUPTI_ACTIVITY_KIND_MEMORY2}) {
    REQUIRE(cuptiActivityEnable(kind) == CUPTI_SUCCESS);
  }
  const uint64_t t = fakehub::Now();
  fakehub::MakeCall(kMemcpy, [&](uint32_t id) {
    SimOp peer = fakehub::Op(SIM_OP_MEMCPY, id, 1, t, t + kUs);
    peer.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    peer.bytes = 64;
    fakehub::Enqueue(peer);
    SimOp set = fakehub::Op(SIM_OP_MEMSET, id, 1, t + kUs, t + 2 * kUs);
    set.bytes = 128;
    fakehub::Enqueue(set);
    SimOp sync = fakehub::Op(SIM_OP_SYNC, id, 1, t, t + 3 * kUs);
    sync.sync_type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    fakehub::Enqueue(sync);
    SimOp alloc = fakehub::Op(SIM_OP_MEM_ALLOC, id, 0, t, t);
    alloc.address = 0x7f0000001000;
    alloc.bytes = 1 << 20;
    fakehub::Enqueue(alloc);
    SimOp free_op = fakehub::Op(SIM_OP_MEM_FREE, id, 0, t + kUs, t + kUs);
    free_op.address = alloc.address;
    free_op.bytes = alloc.bytes;
    fakehub::Enqueue(free_op);
  });
  fakehub::Advance(10 * kUs);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  auto peers = RecordsOf<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  REQUIRE(peers.size() == 1);
  CHECK(peers[0].bytes == 64);
  CHECK(peers[0].end == t + kUs);
  auto sets = RecordsOf<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  REQUIRE(sets.size() == 1);
  CHECK(sets[0].bytes == 128);
  CHECK(sets[0].start == t + kUs);
  auto syncs = RecordsOf<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  REQUIRE(syncs.size() == 1);
  CHECK(syncs[0].type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  CHECK(syncs[0].streamId == 1);
  CHECK(syncs[0].cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE);
  CHECK(syncs[0].end == t + 3 * kUs);
  auto memory = RecordsOf<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  REQUIRE(memory.size() == 2);
  CHECK(memory[0].memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
  CHECK(memory[0].address == 0x7f0000001000);
  CHECK(memory[0].bytes == (1 << 20));
  CHECK(memory[0].timestamp == t);
  CHECK(memory[1].memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
  CHECK(memory[1].timestamp == t + kUs);
}

TEST_CASE("thread ids follow cuptiSetThreadIdType and latency timestamps fill queued and submitted", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  REQUIRE(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnableLatencyTimestamps(1) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL) == CUPTI_SUCCESS);
  const uint64_t launch = fakehub::Now();
  LaunchFinishedKernel();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  auto api = RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  REQUIRE(api.size() == 1);
  CHECK(api[0].threadId == testclient::CurrentThread());
  auto kernels = RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_KERNEL);  // the serialized kind
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].queued == launch);
  CHECK(kernels[0].submitted == launch);
}

TEST_CASE("pushed external correlation ids precede the API records made inside the region", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42) == CUPTI_SUCCESS);
  const uint32_t inside = fakehub::MakeCall(kLaunch);
  uint64_t popped = 0;
  REQUIRE(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped) == CUPTI_SUCCESS);
  CHECK(popped == 42);
  CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped) ==
        CUPTI_ERROR_QUEUE_EMPTY);
  fakehub::MakeCall(kLaunch);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  auto external = RecordsOf<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  REQUIRE(external.size() == 1);
  CHECK(external[0].externalId == 42);
  CHECK(external[0].correlationId == inside);
  CHECK(RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME).size() == 2);
}

TEST_CASE("per-context settings supersede the global ones for work in that context", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  int unknown = 0;
  CHECK(cuptiActivityEnableContext(reinterpret_cast<CUcontext>(&unknown), CUPTI_ACTIVITY_KIND_RUNTIME) ==
        CUPTI_ERROR_INVALID_CONTEXT);
  auto* context = static_cast<CUcontext>(fakehub::Context());
  fakehub::ContextEvent(/*destroy=*/false, context, 1);  // the fake's calls and ops are in uid 1
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityDisableContext(context, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnableContext(context, CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  LaunchFinishedKernel();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).empty());
  CHECK(RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME).size() == 1);
}

TEST_CASE("per-cbid API selection holds until the RUNTIME kind is set again", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  const fakehub::Call malloc_call{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc"};
  // Only cudaMalloc, without the RUNTIME kind.
  REQUIRE(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 1) == CUPTI_SUCCESS);
  fakehub::MakeCall(malloc_call);
  fakehub::MakeCall(kLaunch);
  // Enabling the kind afterwards overrides the selection: everything.
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  // All but launches.
  REQUIRE(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  fakehub::MakeCall(malloc_call);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  std::vector<uint32_t> cbids;
  for (const auto& r : RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME)) cbids.push_back(r.cbid);
  CHECK(cbids == std::vector<uint32_t>{CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                       CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020});
}

// libprof's use (collectors/cupti): the kind on, then single ids left out;
// the kind disabled between windows and enabled again. cupti_activity.h:
// "Activity kind CUPTI_ACTIVITY_KIND_RUNTIME overrides the settings done by
// this API if it is called after the API".
TEST_CASE("ids left out after the RUNTIME kind is on stay out until the kind is set again", "[activity]") {
  testclient::Fresh fresh;
  testclient::Install();
  const uint32_t launch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  const uint32_t copy = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
  const uint64_t launches_before = simcupti::ApiRecordsWritten(CUPTI_CB_DOMAIN_RUNTIME_API, launch);
  const uint64_t copies_before = simcupti::ApiRecordsWritten(CUPTI_CB_DOMAIN_RUNTIME_API, copy);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnableRuntimeApi(launch, 0) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);  // left out
  fakehub::MakeCall(kMemcpy);  // recorded
  // Disabling the kind: nothing; enabling it again forgets the choice.
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  fakehub::MakeCall(kMemcpy);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);  // recorded again
  // Whether a call is recorded is decided when it enters: a launch that
  // entered while its id was on keeps its record when the id is left out
  // before it returns.
  fakehub::MakeCall(kLaunch, [&](uint32_t) { REQUIRE(cuptiActivityEnableRuntimeApi(launch, 0) == CUPTI_SUCCESS); });
  fakehub::MakeCall(kLaunch);  // left out
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  std::vector<uint32_t> cbids;
  for (const auto& r : RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME)) cbids.push_back(r.cbid);
  CHECK(cbids == std::vector<uint32_t>{copy, launch, launch});
  // The cupti_state line's counters follow the records written.
  CHECK(simcupti::ApiRecordsWritten(CUPTI_CB_DOMAIN_RUNTIME_API, launch) == launches_before + 2);
  CHECK(simcupti::ApiRecordsWritten(CUPTI_CB_DOMAIN_RUNTIME_API, copy) == copies_before + 1);
  // Each choice is a truth line with its id; an id past the table is refused.
  CHECK(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_SIZE, 0) == CUPTI_ERROR_INVALID_PARAMETER);
  CHECK(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_SIZE, 1) == CUPTI_ERROR_INVALID_PARAMETER);
  int left_out_lines = 0;
  int refused_lines = 0;
  for (const std::string& line : fakehub::TruthLines()) {
    if (line.find("\"call\":\"cuptiActivityEnableRuntimeApi\"") == std::string::npos) continue;
    if (line.find("\"cbid\":" + std::to_string(launch) + ",\"enable\":0") != std::string::npos) ++left_out_lines;
    if (line.find("\"result\":" + std::to_string(CUPTI_ERROR_INVALID_PARAMETER)) != std::string::npos) ++refused_lines;
  }
  CHECK(left_out_lines == 2);
  CHECK(refused_lines == 1);
}
