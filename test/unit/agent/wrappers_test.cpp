// The interposed wrappers, driven in-process against fake "real" functions
// (real_functions.h's test hook): arguments reach the real function
// unchanged, its result comes back unchanged, one event per outermost call
// while recording and none otherwise, allocations tracked once even when the
// runtime calls the driver, cuGetProcAddress hands out our wrapper, and
// each step source sees its markers.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/hot_state.h"
#include "agent/runtime/runtime.h"
#include "collectors/interpose/intercept.h"
#include "collectors/interpose/real_functions.h"
#include "fakes.h"

extern "C" {
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* entry);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
void __cudaRegisterFunction(void** fatbin, const char* host_fun, char* device_fun, const char* device_name, int thread_limit,
                            uint3* tid, uint3* bid, dim3* block, dim3* grid, int* wsize);
}

namespace prof {
namespace {

namespace ip = interpose;

// ---- fake real functions: they record what they were given ----
struct Seen {
  int calls = 0;
  void* ptr = nullptr;
  size_t size = 0;
  int kind = 0;
  cudaStream_t stream = nullptr;
  bool fed_markers = false;  // the wrapper fed the marker path for the call (seen inside it)
};
Seen g_seen;
uint32_t g_correlation_to_set = 0;
bool g_runtime_calls_driver = false;

CUresult FakeCuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  ++g_seen.calls;
  *ptr = 0xD000;
  g_seen.size = bytes;
  return CUDA_SUCCESS;
}
cudaError_t FakeCudaMalloc(void** ptr, size_t size) {
  ++g_seen.calls;
  g_seen.size = size;
  tls_correlation_id = g_correlation_to_set;  // what CUPTI's API-enter callback does
  if (g_runtime_calls_driver) {
    CUdeviceptr d = 0;
    cuMemAlloc_v2(&d, size);  // binds to our wrapper: nested
    *ptr = reinterpret_cast<void*>(d);
    return cudaSuccess;
  }
  *ptr = reinterpret_cast<void*>(0xA000);
  return cudaSuccess;
}
cudaError_t FakeCudaFree(void* ptr) {
  ++g_seen.calls;
  g_seen.ptr = ptr;
  return cudaSuccess;
}
int g_get_device_calls = 0;
int g_device_to_report = 3;
int g_device_count_to_report = 4;
int g_get_device_count_calls = 0;
cudaError_t FakeGetDevice(int* device) {
  ++g_get_device_calls;
  *device = g_device_to_report;
  return cudaSuccess;
}
cudaError_t FakeGetDeviceCount(int* count) {
  ++g_get_device_count_calls;
  *count = g_device_count_to_report;
  return cudaSuccess;
}
cudaError_t FakeMemcpyAsync(void* dst, const void*, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  ++g_seen.calls;
  g_seen.ptr = dst;
  g_seen.size = count;
  g_seen.kind = kind;
  g_seen.stream = stream;
  g_seen.fed_markers = tls_wrapper_feeds_markers;
  return cudaErrorInvalidValue;  // an error the wrapper must hand back untouched
}
cudaError_t FakeLaunch(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  ++g_seen.calls;
  g_seen.fed_markers = tls_wrapper_feeds_markers;
  return cudaSuccess;
}
cudaError_t FakeLaunchByHandle(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t) {
  ++g_seen.calls;
  return cudaSuccess;
}
cudaError_t FakeGetKernel(cudaKernel_t* kernel, const void* entry) {
  *kernel = reinterpret_cast<cudaKernel_t>(reinterpret_cast<uintptr_t>(entry) + 0x10000);
  return cudaSuccess;
}
void FakeRegister(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*) {}
cudaError_t FakeSync(cudaStream_t) { return cudaSuccess; }
cudaError_t FakeEventSync(cudaEvent_t) { return cudaSuccess; }
cudaError_t FakeGraphLaunch(cudaGraphExec_t, cudaStream_t) {
  g_seen.fed_markers = tls_wrapper_feeds_markers;
  return cudaSuccess;
}
CUresult FakeGetProcAddress(const char* symbol, void** pfn, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  *pfn = std::string(symbol) == "cuMemAlloc" ? reinterpret_cast<void*>(&FakeCuMemAlloc) : nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

void InstallFakes() {
  ip::SetRealFunctionForTest(ApiId::cudaMalloc, reinterpret_cast<void*>(&FakeCudaMalloc));
  ip::SetRealFunctionForTest(ApiId::cudaFree, reinterpret_cast<void*>(&FakeCudaFree));
  ip::SetRealFunctionForTest(ApiId::cuMemAlloc_v2, reinterpret_cast<void*>(&FakeCuMemAlloc));
  ip::SetRealFunctionForTest(ApiId::cudaMemcpyAsync, reinterpret_cast<void*>(&FakeMemcpyAsync));
  ip::SetRealFunctionForTest(ApiId::cudaLaunchKernel, reinterpret_cast<void*>(&FakeLaunch));
  ip::SetRealFunctionForTest(ApiId::__cudaLaunchKernel, reinterpret_cast<void*>(&FakeLaunchByHandle));
  ip::SetRealFunctionForTest(ApiId::__cudaRegisterFunction, reinterpret_cast<void*>(&FakeRegister));
  ip::SetRealFunctionForTest(ApiId::cudaStreamSynchronize, reinterpret_cast<void*>(&FakeSync));
  ip::SetRealFunctionForTest(ApiId::cudaEventSynchronize, reinterpret_cast<void*>(&FakeEventSync));
  ip::SetRealFunctionForTest(ApiId::cudaGraphLaunch_ptsz, reinterpret_cast<void*>(&FakeGraphLaunch));
  ip::SetRealFunctionForTest(ip::Extra::kCudaGetDevice, reinterpret_cast<void*>(&FakeGetDevice));
  ip::SetRealFunctionForTest(ip::Extra::kCudaGetDeviceCount, reinterpret_cast<void*>(&FakeGetDeviceCount));
  ip::SetRealFunctionForTest(ip::Extra::kCudaGetKernel, reinterpret_cast<void*>(&FakeGetKernel));
  ip::SetRealFunctionForTest(ip::Extra::kCuGetProcAddress_v2, reinterpret_cast<void*>(&FakeGetProcAddress));
}

// A runtime with a manual-step session that records from step 0 forever.
struct Agent {
  // wait: steps before the first window (0: recording from the start).
  explicit Agent(StepSource source, const std::string& pattern = "", ApiId api = ApiId::kCount, int wait = 0) {
    InstallFakes();
    g_seen = Seen{};
    g_correlation_to_set = 0;
    g_runtime_calls_driver = false;
    g_get_device_calls = 0;
    g_device_to_report = 3;
    g_device_count_to_report = 4;
    g_get_device_count_calls = 0;
    ip::internal::g_device_count.store(0);  // the process's count is asked once: each test is a new process
    rt.config.step_source = source;
    rt.config.step_pattern = pattern;
    rt.config.step_api = api;
    rt.config.wait = wait;
    rt.config.warmup = 0;
    rt.config.active = 1000;
    rt.config.repeat = 0;
    REQUIRE(rt.buffers.Init(1 << 20));
    if (!pattern.empty()) rt.markers.Configure(pattern, source == StepSource::kKernel);
    ClearHotBits(~0u);
    rt.session = std::make_unique<Session>(rt.config, &collector, &writer, &rt.allocs, WindowMeta{}, NowNs());
    InstallRuntime(&rt);
    uint32_t marker = 0;
    if (source == StepSource::kKernel) marker = kHotLaunchMarker;
    if (source == StepSource::kApi) marker = kHotApiMarker;
    if (source == StepSource::kSync) marker = kHotSyncMarker;
    ArmApiMarker(source == StepSource::kApi ? api : ApiId::kCount);
    SetHotBits(kHotAllocTracking | marker);
  }
  ~Agent() {
    InstallRuntime(nullptr);
    ClearHotBits(~0u);
  }
  // Recorded events, without the registrations the tests make as setup.
  std::vector<HostEvent> Events() {
    std::vector<HostEvent> all, out;
    rt.buffers.Collect(0, ~0ull, &all, nullptr);
    for (const HostEvent& e : all) {
      if (e.api != static_cast<uint16_t>(ApiId::__cudaRegisterFunction)) out.push_back(e);
    }
    return out;
  }
  testing::FakeCollector collector;
  testing::FakeWriter writer;
  Runtime rt;
};

TEST_CASE("a copy's arguments reach the real function and its error comes back unchanged", "[wrappers]") {
  Agent agent(StepSource::kManual);
  int dst = 0;
  auto stream = reinterpret_cast<cudaStream_t>(0x77);
  cudaError_t r = cudaMemcpyAsync(&dst, nullptr, 4096, cudaMemcpyDeviceToHost, stream);
  CHECK(r == cudaErrorInvalidValue);
  CHECK(g_seen.calls == 1);
  CHECK(g_seen.ptr == &dst);
  CHECK(g_seen.size == 4096);
  CHECK(g_seen.kind == cudaMemcpyDeviceToHost);
  CHECK(g_seen.stream == stream);
  auto events = agent.Events();
  REQUIRE(events.size() == 1);
  const HostEvent& e = events[0];
  CHECK(e.api == static_cast<uint16_t>(ApiId::cudaMemcpyAsync));
  CHECK(e.result == cudaErrorInvalidValue);
  CHECK(e.bytes == 4096);
  CHECK(e.copy_kind == cudaMemcpyDeviceToHost);
  CHECK(e.stream == 0x77);
  CHECK(e.ptr == reinterpret_cast<uint64_t>(&dst));
  CHECK(e.end_ns >= e.start_ns);
  CHECK(e.tid != 0);
}

TEST_CASE("nothing is recorded while no window records, and the call still happens", "[wrappers]") {
  Agent agent(StepSource::kManual);
  ClearHotBits(kHotRecording);
  int dst = 0;
  CHECK(cudaMemcpyAsync(&dst, nullptr, 8, cudaMemcpyHostToDevice, nullptr) == cudaErrorInvalidValue);
  CHECK(g_seen.calls == 1);
  CHECK(agent.Events().empty());
}

TEST_CASE("cudaMalloc is recorded with its pointer, size and device, and tracked", "[wrappers]") {
  Agent agent(StepSource::kManual);
  g_correlation_to_set = 99;
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 1 << 20) == cudaSuccess);
  CHECK(p == reinterpret_cast<void*>(0xA000));
  auto events = agent.Events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].ptr == 0xA000);
  CHECK(events[0].bytes == 1 << 20);
  CHECK(events[0].device == 3);
  CHECK(events[0].correlation_id == 99);
  CHECK(agent.rt.allocs.LiveBytes(3, MemKind::kDevice) == 1 << 20);
  CHECK(cudaFree(p) == cudaSuccess);
  CHECK(g_seen.ptr == p);
  CHECK(agent.rt.allocs.LiveBytes(3, MemKind::kDevice) == 0);
}

