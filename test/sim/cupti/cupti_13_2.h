// What CUPTI 13.2's headers add for several subscribers, which the
// toolkit's CUDA 13.0 headers the sim is built from lack: the
// allowMultipleSubscribers field of CUpti_SubscriberParams, the
// per-subscriber activity functions (cuptiActivityEnable_v2, ...), their
// types, and the activity attributes that go with them. Declared from
// cupti_callbacks.h and cupti_activity.h of CUPTI 13.2 (CUPTI_API_VERSION
// 130202, PyPI nvidia-cuda-cupti 13.2.86) and docs.nvidia.com/cupti/13.2.0
// (CUpti_SubscriberParams); every size and offset below was checked against
// that header. With a toolkit whose headers already declare them, those are
// used instead.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#if CUPTI_API_VERSION < 130200
extern "C" {

typedef struct {
  size_t structSize;
  int fieldId;
  size_t offset;
  size_t size;
  size_t alignment;
} CUpti_ActivityFieldLayoutEntry;

typedef struct {
  size_t structSize;
  CUpti_ActivityFieldLayoutEntry* pEntries;
  size_t numFields;
  size_t recordSize;
} CUpti_ActivityRecordLayout;

typedef struct {
  size_t structSize;
  size_t numFields;
  int* pFieldIds;
} CUpti_ActivityFieldSelection;

typedef struct {
  size_t structSize;
  CUpti_ActivityFieldSelection fieldSelection;
} CUpti_ActivityConfig;

typedef struct {
  size_t structSize;
} CUpti_BufferCallbackRequestInfo;

typedef struct {
  size_t structSize;
  uint64_t threadId;  // the thread whose (per-thread) buffer completed
  CUpti_ActivityRecordLayout** ppRecordLayouts;
  size_t numRecordLayouts;
} CUpti_BufferCallbackCompleteInfo;

typedef void(CUPTIAPI* CUpti_BuffersCallbackRequestFunc_v2)(uint8_t** buffer, size_t* size, size_t* maxNumRecords,
                                                            CUpti_BufferCallbackRequestInfo* pBufferRequestInfo);
typedef void(CUPTIAPI* CUpti_BuffersCallbackCompleteFunc_v2)(uint8_t* buffer, size_t size, size_t validSize,
                                                             CUpti_BufferCallbackCompleteInfo* pBufferCompleteInfo);

#define SIM_CUPTI_EXPORT __attribute__((visibility("default")))
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityEnable_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                                             CUpti_ActivityConfig* pActivityConfig);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityDisable_v2(CUpti_SubscriberHandle subscriber,
                                                              CUpti_ActivityKind kind,
                                                              CUpti_ActivityConfig* pActivityConfig);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityEnableAndDump_v2(CUpti_SubscriberHandle subscriber,
                                                                    CUpti_ActivityKind kind,
                                                                    CUpti_ActivityConfig* activityConfig);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityGetEnabledKinds(CUpti_SubscriberHandle subscriber,
                                                                   CUpti_ActivityKind* buffer, uint32_t* bufferSize,
                                                                   uint32_t* enabledKindsCount);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks_v2(
    CUpti_SubscriberHandle subscriber, CUpti_BuffersCallbackRequestFunc_v2 funcBufferRequested,
    CUpti_BuffersCallbackCompleteFunc_v2 funcBufferCompleted);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityGetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                                   CUpti_ActivityAttribute attr, size_t* valueSize,
                                                                   void* value);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivitySetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                                   CUpti_ActivityAttribute attr, size_t* valueSize,
                                                                   void* value);
SIM_CUPTI_EXPORT CUptiResult CUPTIAPI cuptiGetEnabledCallbacks(CUpti_SubscriberHandle subscriber,
                                                               CUpti_CallbackDomain domain, CUpti_CallbackId* buffer,
                                                               uint32_t* bufferSize, uint32_t* enabledCallbacksCount);
#undef SIM_CUPTI_EXPORT

}  // extern "C"
#endif  // CUPTI_API_VERSION < 130200

namespace simcupti {

// CUpti_SubscriberParams as CUPTI 13.2 lays it out (13.0's ends after
// oldSubscriberSize, at 32 bytes). Read from a caller's struct through its
// structSize, so a 13.0 client's shorter struct is never overrun.
struct SubscriberParams132 {
  size_t structSize;
  const char* subscriberName;
  char* oldSubscriberName;
  size_t oldSubscriberSize;
  uint8_t allowMultipleSubscribers;  // 1: asks for several subscribers (beta in 13.2)
  uint8_t padding[7];
};
static_assert(sizeof(SubscriberParams132) == 40, "CUpti_SubscriberParams_STRUCT_SIZE of CUPTI 13.2");
static_assert(offsetof(SubscriberParams132, allowMultipleSubscribers) == 32, "CUPTI 13.2 layout");

// CUpti_ActivityAttribute values CUPTI 13.2 added (13.0's enum ends at
// CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS = 10).
constexpr int kAttrMultipleSubscriberState = 12;  // CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE, read-only
constexpr int kAttrKernelLatencyTimestamps = 15;  // CUPTI_ACTIVITY_ATTR_ENABLE_KERNEL_LATENCY_TIMESTAMPS
constexpr int kAttrThreadIdType = 21;             // CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE
constexpr int kAttrTimestampCallback = 22;        // CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK

}  // namespace simcupti
