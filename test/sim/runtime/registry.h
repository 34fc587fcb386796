// What nvcc-generated host code registers with the runtime: fat binaries
// and, per kernel, host stub -> device (mangled) name. Kernels are resolved
// lazily through the driver (cuLibraryLoadData + cuLibraryGetKernel) on
// first use, so registration never touches the driver.
#pragma once

#include "runtime_state.h"

namespace simrt {

void** RegisterFatBinary(void* fat_cubin);
void RegisterFunction(void** fat_cubin_handle, const void* host_fun, const char* device_name);
void UnregisterFatBinary(void** fat_cubin_handle);

// __cudaRegisterVar: a host shadow variable -> its device variable.
void RegisterVariable(void** fat_cubin_handle, const void* host_var, const char* device_name, size_t size);
// The device storage of a registered variable (loading its library first):
// cudaErrorInvalidSymbol when `symbol` is no registered variable or its
// image does not hold it. Needs Ready().
cudaError_t ResolveSymbol(const void* symbol, CUdeviceptr* address, size_t* bytes);

// Registered device name of a host stub, or nullptr.
const char* RegisteredName(const void* host_fun);
// Device name of a kernel handle this runtime handed out, or nullptr.
const char* KernelName(CUkernel kernel);
// The driver kernel for a host stub: cudaErrorInvalidDeviceFunction when the
// stub was never registered. Needs Ready().
cudaError_t ResolveKernel(const void* host_fun, CUkernel* kernel);

}  // namespace simrt