TEST_CASE("a runtime allocation that calls the driver allocator is counted once", "[wrappers]") {
  Agent agent(StepSource::kManual);
  g_runtime_calls_driver = true;
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 4096) == cudaSuccess);
  CHECK(g_seen.calls == 2);  // both real functions ran
  auto events = agent.Events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].api == static_cast<uint16_t>(ApiId::cudaMalloc));
  CHECK(agent.rt.allocs.LiveSnapshot().size() == 1);
  CHECK(agent.rt.allocs.LiveBytes(3, MemKind::kDevice) == 4096);
}

TEST_CASE("allocations are tracked even outside windows", "[wrappers]") {
  Agent agent(StepSource::kManual);
  ClearHotBits(kHotRecording);
  void* p = nullptr;
  uint64_t before_ns = CoarseNowNs();
  CHECK(cudaMalloc(&p, 64) == cudaSuccess);
  uint64_t after_ns = CoarseNowNs();
  CHECK(agent.Events().empty());
  CHECK(agent.rt.allocs.LiveBytes(3, MemKind::kDevice) == 64);
  // Outside a window the live table still knows when (to a clock tick).
  auto live = agent.rt.allocs.LiveSnapshot();
  REQUIRE(live.size() == 1);
  CHECK(live[0].alloc_ns >= before_ns);
  CHECK(live[0].alloc_ns <= after_ns);
}

