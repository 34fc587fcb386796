// The activity API's entry points: which kinds are on, buffer callbacks,
// flush, record iteration, drop counts, attributes, timestamps.
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "buffers.h"
#include "internal.h"

namespace simcupti {
namespace {

// Kinds on (cuptiActivityEnable) and options; writers are rare, readers
// are every launch, so plain atomics.
struct ActivityConfig {
  std::array<std::atomic<bool>, CUPTI_ACTIVITY_KIND_COUNT> enabled{};
  std::atomic<bool> thread_id_system{false};
  std::atomic<bool> latency_timestamps{false};
  std::atomic<bool> per_thread_buffers{true};  // CUDA 13 default
  std::atomic<bool> client_zeroes{false};
  std::atomic<size_t> device_buffer_size{3200000};
  std::atomic<size_t> device_buffer_size_cdp{8388608};
  std::atomic<size_t> device_buffer_pool_limit{250};
  std::atomic<size_t> device_buffer_preallocate{3};
  std::atomic<size_t> device_buffer_size_graphs{16777216};
  std::atomic<bool> host_pinned{false};
};

// cuptiActivityEnableContext/DisableContext: per-context settings that
// supersede the global ones, by context uid. `any` keeps the launch path
// to one relaxed load while no client uses them.
struct ContextOverrides {
  std::mutex mu;
  std::atomic<bool> any{false};
  std::map<uint32_t, std::map<int, bool>> by_context;  // uid -> kind -> enabled
};

// cuptiActivityEnableRuntimeApi/DriverApi: per-cbid choices for API
// records (-1: none, follow the RUNTIME/DRIVER kind). Enabling or
// disabling the kind afterwards overrides them, as documented.
struct ApiSelection {
  std::array<std::atomic<int8_t>, CUPTI_RUNTIME_TRACE_CBID_SIZE> runtime;
  std::array<std::atomic<int8_t>, CUPTI_DRIVER_TRACE_CBID_SIZE> driver;
  ApiSelection() { Clear(); }
  void Clear() {
    for (auto& v : runtime) v.store(-1);
    for (auto& v : driver) v.store(-1);
  }
};

// One activity client's settings (internal.h: client 0 is the process-wide
// activity API, 1..kMaxSubscribers the subscribers' own).
struct Client {
  ActivityConfig config;
  ContextOverrides overrides;
  ApiSelection selection;
};

std::array<Client, kMaxClients>& Clients() {
  static auto* clients = new std::array<Client, kMaxClients>();  // never destroyed: used at exit
  return *clients;
}
Client& ClientAt(int client) { return Clients()[static_cast<size_t>(client)]; }
ActivityConfig& Config(int client = kProcessClient) { return ClientAt(client).config; }

// Bit c: client c has at least one kind on (or an API selection). The
// launch path's first load: no client recording, nothing to do.
std::atomic<ClientMask> g_recording{0};

void UpdateRecording(int client) {
  Client& c = ClientAt(client);
  bool any = false;
  for (const auto& kind : c.config.enabled) any = any || kind.load();
  for (const auto& v : c.selection.runtime) any = any || v.load() == 1;
  for (const auto& v : c.selection.driver) any = any || v.load() == 1;
  if (c.overrides.any.load()) {
    std::lock_guard<std::mutex> lock(c.overrides.mu);
    for (const auto& [uid, kinds] : c.overrides.by_context) {
      for (const auto& [kind, on] : kinds) any = any || on;
    }
  }
  const ClientMask bit = ClientMask{1} << client;
  if (any) {
    g_recording.fetch_or(bit);
  } else {
    g_recording.fetch_and(~bit);
  }
}

bool ValidKind(CUpti_ActivityKind kind) {
  return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

// External correlation ids pushed by this thread, per kind: one set of
// stacks per thread, whoever pushed (the push/pop functions name no
// subscriber, in 13.2 either). Never destroyed, for the same reason as the
// API frames in hooks.cpp (CUDA calls from atexit handlers).
using ExternalStacks = std::array<std::vector<uint64_t>, CUPTI_EXTERNAL_CORRELATION_KIND_SIZE>;
ExternalStacks& ThreadExternal() {
  thread_local ExternalStacks* stacks = new ExternalStacks();
  return *stacks;
}

// cuptiActivityEnableRuntimeApi/DriverApi: one id's choice, until the
// RUNTIME/DRIVER kind is enabled or disabled again (truth line with the id).
CUptiResult SelectApi(const char* call, int domain, CUpti_CallbackId cbid, uint8_t enable) {
  CUptiResult result = EnsureInitialized();
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const uint32_t size = runtime ? uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE} : uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE};
  if (result == CUPTI_SUCCESS && cbid >= size) result = CUPTI_ERROR_INVALID_PARAMETER;
  if (result == CUPTI_SUCCESS) {
    ApiSelection& selection = ClientAt(kProcessClient).selection;
    std::atomic<int8_t>& choice = runtime ? selection.runtime[cbid] : selection.driver[cbid];
    choice.store(enable != 0 ? 1 : 0);
    UpdateRecording(kProcessClient);
  }
  TruthCall(call, result, ",\"cbid\":" + std::to_string(cbid) + ",\"enable\":" + std::to_string(enable != 0 ? 1 : 0));
  return Status(result);
}

CUptiResult SetContextEnabled(const char* call, CUcontext context, CUpti_ActivityKind kind, bool enable) {
  CUptiResult result = EnsureInitialized();
  uint32_t uid = 0;
  uint32_t device = 0;
  if (result == CUPTI_SUCCESS && !ValidKind(kind)) result = CUPTI_ERROR_INVALID_KIND;
  if (result == CUPTI_SUCCESS && (context == nullptr || !LookupContext(context, &uid, &device))) {
    result = CUPTI_ERROR_INVALID_CONTEXT;
  }
  if (result == CUPTI_SUCCESS) {
    ContextOverrides& overrides = ClientAt(kProcessClient).overrides;
    {
      std::lock_guard<std::mutex> lock(overrides.mu);
      overrides.by_context[uid][kind] = enable;
      overrides.any.store(true);
    }
    UpdateRecording(kProcessClient);
  }
  TruthCall(call, result, ",\"kind\":" + std::to_string(static_cast<int>(kind)) + ",\"context\":" + std::to_string(uid));
  return Status(result);
}

// Reads or writes one attribute value of type T.
template <typename T>
CUptiResult Access(bool write, size_t* value_size, void* value, std::atomic<T>& slot) {
  if (*value_size < sizeof(T)) return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
  T v{};
  if (write) {
    std::memcpy(&v, value, sizeof(T));
    slot.store(v);
  } else {
    v = slot.load();
    std::memcpy(value, &v, sizeof(T));
  }
  *value_size = sizeof(T);
  return CUPTI_SUCCESS;
}

void ResetClient(int client) {
  Client& c = ClientAt(client);
  for (auto& kind : c.config.enabled) kind.store(false);
  c.selection.Clear();
  {
    std::lock_guard<std::mutex> lock(c.overrides.mu);
    c.overrides.by_context.clear();
    c.overrides.any.store(false);
  }
  UpdateRecording(client);
}

}  // namespace

