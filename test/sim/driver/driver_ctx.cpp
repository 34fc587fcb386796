// Driver: contexts a program creates (cuCtxCreate) and the per-thread
// current-context stack. A created context shares its device's streams and
// timeline; work launched while a created context is current carries that
// context's id, as CUPTI's records do. CUPTI sees CONTEXT_CREATED and
// CONTEXT_DESTROY_STARTING through the resource hook.
#define __CUDA_API_VERSION_INTERNAL 1
#include <mutex>
#include <set>
#include <vector>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"

namespace sim {
namespace {

struct Contexts {
  std::mutex mutex;  // leaf lock
  std::set<CUctx_st*> created;
  uint32_t next_uid = 1000;  // primary contexts count from 1
};
Contexts& State() {
  static Contexts* contexts = new Contexts();
  return *contexts;
}

// Contexts pushed below the current one on this thread (the current one is
// Device::ThreadContext(); nullptr means device 0's primary).
thread_local std::vector<CUctx_st*> t_stack;

bool IsCreated(CUctx_st* context) {
  std::lock_guard<std::mutex> lock(State().mutex);
  return State().created.count(context) != 0;
}

bool IsPrimary(CUcontext context) { return Device::PrimaryOwner(context) != nullptr; }

}  // namespace

CUresult SetCurrent(CUcontext context) {
  // NULL: the sim has no "no context" state; device 0's primary again.
  if (context == nullptr || IsPrimary(context)) {
    Device::SetThreadContext(context);
    return CUDA_SUCCESS;
  }
  if (!IsCreated(context)) return CUDA_ERROR_INVALID_CONTEXT;
  Device::SetThreadContext(context);
  return CUDA_SUCCESS;
}

}  // namespace sim

using sim::Device;
using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                                          CUdevice dev) {
  cuCtxCreate_v4_params params{pctx, ctxCreateParams, flags, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxCreate_v4), "cuCtxCreate_v4", &params, [&]() -> CUresult {
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    Device* device = Device::At(dev);
    if (!device) return CUDA_ERROR_INVALID_DEVICE;
    if (ctxCreateParams && (ctxCreateParams->execAffinityParams || ctxCreateParams->cigParams)) {
      return CUDA_ERROR_NOT_SUPPORTED;  // affinity and CIG need hardware the sim does not model
    }
    device->RetainPrimaryContext();  // the device is initialised once
    auto* context = new CUctx_st{0, dev};
    {
      std::lock_guard<std::mutex> lock(sim::State().mutex);
      context->uid = sim::State().next_uid++;
      sim::State().created.insert(context);
    }
    sim::FireResourceHook(/*is_destroy=*/0, context, context->uid, static_cast<uint32_t>(dev));
    // The new context becomes current, pushed on the thread's stack.
    sim::t_stack.push_back(Device::ThreadContext());
    Device::SetThreadContext(context);
    *pctx = context;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  cuCtxDestroy_v2_params params{ctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxDestroy_v2), "cuCtxDestroy_v2", &params, [&]() -> CUresult {
    if (!sim::IsCreated(ctx)) return sim::IsPrimary(ctx) ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_VALUE;
    sim::WaitUntilNs(Device::At(ctx->device)->DeviceDoneNs());  // destroying waits for the context's work
    sim::FireResourceHook(/*is_destroy=*/1, ctx, ctx->uid, static_cast<uint32_t>(ctx->device));
    {
      std::lock_guard<std::mutex> lock(sim::State().mutex);
      sim::State().created.erase(ctx);
    }
    if (Device::ThreadContext() == ctx) {
      CUctx_st* below = sim::t_stack.empty() ? nullptr : sim::t_stack.back();
      if (!sim::t_stack.empty()) sim::t_stack.pop_back();
      Device::SetThreadContext(below);
    }
    // Kept allocated: records still being delivered may name it.
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  cuCtxPushCurrent_v2_params params{ctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxPushCurrent_v2), "cuCtxPushCurrent_v2", &params, [&]() -> CUresult {
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    const bool created = sim::IsCreated(ctx);
    if (!created && !sim::IsPrimary(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    sim::t_stack.push_back(Device::ThreadContext());
    Device::SetThreadContext(ctx);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  cuCtxPopCurrent_v2_params params{pctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxPopCurrent_v2), "cuCtxPopCurrent_v2", &params, [&]() -> CUresult {
    if (sim::t_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx) *pctx = Device::CurrentContext();
    Device::SetThreadContext(sim::t_stack.back());
    sim::t_stack.pop_back();
    return CUDA_SUCCESS;
  });
}
