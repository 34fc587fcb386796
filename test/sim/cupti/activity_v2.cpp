// CUPTI 13.2's per-subscriber activity functions (cupti_13_2.h): the same
// operations as the process-wide ones, addressed to one subscriber's
// activity client. Only in the multi-subscriber release; CUPTI 13.0 has no
// such functions, so there they answer CUPTI_ERROR_NOT_SUPPORTED (the sim
// must export them either way).
#include "buffers.h"
#include "internal.h"

using simcupti::Status;

namespace {

// The client a call addresses, or -1 with the error to return.
int Client(CUpti_SubscriberHandle subscriber, CUptiResult* error) {
  return simcupti::ActivityClientOf(subscriber, error);
}

}  // namespace

extern "C" {

// pActivityConfig (user-defined records, beta in 13.2) is accepted and
// not applied: the sim always writes whole records.
CUptiResult CUPTIAPI cuptiActivityEnable_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                            CUpti_ActivityConfig*) {
  CUptiResult error = CUPTI_SUCCESS;
  const int client = Client(subscriber, &error);
  if (client < 0) return Status(error);
  return simcupti::SetKindEnabled(client, "cuptiActivityEnable_v2", kind, true);
}

// cuptiActivityEnable_v2 with enable false: one exported entry point each.
CUptiResult CUPTIAPI cuptiActivityDisable_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                             CUpti_ActivityConfig*) {
  CUptiResult error = CUPTI_SUCCESS;
  const int client = Client(subscriber, &error);
  if (client < 0) return Status(error);
  return simcupti::SetKindEnabled(client, "cuptiActivityDisable_v2", kind, false);
}

// Dumps exist only for DEVICE/CONTEXT/STREAM/NVLINK/PCIE, which the
// simulator does not record; otherwise it is cuptiActivityEnable_v2.
CUptiResult CUPTIAPI cuptiActivityEnableAndDump_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                                   CUpti_ActivityConfig*) {
  CUptiResult error = CUPTI_SUCCESS;
  const int client = Client(subscriber, &error);
  if (client < 0) return Status(error);
  return simcupti::SetKindEnabled(client, "cuptiActivityEnableAndDump_v2", kind, true);
}

// NULL subscriber: the union over every client (documented). As many kinds
// as fit in the buffer; the true count in *enabledKindsCount.
CUptiResult CUPTIAPI cuptiActivityGetEnabledKinds(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind* buffer,
                                                  uint32_t* buffer_size, uint32_t* enabled_count) {
  if (!simcupti::MultiSubscriberRelease()) return Status(CUPTI_ERROR_NOT_SUPPORTED);
  if (enabled_count == nullptr || (buffer != nullptr && buffer_size == nullptr)) {
    return Status(CUPTI_ERROR_INVALID_PARAMETER);
  }
  std::vector<int> kinds;
  if (subscriber == nullptr) {
    kinds = simcupti::EnabledKinds();
  } else {
    CUptiResult error = CUPTI_SUCCESS;
    const int client = Client(subscriber, &error);
    if (client < 0) return Status(error);
    kinds = simcupti::EnabledKinds(client);
  }
  for (size_t i = 0; buffer != nullptr && i < kinds.size() && i < *buffer_size; ++i) {
    buffer[i] = static_cast<CUpti_ActivityKind>(kinds[i]);
  }
  *enabled_count = static_cast<uint32_t>(kinds.size());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks_v2(CUpti_SubscriberHandle subscriber,
                                                       CUpti_BuffersCallbackRequestFunc_v2 request,
                                                       CUpti_BuffersCallbackCompleteFunc_v2 complete) {
  CUptiResult error = CUPTI_SUCCESS;
  const int client = Client(subscriber, &error);
  if (client < 0) return Status(error);
  if (request == nullptr || complete == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return simcupti::SetActivityCallbacks(client, "cuptiActivityRegisterCallbacks_v2", nullptr, nullptr, request,
                                        complete);
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityAttribute attr,
                                                  size_t* value_size, void* value) {
  CUptiResult error = CUPTI_SUCCESS;
  const int client = Client(subscriber, &error);
  if (client < 0) return Status(error);
  return Status(simcupti::ActivityAttribute(client, /*write=*/false, attr, value_size, value));
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityAttribute attr,
                                                  size_t* value_size, void* value) {
  CUptiResult error = CUPTI_SUCCESS;
  const int client = Client(subscriber, &error);
  if (client < 0) return Status(error);
  return Status(simcupti::ActivityAttribute(client, /*write=*/true, attr, value_size, value));
}

}  // extern "C"
