// The CUPTI functions libprof.so exports: the program's calls of CUPTI's
// process-wide activity API reach these first under LD_PRELOAD (PyTorch's
// libtorch_cpu.so imports each as cuptiX@libcupti.so.13 through its PLT; an
// export without a version node binds to those references, as the CUDA
// wrappers do) and are forwarded unchanged to the process's libcupti, after
// telling the collector (activity_user.h). libprof's own calls never come
// here: it calls CUPTI through the table it resolved from the library's
// handle (cupti_api.h).
//
// Built as an object library linked into libprof.so only: nothing in it is
// referenced, so a static library would leave it out.
#include <cupti.h>

#include "collectors/cupti/activity_user.h"

#define CUPTI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
namespace cupti = prof::cupti;
}  // namespace

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                                 CUpti_BuffersCallbackCompleteFunc complete) {
  return cupti::UserRegisterCallbacks(request, complete, __builtin_return_address(0));
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp) {
  return cupti::UserRegisterTimestampCallback(timestamp, __builtin_return_address(0));
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return cupti::UserEnable(kind, __builtin_return_address(0));
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  return cupti::UserDisable(kind, __builtin_return_address(0));
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value) {
  return cupti::UserSetAttribute(attr, size, value, __builtin_return_address(0));
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  return cupti::UserSetThreadIdType(type, __builtin_return_address(0));
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) { return cupti::UserFlushAll(flag); }

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiFinalize() { return cupti::UserFinalize(); }
