// Runtime: the library API (cudaLibrary*, CUDA 12.6), on the driver's
// cuLibrary* as NVIDIA's runtime builds it. Libraries hold kernels and
// globals; managed variables and unified functions are not modelled.
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::RuntimeCall;

namespace {
CUlibrary L(cudaLibrary_t library) { return reinterpret_cast<CUlibrary>(library); }
}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code,
                                                   enum cudaJitOption* jitOptions, void** jitOptionsValues,
                                                   unsigned int numJitOptions,
                                                   enum cudaLibraryOption* libraryOptions,
                                                   void** libraryOptionValues, unsigned int numLibraryOptions) {
  cudaLibraryLoadData_v12060_params params{library, code, jitOptions, jitOptionsValues, numJitOptions,
                                           libraryOptions, libraryOptionValues, numLibraryOptions};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaLibraryLoadData_v12060), "cudaLibraryLoadData", &params, [&] {
    // The option enums are the driver's values under the runtime's names.
    return FromDriver(Driver().cuLibraryLoadData(
        reinterpret_cast<CUlibrary*>(library), code, reinterpret_cast<CUjit_option*>(jitOptions), jitOptionsValues,
        numJitOptions, reinterpret_cast<CUlibraryOption*>(libraryOptions), libraryOptionValues, numLibraryOptions));
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* fileName,
                                                       enum cudaJitOption* jitOptions, void** jitOptionsValues,
                                                       unsigned int numJitOptions,
                                                       enum cudaLibraryOption* libraryOptions,
                                                       void** libraryOptionValues, unsigned int numLibraryOptions) {
  cudaLibraryLoadFromFile_v12060_params params{library, fileName, jitOptions, jitOptionsValues, numJitOptions,
                                               libraryOptions, libraryOptionValues, numLibraryOptions};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaLibraryLoadFromFile_v12060), "cudaLibraryLoadFromFile", &params,
                     [&] { return cudaErrorNotSupported; });  // no file images in the sim (test/sim/README.md)
}

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  cudaLibraryUnload_v12060_params params{library};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaLibraryUnload_v12060), "cudaLibraryUnload", &params,
                          [&] { return FromDriver(Driver().cuLibraryUnload(L(library))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library, const char* name) {
  cudaLibraryGetKernel_v12060_params params{pKernel, library, name};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaLibraryGetKernel_v12060), "cudaLibraryGetKernel", &params, [&] {
    return FromDriver(Driver().cuLibraryGetKernel(reinterpret_cast<CUkernel*>(pKernel), L(library), name));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                                    const char* name) {
  cudaLibraryGetGlobal_v12060_params params{dptr, bytes, library, name};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaLibraryGetGlobal_v12060), "cudaLibraryGetGlobal", &params, [&] {
    return FromDriver(Driver().cuLibraryGetGlobal(reinterpret_cast<CUdeviceptr*>(dptr), bytes, L(library), name));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryGetManaged(void** dptr, size_t* bytes, cudaLibrary_t library,
                                                     const char* name) {
  cudaLibraryGetManaged_v12060_params params{dptr, bytes, library, name};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaLibraryGetManaged_v12060), "cudaLibraryGetManaged", &params,
                     [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryGetUnifiedFunction(void** fptr, cudaLibrary_t library, const char* symbol) {
  cudaLibraryGetUnifiedFunction_v12060_params params{fptr, library, symbol};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaLibraryGetUnifiedFunction_v12060), "cudaLibraryGetUnifiedFunction",
                     &params, [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t lib) {
  cudaLibraryGetKernelCount_v12060_params params{count, lib};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaLibraryGetKernelCount_v12060), "cudaLibraryGetKernelCount", &params,
                     [&] { return cudaErrorNotSupported; });  // the sim does not list an image's kernels
}

// Not modelled: kernel attributes per device, a graph's DOT dump,
// user objects and graph memory, capture into an existing graph. Each exists
// so that programs bound to them load, and answers cudaErrorNotSupported.
SIM_RUNTIME_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr,
                                                               int value, int device) {
  cudaKernelSetAttributeForDevice_v12060_params params{kernel, attr, value, device};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaKernelSetAttributeForDevice_v12060), "cudaKernelSetAttributeForDevice",
                     &params, [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int flags) {
  cudaGraphDebugDotPrint_v11030_params params{graph, path, flags};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaGraphDebugDotPrint_v11030), "cudaGraphDebugDotPrint", &params,
                     [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr, cudaHostFn_t destroy,
                                                    unsigned int initialRefcount, unsigned int flags) {
  cudaUserObjectCreate_v11030_params params{object_out, ptr, destroy, initialRefcount, flags};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaUserObjectCreate_v11030), "cudaUserObjectCreate", &params,
                     [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  cudaUserObjectRelease_v11030_params params{object, count};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaUserObjectRelease_v11030), "cudaUserObjectRelease", &params,
                     [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                         unsigned int count, unsigned int flags) {
  cudaGraphRetainUserObject_v11030_params params{graph, object, count, flags};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaGraphRetainUserObject_v11030), "cudaGraphRetainUserObject", &params,
                     [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                              void* value) {
  cudaDeviceGetGraphMemAttribute_v11040_params params{device, attr, value};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaDeviceGetGraphMemAttribute_v11040), "cudaDeviceGetGraphMemAttribute",
                     &params, [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                              void* value) {
  cudaDeviceSetGraphMemAttribute_v11040_params params{device, attr, value};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaDeviceSetGraphMemAttribute_v11040), "cudaDeviceSetGraphMemAttribute",
                     &params, [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                             const cudaGraphNode_t* dependencies,
                                                             const cudaGraphEdgeData* dependencyData,
                                                             size_t numDependencies, enum cudaStreamCaptureMode mode) {
  cudaStreamBeginCaptureToGraph_v12030_params params{stream, graph, dependencies, dependencyData, numDependencies,
                                                     mode};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaStreamBeginCaptureToGraph_v12030), "cudaStreamBeginCaptureToGraph",
                     &params, [&] { return cudaErrorNotSupported; });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                                   const cudaGraphEdgeData* dependencyData,
                                                                   size_t numDependencies, unsigned int flags) {
  cudaStreamUpdateCaptureDependencies_v12030_params params{stream, dependencies, dependencyData, numDependencies,
                                                           flags};
  return RuntimeCall(SIM_RUNTIME_CBID(cudaStreamUpdateCaptureDependencies_v12030),
                     "cudaStreamUpdateCaptureDependencies", &params, [&] { return cudaErrorNotSupported; });
}
