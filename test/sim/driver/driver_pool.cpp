// Driver: memory pools (see pools.h). Stream-ordered allocations are served
// at once (no memory is cached), so reserved memory equals used memory.
#define __CUDA_API_VERSION_INTERNAL 1
#include <map>
#include <mutex>
#include <set>

#include "device.h"
#include "driver_call.h"
#include "pools.h"

namespace sim {
namespace {

// One default pool per device; cuDeviceSetMemPool picks each device's current one.
struct PoolState {
  std::mutex mutex;  // leaf lock
  CUmemPoolHandle_st default_pool[kMaxDevices];
  std::set<CUmemoryPool> pools;
  CUmemoryPool current[kMaxDevices];
  std::map<const void*, std::pair<CUmemoryPool, size_t>> owner;  // pooled allocation -> pool, bytes
  PoolState() {
    for (int d = 0; d < kMaxDevices; ++d) {
      default_pool[d].device = d;
      pools.insert(&default_pool[d]);
      current[d] = &default_pool[d];
    }
  }
  bool IsDefault(CUmemoryPool pool) const { return pool >= default_pool && pool < default_pool + kMaxDevices; }
};
PoolState& State() {
  static PoolState* state = new PoolState();  // never destroyed: usable from atexit
  return *state;
}

CUresult GetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.pools.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  auto as_int = static_cast<int*>(value);
  auto as_u64 = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *as_int = pool->reuse_follow_event_dependencies; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *as_int = pool->reuse_allow_opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *as_int = pool->reuse_allow_internal_dependencies; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *as_u64 = pool->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *as_u64 = pool->used_bytes; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *as_u64 = pool->used_high_bytes; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult SetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.pools.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  const int as_int = *static_cast<int*>(value);
  const cuuint64_t as_u64 = *static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: pool->reuse_follow_event_dependencies = as_int != 0; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: pool->reuse_allow_opportunistic = as_int != 0; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: pool->reuse_allow_internal_dependencies = as_int != 0; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->release_threshold = as_u64; break;
    // High-water marks can only be reset, to 0 (documented).
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (as_u64 != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high_bytes = pool->used_bytes;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;  // the *_CURRENT attributes are read-only
  }
  return CUDA_SUCCESS;
}

bool IsDeviceLocation(const CUmemLocation& location) {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE && Device::At(location.id) != nullptr;
}

}  // namespace

CUmemoryPool DefaultPool(int device) { return &State().default_pool[device]; }

CUmemoryPool CurrentPool(int device) {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.current[device];
}

bool IsPool(CUmemoryPool pool) {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.pools.count(pool) != 0;
}

void PoolAllocated(CUmemoryPool pool, const void* ptr, size_t bytes) {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.pools.count(pool)) return;
  s.owner[ptr] = {pool, bytes};
  pool->used_bytes += bytes;
  if (pool->used_bytes > pool->used_high_bytes) pool->used_high_bytes = pool->used_bytes;
}

void PoolReleased(const void* ptr) {
  PoolState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.owner.find(ptr);
  if (it == s.owner.end()) return;
  if (s.pools.count(it->second.first)) it->second.first->used_bytes -= it->second.second;
  s.owner.erase(it);
}

}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  cuDeviceGetDefaultMemPool_params params{pool_out, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGetDefaultMemPool), "cuDeviceGetDefaultMemPool", &params,
                               [&]() -> CUresult {
                                 if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
                                 if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
                                 *pool_out = sim::DefaultPool(dev);
                                 return CUDA_SUCCESS;
                               });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  cuDeviceGetMemPool_params params{pool, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGetMemPool), "cuDeviceGetMemPool", &params, [&]() -> CUresult {
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pool = sim::CurrentPool(dev);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  cuDeviceSetMemPool_params params{dev, pool};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceSetMemPool), "cuDeviceSetMemPool", &params, [&]() -> CUresult {
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    sim::PoolState& s = sim::State();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.pools.count(pool) || pool->device != dev) return CUDA_ERROR_INVALID_VALUE;  // a pool of that device
    s.current[dev] = pool;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  cuMemPoolCreate_params params{pool, poolProps};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolCreate), "cuMemPoolCreate", &params, [&]() -> CUresult {
    if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || !sim::IsDeviceLocation(poolProps->location)) {
      return CUDA_ERROR_INVALID_VALUE;  // device-resident pools only
    }
    if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_NOT_SUPPORTED;  // no IPC pools here
    auto* created = new CUmemPoolHandle_st();
    created->device = poolProps->location.id;
    sim::PoolState& s = sim::State();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.pools.insert(created);
    *pool = created;
    return CUDA_SUCCESS;
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  cuMemPoolDestroy_params params{pool};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolDestroy), "cuMemPoolDestroy", &params, [&]() -> CUresult {
    sim::PoolState& s = sim::State();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.IsDefault(pool) || !s.pools.erase(pool)) return CUDA_ERROR_INVALID_VALUE;
    if (s.current[pool->device] == pool) s.current[pool->device] = &s.default_pool[pool->device];
    // Outstanding allocations stay valid until freed (documented); they no longer count anywhere.
    for (auto it = s.owner.begin(); it != s.owner.end();) it = it->second.first == pool ? s.owner.erase(it) : ++it;
    delete pool;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  cuMemPoolTrimTo_params params{pool, minBytesToKeep};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolTrimTo), "cuMemPoolTrimTo", &params, [&]() -> CUresult {
    return sim::IsPool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // nothing is cached to trim
  });
}

SIM_DRIVER_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  cuMemPoolSetAttribute_params params{pool, attr, value};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolSetAttribute), "cuMemPoolSetAttribute", &params,
                               [&] { return sim::SetAttribute(pool, attr, value); });
}

SIM_DRIVER_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  cuMemPoolGetAttribute_params params{pool, attr, value};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolGetAttribute), "cuMemPoolGetAttribute", &params,
                               [&] { return sim::GetAttribute(pool, attr, value); });
}

// Access from the pool's own device is always read-write and cannot be
// revoked; another device gets read-write access or none (every pair of
// devices is peer-capable here).
SIM_DRIVER_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  cuMemPoolSetAccess_params params{pool, map, count};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolSetAccess), "cuMemPoolSetAccess", &params, [&]() -> CUresult {
    if (!sim::IsPool(pool) || (count && !map)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      if (!sim::Device::At(map[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
      const bool own = map[i].location.id == pool->device;
      if (own && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_DEVICE;
      if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) {
        return CUDA_ERROR_INVALID_VALUE;  // read-only peer access is not a device-pool option
      }
    }
    sim::PoolState& s = sim::State();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (size_t i = 0; i < count; ++i) {
      const uint32_t bit = 1u << map[i].location.id;
      if (map[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        pool->peer_access |= bit;
      } else {
        pool->peer_access &= ~bit;
      }
    }
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                                              CUmemLocation* location) {
  cuMemPoolGetAccess_params params{flags, memPool, location};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuMemPoolGetAccess), "cuMemPoolGetAccess", &params, [&]() -> CUresult {
    if (!flags || !location || !sim::IsPool(memPool)) return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(location->id)) return CUDA_ERROR_INVALID_DEVICE;
    sim::PoolState& s = sim::State();
    std::lock_guard<std::mutex> lock(s.mutex);
    const bool granted = location->id == memPool->device || ((memPool->peer_access >> location->id) & 1u);
    *flags = granted ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
  });
}
