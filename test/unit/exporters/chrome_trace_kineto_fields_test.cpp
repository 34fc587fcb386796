// Fields of the trace that Kineto writes and its consumers read, where a
// trace of ours once lacked them (test/integration/test_torch_profiler_compare.py
// holds a window to torch.profiler's trace of the same steps):
//   - gpu_user_annotation events carry no "stream" (nor "device"): HTA takes
//     every event with a "stream" for GPU work, and counted an NVTX range's
//     projection as a kernel as long as its range.
#include <catch2/catch.hpp>

#include "exporters/trace/chrome_trace.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/trace/validate.h"

namespace prof {
namespace {

// The window-builder tests' usual names, in each file that uses them.
using nlohmann::json;
using testing::Events;
using testing::kPid;
using testing::TraceJson;
using testing::WindowBuilder;

constexpr uint32_t kAutograd = kPid + 7;  // a second launching thread

// Step 10: a kernel launched on the main thread on stream 7 inside an NVTX
// range, one launched from another thread on stream 9, a device synchronize
// and its sync record. Step 11: a copy and a memset on stream 7.
WindowBuilder TwoSteps() {
  WindowBuilder b;
  b.Step(10, 1'000'000, 2'000'000);
  b.Step(11, 2'000'000, 3'000'000);
  b.window().nvtx_ranges.push_back({1'050'000, 1'200'000, b.Str("forward"), kPid, 0, 0});
  b.Launch("_Z6kernelPf", 1'100'000, 10'000, 1'105'000, 1'305'000, /*correlation=*/7);
  b.Call(ApiId::cudaLaunchKernel, 1'400'000, 1'410'000, 8, kAutograd);
  b.Kernel("_Z8backwardPf", 1'420'000, 1'520'000, 8, /*stream=*/9);
  b.Call(ApiId::cudaDeviceSynchronize, 1'600'000, 1'700'000, 9);
  DeviceRecord& sync = b.Record(DeviceKind::kSync, 1'610'000, 1'690'000, 9, /*stream=*/7);
  sync.cbid = 4;  // CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
  b.Call(ApiId::cudaMemcpyAsync, 2'100'000, 2'110'000, 10).bytes = 4096;
  b.Copy(testing::kCuptiHtoD, testing::kCuptiPinned, testing::kCuptiDevice, 4096, 2'120'000, 2'124'096, 10);
  b.Call(ApiId::cudaMemsetAsync, 2'200'000, 2'201'000, 11);
  DeviceRecord& set = b.Record(DeviceKind::kMemset, 2'210'000, 2'211'000, 11);
  set.bytes = 1000, set.dst_kind = testing::kCuptiDevice;
  return b;
}

TEST_CASE("an NVTX range's gpu_user_annotation has no stream arg, so HTA does not take it for a kernel", "[chrome]") {
  json t = TraceJson(TwoSteps().Build());
  auto gpu = Events(t, "X", "gpu_user_annotation");
  REQUIRE(gpu.size() == 1);
  const json& a = gpu[0];
  CHECK(a["name"] == "forward");
  // On the stream's track (pid = device, tid = stream), as Kineto draws it,
  CHECK(a["pid"] == 0);
  CHECK(a["tid"] == 7);
  CHECK(a["ts"].get<double>() == Approx(105.0));  // the kernel's span: µs after the first event (1'000'000 ns)
  CHECK(a["dur"].get<double>() == Approx(200.0));
  // but without the args that mark GPU work.
  CHECK_FALSE(a["args"].contains("stream"));
  CHECK_FALSE(a["args"].contains("device"));
  CHECK_FALSE(a["args"].contains("correlation"));
  // Everything that does carry a "stream" is a kernel, copy, memset or synchronize.
  for (const json& e : t["traceEvents"]) {
    if (e.contains("args") && e["args"].contains("stream")) {
      std::string cat = e["cat"];
      CHECK((cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync"));
    }
  }
  auto r = tool::ValidateTrace(t);
  for (const auto& e : r.errors) INFO(e);
  CHECK(r.ok());
}

}  // namespace
}  // namespace prof
