// Runtime: cudaGetDriverEntryPoint[ByVersion], how frameworks reach driver
// functions the runtime does not wrap. Forwards to the driver's
// cuGetProcAddress with the runtime's version (or the caller's).
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;

namespace {

cudaError_t EntryPoint(const char* symbol, void** funcPtr, unsigned int cuda_version, unsigned long long flags,
                       cudaDriverEntryPointQueryResult* driverStatus) {
  if (!symbol || !funcPtr) return cudaErrorInvalidValue;
  // cudaEnable* flags and cudaDriverEntryPoint* results share the driver's values.
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  *funcPtr = nullptr;
  Driver().cuGetProcAddress(symbol, funcPtr, static_cast<int>(cuda_version), flags, &status);
  if (driverStatus) *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
  return cudaSuccess;  // not found: success with a null pointer, as documented
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                                       cudaDriverEntryPointQueryResult* driverStatus) {
  cudaGetDriverEntryPoint_v11030_params params{symbol, funcPtr, flags, driverStatus};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDriverEntryPoint_v11030), "cudaGetDriverEntryPoint", &params,
                          [&] { return EntryPoint(symbol, funcPtr, CUDART_VERSION, flags, driverStatus); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                                                unsigned int cudaVersion, unsigned long long flags,
                                                                cudaDriverEntryPointQueryResult* driverStatus) {
  cudaGetDriverEntryPointByVersion_v12050_params params{symbol, funcPtr, cudaVersion, flags, driverStatus};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaGetDriverEntryPointByVersion_v12050), "cudaGetDriverEntryPointByVersion",
                          &params, [&] { return EntryPoint(symbol, funcPtr, cudaVersion, flags, driverStatus); });
}
