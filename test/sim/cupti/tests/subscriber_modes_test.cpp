// The two subscriber rules (README "Subscribers"): classic CUPTI 13.0 (one
// subscriber, the second refused with the holder's name, whatever it asks
// for) and the multi-subscriber release (SIM_CUPTI_SUBSCRIBERS=multi,
// CUPTI 13.2's header), where each subscriber gets only its own callbacks,
// with its own userdata and correlationData, and only its own activity
// records, in its own buffers, with enables independent of the others'.
#include <cupti.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../cupti_13_2.h"
#include "fake_hub.h"
#include "test_client.h"

namespace {

constexpr uint64_t kUs = 1000;
const fakehub::Call kLaunch{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                            "cudaLaunchKernel", "_Z4axpyPf"};
const fakehub::Call kMemcpy{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                            "cudaMemcpyAsync"};
const fakehub::Call kMalloc{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc"};

// CUpti_SubscriberParams as a CUPTI 13.2 client fills it (40 bytes).
simcupti::SubscriberParams132 Params(const char* name, char* old_name, size_t old_size, bool allow_multiple) {
  simcupti::SubscriberParams132 p{};
  p.structSize = sizeof(p);
  p.subscriberName = name;
  p.oldSubscriberName = old_name;
  p.oldSubscriberSize = old_size;
  p.allowMultipleSubscribers = allow_multiple ? 1 : 0;
  return p;
}

CUptiResult SubscribeV2(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata,
                        simcupti::SubscriberParams132 params) {
  return cuptiSubscribe_v2(handle, callback, userdata, reinterpret_cast<CUpti_SubscriberParams*>(&params));
}

// What one subscriber's callback saw.
struct Seen {
  std::vector<std::pair<CUpti_CallbackId, CUpti_ApiCallbackSite>> calls;
  std::vector<uint64_t> exit_values;  // *correlationData at exit: what this subscriber stored at enter
};

void CUPTIAPI Record(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* seen = static_cast<Seen*>(userdata);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  seen->calls.emplace_back(cbid, info->callbackSite);
  // Each subscriber stashes its own value; another's must not overwrite it.
  if (info->callbackSite == CUPTI_API_ENTER) {
    *info->correlationData = reinterpret_cast<uintptr_t>(seen) + info->correlationId;
  } else {
    seen->exit_values.push_back(*info->correlationData - reinterpret_cast<uintptr_t>(seen));
  }
}

void CUPTIAPI Ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// A buffer sink per subscriber: CUPTI 13.2's buffer callbacks carry no
// userdata, so each sink has its own pair of functions.
template <int N>
struct Sink {
  static std::mutex mu;
  static std::vector<std::vector<uint8_t>> buffers;
  static std::vector<uint64_t> threads;
  static void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records,
                                 CUpti_BufferCallbackRequestInfo* info) {
    REQUIRE(info != nullptr);
    CHECK(info->structSize == sizeof(CUpti_BufferCallbackRequestInfo));
    *size = 1 << 16;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
    *max_records = 0;
  }
  static void CUPTIAPI Completed(uint8_t* buffer, size_t, size_t valid, CUpti_BufferCallbackCompleteInfo* info) {
    std::lock_guard<std::mutex> lock(mu);
    buffers.emplace_back(buffer, buffer + valid);
    threads.push_back(info != nullptr ? info->threadId : 0);
    std::free(buffer);
  }
  static void Clear() {
    std::lock_guard<std::mutex> lock(mu);
    buffers.clear();
    threads.clear();
  }
  // (kind, correlation id) of every record delivered, and each record's size
  // as cuptiActivityGetNextRecord steps over it.
  static std::vector<std::pair<CUpti_ActivityKind, uint32_t>> Records(std::vector<size_t>* kernel_sizes = nullptr) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::pair<CUpti_ActivityKind, uint32_t>> out;
    for (auto& bytes : buffers) {
      CUpti_Activity* record = nullptr;
      const uint8_t* previous = nullptr;
      while (cuptiActivityGetNextRecord(bytes.data(), bytes.size(), &record) == CUPTI_SUCCESS) {
        const auto* at = reinterpret_cast<const uint8_t*>(record);
        if (kernel_sizes != nullptr && previous != nullptr &&
            reinterpret_cast<const CUpti_Activity*>(previous)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
          kernel_sizes->push_back(static_cast<size_t>(at - previous));
        }
        previous = at;
        uint32_t correlation = 0;
        switch (record->kind) {
          case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            correlation = reinterpret_cast<CUpti_ActivityKernel10*>(record)->correlationId;
            break;
          case CUPTI_ACTIVITY_KIND_MEMCPY:
            correlation = reinterpret_cast<CUpti_ActivityMemcpy6*>(record)->correlationId;
            break;
          case CUPTI_ACTIVITY_KIND_RUNTIME:
            correlation = reinterpret_cast<CUpti_ActivityAPI*>(record)->correlationId;
            break;
          case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
            correlation = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(record)->correlationId;
            break;
          default: break;
        }
        const CUpti_ActivityKind kind = record->kind;
        out.emplace_back(kind, correlation);
      }
      if (kernel_sizes != nullptr && previous != nullptr &&
          reinterpret_cast<const CUpti_Activity*>(previous)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        kernel_sizes->push_back(static_cast<size_t>(bytes.data() + bytes.size() - previous));
      }
    }
    return out;
  }
};
template <int N>
std::mutex Sink<N>::mu;
template <int N>
std::vector<std::vector<uint8_t>> Sink<N>::buffers;
template <int N>
std::vector<uint64_t> Sink<N>::threads;

