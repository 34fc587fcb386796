// CUPTI, wrapped once: a table of the entry points libprof uses, resolved by
// dlsym from a libcupti opened at run time (cupti_loader.h). The collector
// only calls CUPTI through this table, so unit tests hand it a fake one.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

#include "collectors/cupti/cupti_13_2.h"

namespace prof::cupti {

// One pointer per CUPTI function used: a table, not logic.
struct CuptiApi {
  // Required: without any of these the library is not usable.
  decltype(&::cuptiGetVersion) GetVersion = nullptr;
  decltype(&::cuptiSubscribe) Subscribe = nullptr;
  decltype(&::cuptiUnsubscribe) Unsubscribe = nullptr;
  decltype(&::cuptiEnableDomain) EnableDomain = nullptr;
  decltype(&::cuptiEnableCallback) EnableCallback = nullptr;
  decltype(&::cuptiActivityEnable) ActivityEnable = nullptr;
  decltype(&::cuptiActivityDisable) ActivityDisable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks = nullptr;
  decltype(&::cuptiActivityGetNextRecord) ActivityGetNextRecord = nullptr;
  decltype(&::cuptiActivityFlushAll) ActivityFlushAll = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords = nullptr;
  decltype(&::cuptiGetTimestamp) GetTimestamp = nullptr;

  // Optional: newer or less essential; the collector copes without them.
  decltype(&::cuptiSubscribe_v2) SubscribeV2 = nullptr;  // CUPTI 13+: named subscriber
  decltype(&::cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback = nullptr;
  decltype(&::cuptiFinalize) Finalize = nullptr;
  decltype(&::cuptiGetResultString) GetResultString = nullptr;
  decltype(&::cuptiSetThreadIdType) SetThreadIdType = nullptr;  // API records with gettid() ids
  decltype(&::cuptiActivitySetAttribute) ActivitySetAttribute = nullptr;  // zeroed-buffer promise
  // Per-cbid RUNTIME records: API records of calls a wrapper recorded are not asked for.
  decltype(&::cuptiActivityEnableRuntimeApi) ActivityEnableRuntimeApi = nullptr;
  // The device of a context: an allocation's device when CUPTI's callbacks record the call.
  decltype(&::cuptiGetDeviceId) GetDeviceId = nullptr;
  // A graph node's id, as kernel, copy and memset records carry it: where a
  // replayed node's work was captured (graph_sites.h).
  decltype(&::cuptiGetGraphNodeId) GetGraphNodeId = nullptr;
  // CUPTI 13.2 (cupti_13_2.h): a subscriber let in beside others is an
  // activity client of its own, addressed by these with its handle.
  v13_2::ActivityEnableV2 ActivityEnableV2 = nullptr;
  v13_2::ActivityDisableV2 ActivityDisableV2 = nullptr;
  v13_2::ActivityRegisterCallbacksV2 ActivityRegisterCallbacksV2 = nullptr;
  v13_2::ActivityAttributeV2 ActivitySetAttributeV2 = nullptr;
  v13_2::ActivityAttributeV2 ActivityGetAttributeV2 = nullptr;
  v13_2::ActivityGetEnabledKinds ActivityGetEnabledKinds = nullptr;

  std::string path;       // where it was loaded from, for messages
  std::string found_by;   // which step of the search found it (cupti_loader.h)

  // Names the first missing required entry point, or nullptr when complete.
  const char* FirstMissing() const;
  // Every function a subscriber beside others needs (cupti_13_2.h) is there.
  bool HasMultiSubscriber() const {
    return SubscribeV2 != nullptr && ActivityEnableV2 != nullptr && ActivityDisableV2 != nullptr &&
           ActivityRegisterCallbacksV2 != nullptr && ActivitySetAttributeV2 != nullptr &&
           ActivityGetAttributeV2 != nullptr && ActivityGetEnabledKinds != nullptr;
  }
};

// Fills `api` from a dlopen handle. Returns false (and names the missing
// symbol in *missing) when a required entry point is absent.
bool ResolveCuptiApi(void* handle, CuptiApi* api, std::string* missing);

// "CUPTI_ERROR_UNKNOWN (999)": the library's own name when it can say, else
// the number.
std::string ResultName(const CuptiApi& api, CUptiResult result);

}  // namespace prof::cupti
