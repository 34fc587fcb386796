// Callback ids -> names and classes, from the toolkit's cbid headers.
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

TEST_CASE("the driver callbacks enabled for launch times are launches, copies and memsets only", "[classes]") {
  bool saw_launch = false;
  int count = 0;
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id, ++count) {
    ApiClass c = ClassifyCallback(ApiDomain::kDriver, *id);
    CHECK((c == ApiClass::kLaunch || c == ApiClass::kMemcpy || c == ApiClass::kMemset));
    if (*id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) saw_launch = true;
  }
  CHECK(saw_launch);
  CHECK(count > 10);
}

}  // namespace
}  // namespace prof::cupti