TEST_CASE("a process that sees one device allocates on device 0 without asking the runtime each time",
          "[wrappers][devices]") {
  Agent agent(StepSource::kManual, "", ApiId::kCount, /*wait=*/1000);  // waiting: nothing records
  g_device_count_to_report = 1;
  g_device_to_report = 0;
  void* p[3] = {};
  for (void*& ptr : p) CHECK(cudaMalloc(&ptr, 256) == cudaSuccess);
  CHECK(g_get_device_count_calls == 1);  // after the first allocation, once
  CHECK(g_get_device_calls == 1);        // the first allocation's only
  auto live = agent.rt.allocs.LiveSnapshot();  // the fake hands out one address: replaced, not added
  REQUIRE(live.size() == 1);
  CHECK(live[0].device == 0);
  CHECK(agent.rt.allocs.LiveBytes(0, MemKind::kDevice) == 256);
}

TEST_CASE("with more devices, each allocation's device is asked, so the live table stays exact per device",
          "[wrappers][devices]") {
  Agent agent(StepSource::kManual, "", ApiId::kCount, /*wait=*/1000);
  g_device_count_to_report = 2;
  void* p = nullptr;
  g_device_to_report = 0;
  CHECK(cudaMalloc(&p, 100) == cudaSuccess);
  CHECK(agent.rt.allocs.LiveBytes(0, MemKind::kDevice) == 100);
  g_device_to_report = 1;  // cudaSetDevice(1), or a context switched where no wrapper sees it
  CHECK(cudaMalloc(&p, 300) == cudaSuccess);  // the fake hands out the same address: it moves
  CHECK(g_get_device_calls == 2);
  CHECK(g_get_device_count_calls == 1);
  CHECK(agent.rt.allocs.LiveBytes(1, MemKind::kDevice) == 300);
  CHECK(agent.rt.allocs.LiveBytes(0, MemKind::kDevice) == 0);  // same address again: moved to device 1
}

