// The callback API: one subscriber, per-(domain, cbid) enable bits, and
// dispatch of API/resource callbacks to the subscriber's function.
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

#include "internal.h"

// The opaque handle type NVIDIA's header declares; one static instance is
// the handle of whoever holds the (single) subscription.
struct CUpti_Subscriber_st {
  int unused;
};

namespace simcupti {
namespace {

// Number of callback ids per domain, from the toolkit's enums.
constexpr std::array<uint32_t, CUPTI_CB_DOMAIN_SIZE> kDomainSize = {
    0,                              // CUPTI_CB_DOMAIN_INVALID
    CUPTI_DRIVER_TRACE_CBID_SIZE,   // DRIVER_API
    CUPTI_RUNTIME_TRACE_CBID_SIZE,  // RUNTIME_API
    CUPTI_CBID_RESOURCE_SIZE,       // RESOURCE
    CUPTI_CBID_SYNCHRONIZE_SIZE,    // SYNCHRONIZE
    CUPTI_CBID_NVTX_SIZE,           // NVTX
    CUPTI_CBID_STATE_SIZE,          // STATE
};

constexpr uint32_t DomainOffset(int domain) {
  uint32_t offset = 0;
  for (int d = 0; d < domain; ++d) offset += kDomainSize[d];
  return offset;
}
constexpr uint32_t kTotalIds = DomainOffset(CUPTI_CB_DOMAIN_SIZE);

struct Callee {
  CUpti_CallbackFunc function;
  void* userdata;
  const Callee* older;  // every pair stays reachable (never freed, never a leak)
};

// Subscription state. Writers hold mu; the dispatch path (every API call)
// reads only atomics, so it never contends with enable/disable.

struct Subscription {
  std::mutex mu;
  std::atomic<bool> active{false};
  // The subscriber's function and userdata, read together: a callback in
  // flight while another thread unsubscribes still gets a matching pair.
  // Each subscription's pair is never freed (that callback may still be
  // reading it); one small block per cuptiSubscribe.
  std::atomic<const Callee*> callee{nullptr};
  const Callee* newest = nullptr;  // under mu
  char holder_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};  // "CUPTI for <name>"
  std::array<std::atomic<uint8_t>, kTotalIds> enabled{};
};

Subscription& State() {
  static Subscription* state = new Subscription();  // never destroyed: used at exit
  return *state;
}

CUpti_Subscriber_st g_handle;

bool ValidDomain(int domain) { return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE; }

bool ValidHandle(CUpti_SubscriberHandle handle) {
  return handle == &g_handle && State().active.load(std::memory_order_acquire);
}

void CopyName(const char* name, char* out, size_t out_size) {
  if (out == nullptr || out_size == 0) return;
  std::strncpy(out, name, out_size - 1);
  out[out_size - 1] = '\0';
}

void SetDomain(int domain, uint8_t value) {
  for (uint32_t id = 0; id < kDomainSize[domain]; ++id) {
    State().enabled[DomainOffset(domain) + id].store(value, std::memory_order_relaxed);
  }
}

CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                      const char* name, char* old_name, size_t old_size) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (old_name != nullptr && old_size > 0) old_name[0] = '\0';
  if (CUptiResult init = EnsureInitialized(); init != CUPTI_SUCCESS) return init;
  Faults faults = CurrentFaults();
  if (!faults.other_subscriber.empty()) {
    // Another tool (Nsight Systems, a second profiler) holds CUPTI.
    CopyName(faults.other_subscriber.c_str(), old_name, old_size);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  Subscription& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.active.load()) {
    CopyName(state.holder_name, old_name, old_size);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  // CUPTI prefixes the user's name (at most CUPTI_SUBSCRIBER_NAME_MAX_LEN
  // bytes of it) with "CUPTI for ".
  std::string holder = "CUPTI for ";
  holder += (name != nullptr) ? std::string(name).substr(0, CUPTI_SUBSCRIBER_NAME_MAX_LEN) : "<unnamed>";
  CopyName(holder.c_str(), state.holder_name, sizeof(state.holder_name));
  for (auto& bit : state.enabled) bit.store(0, std::memory_order_relaxed);
  state.newest = new Callee{callback, userdata, state.newest};
  state.callee.store(state.newest, std::memory_order_release);
  state.active.store(true, std::memory_order_release);
  *subscriber = &g_handle;
  return CUPTI_SUCCESS;
}

}  // namespace

