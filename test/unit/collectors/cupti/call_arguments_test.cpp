// A call no wrapper saw, as the host event a wrapper writes: which callback
// ids name a call of the event model, and the arguments read from CUPTI's
// parameter structs (the toolkit's generated_cuda*_meta.h).
#include "collectors/cupti/call_arguments.h"

#include <cupti.h>

#include <catch2/catch.hpp>

namespace prof::cupti {
namespace {

TEST_CASE("callback ids map to the event model's calls, runtime and driver apart", "[call_arguments]") {
  CHECK(HostApiOf(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020) == ApiId::cudaMemcpyAsync);
  CHECK(HostApiOf(true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000) == ApiId::cudaMemcpyAsync_ptsz);
  CHECK(HostApiOf(true, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000) == ApiId::__cudaLaunchKernel);
  CHECK(HostApiOf(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == ApiId::cuLaunchKernel);
  CHECK(HostApiOf(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) == ApiId::cuLaunchKernelEx);
  CHECK(HostApiOf(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel) == ApiId::cuLaunchCooperativeKernel);
  CHECK(HostApiOf(false, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize) == ApiId::cuStreamSynchronize);
  CHECK(HostApiOf(false, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) == ApiId::cuMemAlloc_v2);
  // Calls outside the event model, and ids no header names.
  CHECK(HostApiOf(true, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) == ApiId::kCount);
  CHECK(HostApiOf(false, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice) == ApiId::kCount);
  CHECK(HostApiOf(true, 999999) == ApiId::kCount);
  CHECK(HostApiOf(true, CUPTI_RUNTIME_TRACE_CBID___cudaRegisterFunction_v13000) == ApiId::kCount);
}

TEST_CASE("a copy's destination, bytes, kind and stream come from its parameters", "[call_arguments]") {
  int dst = 0, src = 0;
  cudaMemcpyAsync_v3020_params p{&dst, &src, 4096, cudaMemcpyDeviceToHost, reinterpret_cast<cudaStream_t>(0x50)};
  HostEvent e{};
  FillArguments(ApiId::cudaMemcpyAsync, &p, true, &e);
  CHECK(e.ptr == reinterpret_cast<uint64_t>(&dst));
  CHECK(e.bytes == 4096);
  CHECK(e.copy_kind == cudaMemcpyDeviceToHost);
  CHECK(e.stream == 0x50);
  // PROF_STEP=auto's token detail, as the wrapper feeds it: the kind + 1.
  CHECK(CopyDetail(ApiId::cudaMemcpyAsync, &p) == cudaMemcpyDeviceToHost + 1);

  cudaMemcpy2D_v3020_params box{&dst, 64, &src, 64, 32, 8, cudaMemcpyHostToDevice};
  HostEvent e2{};
  FillArguments(ApiId::cudaMemcpy2D, &box, true, &e2);
  CHECK(e2.bytes == 32 * 8);
  CHECK(e2.copy_kind == cudaMemcpyHostToDevice);

  cudaMemcpyPeer_v4000_params peer{&dst, 1, &src, 0, 128};
  HostEvent e3{};
  FillArguments(ApiId::cudaMemcpyPeer, &peer, true, &e3);
  CHECK(e3.device == 1);
  CHECK(e3.copy_kind == cudaMemcpyDeviceToDevice);
  CHECK(CopyDetail(ApiId::cudaMemcpyPeer, &peer) == 0);  // a wrapper feeds no kind for it either
}

TEST_CASE("an allocation's pointer is read once the call succeeded, its size always", "[call_arguments]") {
  void* out = reinterpret_cast<void*>(0x7000);
  cudaMalloc_v3020_params p{&out, 1 << 20};
  HostEvent ok{};
  FillArguments(ApiId::cudaMalloc, &p, true, &ok);
  CHECK(ok.ptr == 0x7000);
  CHECK(ok.bytes == (1u << 20));
  HostEvent failed{};
  FillArguments(ApiId::cudaMalloc, &p, false, &failed);
  CHECK(failed.ptr == 0);
  CHECK(failed.bytes == (1u << 20));
  CHECK(NamesCurrentDevice(ApiId::cudaMalloc));
  CHECK_FALSE(NamesCurrentDevice(ApiId::cudaMallocHost));

  CUdeviceptr dptr = 0x9000;
  cuMemAlloc_v2_params d{&dptr, 256};
  HostEvent e{};
  FillArguments(ApiId::cuMemAlloc_v2, &d, true, &e);
  CHECK(e.ptr == 0x9000);
  CHECK(e.bytes == 256);
}

TEST_CASE("a driver launch names its function and stream", "[call_arguments]") {
  auto f = reinterpret_cast<CUfunction>(0x1234);
  auto s = reinterpret_cast<CUstream>(0x77);
  cuLaunchKernel_params p{f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr};
  HostEvent e{};
  FillArguments(ApiId::cuLaunchKernel, &p, true, &e);
  CHECK(e.ptr == 0x1234);
  CHECK(e.stream == 0x77);

  CUlaunchConfig config{};
  config.hStream = s;
  cuLaunchKernelEx_params ex{&config, f, nullptr, nullptr};
  HostEvent e2{};
  FillArguments(ApiId::cuLaunchKernelEx, &ex, true, &e2);
  CHECK(e2.ptr == 0x1234);
  CHECK(e2.stream == 0x77);
}

TEST_CASE("without parameters nothing is filled", "[call_arguments]") {
  HostEvent e{};
  e.device = -1;
  FillArguments(ApiId::__cudaLaunchKernel, nullptr, true, &e);
  FillArguments(ApiId::cudaMemcpy, nullptr, true, &e);
  CHECK(e.ptr == 0);
  CHECK(e.bytes == 0);
  CHECK(e.device == -1);
  CHECK(CopyDetail(ApiId::cudaMemcpy, nullptr) == 0);
}

}  // namespace
}  // namespace prof::cupti
