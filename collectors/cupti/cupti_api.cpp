#include "collectors/cupti/cupti_api.h"

#include <dlfcn.h>

#include <string>

namespace prof::cupti {
namespace {

template <typename Fn>
void Resolve(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

// One check per required function: a list, not logic.
const char* CuptiApi::FirstMissing() const {
  if (GetVersion == nullptr) return "cuptiGetVersion";
  if (Subscribe == nullptr) return "cuptiSubscribe";
  if (Unsubscribe == nullptr) return "cuptiUnsubscribe";
  if (EnableDomain == nullptr) return "cuptiEnableDomain";
  if (EnableCallback == nullptr) return "cuptiEnableCallback";
  if (ActivityEnable == nullptr) return "cuptiActivityEnable";
  if (ActivityDisable == nullptr) return "cuptiActivityDisable";
  if (ActivityRegisterCallbacks == nullptr) return "cuptiActivityRegisterCallbacks";
  if (ActivityGetNextRecord == nullptr) return "cuptiActivityGetNextRecord";
  if (ActivityFlushAll == nullptr) return "cuptiActivityFlushAll";
  if (ActivityGetNumDroppedRecords == nullptr) return "cuptiActivityGetNumDroppedRecords";
  if (GetTimestamp == nullptr) return "cuptiGetTimestamp";
  return nullptr;
}

bool ResolveCuptiApi(void* handle, CuptiApi* api, std::string* missing) {
  Resolve(handle, "cuptiGetVersion", &api->GetVersion);
  Resolve(handle, "cuptiSubscribe", &api->Subscribe);
  Resolve(handle, "cuptiUnsubscribe", &api->Unsubscribe);
  Resolve(handle, "cuptiEnableDomain", &api->EnableDomain);
  Resolve(handle, "cuptiEnableCallback", &api->EnableCallback);
  Resolve(handle, "cuptiActivityEnable", &api->ActivityEnable);
  Resolve(handle, "cuptiActivityDisable", &api->ActivityDisable);
  Resolve(handle, "cuptiActivityRegisterCallbacks", &api->ActivityRegisterCallbacks);
  Resolve(handle, "cuptiActivityGetNextRecord", &api->ActivityGetNextRecord);
  Resolve(handle, "cuptiActivityFlushAll", &api->ActivityFlushAll);
  Resolve(handle, "cuptiActivityGetNumDroppedRecords", &api->ActivityGetNumDroppedRecords);
  Resolve(handle, "cuptiGetTimestamp", &api->GetTimestamp);
  Resolve(handle, "cuptiSubscribe_v2", &api->SubscribeV2);
  Resolve(handle, "cuptiActivityRegisterTimestampCallback", &api->ActivityRegisterTimestampCallback);
  Resolve(handle, "cuptiFinalize", &api->Finalize);
  Resolve(handle, "cuptiGetResultString", &api->GetResultString);
  Resolve(handle, "cuptiSetThreadIdType", &api->SetThreadIdType);
  Resolve(handle, "cuptiActivitySetAttribute", &api->ActivitySetAttribute);
  Resolve(handle, "cuptiActivityEnableRuntimeApi", &api->ActivityEnableRuntimeApi);
  Resolve(handle, "cuptiGetDeviceId", &api->GetDeviceId);
  Resolve(handle, "cuptiGetGraphNodeId", &api->GetGraphNodeId);
  Resolve(handle, "cuptiActivityEnable_v2", &api->ActivityEnableV2);
  Resolve(handle, "cuptiActivityDisable_v2", &api->ActivityDisableV2);
  Resolve(handle, "cuptiActivityRegisterCallbacks_v2", &api->ActivityRegisterCallbacksV2);
  Resolve(handle, "cuptiActivitySetAttribute_v2", &api->ActivitySetAttributeV2);
  Resolve(handle, "cuptiActivityGetAttribute_v2", &api->ActivityGetAttributeV2);
  Resolve(handle, "cuptiActivityGetEnabledKinds", &api->ActivityGetEnabledKinds);
  const char* first_missing = api->FirstMissing();
  if (first_missing != nullptr && missing != nullptr) *missing = first_missing;
  return first_missing == nullptr;
}

std::string ResultName(const CuptiApi& api, CUptiResult result) {
  std::string text;
  const char* name = nullptr;
  if (api.GetResultString != nullptr && api.GetResultString(result, &name) == CUPTI_SUCCESS && name != nullptr) {
    text = name;
    text += ' ';
  }
  text += '(' + std::to_string(static_cast<int>(result)) + ')';
  return text;
}

}  // namespace prof::cupti
