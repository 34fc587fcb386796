// Subscription rules: one subscriber, how a refusal names the holder, and
// the initialisation failures NVIDIA's library reports.
#include <catch2/catch.hpp>
#include <cupti.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "fake_hub.h"

namespace {

void CUPTIAPI Ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

struct Fresh {
  Fresh() { fakehub::Reset(); }
  ~Fresh() {
    cuptiFinalize();
    fakehub::Reset();
  }
};

}  // namespace

TEST_CASE("a second subscriber is refused with MULTIPLE_SUBSCRIBERS and told the holder's name", "[subscribe]") {
  Fresh fresh;
  CUpti_SubscriberHandle first = nullptr;
  CUpti_SubscriberParams params{CUpti_SubscriberParams_STRUCT_SIZE, "libprof", nullptr, 0};
  REQUIRE(cuptiSubscribe_v2(&first, Ignore, nullptr, &params) == CUPTI_SUCCESS);

  CUpti_SubscriberHandle second = nullptr;
  REQUIRE(cuptiSubscribe(&second, Ignore, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  REQUIRE(cuptiGetLastError() == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  REQUIRE(cuptiGetLastError() == CUPTI_SUCCESS);  // reading resets it

  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "garbage";
  CUpti_SubscriberParams other{CUpti_SubscriberParams_STRUCT_SIZE, "other", holder, sizeof(holder)};
  REQUIRE(cuptiSubscribe_v2(&second, Ignore, nullptr, &other) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  REQUIRE(std::string(holder) == "CUPTI for libprof");

  // Once released, the next client gets it.
  REQUIRE(cuptiUnsubscribe(first) == CUPTI_SUCCESS);
  REQUIRE(cuptiSubscribe(&second, Ignore, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiUnsubscribe(first) == CUPTI_SUCCESS);  // the same static handle: still valid
}

TEST_CASE("a holder name longer than the caller's buffer is truncated and never overruns it", "[subscribe]") {
  Fresh fresh;
  fakehub::SetFault("CUPTI_SUBSCRIBER", "Nsight Systems 2025.5.1");
  char holder[8];
  std::memset(holder, 'x', sizeof(holder));
  CUpti_SubscriberHandle handle = nullptr;
  CUpti_SubscriberParams params{CUpti_SubscriberParams_STRUCT_SIZE, "libprof", holder, sizeof(holder)};
  REQUIRE(cuptiSubscribe_v2(&handle, Ignore, nullptr, &params) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  REQUIRE(std::string(holder) == "Nsight ");
}

TEST_CASE("SIM_CUPTI_SUBSCRIBER means another tool holds CUPTI and v2 reports its name", "[subscribe][fault]") {
  Fresh fresh;
  fakehub::SetFault("CUPTI_SUBSCRIBER", "Nsight Systems");
  CUpti_SubscriberHandle handle = nullptr;
  REQUIRE(cuptiSubscribe(&handle, Ignore, nullptr) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{CUpti_SubscriberParams_STRUCT_SIZE, "libprof", holder, sizeof(holder)};
  REQUIRE(cuptiSubscribe_v2(&handle, Ignore, nullptr, &params) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  REQUIRE(std::string(holder) == "Nsight Systems");
}

TEST_CASE("SIM_NO_DRIVER makes subscribe and activity enable fail with CUPTI_ERROR_UNKNOWN as on a driverless machine",
          "[subscribe][fault]") {
  Fresh fresh;
  fakehub::SetFault("NO_DRIVER", "1");
  CUpti_SubscriberHandle handle = nullptr;
  REQUIRE(cuptiSubscribe(&handle, Ignore, nullptr) == CUPTI_ERROR_UNKNOWN);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_ERROR_UNKNOWN);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_ERROR_UNKNOWN);
  size_t dropped = 7;
  REQUIRE(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS);
  REQUIRE(dropped == 0);
}

TEST_CASE("SIM_CUPTI_INIT_FAIL makes subscribe and enable report NOT_INITIALIZED", "[subscribe][fault]") {
  Fresh fresh;
  fakehub::SetFault("CUPTI_INIT_FAIL", "1");
  CUpti_SubscriberHandle handle = nullptr;
  REQUIRE(cuptiSubscribe(&handle, Ignore, nullptr) == CUPTI_ERROR_NOT_INITIALIZED);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_ERROR_NOT_INITIALIZED);
  fakehub::SetFault("CUPTI_INIT_FAIL", nullptr);
  REQUIRE(cuptiSubscribe(&handle, Ignore, nullptr) == CUPTI_SUCCESS);
}

TEST_CASE("subscribe_v2 rejects params whose structSize was not filled in", "[subscribe]") {
  Fresh fresh;
  CUpti_SubscriberHandle handle = nullptr;
  CUpti_SubscriberParams params{};
  REQUIRE(cuptiSubscribe_v2(&handle, Ignore, nullptr, &params) == CUPTI_ERROR_INVALID_PARAMETER);
  REQUIRE(cuptiSubscribe_v2(&handle, Ignore, nullptr, nullptr) == CUPTI_SUCCESS);
}

TEST_CASE("enable calls need the live subscriber handle", "[subscribe]") {
  Fresh fresh;
  CUpti_SubscriberHandle handle = nullptr;
  REQUIRE(cuptiEnableDomain(1, nullptr, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_ERROR_INVALID_PARAMETER);
  REQUIRE(cuptiSubscribe(&handle, Ignore, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, handle, CUPTI_CB_DOMAIN_SIZE) == CUPTI_ERROR_INVALID_PARAMETER);
  REQUIRE(cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE) ==
          CUPTI_ERROR_INVALID_PARAMETER);
  uint32_t state = 0;
  REQUIRE(cuptiGetCallbackState(&state, handle, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) == CUPTI_SUCCESS);
  REQUIRE(state == 1);
  REQUIRE(cuptiUnsubscribe(handle) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_CASE("callback names and result strings and the version are NVIDIA's", "[subscribe]") {
  const char* name = nullptr;
  REQUIRE(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &name) ==
          CUPTI_SUCCESS);
  REQUIRE(std::string(name) == "cudaMalloc_v3020");
  REQUIRE(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &name) ==
          CUPTI_SUCCESS);
  REQUIRE(std::string(name) == "cuLaunchKernel");
  REQUIRE(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RESOURCE, 1, &name) == CUPTI_ERROR_INVALID_PARAMETER);
  const char* text = nullptr;
  REQUIRE(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &text) == CUPTI_SUCCESS);
  REQUIRE(std::string(text) == "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  uint32_t version = 0;
  REQUIRE(cuptiGetVersion(&version) == CUPTI_SUCCESS);
  REQUIRE(version == CUPTI_API_VERSION);
}

namespace {

std::atomic<uint64_t> g_calls{0};
std::atomic<uint64_t> g_wrong_userdata{0};
int g_token = 0;

void CUPTIAPI CountUserdata(void* userdata, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (userdata != &g_token) g_wrong_userdata.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

TEST_CASE("a callback racing cuptiUnsubscribe gets the userdata it was subscribed with, never another",
          "[subscribe][threads]") {
  // A callback runs with the subscriber's function and userdata as a pair:
  // one without the other (a torn read against the unsubscribe clearing
  // them) handed libprof a null `this` at exit.
  Fresh fresh;
  g_calls = 0;
  g_wrong_userdata = 0;
  std::atomic<bool> done{false};
  std::thread caller([&] {
    while (!done.load(std::memory_order_relaxed)) {
      fakehub::MakeCall({CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice"});
    }
  });
  for (int i = 0; i < 20000; ++i) {
    CUpti_SubscriberHandle handle = nullptr;
    REQUIRE(cuptiSubscribe(&handle, CountUserdata, &g_token) == CUPTI_SUCCESS);
    REQUIRE(cuptiEnableDomain(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
    REQUIRE(cuptiUnsubscribe(handle) == CUPTI_SUCCESS);
  }
  done = true;
  caller.join();
  INFO(g_calls.load() << " callbacks");
  CHECK(g_wrong_userdata.load() == 0);
}
