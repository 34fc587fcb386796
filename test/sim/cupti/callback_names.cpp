// cuptiGetCallbackName: names exactly as the toolkit's cbid enums spell
// them (NVIDIA's library answers "cudaMalloc_v3020", "cuLaunchKernel").
#include <cstdint>

#include "internal.h"

namespace {

struct CallbackName {
  uint32_t cbid;
  const char* name;
};

#include "callback_names.inc"

template <size_t N>
const char* Find(const CallbackName (&table)[N], uint32_t cbid) {
  for (const CallbackName& entry : table) {
    if (entry.cbid == cbid) return entry.name;
  }
  return nullptr;
}

}  // namespace

extern "C" CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                     const char** name) {
  if (name == nullptr) return simcupti::Status(CUPTI_ERROR_INVALID_PARAMETER);
  *name = nullptr;
  // Names exist only for the driver and runtime domains.
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) *name = Find(kRuntimeNames, cbid);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) *name = Find(kDriverNames, cbid);
  return *name != nullptr ? CUPTI_SUCCESS : simcupti::Status(CUPTI_ERROR_INVALID_PARAMETER);
}
