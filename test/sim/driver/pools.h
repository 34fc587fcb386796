// Memory pools (driver_pool.cpp): each device's default pool, pools made by
// cuMemPoolCreate, their attributes, and the bytes each holds, so
// CU_MEMPOOL_ATTR_USED_MEM_* answer what the program allocated from them.
#pragma once

#include <cuda.h>
#include <stddef.h>

namespace sim {

CUmemoryPool DefaultPool(int device);
CUmemoryPool CurrentPool(int device);  // cuDeviceSetMemPool's choice (default: the default pool)
bool IsPool(CUmemoryPool pool);
// Stream-ordered allocations charge their pool; a free of such a pointer
// (stream-ordered or not) credits it. Other pointers are ignored.
void PoolAllocated(CUmemoryPool pool, const void* ptr, size_t bytes);
void PoolReleased(const void* ptr);

}  // namespace sim
