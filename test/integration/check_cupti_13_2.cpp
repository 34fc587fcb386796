// Compiled (never run) by test_cupti_13_2_declarations.py against CUPTI
// 13.2's own headers (the venv's nvidia-cuda-cupti, found first on the
// include path): every fact collectors/cupti/cupti_13_2.h declares under
// libprof's names must be NVIDIA's, or this does not compile.
#include <cupti.h>

#include <cstddef>
#include <type_traits>

#include "collectors/cupti/cupti_13_2.h"

static_assert(CUPTI_API_VERSION >= 130200, "compile against CUPTI 13.2's headers");

namespace v = prof::cupti::v13_2;

// The kernel record: size, priority's offset, and every field libprof reads
// from it at Kernel10's offsets.
static_assert(sizeof(v::ActivityKernel11) == sizeof(CUpti_ActivityKernel11));
static_assert(offsetof(v::ActivityKernel11, priority) == offsetof(CUpti_ActivityKernel11, priority));
#define SAME_OFFSET(field) \
  static_assert(offsetof(CUpti_ActivityKernel10, field) == offsetof(CUpti_ActivityKernel11, field), #field)
SAME_OFFSET(kind);
SAME_OFFSET(registersPerThread);
SAME_OFFSET(start);
SAME_OFFSET(end);
SAME_OFFSET(deviceId);
SAME_OFFSET(contextId);
SAME_OFFSET(streamId);
SAME_OFFSET(gridX);
SAME_OFFSET(gridY);
SAME_OFFSET(gridZ);
SAME_OFFSET(blockX);
SAME_OFFSET(blockY);
SAME_OFFSET(blockZ);
SAME_OFFSET(staticSharedMemory);
SAME_OFFSET(dynamicSharedMemory);
SAME_OFFSET(correlationId);
SAME_OFFSET(name);
SAME_OFFSET(graphId);
SAME_OFFSET(isDeviceLaunched);
#undef SAME_OFFSET
static_assert(offsetof(CUpti_ActivityKernel11, priority) == sizeof(CUpti_ActivityKernel10));

// The subscriber parameters.
static_assert(sizeof(v::SubscriberParams) == sizeof(CUpti_SubscriberParams));
static_assert(sizeof(v::SubscriberParams) == CUpti_SubscriberParams_STRUCT_SIZE);
static_assert(offsetof(v::SubscriberParams, allowMultipleSubscribers) ==
              offsetof(CUpti_SubscriberParams, allowMultipleSubscribers));
static_assert(offsetof(v::SubscriberParams, oldSubscriberSize) == offsetof(CUpti_SubscriberParams, oldSubscriberSize));

// The attributes.
static_assert(v::kAttrMultipleSubscriberState == CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE);
static_assert(v::kAttrThreadIdType == CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE);
static_assert(v::kAttrTimestampCallback == CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK);

// The functions: libprof's types with its opaque stand-ins replaced by
// NVIDIA's types are exactly the declared functions' types.
template <typename T>
struct Nvidia {
  using type = T;
};
template <typename R, typename... A>
struct Nvidia<R(CUPTIAPI*)(A...)> {
  using type = typename Nvidia<R>::type(CUPTIAPI*)(typename Nvidia<A>::type...);
};
template <>
struct Nvidia<v::ActivityConfig*> {
  using type = CUpti_ActivityConfig*;
};
template <>
struct Nvidia<v::BufferRequestInfo*> {
  using type = CUpti_BufferCallbackRequestInfo*;
};
template <>
struct Nvidia<v::BufferCompleteInfo*> {
  using type = CUpti_BufferCallbackCompleteInfo*;
};
template <typename Ours, typename Theirs>
constexpr bool kSame = std::is_same_v<typename Nvidia<Ours>::type, Theirs>;

static_assert(kSame<v::BufferRequestedV2, CUpti_BuffersCallbackRequestFunc_v2>);
static_assert(kSame<v::BufferCompletedV2, CUpti_BuffersCallbackCompleteFunc_v2>);
static_assert(kSame<v::ActivityEnableV2, decltype(&cuptiActivityEnable_v2)>);
static_assert(kSame<v::ActivityDisableV2, decltype(&cuptiActivityDisable_v2)>);
static_assert(kSame<v::ActivityRegisterCallbacksV2, decltype(&cuptiActivityRegisterCallbacks_v2)>);
static_assert(kSame<v::ActivityAttributeV2, decltype(&cuptiActivitySetAttribute_v2)>);
static_assert(kSame<v::ActivityAttributeV2, decltype(&cuptiActivityGetAttribute_v2)>);
static_assert(kSame<v::ActivityGetEnabledKinds, decltype(&cuptiActivityGetEnabledKinds)>);
