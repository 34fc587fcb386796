// The callback API: subscribers (one in classic CUPTI, several in the
// multi-subscriber release), per-subscriber (domain, cbid) enable bits, and
// dispatch of API/resource callbacks to each subscriber's own function.
//
// Subscriber rules (README "Subscribers"):
//  - classic (CUPTI 13.0, the default): one subscriber; a second gets
//    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and, through
//    cuptiSubscribe_v2, the holder's name. 13.0's CUpti_SubscriberParams has
//    no allowMultipleSubscribers, so a larger struct's extra bytes are unread.
//  - multi (SIM_CUPTI_SUBSCRIBERS=multi, CUPTI 13.2's header): the first
//    subscriber decides (CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE): with
//    allowMultipleSubscribers = 1 later subscribers that ask for it too are
//    let in, each with its own slot; a subscriber that does not ask for it
//    (cuptiSubscribe, or 0) requests exclusive use, which cannot be granted
//    while anyone else holds CUPTI, and once granted refuses everyone else.
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

#include "cupti_13_2.h"
#include "internal.h"

// The opaque handle type NVIDIA's header declares; one static instance per
// subscriber slot, handed out again when the slot is reused.
struct CUpti_Subscriber_st {
  int slot;
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

// One subscriber. Writers hold Subscribers::mu; the dispatch path (every API
// call) reads only atomics, so it never contends with enable/disable.
struct Slot {
  std::atomic<bool> active{false};
  // The subscriber's function and userdata, read together: a callback in
  // flight while another thread unsubscribes still gets a matching pair.
  // Each subscription's pair is never freed (that callback may still be
  // reading it); one small block per cuptiSubscribe.
  std::atomic<const Callee*> callee{nullptr};
  const Callee* newest = nullptr;                            // under mu
  uint64_t order = 0;                                        // under mu: when it subscribed
  char holder_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};  // "CUPTI for <name>"
  std::array<std::atomic<uint8_t>, kTotalIds> enabled{};
  CUpti_Subscriber_st handle{};
};

struct Subscribers {
  std::mutex mu;
  std::array<Slot, kMaxClients> slots;  // slot 0 unused: client 0 is the process-wide activity API
  // Bit s: slot s is active. Dispatch's first load: no subscriber, no work.
  std::atomic<ClientMask> active{0};
  // CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE: 0 single, 1 multiple,
  // 2 not set by anyone yet (every subscriber gone resets it; under mu).
  uint8_t multi_state = kMultiStateUnset;
  uint64_t next_order = 1;  // under mu
  Subscribers() {
    for (int s = 0; s < kMaxClients; ++s) slots[s].handle.slot = s;
  }
};

Subscribers& State() {
  static Subscribers* state = new Subscribers();  // never destroyed: used at exit
  return *state;
}

bool ValidDomain(int domain) { return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE; }

// The slot of a live subscriber's handle, or 0.
int SlotOf(CUpti_SubscriberHandle handle) {
  Subscribers& state = State();
  for (int s = 1; s < kMaxClients; ++s) {
    if (handle == &state.slots[s].handle) return state.slots[s].active.load(std::memory_order_acquire) ? s : 0;
  }
  return 0;
}

void CopyName(const char* name, char* out, size_t out_size) {
  if (out == nullptr || out_size == 0) return;
  std::strncpy(out, name, out_size - 1);
  out[out_size - 1] = '\0';
}

void SetDomain(Slot& slot, int domain, uint8_t value) {
  for (uint32_t id = 0; id < kDomainSize[domain]; ++id) {
    slot.enabled[DomainOffset(domain) + id].store(value, std::memory_order_relaxed);
  }
}

// The oldest live subscriber other than `except`, or 0. Under mu.
int OldestLocked(int except) {
  Subscribers& state = State();
  int oldest = 0;
  for (int s = 1; s < kMaxClients; ++s) {
    const Slot& slot = state.slots[s];
    if (s == except || !slot.active.load()) continue;
    if (oldest == 0 || slot.order < state.slots[oldest].order) oldest = s;
  }
  return oldest;
}

CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata, const char* name,
                      char* old_name, size_t old_size, bool allow_multiple) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (old_name != nullptr && old_size > 0) old_name[0] = '\0';
  if (CUptiResult init = EnsureInitialized(); init != CUPTI_SUCCESS) return init;
  Faults faults = CurrentFaults();
  if (!faults.other_subscriber.empty()) {
    // Another tool (Nsight Systems, a second profiler) holds CUPTI.
    CopyName(faults.other_subscriber.c_str(), old_name, old_size);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  const bool multi_release = MultiSubscriberRelease();
  Subscribers& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  const int holder = OldestLocked(/*except=*/0);
  if (holder != 0) {
    // Classic CUPTI: one subscriber. The multi-subscriber release: only if
    // the first subscriber allowed several and this one asks for it too.
    const bool granted = multi_release && state.multi_state == kMultiStateMultiple && allow_multiple;
    if (!granted) {
      CopyName(state.slots[holder].holder_name, old_name, old_size);
      return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
  }
  int free_slot = 0;
  for (int s = 1; s < kMaxClients && free_slot == 0; ++s) {
    if (!state.slots[s].active.load()) free_slot = s;
  }
  if (free_slot == 0) return CUPTI_ERROR_MAX_LIMIT_REACHED;  // the sim's bound (kMaxSubscribers)
  if (holder == 0) state.multi_state = (multi_release && allow_multiple) ? kMultiStateMultiple : kMultiStateSingle;
  // With several allowed, oldSubscriberName is the first subscriber's name
  // (CUpti_SubscriberParams, CUPTI 13.2), and the call succeeds.
  if (holder != 0) CopyName(state.slots[holder].holder_name, old_name, old_size);
  Slot& slot = state.slots[free_slot];
  // CUPTI prefixes the user's name (at most CUPTI_SUBSCRIBER_NAME_MAX_LEN
  // bytes of it) with "CUPTI for ".
  std::string full = "CUPTI for ";
  full += (name != nullptr) ? std::string(name).substr(0, CUPTI_SUBSCRIBER_NAME_MAX_LEN) : "<unnamed>";
  CopyName(full.c_str(), slot.holder_name, sizeof(slot.holder_name));
  for (auto& bit : slot.enabled) bit.store(0, std::memory_order_relaxed);
  slot.newest = new Callee{callback, userdata, slot.newest};
  slot.callee.store(slot.newest, std::memory_order_release);
  slot.order = state.next_order++;
  slot.active.store(true, std::memory_order_release);
  state.active.fetch_or(ClientMask{1} << free_slot, std::memory_order_release);
  *subscriber = &slot.handle;
  return CUPTI_SUCCESS;
}

// Under mu.
void ReleaseLocked(int s) {
  Subscribers& state = State();
  Slot& slot = state.slots[s];
  state.active.fetch_and(~(ClientMask{1} << s), std::memory_order_release);
  slot.active.store(false);
  slot.callee.store(nullptr, std::memory_order_release);
  for (auto& bit : slot.enabled) bit.store(0, std::memory_order_relaxed);
  if (OldestLocked(/*except=*/0) == 0) state.multi_state = kMultiStateUnset;
}

// The slot whose enable bits a call addresses: INVALID_PARAMETER for a
// handle that is not a live subscriber's.
Slot* LiveSlot(CUpti_SubscriberHandle handle) {
  const int s = SlotOf(handle);
  return s == 0 ? nullptr : &State().slots[s];
}

}  // namespace

bool CallbackEnabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  Subscribers& state = State();
  ClientMask active = state.active.load(std::memory_order_acquire);
  if (active == 0 || !ValidDomain(domain) || cbid >= kDomainSize[domain]) return false;
  for (int s = 1; s < kMaxClients; ++s) {
    if ((active & (ClientMask{1} << s)) != 0 &&
        state.slots[s].enabled[DomainOffset(domain) + cbid].load(std::memory_order_relaxed) != 0) {
      return true;
    }
  }
  return false;
}

void Dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, void* data, uint64_t* correlation_data) {
  Subscribers& state = State();
  const ClientMask active = state.active.load(std::memory_order_acquire);
  if (active == 0 || !ValidDomain(domain) || cbid >= kDomainSize[domain]) return;
  for (int s = 1; s < kMaxClients; ++s) {
    if ((active & (ClientMask{1} << s)) == 0) continue;
    Slot& slot = state.slots[s];
    if (slot.enabled[DomainOffset(domain) + cbid].load(std::memory_order_relaxed) == 0) continue;
    const Callee* callee = slot.callee.load(std::memory_order_acquire);
    if (callee == nullptr || callee->function == nullptr) continue;
    // API callbacks: each subscriber has its own correlationData slot, shared
    // by the enter and exit of the call, so one cannot overwrite another's.
    if (correlation_data != nullptr) static_cast<CUpti_CallbackData*>(data)->correlationData = &correlation_data[s];
    callee->function(callee->userdata, domain, cbid, data);
  }
}

bool Subscribed() { return State().active.load() != 0; }

int SubscriberCount() {
  int n = 0;
  const ClientMask active = State().active.load();
  for (int s = 1; s < kMaxClients; ++s) n += (active >> s) & 1;
  return n;
}

uint8_t MultiSubscriberState() {
  std::lock_guard<std::mutex> lock(State().mu);
  return State().multi_state;
}

int ActivityClientOf(CUpti_SubscriberHandle handle, CUptiResult* error) {
  *error = CUPTI_SUCCESS;
  if (!MultiSubscriberRelease()) {
    *error = CUPTI_ERROR_NOT_SUPPORTED;  // CUPTI 13.0 has no per-subscriber activity API
    return -1;
  }
  const int s = SlotOf(handle);
  if (s == 0) {
    *error = CUPTI_ERROR_INVALID_PARAMETER;
    return -1;
  }
  // A single (exclusive) subscriber owns the process-wide activity API.
  return MultiSubscriberState() == kMultiStateMultiple ? s : kProcessClient;
}

std::vector<int> EnabledDomains() {
  std::vector<int> domains;
  for (int domain = 1; domain < CUPTI_CB_DOMAIN_SIZE; ++domain) {
    bool any = false;
    for (uint32_t id = 0; id < kDomainSize[domain] && !any; ++id) {
      any = CallbackEnabled(static_cast<CUpti_CallbackDomain>(domain), id);
    }
    if (any) domains.push_back(domain);
  }
  return domains;
}

void ResetSubscriber() {
  Subscribers& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  for (int s = 1; s < kMaxClients; ++s) {
    if (state.slots[s].active.load()) ReleaseLocked(s);
  }
  state.multi_state = kMultiStateUnset;
}

}  // namespace simcupti