TEST_CASE("while a window records, the device count is not asked (its RUNTIME record would show)", "[wrappers][devices]") {
  Agent agent(StepSource::kManual);  // recording from step 0
  g_device_count_to_report = 1;
  void* p = nullptr;
  for (int i = 0; i < 2; ++i) CHECK(cudaMalloc(&p, 64) == cudaSuccess);
  CHECK(g_get_device_count_calls == 0);
  CHECK(g_get_device_calls == 2);
  auto events = agent.Events();
  REQUIRE(events.size() == 2);
  CHECK(events[1].device == 3);
}

TEST_CASE("cuGetProcAddress hands out our wrapper, which calls what the driver returned", "[wrappers]") {
  Agent agent(StepSource::kManual);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  REQUIRE(cuGetProcAddress_v2("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS);
  REQUIRE(fn != nullptr);
  CHECK(fn != reinterpret_cast<void*>(&FakeCuMemAlloc));
  CUdeviceptr d = 0;
  CHECK(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&d, 256) == CUDA_SUCCESS);
  CHECK(d == 0xD000);
  CHECK(g_seen.size == 256);
  auto events = agent.Events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].api == static_cast<uint16_t>(ApiId::cuMemAlloc_v2));
  CHECK((events[0].flags & kHostEventViaProcAddr) != 0);
  CHECK((events[0].flags & kHostEventDriver) != 0);
  CHECK(agent.rt.allocs.LiveBytes(-1, MemKind::kDevice) == 256);  // no cuCtxGetDevice: device unknown
  // Other symbols pass through untouched.
  void* other = reinterpret_cast<void*>(0x1);
  cuGetProcAddress_v2("cuLaunchKernel", &other, 13000, 0, &status);
  CHECK(other == nullptr);
}

