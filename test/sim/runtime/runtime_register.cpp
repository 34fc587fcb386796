// Runtime: the registration entry points nvcc-generated host code calls
// from static constructors (fat binaries, kernels, variables). They never
// need the driver, and are bracketed like every runtime call.
#include "registry.h"

using simrt::RuntimeCall;

SIM_RUNTIME_EXPORT void** __cudaRegisterFatBinary(void* fatCubin) {
  void** handle = nullptr;
  RuntimeCall(SIM_RUNTIME_CBID(__cudaRegisterFatBinary_v13000), "__cudaRegisterFatBinary", nullptr, [&] {
    handle = simrt::RegisterFatBinary(fatCubin);
    return cudaSuccess;
  });
  return handle;
}

SIM_RUNTIME_EXPORT void __cudaRegisterFatBinaryEnd(void** fatCubinHandle) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaRegisterFatBinaryEnd_v13000), "__cudaRegisterFatBinaryEnd", nullptr,
              [&] { return fatCubinHandle ? cudaSuccess : cudaErrorInvalidValue; });
}

SIM_RUNTIME_EXPORT void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaUnregisterFatBinary_v13000), "__cudaUnregisterFatBinary", nullptr, [&] {
    simrt::UnregisterFatBinary(fatCubinHandle);
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                               const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                                               dim3* bDim, dim3* gDim, int* wSize) {
  RuntimeCall(
      SIM_RUNTIME_CBID(__cudaRegisterFunction_v13000), "__cudaRegisterFunction", nullptr,
      [&] {
        simrt::RegisterFunction(fatCubinHandle, hostFun, deviceName ? deviceName : deviceFun);
        return cudaSuccess;
      },
      deviceName);
}

SIM_RUNTIME_EXPORT void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                                          const char* deviceName, int ext, size_t size, int constant, int global) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaRegisterVar_v13000), "__cudaRegisterVar", nullptr, [&] {
    simrt::RegisterVariable(fatCubinHandle, hostVar, deviceName ? deviceName : deviceAddress, size);
    return cudaSuccess;
  });
}

SIM_RUNTIME_EXPORT void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char* deviceAddress,
                                                 const char* deviceName, int ext, size_t size, int constant,
                                                 int global) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaRegisterManagedVar_v13000), "__cudaRegisterManagedVar", nullptr,
              [&] { return cudaSuccess; });
}

SIM_RUNTIME_EXPORT void __cudaRegisterHostVar(void** fatCubinHandle, const char* deviceName, char* hostVar,
                                              size_t size) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaRegisterHostVar_v13000), "__cudaRegisterHostVar", nullptr,
              [&] { return cudaSuccess; });
}

SIM_RUNTIME_EXPORT char __cudaInitModule(void** fatCubinHandle) {
  RuntimeCall(SIM_RUNTIME_CBID(__cudaInitModule_v13000), "__cudaInitModule", nullptr, [&] { return cudaSuccess; });
  return 1;
}
