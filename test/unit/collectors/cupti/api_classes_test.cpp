// Callback ids -> names and classes, from the toolkit's cbid headers.
#include "model/api_ids.h"
#include "collectors/cupti/api_classes.h"

#include <cupti.h>

#include <catch2/catch.hpp>
#include <string>

namespace prof::cupti {
namespace {

TEST_CASE("runtime and driver callback ids are named without version suffixes", "[classes]") {
  CHECK(std::string(CallbackName(ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)) == "cudaMalloc");
  CHECK(std::string(CallbackName(ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000)) ==
        "cudaLaunchKernel_ptsz");
  CHECK(std::string(CallbackName(ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000)) ==
        "__cudaLaunchKernel");
  CHECK(std::string(CallbackName(ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)) == "cuLaunchKernel");
  CHECK(CallbackName(ApiDomain::kRuntime, 999999) == nullptr);
}

TEST_CASE("calls are classed by the device work they enqueue", "[classes]") {
  auto rt = [](uint32_t cbid) { return ClassifyCallback(ApiDomain::kRuntime, cbid); };
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == ApiClass::kLaunch);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000) == ApiClass::kLaunch);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) == ApiClass::kLaunch);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000) == ApiClass::kOther);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020) == ApiClass::kMemcpy);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020) == ApiClass::kMemset);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) == ApiClass::kSync);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) == ApiClass::kMemory);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) == ApiClass::kOther);
  CHECK(ClassifyCallback(ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2) == ApiClass::kMemcpy);
}

bool Contains(const uint32_t* ids, uint32_t wanted) {
  for (; *ids != 0; ++ids) {
    if (*ids == wanted) return true;
  }
  return false;
}

TEST_CASE("the driver callbacks enabled are calls that do work or allocate, and the profiler switch", "[classes]") {
  int count = 0;
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id, ++count) {
    std::string name = CallbackName(ApiDomain::kDriver, *id);
    CHECK((ClassifyCallback(ApiDomain::kDriver, *id) != ApiClass::kOther || name == "cuMemMap" ||
           name == "cuMemUnmap" || name == "cuProfilerStart" || name == "cuProfilerStop"));
  }
  CHECK(count > 10);
  CHECK(Contains(DriverWorkCallbackIds(), CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  CHECK_FALSE(Contains(DriverWorkCallbackIds(), CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent));
  // PROF_RANGE=cudaProfilerApi: a driver-API program's range edges reach the marker path under injection.
  CHECK(Contains(DriverWorkCallbackIds(), CUPTI_DRIVER_TRACE_CBID_cuProfilerStart));
  CHECK(Contains(DriverWorkCallbackIds(), CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
  CHECK(Contains(RuntimeCallbackIds(), CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000));
  CHECK(Contains(RuntimeCallbackIds(), CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000));
}

TEST_CASE("every call libprof's wrappers stamp with a correlation id gets a CUPTI callback", "[classes]") {
  // The wrappers read tls_correlation_id after the real call; it is set by
  // the API-enter callback, so each intercepted function needs one.
  for (size_t i = 0; i < kApiCount; ++i) {
    std::string name(ApiName(static_cast<ApiId>(i)));
    if (name.rfind("__cudaRegister", 0) == 0) continue;  // registration: no device work
    bool driver = name.rfind("cu", 0) == 0 && name.rfind("cuda", 0) != 0;
    const uint32_t* ids = driver ? DriverWorkCallbackIds() : RuntimeCallbackIds();
    ApiDomain domain = driver ? ApiDomain::kDriver : ApiDomain::kRuntime;
    bool found = false;
    for (const uint32_t* id = ids; *id != 0 && !found; ++id) {
      const char* known = CallbackName(domain, *id);
      found = known != nullptr && name == known;
    }
    INFO(name);
    CHECK(found);
  }
}

TEST_CASE("runtime calls that enqueue nothing get no callback", "[classes]") {
  CHECK_FALSE(Contains(RuntimeCallbackIds(), CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  CHECK_FALSE(Contains(RuntimeCallbackIds(), CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020));
  CHECK(Contains(RuntimeCallbackIds(), CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020));
}

}  // namespace
}  // namespace prof::cupti