TEST_CASE("kernel:<regex> steps on launches whose demangled name matches, by stub or by handle", "[wrappers][steps]") {
  Agent agent(StepSource::kKernel, "^sgemm");
  static char stub_a, stub_b;
  __cudaRegisterFunction(nullptr, &stub_a, nullptr, "_Z9sgemm_bigPfi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFunction(nullptr, &stub_b, nullptr, "_Z4reluPf", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  dim3 one(1);
  uint64_t step0 = agent.rt.session->current_step();
  cudaLaunchKernel(&stub_b, one, one, nullptr, 0, nullptr);
  CHECK(agent.rt.session->current_step() == step0);
  cudaLaunchKernel(&stub_a, one, one, nullptr, 0, nullptr);
  CHECK(agent.rt.session->current_step() == step0 + 1);
  cudaKernel_t handle = nullptr;
  REQUIRE(__cudaGetKernel(&handle, &stub_a) == cudaSuccess);
  __cudaLaunchKernel(handle, one, one, nullptr, 0, nullptr);
  CHECK(agent.rt.session->current_step() == step0 + 2);
  auto events = agent.Events();
  REQUIRE(events.size() == 3);
  CHECK(agent.rt.markers.Matches(events[1].name_id));
  CHECK(events[2].name_id == events[1].name_id);  // the handle got the stub's name
  CHECK(events[2].ptr == reinterpret_cast<uint64_t>(handle));
}

TEST_CASE("while waiting under kernel:<regex>, a launch of a kernel known not to match is a plain call, still fed", "[wrappers][steps]") {
  Agent agent(StepSource::kKernel, "^sgemm", ApiId::kCount, /*wait=*/1000);
  static char stub_a, stub_b;
  __cudaRegisterFunction(nullptr, &stub_a, nullptr, "_Z9sgemm_bigPfi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFunction(nullptr, &stub_b, nullptr, "_Z4reluPf", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  dim3 one(1);
  for (int i = 0; i < 3; ++i) {  // the first relu launch asks the matcher, the others know
    g_seen.fed_markers = false;
    cudaLaunchKernel(&stub_b, one, one, nullptr, 0, nullptr);
    CHECK(g_seen.fed_markers);  // CUPTI's callbacks inside it stay silent either way
    CHECK(agent.rt.session->current_step() == 0);
  }
  cudaLaunchKernel(&stub_a, one, one, nullptr, 0, nullptr);
  CHECK(agent.rt.session->current_step() == 1);
  cudaLaunchKernel(&stub_a, one, one, nullptr, 0, nullptr);  // a known match still marks
  CHECK(agent.rt.session->current_step() == 2);
  CHECK(g_seen.calls == 5);
  CHECK_FALSE(tls_wrapper_feeds_markers);  // restored after each call
  CHECK(agent.Events().empty());
}

TEST_CASE("a kernel's verdict is the installed runtime's: another PROF_STEP asks again", "[wrappers][steps]") {
  static char stub_a, stub_b;
  dim3 one(1);
  {
    Agent agent(StepSource::kKernel, "^sgemm", ApiId::kCount, /*wait=*/1000);
    __cudaRegisterFunction(nullptr, &stub_a, nullptr, "_Z9sgemm_bigPfi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFunction(nullptr, &stub_b, nullptr, "_Z4reluPf", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    cudaLaunchKernel(&stub_b, one, one, nullptr, 0, nullptr);  // no, kept beside relu's name
    cudaLaunchKernel(&stub_a, one, one, nullptr, 0, nullptr);
    CHECK(agent.rt.session->current_step() == 1);
  }
  Agent agent(StepSource::kKernel, "^relu", ApiId::kCount, /*wait=*/1000);  // no re-registration
  cudaLaunchKernel(&stub_b, one, one, nullptr, 0, nullptr);
  CHECK(agent.rt.session->current_step() == 1);
  cudaLaunchKernel(&stub_a, one, one, nullptr, 0, nullptr);
  cudaLaunchKernel(&stub_b, one, one, nullptr, 0, nullptr);
  CHECK(agent.rt.session->current_step() == 2);
}

TEST_CASE("api:<fn> steps on each call of that function, including its _ptsz twin", "[wrappers][steps]") {
  Agent agent(StepSource::kApi, "", ApiId::cudaGraphLaunch);
  cudaGraphLaunch_ptsz(nullptr, nullptr);
  cudaGraphLaunch_ptsz(nullptr, nullptr);
  int dst = 0;
  cudaMemcpyAsync(&dst, nullptr, 1, cudaMemcpyHostToHost, nullptr);
  CHECK(agent.rt.session->current_step() == 2);
}

TEST_CASE("while waiting under api:<fn>, only <fn> leaves the plain path and other calls feed no marker", "[wrappers][steps]") {
  Agent agent(StepSource::kApi, "", ApiId::cudaGraphLaunch, /*wait=*/1000);
  int dst = 0;
  cudaMemcpyAsync(&dst, nullptr, 1, cudaMemcpyHostToHost, nullptr);
  CHECK(g_seen.calls == 1);
  CHECK_FALSE(g_seen.fed_markers);  // a plain call: the CUPTI feed may see it, the wrapper did not
  cudaGraphLaunch_ptsz(nullptr, nullptr);
  CHECK(g_seen.fed_markers);  // the marker (its _ptsz twin) is fed by the wrapper
  CHECK(agent.rt.session->current_step() == 1);
  cudaMemcpyAsync(&dst, nullptr, 1, cudaMemcpyHostToHost, nullptr);
  CHECK_FALSE(g_seen.fed_markers);
  CHECK(agent.rt.session->current_step() == 1);
  CHECK(agent.Events().empty());  // nothing recorded while waiting
}

TEST_CASE("sync steps when a device or stream synchronize returns, not on event syncs", "[wrappers][steps]") {
  Agent agent(StepSource::kSync);
  cudaStreamSynchronize(nullptr);
  cudaEventSynchronize(nullptr);
  cudaStreamSynchronize(nullptr);
  CHECK(agent.rt.session->current_step() == 2);
  // The synchronize belongs to the step it ends.
  auto events = agent.Events();
  REQUIRE(events.size() == 3);
}

TEST_CASE("a marking launch belongs to the step it starts", "[wrappers][steps]") {
  Agent agent(StepSource::kKernel, "^mark");
  static char stub;
  __cudaRegisterFunction(nullptr, &stub, nullptr, "mark_step", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  dim3 one(1);
  cudaLaunchKernel(&stub, one, one, nullptr, 0, nullptr);
  cudaLaunchKernel(&stub, one, one, nullptr, 0, nullptr);
  agent.rt.session->EndPartial("exit", NowNs());
  REQUIRE(agent.writer.windows.size() == 1);
  const WindowJob& w = agent.writer.windows[0];
  REQUIRE(w.steps.size() == 3);  // steps 0, 1, 2
  auto events = agent.Events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].start_ns >= w.steps[1].start_ns);
  CHECK(events[0].start_ns < w.steps[1].end_ns);
  CHECK(events[1].start_ns >= w.steps[2].start_ns);
}

}  // namespace
}  // namespace prof