CUptiResult SetKindEnabled(int client, const char* call, CUpti_ActivityKind kind, bool enable) {
  CUptiResult result = EnsureInitialized();
  if (result == CUPTI_SUCCESS && !ValidKind(kind)) result = CUPTI_ERROR_INVALID_KIND;
  if (result == CUPTI_SUCCESS) {
    Client& c = ClientAt(client);
    c.config.enabled[kind].store(enable);
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      for (auto& v : c.selection.runtime) v.store(-1);
    } else if (kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      for (auto& v : c.selection.driver) v.store(-1);
    }
    UpdateRecording(client);
  }
  TruthCall(call, result,
            ",\"kind\":" + std::to_string(static_cast<int>(kind)) + ",\"client\":" + std::to_string(client));
  return Status(result);
}

CUptiResult ActivityAttribute(int client, bool write, CUpti_ActivityAttribute attr, size_t* value_size, void* value) {
  if (value_size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (CUptiResult init = EnsureInitialized(); init != CUPTI_SUCCESS) return init;
  ActivityConfig& c = Config(client);
  switch (attr) {
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE: return Access(write, value_size, value, c.device_buffer_size);
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP: return Access(write, value_size, value, c.device_buffer_size_cdp);
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT:
      return Access(write, value_size, value, c.device_buffer_pool_limit);
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE:
      return Access(write, value_size, value, c.device_buffer_preallocate);
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS:
      return Access(write, value_size, value, c.device_buffer_size_graphs);
    case CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER: return Access(write, value_size, value, c.client_zeroes);
    case CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER: return Access(write, value_size, value, c.per_thread_buffers);
    case CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED: return Access(write, value_size, value, c.host_pinned);
    default: break;
  }
  // The attributes CUPTI 13.2 added (cupti_13_2.h), in that release only.
  if (MultiSubscriberRelease()) {
    switch (static_cast<int>(attr)) {
      case kAttrMultipleSubscriberState: {  // "cannot be set", only queried
        if (write) return CUPTI_ERROR_INVALID_PARAMETER;
        std::atomic<uint8_t> state{MultiSubscriberState()};
        return Access(false, value_size, value, state);
      }
      case kAttrKernelLatencyTimestamps: return Access(write, value_size, value, c.latency_timestamps);
      case kAttrThreadIdType: {
        std::atomic<uint32_t> type{c.thread_id_system.load() ? uint32_t{CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM}
                                                              : uint32_t{CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT}};
        CUptiResult result = Access(write, value_size, value, type);
        if (result == CUPTI_SUCCESS && write) {
          if (type.load() > CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) return CUPTI_ERROR_NOT_SUPPORTED;
          c.thread_id_system.store(type.load() == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
        }
        return result;
      }
      case kAttrTimestampCallback: {
        if (*value_size < sizeof(CUpti_TimestampCallbackFunc)) return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
        CUpti_TimestampCallbackFunc source = nullptr;
        if (write) {
          std::memcpy(&source, value, sizeof(source));
          if (client == kProcessClient) {
            simhub_set_timestamp_source(source);  // as cuptiActivityRegisterTimestampCallback
          } else {
            SetClientClock(client, source);
          }
        } else {
          source = client == kProcessClient ? nullptr : ClientClockSource(client);
          std::memcpy(value, &source, sizeof(source));
        }
        *value_size = sizeof(source);
        return CUPTI_SUCCESS;
      }
      default: break;
    }
  }
  return CUPTI_ERROR_NOT_SUPPORTED;  // the semaphore pools went away in CUDA 12.3
}

CUptiResult SetActivityCallbacks(int client, const char* call, CUpti_BuffersCallbackRequestFunc request,
                                 CUpti_BuffersCallbackCompleteFunc complete,
                                 CUpti_BuffersCallbackRequestFunc_v2 request_v2,
                                 CUpti_BuffersCallbackCompleteFunc_v2 complete_v2) {
  const bool v2 = request_v2 != nullptr || complete_v2 != nullptr;
  if (v2 ? (request_v2 == nullptr || complete_v2 == nullptr) : (request == nullptr || complete == nullptr)) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  if (v2) {
    BufferPool::Of(client).SetCallbacksV2(request_v2, complete_v2);
  } else {
    BufferPool::Of(client).SetCallbacks(request, complete);
  }
  TruthCall(call, CUPTI_SUCCESS, ",\"client\":" + std::to_string(client));
  return CUPTI_SUCCESS;
}

bool KindEnabled(int client, CUpti_ActivityKind kind, uint32_t context_uid) {
  if (!ValidKind(kind)) return false;
  Client& c = ClientAt(client);
  if (context_uid != 0 && c.overrides.any.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(c.overrides.mu);
    auto context = c.overrides.by_context.find(context_uid);
    if (context != c.overrides.by_context.end()) {
      auto setting = context->second.find(kind);
      if (setting != context->second.end()) return setting->second;
    }
  }
  return c.config.enabled[kind].load(std::memory_order_relaxed);
}

ClientMask ClientsRecording(CUpti_ActivityKind kind, uint32_t context_uid) {
  const ClientMask recording = g_recording.load(std::memory_order_relaxed);
  if (recording == 0) return 0;
  ClientMask out = 0;
  for (int client = 0; client < kMaxClients; ++client) {
    if ((recording >> client & 1) != 0 && KindEnabled(client, kind, context_uid)) out |= ClientMask{1} << client;
  }
  return out;
}

ClientMask ApiRecordClients(int domain, uint32_t cbid, uint32_t context_uid) {
  const ClientMask recording = g_recording.load(std::memory_order_relaxed);
  if (recording == 0) return 0;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  ClientMask out = 0;
  for (int client = 0; client < kMaxClients; ++client) {
    if ((recording >> client & 1) == 0) continue;
    const ApiSelection& selection = ClientAt(client).selection;
    int8_t choice = -1;
    if (runtime && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) {
      choice = selection.runtime[cbid].load(std::memory_order_relaxed);
    } else if (!runtime && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) {
      choice = selection.driver[cbid].load(std::memory_order_relaxed);
    }
    const CUpti_ActivityKind kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    const bool on = choice >= 0 ? choice == 1 : KindEnabled(client, kind, context_uid);
    if (on) out |= ClientMask{1} << client;
  }
  return out;
}

std::vector<int> EnabledKinds(int client) {
  std::vector<int> kinds;
  for (int kind = 1; kind < CUPTI_ACTIVITY_KIND_COUNT; ++kind) {
    if (Config(client).enabled[kind].load()) kinds.push_back(kind);
  }
  return kinds;
}

std::vector<int> EnabledKinds() {
  std::vector<int> kinds;
  for (int kind = 1; kind < CUPTI_ACTIVITY_KIND_COUNT; ++kind) {
    for (int client = 0; client < kMaxClients; ++client) {
      if (Config(client).enabled[kind].load()) {
        kinds.push_back(kind);
        break;
      }
    }
  }
  return kinds;
}

void ResetActivityConfig() {
  for (int client = 0; client < kMaxClients; ++client) {
    ResetClient(client);
    ResetClientClocks(client);
  }
}

void ForgetSubscriberClient(int client) {
  if (client <= kProcessClient || client >= kMaxClients) return;
  ResetClient(client);
  ResetClientClocks(client);
  BufferPool::Of(client).Discard();  // undelivered records are lost, as at cuptiFinalize
}

bool ThreadIdIsSystem(int client) { return Config(client).thread_id_system.load(std::memory_order_relaxed); }
bool LatencyTimestamps(int client) { return Config(client).latency_timestamps.load(std::memory_order_relaxed); }
bool PerThreadBuffers(int client) { return Config(client).per_thread_buffers.load(std::memory_order_relaxed); }
bool ClientZeroesBuffers(int client) { return Config(client).client_zeroes.load(std::memory_order_relaxed); }

void RecordExternalCorrelations(const SimApiSite& site, ClientMask clients) {
  const ExternalStacks& stacks = ThreadExternal();
  for (int client = 0; client < kMaxClients; ++client) {
    if ((clients >> client & 1) == 0) continue;
    if (!KindEnabled(client, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, site.context_uid)) continue;
    for (int kind = 1; kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; ++kind) {
      if (!stacks[kind].empty()) {
        RecordExternalCorrelation(client, static_cast<CUpti_ExternalCorrelationKind>(kind), stacks[kind].back(), site);
      }
    }
  }
}

}  // namespace simcupti

using simcupti::Status;

extern "C" {

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return simcupti::SetKindEnabled(simcupti::kProcessClient, "cuptiActivityEnable", kind, true);
}

CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind) {
  // Dumps exist only for DEVICE/CONTEXT/STREAM/NVLINK/PCIE, which the
  // simulator does not record; otherwise it is cuptiActivityEnable.
  return simcupti::SetKindEnabled(simcupti::kProcessClient, "cuptiActivityEnableAndDump", kind, true);
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  return simcupti::SetKindEnabled(simcupti::kProcessClient, "cuptiActivityDisable", kind, false);
}

CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context, CUpti_ActivityKind kind) {
  return simcupti::SetContextEnabled("cuptiActivityEnableContext", context, kind, true);
}

CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context, CUpti_ActivityKind kind) {
  return simcupti::SetContextEnabled("cuptiActivityDisableContext", context, kind, false);
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return simcupti::SelectApi("cuptiActivityEnableRuntimeApi", CUPTI_CB_DOMAIN_RUNTIME_API, cbid, enable);
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return simcupti::SelectApi("cuptiActivityEnableDriverApi", CUPTI_CB_DOMAIN_DRIVER_API, cbid, enable);
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  return simcupti::SetActivityCallbacks(simcupti::kProcessClient, "cuptiActivityRegisterCallbacks", request, complete,
                                        nullptr, nullptr);
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  CUptiResult result = simcupti::EnsureInitialized();
  const bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  // No subscriber parameter, in 13.2 either: every client's buffers (each
  // to its own callbacks); INVALID_OPERATION only if none registered any.
  if (result == CUPTI_SUCCESS) {
    bool any = false;
    for (int client = 0; client < simcupti::kMaxClients; ++client) {
      simcupti::BufferPool& pool = simcupti::BufferPool::Of(client);
      if (!pool.HasCallbacks()) continue;
      any = true;
      pool.Flush(forced);
    }
    if (!any) result = CUPTI_ERROR_INVALID_OPERATION;
  }
  simcupti::TruthCall("cuptiActivityFlushAll", result, ",\"forced\":" + std::to_string(forced ? 1 : 0));
  return Status(result);
}