bool CallbackEnabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  Subscription& state = State();
  if (!state.active.load(std::memory_order_acquire)) return false;
  if (!ValidDomain(domain) || cbid >= kDomainSize[domain]) return false;
  return state.enabled[DomainOffset(domain) + cbid].load(std::memory_order_relaxed) != 0;
}

void Dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (!CallbackEnabled(domain, cbid)) return;
  const Callee* callee = State().callee.load(std::memory_order_acquire);
  if (callee != nullptr && callee->function != nullptr) callee->function(callee->userdata, domain, cbid, data);
}

bool Subscribed() { return State().active.load(); }

std::vector<int> EnabledDomains() {
  std::vector<int> domains;
  if (!Subscribed()) return domains;
  for (int domain = 1; domain < CUPTI_CB_DOMAIN_SIZE; ++domain) {
    for (uint32_t id = 0; id < kDomainSize[domain]; ++id) {
      if (State().enabled[DomainOffset(domain) + id].load(std::memory_order_relaxed) != 0) {
        domains.push_back(domain);
        break;
      }
    }
  }
  return domains;
}

void ResetSubscriber() {
  Subscription& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  state.active.store(false);
  state.callee.store(nullptr, std::memory_order_release);
  for (auto& bit : state.enabled) bit.store(0, std::memory_order_relaxed);
}

}  // namespace simcupti

using simcupti::Status;

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  CUptiResult result = simcupti::Subscribe(subscriber, callback, userdata, nullptr, nullptr, 0);
  simcupti::TruthCall("cuptiSubscribe", result);
  return Status(result);
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                       void* userdata, CUpti_SubscriberParams* params) {
  const char* name = nullptr;
  char* old_name = nullptr;
  size_t old_size = 0;
  if (params != nullptr) {
    // structSize says which fields the caller's struct has (older clients).
    if (params->structSize == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
    auto has = [&](size_t end_of_field) { return params->structSize >= end_of_field; };
    if (has(offsetof(CUpti_SubscriberParams, subscriberName) + sizeof(const char*))) name = params->subscriberName;
    if (has(CUpti_SubscriberParams_STRUCT_SIZE)) {
      old_name = params->oldSubscriberName;
      old_size = params->oldSubscriberSize;
    }
  }
  CUptiResult result = simcupti::Subscribe(subscriber, callback, userdata, name, old_name, old_size);
  simcupti::TruthCall("cuptiSubscribe_v2", result,
                      ",\"name\":" + simcupti::JsonString(name != nullptr ? name : ""));
  return Status(result);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  CUptiResult result = CUPTI_SUCCESS;
  if (!simcupti::ValidHandle(subscriber)) {
    result = CUPTI_ERROR_INVALID_PARAMETER;
  } else {
    simcupti::ResetSubscriber();
  }
  simcupti::TruthCall("cuptiUnsubscribe", result);
  return Status(result);
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  using namespace simcupti;
  if (!ValidHandle(subscriber) || !ValidDomain(domain) || cbid >= kDomainSize[domain]) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  State().enabled[DomainOffset(domain) + cbid].store(enable != 0, std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  using namespace simcupti;
  if (!ValidHandle(subscriber) || !ValidDomain(domain)) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  SetDomain(domain, enable != 0);
  TruthCall("cuptiEnableDomain", CUPTI_SUCCESS,
            ",\"domain\":" + std::to_string(domain) + ",\"enable\":" + std::to_string(enable != 0));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  using namespace simcupti;
  if (!ValidHandle(subscriber)) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  for (int domain = 1; domain < CUPTI_CB_DOMAIN_SIZE; ++domain) SetDomain(domain, enable != 0);
  TruthCall("cuptiEnableAllDomains", CUPTI_SUCCESS, ",\"enable\":" + std::to_string(enable != 0));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t* enable, CUpti_SubscriberHandle subscriber,
                                           CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  using namespace simcupti;
  if (enable == nullptr || !ValidHandle(subscriber) || !ValidDomain(domain) || cbid >= kDomainSize[domain]) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  *enable = State().enabled[DomainOffset(domain) + cbid].load(std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSupportedDomains(size_t* domain_count, CUpti_DomainTable* domain_table) {
  static CUpti_CallbackDomain kDomains[] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_CB_DOMAIN_RESOURCE,   CUPTI_CB_DOMAIN_SYNCHRONIZE,
                                            CUPTI_CB_DOMAIN_NVTX,       CUPTI_CB_DOMAIN_STATE};
  if (domain_count == nullptr || domain_table == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  *domain_count = sizeof(kDomains) / sizeof(kDomains[0]);
  *domain_table = kDomains;
  return CUPTI_SUCCESS;
}

}  // extern "C"
