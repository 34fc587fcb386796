// Runtime: memory pools, on the driver's (../driver/pools.h). cudaMemPool_t
// is a CUmemoryPool; attribute, access and location types share the
// driver's values.
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;

namespace {

CUmemoryPool P(cudaMemPool_t pool) { return reinterpret_cast<CUmemoryPool>(pool); }

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const struct cudaMemPoolProps* poolProps) {
  cudaMemPoolCreate_v11020_params params{memPool, poolProps};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolCreate_v11020), "cudaMemPoolCreate", &params,
                          [&]() -> cudaError_t {
    if (!memPool || !poolProps) return cudaErrorInvalidValue;
    CUmemPoolProps props{};
    props.allocType = static_cast<CUmemAllocationType>(poolProps->allocType);
    props.handleTypes = static_cast<CUmemAllocationHandleType>(poolProps->handleTypes);
    props.location.type = static_cast<CUmemLocationType>(poolProps->location.type);
    props.location.id = poolProps->location.id;
    return FromDriver(Driver().cuMemPoolCreate(reinterpret_cast<CUmemoryPool*>(memPool), &props));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  cudaMemPoolDestroy_v11020_params params{memPool};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolDestroy_v11020), "cudaMemPoolDestroy", &params,
                          [&] { return FromDriver(Driver().cuMemPoolDestroy(P(memPool))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  cudaMemPoolTrimTo_v11020_params params{memPool, minBytesToKeep};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolTrimTo_v11020), "cudaMemPoolTrimTo", &params,
                          [&] { return FromDriver(Driver().cuMemPoolTrimTo(P(memPool), minBytesToKeep)); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void* value) {
  cudaMemPoolSetAttribute_v11020_params params{memPool, attr, value};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolSetAttribute_v11020), "cudaMemPoolSetAttribute", &params, [&] {
    return FromDriver(Driver().cuMemPoolSetAttribute(P(memPool), static_cast<CUmemPool_attribute>(attr), value));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void* value) {
  cudaMemPoolGetAttribute_v11020_params params{memPool, attr, value};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolGetAttribute_v11020), "cudaMemPoolGetAttribute", &params, [&] {
    return FromDriver(Driver().cuMemPoolGetAttribute(P(memPool), static_cast<CUmemPool_attribute>(attr), value));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc* descList,
                                                    size_t count) {
  cudaMemPoolSetAccess_v11020_params params{memPool, descList, count};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolSetAccess_v11020), "cudaMemPoolSetAccess", &params, [&] {
    return FromDriver(Driver().cuMemPoolSetAccess(P(memPool), reinterpret_cast<const CUmemAccessDesc*>(descList), count));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags* flags, cudaMemPool_t memPool,
                                                    struct cudaMemLocation* location) {
  cudaMemPoolGetAccess_v11020_params params{flags, memPool, location};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaMemPoolGetAccess_v11020), "cudaMemPoolGetAccess", &params, [&] {
    return FromDriver(Driver().cuMemPoolGetAccess(reinterpret_cast<CUmemAccess_flags*>(flags), P(memPool),
                                                  reinterpret_cast<CUmemLocation*>(location)));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  cudaDeviceGetMemPool_v11020_params params{memPool, device};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceGetMemPool_v11020), "cudaDeviceGetMemPool", &params, [&] {
    return FromDriver(Driver().cuDeviceGetMemPool(reinterpret_cast<CUmemoryPool*>(memPool), device));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  cudaDeviceSetMemPool_v11020_params params{device, memPool};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceSetMemPool_v11020), "cudaDeviceSetMemPool", &params,
                          [&] { return FromDriver(Driver().cuDeviceSetMemPool(device, P(memPool))); });
}
