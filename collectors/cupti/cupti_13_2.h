// What libprof uses of CUPTI 13.1 and 13.2 that the CUDA 13.0 headers it is
// built with do not declare: the kernel record of 13.1/13.2, the
// allowMultipleSubscribers field of cuptiSubscribe_v2's parameters, the
// per-subscriber activity functions and the activity attributes that go
// with them. Facts, declared under libprof's own names (so they never clash
// with a toolkit that has them): every size, offset, value and parameter
// list below is that of cupti_activity.h / cupti_callbacks.h of CUPTI 13.2
// (CUPTI_API_VERSION 130202, PyPI nvidia-cuda-cupti 13.2, the CUPTI of
// PyTorch's cu13 wheels). test/integration/test_cupti_13_2_declarations.py
// compiles check_cupti_13_2.cpp against those headers and asserts each one.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace prof::cupti::v13_2 {

// CUpti_ActivityKernel11 (CUDA 13.1's "Updates": "Added a new parameter
// priority in the kernel record to provide the launch priority of the
// kernel. The CUpti_ActivityKernel10 activity record is deprecated and
// replaced by the new CUpti_ActivityKernel11"): Kernel10's fields at the
// same offsets, then int32_t priority and uint32_t padding4.
struct ActivityKernel11 {
  CUpti_ActivityKernel10 kernel10;
  int32_t priority;
  uint32_t padding4;
};
static_assert(sizeof(CUpti_ActivityKernel10) == 216, "CUDA 13.0's Kernel10");
static_assert(sizeof(ActivityKernel11) == 224, "CUpti_ActivityKernel11 of CUPTI 13.2");
static_assert(offsetof(ActivityKernel11, priority) == 216, "CUpti_ActivityKernel11::priority");

// CUpti_SubscriberParams as 13.2 lays it out: 13.0's 32 bytes, then
// allowMultipleSubscribers ("1, requesting to allow multiple subscribers";
// beta in 13.2) and padding. CUpti_SubscriberParams_STRUCT_SIZE is 40.
struct SubscriberParams {
  size_t structSize;
  const char* subscriberName;
  char* oldSubscriberName;
  size_t oldSubscriberSize;
  uint8_t allowMultipleSubscribers;
  uint8_t padding[7];
};
static_assert(sizeof(SubscriberParams) == 40 && offsetof(SubscriberParams, allowMultipleSubscribers) == 32,
              "CUpti_SubscriberParams of CUPTI 13.2");
#if CUPTI_API_VERSION < 130200
static_assert(sizeof(CUpti_SubscriberParams) == 32, "13.0's CUpti_SubscriberParams is 13.2's first 32 bytes");
#endif

// CUpti_ActivityAttribute values 13.2 added after 13.0's last (10).
constexpr int kAttrMultipleSubscriberState = 12;  // CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE: uint8_t, 0/1/2
constexpr int kAttrThreadIdType = 21;             // CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE: CUpti_ActivityThreadIdType
constexpr int kAttrTimestampCallback = 22;        // CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK: CUpti_TimestampCallbackFunc
// CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER (5) is 13.0's, per subscriber through the _v2 setter.

// The buffer callbacks of cuptiActivityRegisterCallbacks_v2. Their info
// structs (CUpti_BufferCallbackRequestInfo, CUpti_BufferCallbackCompleteInfo)
// are only passed through: libprof reads no field of them.
struct BufferRequestInfo;
struct BufferCompleteInfo;
using BufferRequestedV2 = void(CUPTIAPI*)(uint8_t** buffer, size_t* size, size_t* maxNumRecords,
                                         BufferRequestInfo* info);
using BufferCompletedV2 = void(CUPTIAPI*)(uint8_t* buffer, size_t size, size_t validSize, BufferCompleteInfo* info);
// CUpti_ActivityConfig*: libprof always passes NULL ("It can be NULL").
struct ActivityConfig;

// The per-subscriber functions (cupti_activity.h of 13.2).
using ActivityEnableV2 = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                                ActivityConfig* config);
using ActivityDisableV2 = ActivityEnableV2;
using ActivityRegisterCallbacksV2 = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle subscriber,
                                                           BufferRequestedV2 requested, BufferCompletedV2 completed);
using ActivityAttributeV2 = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle subscriber, CUpti_ActivityAttribute attr,
                                                   size_t* valueSize, void* value);
// subscriber NULL: "the union of activity kinds enabled across all subscribers".
using ActivityGetEnabledKinds = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind* buffer,
                                                       uint32_t* bufferSize, uint32_t* enabledKindsCount);

// The first CUPTI API version whose headers declare all of the above.
constexpr uint32_t kFirstVersion = 130200;

}  // namespace prof::cupti::v13_2
