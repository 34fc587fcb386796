// Driver: context-wide settings that change no device timeline: the profiler
// switch (cuProfilerStart/Stop), resource limits, context flags, and peer
// access between devices (every pair of distinct devices can, as over NVLink).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cudaProfiler.h>

#include <atomic>
#include <mutex>

#include "device.h"
#include "driver_call.h"

namespace sim {
namespace {

// cuCtxGetLimit's defaults on an H100 (CUDA 13), per limit.
struct Limits {
  std::mutex mutex;
  size_t value[CU_LIMIT_MAX] = {};
  Limits() {
    value[CU_LIMIT_STACK_SIZE] = 1024;
    value[CU_LIMIT_PRINTF_FIFO_SIZE] = 1048576;
    value[CU_LIMIT_MALLOC_HEAP_SIZE] = 8388608;
    value[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    value[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    value[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32;
    value[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
  }
};
Limits& TheLimits() {
  static Limits* limits = new Limits();
  return *limits;
}

bool KnownLimit(CUlimit limit) {
  return limit == CU_LIMIT_STACK_SIZE || limit == CU_LIMIT_PRINTF_FIFO_SIZE || limit == CU_LIMIT_MALLOC_HEAP_SIZE ||
         limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH || limit == CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT ||
         limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY || limit == CU_LIMIT_PERSISTING_L2_CACHE_SIZE;
}

// Primary context flags (scheduling policy, map host, lmem resize), per
// device. Settable before and after the context is active in CUDA >= 11.
std::atomic<unsigned> g_primary_flags[kMaxDevices] = {};
constexpr unsigned kCtxFlagsMask = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                                   CU_CTX_SYNC_MEMOPS;

}  // namespace

unsigned PrimaryContextFlags() { return g_primary_flags[Device::Get().ordinal()].load(); }

}  // namespace sim

using sim::InitializedDriverCall;

// No activity: CUDA forwards the switch to an attached profiler (CUPTI sees
// the API callbacks). Nested calls are allowed and harmless.
SIM_DRIVER_EXPORT CUresult cuProfilerStart(void) {
  return InitializedDriverCall(SIM_DRIVER_CBID(cuProfilerStart), "cuProfilerStart", nullptr, [&]() -> CUresult {
    return sim::Device::CurrentContext() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  });
}

SIM_DRIVER_EXPORT CUresult cuProfilerStop(void) {
  return InitializedDriverCall(SIM_DRIVER_CBID(cuProfilerStop), "cuProfilerStop", nullptr, [&]() -> CUresult {
    return sim::Device::CurrentContext() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  cuCtxSetLimit_params params{limit, value};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxSetLimit), "cuCtxSetLimit", &params, [&]() -> CUresult {
    if (!sim::KnownLimit(limit)) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value != 0 && value != 32 && value != 64 && value != 128) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    sim::Limits& limits = sim::TheLimits();
    std::lock_guard<std::mutex> lock(limits.mutex);
    limits.value[limit] = value;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  cuCtxGetLimit_params params{pvalue, limit};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxGetLimit), "cuCtxGetLimit", &params, [&]() -> CUresult {
    if (!pvalue) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::KnownLimit(limit)) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    sim::Limits& limits = sim::TheLimits();
    std::lock_guard<std::mutex> lock(limits.mutex);
    *pvalue = limits.value[limit];
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  cuDevicePrimaryCtxSetFlags_v2_params params{dev, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDevicePrimaryCtxSetFlags_v2), "cuDevicePrimaryCtxSetFlags_v2",
                               &params, [&]() -> CUresult {
                                 if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
                                 if (flags & ~sim::kCtxFlagsMask) return CUDA_ERROR_INVALID_VALUE;
                                 // At most one scheduling policy.
                                 const unsigned sched = flags & CU_CTX_SCHED_MASK;
                                 if (sched != 0 && sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
                                     sched != CU_CTX_SCHED_BLOCKING_SYNC) {
                                   return CUDA_ERROR_INVALID_VALUE;
                                 }
                                 sim::g_primary_flags[dev].store(flags);
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  cuDevicePrimaryCtxGetState_params params{dev, flags, active};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDevicePrimaryCtxGetState), "cuDevicePrimaryCtxGetState", &params,
                               [&]() -> CUresult {
                                 if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
                                 sim::Device* device = sim::Device::At(dev);
                                 if (!device) return CUDA_ERROR_INVALID_DEVICE;
                                 *flags = sim::g_primary_flags[dev].load();
                                 *active = device->PrimaryActive() ? 1 : 0;
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  cuCtxGetFlags_params params{flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxGetFlags), "cuCtxGetFlags", &params, [&]() -> CUresult {
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    CUcontext current = sim::Device::CurrentContext();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    // Host memory can always be mapped on a unified-addressing device.
    *flags = sim::g_primary_flags[current->device].load() | CU_CTX_MAP_HOST;
    return CUDA_SUCCESS;
  });
}

// Every pair of distinct devices can access each other (an NVLink-connected
// board); a device is not its own peer (cuDeviceCanAccessPeer answers 0 for
// dev == peerDev). Access is enabled from the current context's device to
// the peer context's device: CUDA_ERROR_INVALID_DEVICE when they are the
// same device, ..._PEER_ACCESS_ALREADY_ENABLED the second time,
// ..._PEER_ACCESS_NOT_ENABLED when disabling what was never enabled.
SIM_DRIVER_EXPORT CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  cuDeviceCanAccessPeer_params params{canAccessPeer, dev, peerDev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceCanAccessPeer), "cuDeviceCanAccessPeer", &params,
                               [&]() -> CUresult {
                                 if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
                                 if (!sim::Device::At(dev) || !sim::Device::At(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
                                 *canAccessPeer = dev != peerDev ? 1 : 0;
                                 return CUDA_SUCCESS;
                               });
}

namespace {
// The devices of the current context and of `peer` (a live context), or an error.
CUresult PeerPair(CUcontext peer, sim::Device** from, sim::Device** to) {
  if (!peer) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext current = sim::Device::CurrentContext();
  if (!current) return CUDA_ERROR_INVALID_CONTEXT;
  sim::Device* peer_device = sim::Device::At(peer->device);
  sim::Device* owner = sim::Device::PrimaryOwner(peer);
  if (!peer_device || (owner && !owner->PrimaryActive())) return CUDA_ERROR_INVALID_CONTEXT;
  *from = sim::Device::At(current->device);
  *to = peer_device;
  return CUDA_SUCCESS;
}
}  // namespace

SIM_DRIVER_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  cuCtxEnablePeerAccess_params params{peerContext, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxEnablePeerAccess), "cuCtxEnablePeerAccess", &params,
                               [&]() -> CUresult {
                                 if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
                                 sim::Device *from = nullptr, *to = nullptr;
                                 if (CUresult r = PeerPair(peerContext, &from, &to); r != CUDA_SUCCESS) return r;
                                 if (from == to) return CUDA_ERROR_INVALID_DEVICE;  // not its own peer
                                 if (from->PeerAccessEnabled(to->ordinal())) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
                                 from->SetPeerAccess(to->ordinal(), true);
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  cuCtxDisablePeerAccess_params params{peerContext};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxDisablePeerAccess), "cuCtxDisablePeerAccess", &params,
                               [&]() -> CUresult {
                                 sim::Device *from = nullptr, *to = nullptr;
                                 if (CUresult r = PeerPair(peerContext, &from, &to); r != CUDA_SUCCESS) return r;
                                 if (!from->PeerAccessEnabled(to->ordinal())) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
                                 from->SetPeerAccess(to->ordinal(), false);
                                 return CUDA_SUCCESS;
                               });
}