using SinkA = Sink<1>;
using SinkB = Sink<2>;

// Fresh CUPTI and fake hub, in the given subscriber mode. CUPTI attaches
// (and picks its record layouts) on its first call after the mode is set.
struct Mode : testclient::Fresh {
  explicit Mode(bool multi) {
    if (multi) fakehub::SetFault("CUPTI_SUBSCRIBERS", "multi");
    cuptiFinalize();
    SinkA::Clear();
    SinkB::Clear();
  }
  ~Mode() {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // every client's buffers back to its sink
    SinkA::Clear();
    SinkB::Clear();
  }
};

// A kernel launch that runs [now+10us, now+20us), and a copy, each finished.
uint32_t LaunchKernel() {
  const uint32_t id = fakehub::MakeCall(kLaunch, [](uint32_t correlation) {
    fakehub::Enqueue(fakehub::Kernel(correlation, 7, fakehub::Now() + 10 * kUs, fakehub::Now() + 20 * kUs));
  });
  fakehub::Advance(100 * kUs);
  return id;
}
uint32_t Copy() {
  const uint32_t id = fakehub::MakeCall(kMemcpy, [](uint32_t correlation) {
    SimOp op = fakehub::Op(SIM_OP_MEMCPY, correlation, 7, fakehub::Now() + 1 * kUs, fakehub::Now() + 5 * kUs);
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    op.bytes = 64;
    fakehub::Enqueue(op);
  });
  fakehub::Advance(100 * kUs);
  return id;
}

using Records = std::vector<std::pair<CUpti_ActivityKind, uint32_t>>;

}  // namespace

