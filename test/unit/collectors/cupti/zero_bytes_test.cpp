// Which copies and memsets move zero bytes (and so leave no record to wait
// for), read from hand-built parameter structs of the toolkit's
// generated_cuda*_meta.h.
#include "collectors/cupti/zero_bytes.h"

#include <cupti.h>

#include <catch2/catch.hpp>

#include "collectors/cupti/api_classes.h"

namespace prof::cupti {
namespace {

TEST_CASE("a plain copy or memset of zero bytes moves nothing, one of some bytes does", "[zero_bytes]") {
  int dst = 0, src = 0;
  cudaMemcpyAsync_v3020_params copy{&dst, &src, 0, cudaMemcpyDeviceToHost, nullptr};
  CHECK(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &copy));
  CHECK(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, &copy));
  copy.count = 4;
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &copy));

  cudaMemset_v3020_params set{&dst, 0, 0};
  CHECK(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, &set));
  set.count = 1;
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, &set));
}

TEST_CASE("a 2D or 3D copy or memset with a zero width, height or depth moves nothing", "[zero_bytes]") {
  int dst = 0, src = 0;
  cudaMemcpy2D_v3020_params rect{&dst, 64, &src, 64, 32, 0, cudaMemcpyHostToDevice};
  CHECK(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, &rect));
  rect.height = 8;
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, &rect));

  cudaMemcpy3DParms box{};
  box.extent = cudaExtent{16, 4, 0};
  cudaMemcpy3D_v3020_params copy3d{&box};
  CHECK(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, &copy3d));
  box.extent.depth = 2;
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, &copy3d));
  cudaMemcpy3D_v3020_params no_box{nullptr};  // CUDA answers an error: not "nothing moved"
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, &no_box));

  cudaMemset3D_v3020_params set3d{cudaPitchedPtr{&dst, 64, 16, 4}, 0, cudaExtent{0, 4, 2}};
  CHECK(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020, &set3d));
}

TEST_CASE("the driver's copies and memsets are read by their own layouts", "[zero_bytes]") {
  cuMemcpyHtoD_v2_params htod{0x1000, nullptr, 0};
  CHECK(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &htod));
  htod.ByteCount = 256;
  CHECK_FALSE(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &htod));

  cuMemsetD32_v2_params d32{0x1000, 7, 0};
  CHECK(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &d32));

  CUDA_MEMCPY2D desc{};
  desc.WidthInBytes = 64;
  desc.Height = 0;
  cuMemcpy2D_v2_params copy2d{&desc};
  CHECK(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, &copy2d));
  desc.Height = 2;
  CHECK_FALSE(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, &copy2d));

  cuMemsetD2D8_v2_params set2d{0x1000, 64, 1, 0, 3};
  CHECK(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2, &set2d));
  set2d.Width = 5;
  CHECK_FALSE(MovesZeroBytes(false, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2, &set2d));
}

TEST_CASE("other calls, unknown ids and missing parameters never count as moving zero bytes", "[zero_bytes]") {
  cudaMemcpyAsync_v3020_params zero{nullptr, nullptr, 0, cudaMemcpyDefault, nullptr};
  // Zero bytes under an id with no rule (a launch) or an id past the index.
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &zero));
  CHECK_FALSE(MovesZeroBytes(true, 100000, &zero));
  CHECK_FALSE(MovesZeroBytes(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, nullptr));
}

TEST_CASE("every id with a zero-byte rule is a copy or a memset", "[zero_bytes]") {
  for (const zero_bytes::Rule& rule : zero_bytes::kRuntimeRules) {
    INFO(CallbackName(ApiDomain::kRuntime, rule.cbid));
    ApiClass c = ClassifyCallback(ApiDomain::kRuntime, rule.cbid);
    CHECK((c == ApiClass::kMemcpy || c == ApiClass::kMemset));
  }
  for (const zero_bytes::Rule& rule : zero_bytes::kDriverRules) {
    INFO(CallbackName(ApiDomain::kDriver, rule.cbid));
    ApiClass c = ClassifyCallback(ApiDomain::kDriver, rule.cbid);
    CHECK((c == ApiClass::kMemcpy || c == ApiClass::kMemset));
  }
}

}  // namespace
}  // namespace prof::cupti