using simcupti::Status;

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  CUptiResult result =
      simcupti::Subscribe(subscriber, callback, userdata, nullptr, nullptr, 0, /*allow_multiple=*/false);
  simcupti::TruthCall("cuptiSubscribe", result);
  return Status(result);
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* params) {
  const char* name = nullptr;
  char* old_name = nullptr;
  size_t old_size = 0;
  bool allow_multiple = false;
  if (params != nullptr) {
    // structSize says which fields the caller's struct has (older clients).
    if (params->structSize == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
    // Read as CUPTI 13.2 lays the struct out; 13.0's is a prefix of it.
    simcupti::SubscriberParams132 p{};
    std::memcpy(&p, params, std::min(params->structSize, sizeof(p)));
    auto has = [&](size_t end_of_field) { return params->structSize >= end_of_field; };
    if (has(offsetof(simcupti::SubscriberParams132, subscriberName) + sizeof(const char*))) name = p.subscriberName;
    if (has(offsetof(simcupti::SubscriberParams132, oldSubscriberSize) + sizeof(size_t))) {
      old_name = p.oldSubscriberName;
      old_size = p.oldSubscriberSize;
    }
    // Only the release that declares the field reads it.
    if (simcupti::MultiSubscriberRelease() &&
        has(offsetof(simcupti::SubscriberParams132, allowMultipleSubscribers) + 1)) {
      allow_multiple = p.allowMultipleSubscribers == 1;
    }
  }
  CUptiResult result = simcupti::Subscribe(subscriber, callback, userdata, name, old_name, old_size, allow_multiple);
  simcupti::TruthCall("cuptiSubscribe_v2", result,
                      ",\"name\":" + simcupti::JsonString(name != nullptr ? name : "") +
                          ",\"allow_multiple\":" + std::to_string(allow_multiple ? 1 : 0));
  return Status(result);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  using namespace simcupti;
  CUptiResult result = CUPTI_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(State().mu);
    const int s = SlotOf(subscriber);
    if (s == 0) {
      result = CUPTI_ERROR_INVALID_PARAMETER;
    } else {
      // Its own activity client (multi-subscriber release) goes with it:
      // kinds off, undelivered records lost. Before the slot can be reused.
      ForgetSubscriberClient(s);
      ReleaseLocked(s);
    }
  }
  TruthCall("cuptiUnsubscribe", result);
  return Status(result);
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  using namespace simcupti;
  Slot* slot = LiveSlot(subscriber);
  if (slot == nullptr || !ValidDomain(domain) || cbid >= kDomainSize[domain]) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  slot->enabled[DomainOffset(domain) + cbid].store(enable != 0, std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  using namespace simcupti;
  Slot* slot = LiveSlot(subscriber);
  if (slot == nullptr || !ValidDomain(domain)) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  SetDomain(*slot, domain, enable != 0);
  TruthCall("cuptiEnableDomain", CUPTI_SUCCESS,
            ",\"domain\":" + std::to_string(domain) + ",\"enable\":" + std::to_string(enable != 0));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  using namespace simcupti;
  Slot* slot = LiveSlot(subscriber);
  if (slot == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  for (int domain = 1; domain < CUPTI_CB_DOMAIN_SIZE; ++domain) SetDomain(*slot, domain, enable != 0);
  TruthCall("cuptiEnableAllDomains", CUPTI_SUCCESS, ",\"enable\":" + std::to_string(enable != 0));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t* enable, CUpti_SubscriberHandle subscriber,
                                           CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  using namespace simcupti;
  Slot* slot = LiveSlot(subscriber);
  if (enable == nullptr || slot == nullptr || !ValidDomain(domain) || cbid >= kDomainSize[domain]) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  *enable = slot->enabled[DomainOffset(domain) + cbid].load(std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

// CUPTI 13.2 (cupti_callbacks.h): the callback ids enabled for one
// subscriber in one domain; as many as fit in the buffer, the true count in
// *enabledCallbacksCount. Not in CUPTI 13.0: NOT_SUPPORTED in the classic mode.
CUptiResult CUPTIAPI cuptiGetEnabledCallbacks(CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                                              CUpti_CallbackId* buffer, uint32_t* buffer_size,
                                              uint32_t* enabled_count) {
  using namespace simcupti;
  if (!MultiSubscriberRelease()) return Status(CUPTI_ERROR_NOT_SUPPORTED);
  Slot* slot = LiveSlot(subscriber);
  if (slot == nullptr || enabled_count == nullptr || !ValidDomain(domain) ||
      (buffer != nullptr && buffer_size == nullptr)) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  uint32_t count = 0;
  for (uint32_t id = 0; id < kDomainSize[domain]; ++id) {
    if (slot->enabled[DomainOffset(domain) + id].load(std::memory_order_relaxed) == 0) continue;
    if (buffer != nullptr && count < *buffer_size) buffer[count] = id;
    ++count;
  }
  *enabled_count = count;
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
