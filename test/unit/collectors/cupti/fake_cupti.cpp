#include "fake_cupti.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/clock.h"

namespace fake {
namespace {

CuptiState* g_state = new CuptiState();

// A table as a switch: one record size per kind.
size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return sizeof(CUpti_ActivityMarker2);
    default:
      return 0;
  }
}

size_t Aligned(size_t size) { return (size + 7) & ~size_t{7}; }

CUptiResult GetVersion(uint32_t* version) {
  *version = g_state->version;
  return CUPTI_SUCCESS;
}

CUptiResult SubscribeCommon(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                            CUpti_SubscriberParams* params) {
  ++g_state->subscribe_calls;
  if (params != nullptr) {
    g_state->subscribe_struct_size = params->structSize;
    // 13.2's field, read only when the caller's struct has it.
    g_state->allow_multiple =
        params->structSize >= sizeof(prof::cupti::v13_2::SubscriberParams) &&
        reinterpret_cast<const prof::cupti::v13_2::SubscriberParams*>(params)->allowMultipleSubscribers != 0;
  }
  if (params != nullptr && params->subscriberName != nullptr) g_state->subscriber_name = params->subscriberName;
  if (g_state->subscribe_result != CUPTI_SUCCESS) {
    if (params != nullptr && params->oldSubscriberName != nullptr && !g_state->holder_name.empty()) {
      std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", g_state->holder_name.c_str());
    }
    return g_state->subscribe_result;
  }
  g_state->subscribed = true;
  g_state->callback = callback;
  g_state->userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(g_state);
  return CUPTI_SUCCESS;
}

CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  return SubscribeCommon(subscriber, callback, userdata, nullptr);
}

CUptiResult SubscribeV2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) {
  return SubscribeCommon(subscriber, callback, userdata, params);
}

CUptiResult Unsubscribe(CUpti_SubscriberHandle) {
  ++g_state->unsubscribe_calls;
  g_state->subscribed = false;
  g_state->domains.clear();
  g_state->callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  if (enable) {
    g_state->domains.insert(domain);
  } else {
    g_state->domains.erase(domain);
    std::erase_if(g_state->callbacks, [domain](const auto& c) { return c.first == domain; });
  }
  return CUPTI_SUCCESS;
}

CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                           CUpti_CallbackId cbid) {
  if (g_state->before_enable_callback) g_state->before_enable_callback(domain, cbid, enable);
  if (enable) {
    g_state->callbacks.insert({domain, cbid});
  } else {
    g_state->callbacks.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

CUptiResult ActivityEnable(CUpti_ActivityKind kind) {
  ++g_state->process_wide_activity_calls;
  if (g_state->kinds.empty() && g_state->timestamp != nullptr) g_state->timestamp_registered_before_kinds = true;
  g_state->kinds.insert(kind);
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) g_state->runtime_left_out.clear();  // the kind overrides the ids
  return CUPTI_SUCCESS;
}

CUptiResult ActivityDisable(CUpti_ActivityKind kind) {
  ++g_state->process_wide_activity_calls;
  g_state->kinds.erase(kind);
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) g_state->runtime_left_out.clear();
  return CUPTI_SUCCESS;
}