// Deprecated: context and stream are ignored, as documented.
CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext, uint32_t, uint32_t flag) { return cuptiActivityFlushAll(flag); }

// The worker already delivers full, complete buffers as soon as they are;
// a period adds nothing the simulator would do differently.
CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t) { return Status(simcupti::EnsureInitialized()); }

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  size_t offset = 0;
  if (*record != nullptr) {
    const uint8_t* previous = reinterpret_cast<const uint8_t*>(*record);
    const size_t previous_size = simcupti::RecordSize((*record)->kind);
    if (previous < buffer || previous_size == 0) return Status(CUPTI_ERROR_INVALID_KIND);
    offset = static_cast<size_t>(previous - buffer) + ((previous_size + 7) & ~size_t{7});
  }
  // Past the valid bytes: done. A kind this library never writes (0 in a
  // zeroed tail, garbage): INVALID_KIND. A record cut short: done. (The
  // same answers NVIDIA's implementation gives on such buffers.)
  uint32_t kind = 0;
  if (offset + sizeof(kind) > valid_size) return Status(CUPTI_ERROR_MAX_LIMIT_REACHED);
  std::memcpy(&kind, buffer + offset, sizeof(kind));
  const size_t size = simcupti::RecordSize(kind);
  if (size == 0) return Status(CUPTI_ERROR_INVALID_KIND);
  if (offset + size > valid_size) return Status(CUPTI_ERROR_MAX_LIMIT_REACHED);
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id, size_t* dropped) {
  if (dropped == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  *dropped = 0;
  if (simcupti::CurrentFaults().no_driver) return CUPTI_SUCCESS;  // what the real library answers
  // No subscriber parameter, in 13.2 either: the drops of every client.
  uint32_t uid = 0;
  uint32_t device = 0;
  const bool all = context == nullptr;
  if (!all && !simcupti::LookupContext(context, &uid, &device)) return CUPTI_SUCCESS;
  for (int client = 0; client < simcupti::kMaxClients; ++client) {
    *dropped += simcupti::BufferPool::Of(client).TakeDropped(all, uid, stream_id);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t* value_size, void* value) {
  return Status(simcupti::ActivityAttribute(simcupti::kProcessClient, /*write=*/false, attr, value_size, value));
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* value_size, void* value) {
  return Status(simcupti::ActivityAttribute(simcupti::kProcessClient, /*write=*/true, attr, value_size, value));
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp) {
  if (timestamp == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  CUptiResult result = simcupti::EnsureInitialized();
  // Every time reported from now on (records, cuptiGetTimestamp) is on
  // the client's clock; the hub samples the offset now.
  if (result == CUPTI_SUCCESS) simhub_set_timestamp_source(timestamp);
  simcupti::TruthCall("cuptiActivityRegisterTimestampCallback", result);
  return Status(result);
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  *timestamp = simhub_to_reported_ns(simhub_now_ns());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return Status(CUPTI_ERROR_NOT_SUPPORTED);
  }
  simcupti::Config().thread_id_system.store(type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (type == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  *type = simcupti::ThreadIdIsSystem(simcupti::kProcessClient) ? CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
                                                               : CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable) {
  simcupti::Config().latency_timestamps.store(enable != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  simcupti::ThreadExternal()[kind].push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t* last_id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  auto& stack = simcupti::ThreadExternal()[kind];
  if (stack.empty()) return Status(CUPTI_ERROR_QUEUE_EMPTY);
  if (last_id != nullptr) *last_id = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t* context_id) {
  if (context_id == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  uint32_t device = 0;
  if (context == nullptr || !simcupti::LookupContext(context, context_id, &device)) {
    return Status(CUPTI_ERROR_INVALID_CONTEXT);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* device_id) {
  if (device_id == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  if (context == nullptr) {
    *device_id = 0;  // the hub models one device
    return CUPTI_SUCCESS;
  }
  uint32_t uid = 0;
  if (!simcupti::LookupContext(context, &uid, device_id)) return Status(CUPTI_ERROR_INVALID_DEVICE);
  return CUPTI_SUCCESS;
}

}  // extern "C"