TEST_CASE("classic CUPTI 13.0 refuses a second subscriber with the holder's name even when both ask for several",
          "[subscribers][classic]") {
  Mode mode(/*multi=*/false);
  uint32_t version = 0;
  REQUIRE(cuptiGetVersion(&version) == CUPTI_SUCCESS);
  CHECK(version == 130001);

  CUpti_SubscriberHandle first = nullptr;
  REQUIRE(SubscribeV2(&first, Ignore, nullptr, Params("libprof", nullptr, 0, /*allow_multiple=*/true)) ==
          CUPTI_SUCCESS);
  // 13.0's CUpti_SubscriberParams ends before allowMultipleSubscribers: a
  // 13.2 client's request is not read, and the second is refused.
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "garbage";
  CUpti_SubscriberHandle second = nullptr;
  CHECK(SubscribeV2(&second, Ignore, nullptr, Params("kineto", holder, sizeof(holder), /*allow_multiple=*/true)) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(std::string(holder) == "CUPTI for libprof");
  CHECK(second == nullptr);
  CHECK(cuptiSubscribe(&second, Ignore, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);

  // CUPTI 13.0 has no per-subscriber activity functions.
  CHECK(cuptiActivityEnable_v2(first, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_ERROR_NOT_SUPPORTED);
  CHECK(cuptiActivityRegisterCallbacks_v2(first, SinkA::Requested, SinkA::Completed) == CUPTI_ERROR_NOT_SUPPORTED);
  uint32_t count = 0;
  CHECK(cuptiActivityGetEnabledKinds(first, nullptr, nullptr, &count) == CUPTI_ERROR_NOT_SUPPORTED);
}

TEST_CASE("classic CUPTI writes 13.0's Kernel10 and the multi-subscriber release reports 13.2 and writes its Kernel11",
          "[subscribers][layouts]") {
  for (bool multi : {false, true}) {
    DYNAMIC_SECTION((multi ? "multi" : "classic")) {
      Mode mode(multi);
      uint32_t version = 0;
      REQUIRE(cuptiGetVersion(&version) == CUPTI_SUCCESS);
      CHECK(version == (multi ? 130202u : 130001u));
      testclient::Install();
      REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
      LaunchKernel();
      LaunchKernel();
      REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
      auto deliveries = testclient::Deliveries();
      REQUIRE(deliveries.size() == 1);
      // Two records back to back: the second starts where the struct of the
      // reported release ends (Kernel10: 216 bytes, Kernel11: 224).
      const size_t size = multi ? 224 : 216;
      REQUIRE(deliveries[0].bytes.size() == 2 * size);
      CUpti_Activity* record = nullptr;
      REQUIRE(cuptiActivityGetNextRecord(deliveries[0].bytes.data(), deliveries[0].bytes.size(), &record) ==
              CUPTI_SUCCESS);
      REQUIRE(cuptiActivityGetNextRecord(deliveries[0].bytes.data(), deliveries[0].bytes.size(), &record) ==
              CUPTI_SUCCESS);
      CHECK(reinterpret_cast<uint8_t*>(record) - deliveries[0].bytes.data() == static_cast<ptrdiff_t>(size));
      if (multi) {
        int32_t priority = -1;
        std::memcpy(&priority, deliveries[0].bytes.data() + 216, sizeof(priority));  // Kernel11::priority
        CHECK(priority == 0);
      }
    }
  }
}

TEST_CASE("multi-subscriber release: a first subscriber that does not allow several keeps CUPTI to itself",
          "[subscribers][multi]") {
  Mode mode(/*multi=*/true);
  SECTION("cuptiSubscribe asks for nothing: exclusive") {
    CUpti_SubscriberHandle first = nullptr;
    REQUIRE(cuptiSubscribe(&first, Ignore, nullptr) == CUPTI_SUCCESS);
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "garbage";
    CUpti_SubscriberHandle second = nullptr;
    CHECK(SubscribeV2(&second, Ignore, nullptr, Params("libprof", holder, sizeof(holder), true)) ==
          CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    CHECK(std::string(holder) == "CUPTI for <unnamed>");
    uint8_t state = 9;
    size_t size = sizeof(state);
    REQUIRE(cuptiActivityGetAttribute_v2(first,
                                         static_cast<CUpti_ActivityAttribute>(simcupti::kAttrMultipleSubscriberState),
                                         &size, &state) == CUPTI_SUCCESS);
    CHECK(state == 0);
  }
  SECTION("a later subscriber asking for exclusive use is refused with the first one's name") {
    CUpti_SubscriberHandle first = nullptr;
    REQUIRE(SubscribeV2(&first, Ignore, nullptr, Params("libprof", nullptr, 0, true)) == CUPTI_SUCCESS);
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "garbage";
    CUpti_SubscriberHandle second = nullptr;
    CHECK(SubscribeV2(&second, Ignore, nullptr, Params("tool", holder, sizeof(holder), false)) ==
          CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    CHECK(std::string(holder) == "CUPTI for libprof");
    CHECK(cuptiSubscribe(&second, Ignore, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  }
  SECTION("once every subscriber has gone the next one decides again") {
    CUpti_SubscriberHandle first = nullptr;
    REQUIRE(cuptiSubscribe(&first, Ignore, nullptr) == CUPTI_SUCCESS);
    REQUIRE(cuptiUnsubscribe(first) == CUPTI_SUCCESS);
    CUpti_SubscriberHandle a = nullptr;
    CUpti_SubscriberHandle b = nullptr;
    REQUIRE(SubscribeV2(&a, Ignore, nullptr, Params("a", nullptr, 0, true)) == CUPTI_SUCCESS);
    REQUIRE(SubscribeV2(&b, Ignore, nullptr, Params("b", nullptr, 0, true)) == CUPTI_SUCCESS);
    CHECK(a != b);
  }
}

TEST_CASE("multi-subscriber release: two subscribers each get only their own callbacks, userdata and correlationData",
          "[subscribers][multi]") {
  Mode mode(/*multi=*/true);
  Seen seen_a;
  Seen seen_b;
  CUpti_SubscriberHandle a = nullptr;
  CUpti_SubscriberHandle b = nullptr;
  REQUIRE(SubscribeV2(&a, Record, &seen_a, Params("libprof", nullptr, 0, true)) == CUPTI_SUCCESS);
  char first[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "garbage";
  REQUIRE(SubscribeV2(&b, Record, &seen_b, Params("kineto", first, sizeof(first), true)) == CUPTI_SUCCESS);
  CHECK(std::string(first) == "CUPTI for libprof");  // "the name of the first subscriber"
  uint8_t state = 9;
  size_t size = sizeof(state);
  REQUIRE(cuptiActivityGetAttribute_v2(b, static_cast<CUpti_ActivityAttribute>(simcupti::kAttrMultipleSubscriberState),
                                       &size, &state) == CUPTI_SUCCESS);
  CHECK(state == 1);

  // a: launches only; b: the whole runtime domain.
  REQUIRE(cuptiEnableCallback(1, a, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) ==
          CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, b, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  const uint32_t launch = LaunchKernel();
  const uint32_t malloc_call = fakehub::MakeCall(kMalloc);

  using Call = std::pair<CUpti_CallbackId, CUpti_ApiCallbackSite>;
  const CUpti_CallbackId kLaunchId = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  const CUpti_CallbackId kMallocId = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
  CHECK(seen_a.calls == std::vector<Call>{{kLaunchId, CUPTI_API_ENTER}, {kLaunchId, CUPTI_API_EXIT}});
  CHECK(seen_b.calls == std::vector<Call>{{kLaunchId, CUPTI_API_ENTER},
                                          {kLaunchId, CUPTI_API_EXIT},
                                          {kMallocId, CUPTI_API_ENTER},
                                          {kMallocId, CUPTI_API_EXIT}});
  // Each read back at exit what it stored at enter.
  CHECK(seen_a.exit_values == std::vector<uint64_t>{launch});
  CHECK(seen_b.exit_values == std::vector<uint64_t>{launch, malloc_call});

  uint32_t enabled[4] = {};
  uint32_t capacity = 4;
  uint32_t count = 0;
  REQUIRE(cuptiGetEnabledCallbacks(a, CUPTI_CB_DOMAIN_RUNTIME_API, enabled, &capacity, &count) == CUPTI_SUCCESS);
  CHECK(count == 1);
  CHECK(enabled[0] == kLaunchId);

  // One leaves; the other keeps its callbacks.
  REQUIRE(cuptiUnsubscribe(a) == CUPTI_SUCCESS);
  seen_b.calls.clear();
  fakehub::MakeCall(kMalloc);
  CHECK(seen_b.calls.size() == 2);
  CHECK(seen_a.calls.size() == 2);
  CHECK(cuptiEnableDomain(1, a, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_CASE("multi-subscriber release: each subscriber gets only its own records, and enables are independent",
          "[subscribers][multi]") {
  Mode mode(/*multi=*/true);
  CUpti_SubscriberHandle a = nullptr;
  CUpti_SubscriberHandle b = nullptr;
  REQUIRE(SubscribeV2(&a, Ignore, nullptr, Params("libprof", nullptr, 0, true)) == CUPTI_SUCCESS);
  REQUIRE(SubscribeV2(&b, Ignore, nullptr, Params("kineto", nullptr, 0, true)) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterCallbacks_v2(a, SinkA::Requested, SinkA::Completed) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterCallbacks_v2(b, SinkB::Requested, SinkB::Completed) == CUPTI_SUCCESS);
  // a: kernels and runtime calls; b: kernels and copies.
  REQUIRE(cuptiActivityEnable_v2(a, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable_v2(a, CUPTI_ACTIVITY_KIND_RUNTIME, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable_v2(b, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable_v2(b, CUPTI_ACTIVITY_KIND_MEMCPY, nullptr) == CUPTI_SUCCESS);

  CUpti_ActivityKind kinds[8] = {};
  uint32_t capacity = 8;
  uint32_t count = 0;
  REQUIRE(cuptiActivityGetEnabledKinds(a, kinds, &capacity, &count) == CUPTI_SUCCESS);
  CHECK(count == 2);
  REQUIRE(cuptiActivityGetEnabledKinds(nullptr, kinds, &capacity, &count) == CUPTI_SUCCESS);
  CHECK(count == 3);  // the union: kernel, runtime, memcpy

  const uint32_t k1 = LaunchKernel();
  const uint32_t c1 = Copy();
  // a turns kernels off: b's stay on.
  REQUIRE(cuptiActivityDisable_v2(a, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  const uint32_t k2 = LaunchKernel();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);  // names no subscriber: both get theirs

  std::vector<size_t> kernel_sizes;
  const Records got_a = SinkA::Records(&kernel_sizes);
  const Records got_b = SinkB::Records();
  // A kernel is recorded when launched, inside its call; the call's record at its exit.
  CHECK(got_a == Records{{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k1},
                         {CUPTI_ACTIVITY_KIND_RUNTIME, k1},
                         {CUPTI_ACTIVITY_KIND_RUNTIME, c1},
                         {CUPTI_ACTIVITY_KIND_RUNTIME, k2}});
  CHECK(kernel_sizes == std::vector<size_t>{224});  // CUPTI 13.2's Kernel11
  CHECK(got_b == Records{{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k1},
                         {CUPTI_ACTIVITY_KIND_MEMCPY, c1},
                         {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k2}});
  // Per-thread buffers by default: the completing thread is named.
  for (uint64_t thread : SinkA::threads) CHECK(thread == testclient::CurrentThread());
  // Nothing went through the process-wide API's callbacks.
  CHECK(testclient::Deliveries().empty());
}

TEST_CASE("multi-subscriber release: the process-wide activity API is a client of its own beside the subscribers'",
          "[subscribers][multi]") {
  // torch.profiler's Kineto uses cuptiActivityEnable/RegisterCallbacks and
  // never subscribes; an injected profiler subscribes and uses the _v2 calls.
  Mode mode(/*multi=*/true);
  testclient::Install();
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  CUpti_SubscriberHandle a = nullptr;
  REQUIRE(SubscribeV2(&a, Ignore, nullptr, Params("libprof", nullptr, 0, true)) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterCallbacks_v2(a, SinkA::Requested, SinkA::Completed) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable_v2(a, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);

  REQUIRE(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42) == CUPTI_SUCCESS);
  const uint32_t k = LaunchKernel();
  REQUIRE(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, nullptr) == CUPTI_SUCCESS);
  // The process-wide client turns kernels off: the subscriber's stay on.
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  const uint32_t k2 = LaunchKernel();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  CHECK(SinkA::Records() ==
        Records{{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k}, {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k2}});
  auto kernels = testclient::RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  auto external = testclient::RecordsOf<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].correlationId == k);
  REQUIRE(external.size() == 1);  // the second launch had no id pushed
  CHECK(external[0].correlationId == k);
  CHECK(external[0].externalId == 42);
}

namespace {
constexpr uint64_t kOffsetA = 7000000;
constexpr uint64_t kOffsetProcess = 3000;
uint64_t CUPTIAPI ClockA() { return fakehub::Now() + kOffsetA; }
uint64_t CUPTIAPI ClockProcess() { return fakehub::Now() + kOffsetProcess; }
}  // namespace

// The multi-subscriber set-up of the test above, checking clocks: another scenario.
TEST_CASE("multi-subscriber release: each subscriber's records are on its own clock or CUPTI's default timer",
          "[subscribers][multi][clock]") {
  // CUPTI 13.2: CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK is per subscriber;
  // cuptiActivityRegisterTimestampCallback sets the process-wide client's.
  Mode mode(/*multi=*/true);
  testclient::Install();
  REQUIRE(cuptiActivityRegisterTimestampCallback(ClockProcess) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  CUpti_SubscriberHandle a = nullptr;
  CUpti_SubscriberHandle b = nullptr;
  REQUIRE(SubscribeV2(&a, Ignore, nullptr, Params("a", nullptr, 0, true)) == CUPTI_SUCCESS);
  REQUIRE(SubscribeV2(&b, Ignore, nullptr, Params("b", nullptr, 0, true)) == CUPTI_SUCCESS);
  const auto attr = static_cast<CUpti_ActivityAttribute>(simcupti::kAttrTimestampCallback);
  CUpti_TimestampCallbackFunc clock = ClockA;
  size_t size = sizeof(clock);
  REQUIRE(cuptiActivitySetAttribute_v2(a, attr, &size, &clock) == CUPTI_SUCCESS);
  CUpti_TimestampCallbackFunc read_back = nullptr;
  REQUIRE(cuptiActivityGetAttribute_v2(a, attr, &size, &read_back) == CUPTI_SUCCESS);
  CHECK(read_back == ClockA);
  REQUIRE(cuptiActivityRegisterCallbacks_v2(a, SinkA::Requested, SinkA::Completed) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterCallbacks_v2(b, SinkB::Requested, SinkB::Completed) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable_v2(a, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable_v2(b, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);

  fakehub::Advance(5 * kUs);
  const uint64_t start = fakehub::Now() + 10 * kUs;  // LaunchKernel's kernel starts 10 us after the call
  LaunchKernel();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  auto start_of = [](const std::vector<std::vector<uint8_t>>& buffers) {
    REQUIRE(buffers.size() == 1);
    CUpti_ActivityKernel10 k{};
    std::memcpy(&k, buffers[0].data(), sizeof(k));
    return k.start;
  };
  CHECK(start_of(SinkA::buffers) == start + kOffsetA);  // its own callback's clock
  CHECK(start_of(SinkB::buffers) == start);             // CUPTI's default timer: the sim clock
  auto process = testclient::RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  REQUIRE(process.size() == 1);
  CHECK(process[0].start == start + kOffsetProcess);  // the hub's reported clock
}

namespace {
// A second client of classic CUPTI's process-wide activity API (as Kineto
// is beside an injected profiler), with its own pair of callbacks.
std::vector<std::vector<uint8_t>> g_second_got;
void CUPTIAPI SecondRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI SecondCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  g_second_got.emplace_back(buffer, buffer + valid);
  std::free(buffer);
}
}  // namespace

TEST_CASE("classic CUPTI: a second client of the activity API takes over the first's callbacks, kinds and buffers",
          "[subscribers][classic][second_client]") {
  // README "A second client of the process-wide activity API": never kinder
  // than NVIDIA's one-pair-per-process API.
  Mode mode(/*multi=*/false);
  g_second_got.clear();
  CUpti_SubscriberHandle first = nullptr;
  REQUIRE(cuptiSubscribe(&first, Ignore, nullptr) == CUPTI_SUCCESS);
  testclient::Install();  // the first client's buffers
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  const uint32_t before = LaunchKernel();  // in a buffer the first client handed out

  // The second client registers its own pair and turns copies on.
  REQUIRE(cuptiActivityRegisterCallbacks(SecondRequested, SecondCompleted) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
  const uint32_t copy = Copy();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  // Everything, the first client's outstanding buffer included, went to the second.
  CHECK(testclient::Deliveries().empty());
  std::vector<uint32_t> kernels;
  std::vector<uint32_t> copies;
  for (auto& bytes : g_second_got) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(bytes.data(), bytes.size(), &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        kernels.push_back(reinterpret_cast<CUpti_ActivityKernel10*>(record)->correlationId);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        copies.push_back(reinterpret_cast<CUpti_ActivityMemcpy6*>(record)->correlationId);
      }
    }
  }
  CHECK(kernels == std::vector<uint32_t>{before});
  CHECK(copies == std::vector<uint32_t>{copy});

  // Its disable is everyone's; its finalize detaches the first's subscription.
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  g_second_got.clear();
  LaunchKernel();
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  for (auto& bytes : g_second_got) CHECK(bytes.empty());
  REQUIRE(cuptiFinalize() == CUPTI_SUCCESS);
  CHECK(cuptiEnableDomain(1, first, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_ERROR_INVALID_PARAMETER);
}