CUptiResult EnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  g_state->runtime_api_calls.emplace_back(cbid, enable);
  if (g_state->enable_runtime_api_result != CUPTI_SUCCESS) return g_state->enable_runtime_api_result;
  if (enable) {
    g_state->runtime_left_out.erase(cbid);
  } else {
    g_state->runtime_left_out.insert(cbid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult SetThreadIdType(CUpti_ActivityThreadIdType type) {
  ++g_state->process_wide_activity_calls;
  g_state->thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUptiResult RegisterCallbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  ++g_state->process_wide_activity_calls;
  g_state->request = request;
  g_state->complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult RegisterTimestamp(CUpti_TimestampCallbackFunc timestamp) {
  ++g_state->process_wide_activity_calls;
  g_state->timestamp = timestamp;
  return CUPTI_SUCCESS;
}

CUptiResult SetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value) {
  ++g_state->process_wide_activity_calls;
  const auto* bytes = static_cast<const uint8_t*>(value);
  g_state->attributes[attr].assign(bytes, bytes + *size);
  return CUPTI_SUCCESS;
}

// CUPTI 13.2's per-subscriber functions (State().multi).
CUptiResult EnableV2(CUpti_SubscriberHandle, CUpti_ActivityKind kind, prof::cupti::v13_2::ActivityConfig*) {
  ++g_state->v2_activity_calls;
  g_state->kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult DisableV2(CUpti_SubscriberHandle, CUpti_ActivityKind kind, prof::cupti::v13_2::ActivityConfig*) {
  ++g_state->v2_activity_calls;
  g_state->kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult RegisterCallbacksV2(CUpti_SubscriberHandle, prof::cupti::v13_2::BufferRequestedV2 request,
                                prof::cupti::v13_2::BufferCompletedV2 complete) {
  ++g_state->v2_activity_calls;
  g_state->request_v2 = request;
  g_state->complete_v2 = complete;
  return CUPTI_SUCCESS;
}

CUptiResult SetAttributeV2(CUpti_SubscriberHandle, CUpti_ActivityAttribute attr, size_t* size, void* value) {
  ++g_state->v2_activity_calls;
  if (attr == prof::cupti::v13_2::kAttrTimestampCallback) {
    g_state->timestamp = *static_cast<CUpti_TimestampCallbackFunc*>(value);
  } else if (attr == prof::cupti::v13_2::kAttrThreadIdType) {
    g_state->thread_id_type = *static_cast<CUpti_ActivityThreadIdType*>(value);
  }
  const auto* bytes = static_cast<const uint8_t*>(value);
  g_state->attributes[attr].assign(bytes, bytes + *size);
  return CUPTI_SUCCESS;
}

CUptiResult GetAttributeV2(CUpti_SubscriberHandle, CUpti_ActivityAttribute attr, size_t* size, void* value) {
  if (attr != prof::cupti::v13_2::kAttrMultipleSubscriberState || *size < 1) return CUPTI_ERROR_NOT_SUPPORTED;
  // 1: several allowed, as the first subscriber asked; 0: one.
  *static_cast<uint8_t*>(value) = g_state->allow_multiple && !g_state->one_subscriber_only ? 1 : 0;
  return CUPTI_SUCCESS;
}

CUptiResult GetEnabledKinds(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind* buffer, uint32_t* size,
                            uint32_t* count) {
  std::set<int> kinds = g_state->kinds;  // the subscriber's own
  if (subscriber == nullptr) kinds.insert(g_state->other_kinds.begin(), g_state->other_kinds.end());
  uint32_t i = 0;
  for (int kind : kinds) {
    if (buffer != nullptr && i < *size) buffer[i] = static_cast<CUpti_ActivityKind>(kind);
    ++i;
  }
  *count = i;
  return CUPTI_SUCCESS;
}

CUptiResult GetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    auto* current = reinterpret_cast<uint8_t*>(*record);
    offset = static_cast<size_t>(current - buffer) + Aligned(RecordSize((*record)->kind));
  }
  if (offset + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  if (RecordSize(next->kind) == 0) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult FlushAll(uint32_t flag) {
  ++g_state->flushes;
  if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ++g_state->forced_flushes;
  if (g_state->before_flush) g_state->before_flush();
  // Like CUPTI: a flush hands over the buffer being filled too (unless it
  // stands for one holding work still running, which only a forced flush
  // hands over).
  bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  if (g_state->buffer != nullptr && g_state->buffer_used > 0 && (forced || !g_state->plain_flush_keeps_current)) {
    RetireCurrent();
  }
  auto retired = std::move(g_state->retired);
  g_state->retired.clear();
  for (auto& [buffer, used] : retired) {
    if (g_state->complete_v2 != nullptr) {
      g_state->complete_v2(buffer, g_state->buffer_size, used, nullptr);
    } else if (g_state->complete != nullptr) {
      g_state->complete(nullptr, 0, buffer, g_state->buffer_size, used);
    }
  }
  return CUPTI_SUCCESS;
}

CUptiResult GetNumDropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = g_state->dropped;
  g_state->dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult GetTimestamp(uint64_t* timestamp) {
  // "normalized to correspond with the ... timestamps reported in the
  // activity records": the registered callback's clock, once there is one
  // (a subscriber's own clock in the multi mode is not the process-wide one).
  if (g_state->timestamp != nullptr && !g_state->multi) {
    *timestamp = g_state->timestamp();
    return CUPTI_SUCCESS;
  }
  *timestamp = static_cast<uint64_t>(static_cast<int64_t>(prof::NowNs()) + g_state->cupti_clock_offset_ns);
  return CUPTI_SUCCESS;
}

CUptiResult Finalize() {
  ++g_state->finalize_calls;
  return CUPTI_SUCCESS;
}

void Dispatch(CUpti_CallbackDomain domain, uint32_t cbid, CUpti_ApiCallbackSite site, uint32_t correlation_id,
              int* result) {
  if (!g_state->subscribed || g_state->callback == nullptr) return;
  if (!g_state->domains.count(domain) && !g_state->callbacks.count({domain, cbid})) return;
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.correlationId = correlation_id;
  data.functionReturnValue = site == CUPTI_API_EXIT ? result : nullptr;
  g_state->callback(g_state->userdata, domain, cbid, &data);
}

}  // namespace

CuptiState& State() { return *g_state; }

void Reset() {
  // Buffers are the collector's: they are returned through `complete` or
  // abandoned with the collector; the fake owns none of them.
  *g_state = CuptiState();
}

prof::cupti::CuptiApi Api() {
  prof::cupti::CuptiApi api;
  api.GetVersion = GetVersion;
  api.Subscribe = Subscribe;
  api.Unsubscribe = Unsubscribe;
  api.EnableDomain = EnableDomain;
  api.EnableCallback = EnableCallback;
  api.ActivityEnable = ActivityEnable;
  api.ActivityDisable = ActivityDisable;
  api.ActivityRegisterCallbacks = RegisterCallbacks;
  api.ActivityGetNextRecord = GetNextRecord;
  api.ActivityFlushAll = FlushAll;
  api.ActivityGetNumDroppedRecords = GetNumDropped;
  api.GetTimestamp = GetTimestamp;
  api.SubscribeV2 = g_state->has_subscribe_v2 ? SubscribeV2 : nullptr;
  api.ActivityRegisterTimestampCallback = g_state->has_timestamp_callback ? RegisterTimestamp : nullptr;
  api.Finalize = Finalize;
  api.SetThreadIdType = g_state->has_thread_id_type ? SetThreadIdType : nullptr;
  api.ActivityEnableRuntimeApi = g_state->has_enable_runtime_api ? EnableRuntimeApi : nullptr;
  api.ActivitySetAttribute = SetAttribute;
  if (g_state->multi) {
    api.ActivityEnableV2 = EnableV2;
    api.ActivityDisableV2 = DisableV2;
    api.ActivityRegisterCallbacksV2 = RegisterCallbacksV2;
    api.ActivitySetAttributeV2 = SetAttributeV2;
    api.ActivityGetAttributeV2 = GetAttributeV2;
    api.ActivityGetEnabledKinds = GetEnabledKinds;
  }
  api.path = "fake-libcupti.so.13";
  return api;
}

const prof::cupti::ForwardedCupti* Forwarded() {
  static const prof::cupti::ForwardedCupti table = [] {
    prof::cupti::ForwardedCupti t;
    t.RegisterCallbacks = RegisterCallbacks;
    t.RegisterTimestampCallback = RegisterTimestamp;
    t.Enable = ActivityEnable;
    t.Disable = ActivityDisable;
    t.SetAttribute = SetAttribute;
    t.SetThreadIdType = SetThreadIdType;
    t.FlushAll = FlushAll;
    t.Finalize = Finalize;
    return t;
  }();
  return &table;
}

void Enter(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlation_id) {
  Dispatch(domain, cbid, CUPTI_API_ENTER, correlation_id, nullptr);
}

void Exit(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlation_id, int result) {
  bool dispatched = g_state->subscribed && g_state->callback != nullptr &&
                    (g_state->domains.count(domain) || g_state->callbacks.count({domain, cbid}));
  Dispatch(domain, cbid, CUPTI_API_EXIT, correlation_id, &result);
  CUpti_ActivityKind kind =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  bool left_out = domain == CUPTI_CB_DOMAIN_RUNTIME_API && g_state->runtime_left_out.count(cbid) != 0;
  if (g_state->api_records && dispatched && g_state->kinds.count(kind) && !left_out) {
    CUpti_ActivityAPI api;
    std::memset(&api, 0, sizeof(api));
    api.kind = kind;
    api.cbid = cbid;
    api.start = prof::NowNs() - 1000;
    api.end = prof::NowNs();
    api.correlationId = correlation_id;
    api.returnValue = static_cast<uint32_t>(result);
    Write(&api, sizeof(api));
  }
}

void Call(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlation_id, int result) {
  Enter(domain, cbid, correlation_id);
  Exit(domain, cbid, correlation_id, result);
}

void RetireCurrent() {
  if (g_state->buffer == nullptr) return;
  g_state->retired.emplace_back(g_state->buffer, g_state->buffer_used);
  g_state->buffer = nullptr;
  g_state->buffer_used = 0;
}

void Write(const void* record, size_t size) {
  size_t need = Aligned(size);
  if (g_state->buffer != nullptr && g_state->buffer_used + need > g_state->buffer_size) RetireCurrent();
  if (g_state->buffer == nullptr) {
    uint8_t* buffer = nullptr;
    size_t buffer_size = 0;
    size_t max_records = 0;
    if (g_state->request_v2 != nullptr) {
      g_state->request_v2(&buffer, &buffer_size, &max_records, nullptr);
    } else if (g_state->request != nullptr) {
      g_state->request(&buffer, &buffer_size, &max_records);
    }
    if (buffer == nullptr || buffer_size < need) {
      ++g_state->dropped;
      ++g_state->dropped_total;
      return;
    }
    g_state->buffer = buffer;
    g_state->buffer_size = buffer_size;
    g_state->buffer_used = 0;
  }
  std::memcpy(g_state->buffer + g_state->buffer_used, record, size);
  g_state->buffer_used += need;
  ++g_state->records_written;
}

// A kernel record for the fake's buffers: test data, field by field as the other tests' records.
CUpti_ActivityKernel10 Kernel(uint32_t correlation_id, uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = correlation_id;
  k.start = start;
  k.end = end;
  k.name = name;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = 128;
  k.blockY = k.blockZ = 1;
  return k;
}

CUpti_ActivityAPI RuntimeApi(uint32_t correlation_id, uint32_t cbid, uint64_t start, uint64_t end) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.correlationId = correlation_id;
  a.start = start;
  a.end = end;
  a.threadId = 42;
  return a;
}

}  // namespace fake
